"""The book (docs/): built once with Sphinx + MyST-NB, then read in headless Chromium.

The module builds the site into a temporary folder with the one documented command
(``python -m sphinx -W --keep-going -b html docs OUT``: any warning fails it; the
tutorials run in fast mode), then opens the landing page, tutorial 02 and the API page of
the recurrent functions in Chromium, driven by Selenium, with every host name made to
fail to resolve, so that the pages must render from the built folder alone. On each page
it checks what a reader would see after MathJax ran: typeset maths and no TeX left in
the text, every image loaded, every link into the site pointing at a page that exists,
and no request that left the machine. Every tutorial page is then read at a 1280-px window
for what a learner sees of it: figures at the width they were drawn for, with alt texts, no
clipped equation, no code scrolling sideways; and an API page for its sidebar. Screenshots go
to a temporary folder that the test prints, and also to ``docs/_build/screenshots`` when
``NPSEQ_BOOK_SCREENSHOTS`` is set.
"""
from __future__ import annotations

import io
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import urllib.parse

import pytest
from optional_tools import require, skip_reason

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # every test reads the site that the module builds, running all the tutorials
for _module in ("sphinx", "myst_nb", "furo", "sphinx_basic_ng", "jupytext", "selenium"):
    require(_module, "docs")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
CHROMEDRIVER = shutil.which("chromedriver")

PAGES = {
    "landing": "index.html",
    "tutorial-02": "tutorials/02_rnn_by_hand.html",
    "api-recurrent": "api/generated/npseq.functional.recurrent.html",
}
TEX_LEFT = ("$$", "\\frac", "\\begin")
BUILD_LOG = "build-output.txt"  # what the build printed, kept beside the site it built
CHINESE = "zh_CN"  # the Chinese edition's language, and its folder inside the English site
DETAIL = {  # what the second screenshot of each page centres on
    "landing": "mjx-container[display='true']",
    "tutorial-02": ".cell_output img",
    "api-recurrent": "dl:has(> dt[id='npseq.functional.recurrent.rnn_step_backward'])",  # signature and equations
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site's folder (``index.html`` at its top), the Chinese edition in its ``zh_CN`` folder, each built
    with the README's command; the builds' times are printed. ``NPSEQ_BOOK_SITE=DIR`` checks a site built already
    instead (while editing the test)."""
    if os.environ.get("NPSEQ_BOOK_SITE"):
        return pathlib.Path(os.environ["NPSEQ_BOOK_SITE"]).resolve()
    out = tmp_path_factory.mktemp("book")
    for language, html in (("en", out / "html"), (CHINESE, out / "html" / CHINESE)):
        command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                   "-d", str(out / f"doctrees-{language}"), str(ROOT / "docs"), str(html)]
        if language != "en":
            command[3:3] = ["-D", f"language={language}"]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
        seconds = time.perf_counter() - start
        assert done.returncode == 0, f"the {language} book's build failed:\n{done.stdout[-4000:]}\n" \
                                     f"{done.stderr[-8000:]}"
        print(f"\nbook ({language}) built in {seconds:.0f} s into {html}")
        (html / BUILD_LOG).write_text(done.stdout + done.stderr, encoding="utf-8")
    return out / "html"


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory):
    """The folders the screenshots go to: a temporary one, and docs/_build/screenshots on request."""
    folders = [tmp_path_factory.mktemp("book-screenshots")]
    if os.environ.get("NPSEQ_BOOK_SCREENSHOTS"):
        folders.append(ROOT / "docs" / "_build" / "screenshots")
        folders[-1].mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots: {', '.join(map(str, folders))}")
    return folders


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium, with every host name failing to resolve (the book must need no network)."""
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip(skip_reason("chromium"))
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1280,1400", "--host-resolver-rules=MAP * ~NOTFOUND"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_script_timeout(600)  # a bound, not an expectation: a busy machine's Chromium may crawl
    yield driver
    driver.quit()


def test_no_page_loads_anything_from_the_network(site):
    """No script, stylesheet, image or font of the built site has an http(s) address (links to read are fine)."""
    remote = re.compile(r"""<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)
    css_remote = re.compile(r"""(?:@import\s+|url\(\s*)["']?(?:https?:)?//""", re.I)
    found = []
    for path in site.rglob("*.html"):
        found += [f"{path.relative_to(site)}: {m.group(0)}" for m in remote.finditer(path.read_text("utf-8"))]
    for path in site.rglob("*.css"):
        found += [f"{path.relative_to(site)}: {m.group(0)}" for m in css_remote.finditer(path.read_text("utf-8"))]
    assert not found, "\n".join(found[:20])
    for page in ("index.html", "tutorials/02_rnn_by_hand.html"):
        html = (site / page).read_text("utf-8")
        assert re.search(r"""<script[^>]+src="(\.\./)*_static/mathjax/tex-chtml\.js""", html), \
            f"{page}: MathJax is not served from _static"
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()


def test_no_page_shows_a_path_of_the_machine_that_built_it(site):
    """A cell ending in ``show(path)`` once printed the figure's absolute path under it, in the build folder."""
    built = [str(ROOT), str(site.parent), ".doctrees", "npseq-figures"]
    found = [f"{path.relative_to(site)}: {where}" for path in site.rglob("*.html")
             for where in built if where in path.read_text("utf-8")]
    assert not found, "\n".join(found[:20])


@pytest.mark.parametrize("edition", [".", CHINESE])
def test_the_build_prints_no_warning(site, edition):
    """``-W`` fails on Sphinx's warnings; a kernel's own log lines reach the output too, and none may warn (the
    Chinese build warns about a figure whose alt text has no translation)."""
    log = site / edition / BUILD_LOG
    if not log.is_file():
        pytest.skip(f"NPSEQ_BOOK_SITE names a site built elsewhere: no {BUILD_LOG} beside it")
    warnings = [line for line in log.read_text("utf-8").splitlines() if "WARNING" in line]
    assert not warnings, "\n".join(warnings[:10])


def test_every_tutorial_is_a_page_in_the_maps_reading_order(site):
    tutorials = sorted(p.name for p in (ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
    assert [name[:2] for name in tutorials] == [f"{number:02d}" for number in range(len(tutorials))], tutorials
    # The landing page's map lists the tutorials in the order to read them (11 after 5, 12 before 6); the
    # table of contents follows it.
    rows = re.findall(r"^\| (\d+) ", (ROOT / "docs" / "index.md").read_text("utf-8"), flags=re.MULTILINE)
    assert sorted(rows, key=int) == [str(int(name[:2])) for name in tutorials], rows
    reading = [next(name for name in tutorials if int(name[:2]) == int(row)) for row in rows]
    index = (site / "index.html").read_text("utf-8")
    positions = [index.find(f'href="tutorials/{name[:-3]}.html"') for name in reading]
    assert all(p >= 0 for p in positions), dict(zip(reading, positions))
    assert positions == sorted(positions), reading
    for name in tutorials:
        page = (site / "tutorials" / f"{name[:-3]}.html").read_text("utf-8")
        assert "cell_output" in page, f"{name}: no outputs (was it executed?)"


TUTORIAL_PAGES = sorted(f"tutorials/{p.stem}.html" for p in (ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
FITS_ITS_COLUMN = """
const article = document.querySelector('article');
const images = Array.from(article.querySelectorAll('img'));
return {
  // A figure is drawn for the column: shown narrower than it was drawn, its text shrinks below the body's.
  scaled_down: images.map(i => [i, Math.round(i.getBoundingClientRect().width)])
                     .filter(([i, shown]) => i.naturalWidth > shown + 1)
                     .map(([i, shown]) => `${i.src.split('/').pop()}: ${i.naturalWidth} px drawn, ${shown} px shown`),
  alt_texts: images.map(i => i.alt),
  clipped_equations: Array.from(article.querySelectorAll('mjx-container[display="true"]'))
      .filter(e => e.querySelector('mjx-math').getBoundingClientRect().width > e.getBoundingClientRect().width + 1)
      .map(e => e.textContent.slice(0, 80)),
  sideways_code: Array.from(article.querySelectorAll('pre'))
      .filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 80)),
};
"""


@pytest.mark.parametrize("page", TUTORIAL_PAGES, ids=lambda page: page.split("/")[-1][:2])
def test_tutorial_page_fits_its_column_at_1280_px(site, browser, page):
    """At a 1280-px window: every figure shown at the width it was drawn for (so its smallest text, drawn no
    smaller than the body text, stays that size), with an alt text that says what it shows; no display equation
    wider than its box (the column clips it); no code block that scrolls sideways."""
    browser.get((site / page).as_uri())
    assert _wait_for_mathjax(browser), f"{page}: MathJax did not load or typeset"
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Promise.all(Array.from(document.images).map(i => i.decode().catch(() => null))).then(() => done(true));")
    found = browser.execute_script(FITS_ITS_COLUMN)
    assert found["alt_texts"], f"{page}: no figure"
    assert not found["scaled_down"], f"{page}: figures scaled down to the column: {found['scaled_down']}"
    unsaid = [alt for alt in found["alt_texts"] if len(alt.split()) < 4 or alt.endswith(".png")]
    assert not unsaid, f"{page}: figures whose alt text does not say what they show: {unsaid}"
    assert not found["clipped_equations"], f"{page}: equations wider than the column: {found['clipped_equations']}"
    assert not found["sideways_code"], f"{page}: code blocks that scroll sideways: {found['sideways_code']}"


NAMES_BROKEN_MID_WORD = """
const broken = [];
for (const link of document.querySelectorAll('.sidebar-tree a')) {
  let previous = null;  // [character, top of its line]
  const walker = document.createTreeWalker(link, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const box = range.getClientRects()[0];
      if (!box) continue;
      const here = [node.data[i], box.top];
      if (previous && here[1] > previous[1] + 2 && /\\w/.test(previous[0]) && /\\w/.test(here[0])) {
        broken.push(link.textContent);
      }
      previous = here;
    }
  }
}
return broken;
"""


def test_the_sidebar_breaks_module_names_at_dots_only(site, browser):
    """On an API page the sidebar lists the modules; a long name wraps after a dot, never inside a word."""
    browser.get((site / "api" / "generated" / "npseq.functional.local_attention.html").as_uri())
    names = browser.execute_script("return Array.from(document.querySelectorAll('.sidebar-tree a'))"
                                   ".map(a => a.textContent).filter(t => t.startsWith('npseq.'));")
    assert "npseq.functional.local_attention" in names, names
    broken = browser.execute_script(NAMES_BROKEN_MID_WORD)
    assert not broken, f"sidebar names broken inside a word: {sorted(set(broken))}"


def _wait_for_mathjax(driver):
    """Wait until MathJax has loaded and typeset the page; whether it ran."""
    deadline = time.time() + 600  # a bound for a busy machine; MathJax is done in a second on a quiet one
    while time.time() < deadline:
        if driver.execute_script("return !!(window.MathJax && MathJax.startup && MathJax.startup.promise);"):
            return driver.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                "MathJax.startup.promise.then(() => done(true), () => done(false));")
        time.sleep(0.2)
    return False


def _local_file(site, url):
    """The built file a ``file://`` URL points to (anchors and queries aside)."""
    path = pathlib.Path(urllib.parse.unquote(urllib.parse.urlsplit(url).path))
    return path / "index.html" if url.split("#")[0].endswith("/") else path


@pytest.mark.parametrize("name", list(PAGES))
def test_page_reads_in_chromium(site, browser, screenshots, name):
    page = site / PAGES[name]
    assert page.is_file(), page
    browser.get(page.as_uri())
    assert _wait_for_mathjax(browser), f"{name}: MathJax did not load or typeset"
    typeset = browser.execute_script("return document.querySelectorAll('mjx-container').length;")
    assert typeset > 0, f"{name}: no typeset maths (mjx-container) on the page"
    errors = browser.execute_script("return document.querySelectorAll('mjx-merror, [data-mjx-error]').length;")
    assert errors == 0, f"{name}: {errors} formulas MathJax could not typeset"
    text = browser.execute_script("return document.body.innerText;")
    for tex in TEX_LEFT:
        at = text.find(tex)
        assert at < 0, f"{name}: {tex!r} left in the text: ...{text[max(0, at - 200):at + 200]}..."

    # Images: bring each into view (in case the browser defers it), then ask whether it decoded.
    images = browser.execute_script(
        "const imgs = Array.from(document.images); imgs.forEach(i => i.scrollIntoView());"
        "return imgs.map(i => i.src);")
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Promise.all(Array.from(document.images).map(i => i.decode().catch(() => null))).then(() => done(true));")
    broken = browser.execute_script(
        "return Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src);")
    assert not broken, f"{name}: images that did not load: {broken}"
    if name == "tutorial-02":
        assert len(images) >= 1, "tutorial 02 shows no figure"

    # Links into the site: every one must point at a file of the build.
    hrefs = browser.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);")
    local = [h for h in hrefs if h.startswith("file:")]
    assert local, f"{name}: no links into the site"
    missing = sorted({h for h in local if not _local_file(site, h).exists()})
    assert not missing, f"{name}: links to files the build lacks: {missing[:10]}"
    if name == "api-recurrent":
        assert any("/_modules/npseq/functional/recurrent.html" in h for h in local), "no [source] links"

    # Nothing left the machine (the resolver fails every host name anyway).
    requests = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name);")
    assert all(r.startswith(("file:", "data:", "blob:")) for r in requests), \
        [r for r in requests if not r.startswith(("file:", "data:", "blob:"))]

    # Screenshots: the top of the page, and the first figure or display formula further down. Neither may be
    # blank: a screenshot is only worth looking at if it shows the page.
    browser.execute_script("window.scrollTo({top: 0, left: 0, behavior: 'instant'});")
    _save(_viewport(browser), [folder / f"{name}.png" for folder in screenshots], name)
    element = browser.execute_script("return document.querySelector(arguments[0]);", DETAIL[name])
    assert element is not None, f"{name}: nothing matches {DETAIL[name]!r} to show in detail"
    _save(_crop(browser, element), [folder / f"{name}-detail.png" for folder in screenshots], f"{name} (detail)")


def _viewport(browser):
    """What the window shows now, as an ``(H, W, channels)`` float array, after the page has painted."""
    import matplotlib.image

    browser.execute_async_script("const done = arguments[arguments.length - 1];"
                                 "requestAnimationFrame(() => requestAnimationFrame(() => done(true)));")
    return matplotlib.image.imread(io.BytesIO(browser.get_screenshot_as_png()), format="png")


def _crop(browser, element):
    """``element`` scrolled to the top of the window, cut out of a screenshot of the window.

    (Selenium's own element screenshot clips the capture, and Chromium then drew the next page's window
    screenshot blank: the crop is made here instead.)"""
    browser.execute_script("arguments[0].scrollIntoView({block: 'start', behavior: 'instant'});", element)
    pixels = _viewport(browser)
    left, top, right, bottom, scale = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return [r.left, r.top, r.right, r.bottom, window.devicePixelRatio];", element)
    rows = slice(max(0, int(top * scale)), min(pixels.shape[0], int(bottom * scale) + 1))
    columns = slice(max(0, int(left * scale)), min(pixels.shape[1], int(right * scale) + 1))
    return pixels[rows, columns]


def _save(pixels, paths, what):
    """Write ``pixels`` to each path, once they are known to show something (not one flat colour)."""
    import matplotlib.image

    assert pixels.shape[0] > 10 and pixels.shape[1] > 10, f"{what}: a screenshot of {pixels.shape[:2]} pixels"
    assert float(pixels[..., :3].std()) > 0.02, f"{what}: the screenshot is blank (one flat colour)"
    for path in paths:
        matplotlib.image.imsave(path, pixels)


# ------------------------------------------------------------------------------------------- the Chinese edition

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
CHINESE_PAGES = {"zh-tutorial-03": "tutorials/03_gates.html", "zh-tutorial-06": "tutorials/06_attention.html",
                 "zh-glossary": "glossary.html"}
CHINESE_DETAIL = {"zh-tutorial-03": ".cell_output img", "zh-tutorial-06": ".cell_output img", "zh-glossary": "table"}
TRANSLATED_SHARE = 0.9  # of a tutorial's paragraphs of prose: the rest are names, numbers and maths alone

PROSE_OF_THE_PAGE = """
const prose = Array.from(document.querySelectorAll('article p, article h1, article h2, article h3, article li'))
  .filter(e => !e.closest('.cell_output, pre, table, nav'))
  .map(e => { const c = e.cloneNode(true);
              c.querySelectorAll('mjx-container, code, .math, .headerlink').forEach(x => x.remove());
              return c.textContent.trim(); })
  .filter(text => /[A-Za-z]{4,}/.test(text) || /[\\u3400-\\u9fff]/.test(text));
return {lang: document.documentElement.lang, title: document.querySelector('h1').textContent, prose: prose,
        alts: Array.from(document.querySelectorAll('article img')).map(i => i.alt),
        other: Array.from(document.querySelectorAll('.book-languages a')).map(a => [a.textContent, a.href])};
"""


@pytest.mark.parametrize("page", TUTORIAL_PAGES, ids=lambda page: page.split("/")[-1][:2])
def test_chinese_tutorial_page_is_in_chinese(site, browser, page):
    """The Chinese page says its language, and its title, prose and figures' alt texts are in Chinese (code,
    outputs and maths stay as they are); it links to the English page, which links back."""
    browser.get((site / CHINESE / page).as_uri())
    found = browser.execute_script(PROSE_OF_THE_PAGE)
    assert found["lang"] == "zh-CN", f"{page}: <html lang={found['lang']!r}>"
    assert CJK.search(found["title"]), f"{page}: an English title: {found['title']!r}"
    english = [text for text in found["prose"] if not CJK.search(text)]
    assert len(english) <= (1 - TRANSLATED_SHARE) * len(found["prose"]), \
        f"{page}: {len(english)} of {len(found['prose'])} paragraphs in English: {english[:5]}"
    assert all(CJK.search(alt) for alt in found["alts"]), f"{page}: English alt texts: {found['alts']}"
    assert [name for name, _ in found["other"]] == ["English"], found["other"]
    assert _local_file(site, found["other"][0][1]) == (site / page).resolve()
    browser.get((site / page).as_uri())
    back = browser.execute_script(PROSE_OF_THE_PAGE)["other"]
    assert [name for name, _ in back] == ["中文"] and _local_file(site, back[0][1]) == (site / CHINESE / page).resolve()


MARK_CHINESE_TEXT = """
// Each visible element whose own text (its child text nodes) holds Chinese characters gets their number.
let marked = 0;
for (const element of document.querySelectorAll('body *')) {
  const own = Array.from(element.childNodes).filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.data).join('');
  const count = (own.match(/[\\u3400-\\u9fff\\uf900-\\ufaff]/g) || []).length;
  if (count && element.getClientRects().length && getComputedStyle(element).visibility === 'visible') {
    element.setAttribute('data-chinese', String(count));
    marked += 1;
  }
}
return marked;
"""


def _chinese_font_families():
    """The families that fontconfig says cover Chinese (``fc-list :lang=zh``): the fonts that can draw it."""
    listed = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout
    return {name.strip() for line in listed.splitlines() for name in line.split(",") if name.strip()}


def _glyphs_missing(browser):
    """Elements whose Chinese characters the browser drew with a font that has no Chinese (as empty boxes): for
    each element marked by MARK_CHINESE_TEXT, Chromium's own account (CSS.getPlatformFontsForNode) of the glyphs
    each font drew must give fonts that cover Chinese at least as many glyphs as it has Chinese characters."""
    families = _chinese_font_families()
    if not families:  # fc-list :lang=zh lists none
        pytest.skip(skip_reason("cjk-font"))
    assert browser.execute_script(MARK_CHINESE_TEXT) > 0, "no Chinese text on the page"
    browser.execute_cdp_cmd("DOM.enable", {})
    browser.execute_cdp_cmd("CSS.enable", {})
    root = browser.execute_cdp_cmd("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
    missing = []
    for node in browser.execute_cdp_cmd("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-chinese]"})[
            "nodeIds"]:
        attributes = browser.execute_cdp_cmd("DOM.getAttributes", {"nodeId": node})["attributes"]
        count = int(attributes[attributes.index("data-chinese") + 1])
        fonts = browser.execute_cdp_cmd("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
        drawn = sum(font["glyphCount"] for font in fonts if font["familyName"] in families)
        if drawn < count:
            missing.append(f"{count} Chinese characters, {drawn} drawn by a Chinese font: "
                           f"{[(font['familyName'], font['glyphCount']) for font in fonts]}")
    return missing


@pytest.mark.parametrize("name", list(CHINESE_PAGES))
def test_chinese_page_reads_in_chromium(site, browser, screenshots, name):
    """A Chinese tutorial page with maths and figures, and the glossary: lang zh-CN, the maths typeset, every image
    loaded, every Chinese character drawn by a font that has it; screenshots of the top and of a figure (or the
    glossary's table)."""
    page = site / CHINESE / CHINESE_PAGES[name]
    assert page.is_file(), page
    browser.get(page.as_uri())
    assert browser.execute_script("return document.documentElement.lang;") == "zh-CN"
    if name != "zh-glossary":  # a page without maths loads no MathJax
        assert _wait_for_mathjax(browser), f"{name}: MathJax did not load or typeset"
        assert browser.execute_script("return document.querySelectorAll('mjx-container').length;") > 0
        assert browser.execute_script("return document.querySelectorAll('mjx-merror, [data-mjx-error]').length;") == 0
        text = browser.execute_script("return document.body.innerText;")
        assert not [tex for tex in TEX_LEFT if tex in text], f"{name}: TeX left in the text"
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1]; Array.from(document.images).forEach(i => i.scrollIntoView());"
        "Promise.all(Array.from(document.images).map(i => i.decode().catch(() => null))).then(() => done(true));")
    broken = browser.execute_script(
        "return Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src);")
    assert not broken, f"{name}: images that did not load: {broken}"
    missing = _glyphs_missing(browser)
    assert not missing, f"{name}: Chinese text drawn without a Chinese font: {missing[:5]}"
    browser.execute_script("window.scrollTo({top: 0, left: 0, behavior: 'instant'});")
    _save(_viewport(browser), [folder / f"{name}.png" for folder in screenshots], name)
    element = browser.execute_script("return document.querySelector(arguments[0]);", CHINESE_DETAIL[name])
    assert element is not None, f"{name}: nothing matches {CHINESE_DETAIL[name]!r} to show in detail"
    _save(_crop(browser, element), [folder / f"{name}-detail.png" for folder in screenshots], f"{name} (detail)")


def test_the_glyph_check_sees_a_missing_chinese_font(site, browser, monkeypatch):
    """The glyph check is not blind: told that no installed font covers Chinese but a Latin one, it finds every
    Chinese character of the glossary drawn by a font without Chinese."""
    browser.get((site / CHINESE / "glossary.html").as_uri())
    monkeypatch.setattr(sys.modules[__name__], "_chinese_font_families", lambda: {"DejaVu Sans"})
    assert len(_glyphs_missing(browser)) > 20
