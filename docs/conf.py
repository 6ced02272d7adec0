"""Sphinx configuration of the npseq book: the tutorials, executed, with the API and the notes.

Why Sphinx with MyST-NB: MyST-NB reads the tutorials as they are stored, jupytext
percent-format scripts, runs them at build time and keeps every output and figure inline
on the page; Sphinx's autodoc turns npseq's docstrings, whose equations are reST
``.. math::`` blocks and ``:math:`` roles, into rendered formulas next to a link to the
source (viewcode). Nothing is fetched from a CDN: MathJax comes from the
sphinx-mathjax-offline package and the theme (furo) ships its own assets, so the built
site reads offline.

Build (warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The Chinese edition is the same sources read through the gettext catalogs under
``docs/locale/zh_CN/LC_MESSAGES`` (one ``.po`` per page, written by sphinx-intl), built into a folder of its own
inside the English one, so that every page can link to its twin::

    python -m sphinx -W --keep-going -b html -D language=zh_CN docs docs/_build/html/zh_CN
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # autodoc imports npseq from this checkout

# The tutorials run in fast mode (tiny corpora and epochs): the whole book builds in minutes.
# The kernels MyST-NB starts inherit this process's environment.
os.environ["NPSEQ_FAST"] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")  # figures are saved as PNGs and shown with IPython.display

import npseq  # noqa: E402

project = "npseq"
author = "the npseq authors"
copyright = "the npseq authors, MIT licence"
release = version = npseq.__version__

extensions = [
    "myst_nb",                 # Markdown pages and the executed tutorials
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",     # the docstrings' "Args:" / "Returns:" sections
    "sphinx.ext.viewcode",     # a [source] link beside every function
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # serves MathJax 3 from _static/mathjax instead of a CDN
]

# The tutorials are the repository's own files: docs/tutorials is a symlink to ../tutorials.
# MyST-NB reads them through jupytext (py:percent) and executes them with the working
# directory set to their folder, where `from _common import ...` finds tutorials/_common.py.
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}
nb_kernel_rgx_aliases = {".*": "python3"}
nb_execution_mode = "force"        # run every tutorial at every build (fast mode)
nb_execution_timeout = 600         # per cell
nb_execution_raise_on_error = True  # a failing tutorial fails the build
nb_execution_show_tb = True
nb_render_markdown_format = "myst"  # text/markdown outputs (the equations of a docstring) get their maths rendered
nb_merge_streams = True
# The outputs a translator sees (tools/catalogs.py runs the gettext builder): MyST-NB knows no output for that builder
# unless told, and the figures' alt texts and the rendered docstrings are outputs.
nb_mime_priority_overrides = [("gettext", "text/markdown", 10), ("gettext", "image/png", 20),
                              ("gettext", "text/plain", 30)]

myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".py": "myst-nb"}
exclude_patterns = [
    "_build", "Thumbs.db", ".DS_Store", "conf.py", "_templates",
    "tutorials/_common.py", "tutorials/exercises", "tutorials/figures", "tutorials/__pycache__",
    "tutorials/*.md", "tutorials/*.ipynb",
]
templates_path = ["_templates"]

autosummary_generate = True
# The API pages autosummary writes are derived from the package alone: written afresh at every build, so that a page
# of a module renamed or removed since the last build cannot linger (and fail -W with a failed import).
shutil.rmtree(DOCS / "api" / "generated", ignore_errors=True)
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": True}
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

# Translation: one catalog per page (gettext_compact off), keyed by the English text alone (no source locations,
# which would change the catalogs at every edit above a paragraph). Sphinx compiles the .po files when it builds.
locale_dirs = ["locale/"]
gettext_compact = False
gettext_location = False
gettext_uuid = False
LANGUAGES = {"en": ("English", ""), "zh_CN": ("中文", "zh_CN/")}
"""Each edition's name in its own language and the folder it is built into, under the English site's root."""

html_theme = "furo"
html_sidebars = {"**": ["sidebar/brand.html", "languages.html", "sidebar/search.html", "sidebar/scroll-start.html",
                        "sidebar/navigation.html", "sidebar/scroll-end.html"]}
html_title = f"npseq {release}"
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_show_sourcelink = False
html_copy_source = False

suppress_warnings = ["mystnb.unknown_mime_type"]


def _figures_out_of_the_tree(app):
    """The tutorials save their PNGs under NPSEQ_FIGURES: keep them next to the doctrees of this build."""
    folder = pathlib.Path(app.doctreedir) / "npseq-figures"
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["NPSEQ_FIGURES"] = str(folder)


KERNEL_CONFIG = """\
# Written by the book's build (docs/conf.py) for the kernels that run the tutorials.
import logging


class NoLoopbackTransportNotice(logging.Filter):
    # The kernel talks to the build over TCP on localhost and says at every start that this traffic is not
    # encrypted. The build starts one kernel per tutorial on this machine and reads nothing from outside it: the
    # notice needs no answer, and a -W build must show only warnings that do.
    def filter(self, record):
        return "running over TCP without encryption" not in record.getMessage()


c.IPKernelApp.logging_config = {
    "filters": {"loopback": {"()": NoLoopbackTransportNotice}},
    "handlers": {"console": {"filters": ["loopback"]}},
}
"""


def _kernel_settings(app):
    """A private IPython folder for the tutorials' kernels, holding the one setting above."""
    folder = pathlib.Path(app.doctreedir) / "ipython"
    (folder / "profile_default").mkdir(parents=True, exist_ok=True)
    (folder / "profile_default" / "ipython_kernel_config.py").write_text(KERNEL_CONFIG, encoding="utf-8")
    os.environ["IPYTHONDIR"] = str(folder)


def _alt_texts_from_the_figures(app, doctree, docname):
    """Give each figure of a tutorial the alt text its PNG carries (``Description``, written by the tutorials'
    ``save_figure``), in place of the hashed file name, translated in an edition in another language; warn about a
    figure that has none, or no translation (``-W`` fails on it)."""
    from docutils import nodes
    from PIL import Image
    from sphinx.locale import init

    # The figures are drawn while the book builds, after Sphinx translated the page: their alt texts are looked up
    # in the page's catalog here (tools/catalogs.py extracts them with the tutorials executed).
    page = None
    if (app.config.language or "en") != "en":
        page, _ = init([str(DOCS / directory) for directory in app.config.locale_dirs], app.config.language,
                       docname)
    for image in doctree.findall(nodes.image):
        path = pathlib.Path(app.srcdir) / image["uri"]
        if image.get("alt") or path.suffix != ".png" or not path.is_file():
            continue
        with Image.open(path) as png:
            description = png.text.get("Description", "").strip()
        if not description:
            _warn(f"a figure without alt text: save it with save_figure(...) ({image['uri']})", image)
            continue
        image["alt"] = page.gettext(description) if page else description
        if app.builder.name == "gettext":
            image.uid = ""  # Sphinx's catalog takes only nodes that its read phase marked, as it does for toctrees
        if page and image["alt"] == description:
            _warn(f"a figure without a {app.config.language} alt text: translate it in locale/{app.config.language}"
                  f"/LC_MESSAGES/{docname}.po (python tools/catalogs.py book adds it):\n"
                  f"msgid {json.dumps(description, ensure_ascii=False)}", image)


def _warn(message, node):
    from sphinx.util import logging
    logging.getLogger(__name__).warning(message, location=node)


_DOTTED_NAME = re.compile(r">(npseq(?:\.\w+)+)<")


def _break_names_at_dots(app, pagename, templatename, context, doctree):
    """Let the sidebar break a module's name after a dot, never inside a word (``npseq.functional.<wbr>scores``)."""
    tree = context.get("furo_navigation_tree")
    if tree:
        context["furo_navigation_tree"] = _DOTTED_NAME.sub(lambda m: ">" + m.group(1).replace(".", ".<wbr>") + "<",
                                                           tree)


_PRE = re.compile(r"(<pre[^>]*>)(.*?)(</pre>)", re.S)
_TAG = re.compile(r"<(/?)span\b[^>]*>")


def _hanging_lines(match):
    """A ``<pre>`` block with each line in its own span, indented by its own indentation plus four columns where it
    wraps, so that a wrapped line of Python reads as the continuation of its line. Pygments closes its spans at
    each line's end; a block whose tags cross a line is left as it is."""
    opening, inner, closing = match.groups()
    lines = inner.split("\n")
    if lines[-1] == "":
        lines.pop()
    spans = []
    for line in lines:
        depth = 0
        for tag in _TAG.finditer(line):
            depth += -1 if tag.group(1) else 1
        if depth != 0:
            return match.group(0)
        indent = len(re.sub(r"<[^>]*>", "", line)) - len(re.sub(r"<[^>]*>", "", line).lstrip(" "))
        spans.append(f'<span class="line" style="--indent: {indent}ch">{line}\n</span>')
    return opening + "".join(spans) + closing


def _wrap_code_with_hanging_indents(app, pagename, templatename, context, doctree):
    """Code blocks wrap at the column's edge (book.css); this marks their lines for the hanging indent."""
    if "body" in context:
        context["body"] = _PRE.sub(_hanging_lines, context["body"])


def _links_to_the_other_editions(app, pagename, templatename, context, doctree):
    """``languages``: for the sidebar (``_templates/languages.html``), each edition's language tag, its name and the
    address of this page in it, relative to this page; the current edition's address is empty."""
    language = app.config.language or "en"
    to_root = "../" * pagename.count("/") + ("../" if LANGUAGES.get(language, ("", ""))[1] else "")
    context["languages"] = [(code.replace("_", "-"), name,
                             "" if code == language else f"{to_root}{folder}{pagename}.html")
                            for code, (name, folder) in LANGUAGES.items()]


def _skip_tuple_fields(app, what, name, obj, skip, options):
    """Leave out the fields of the named-tuple caches: their docstrings only say "Alias for field number k"."""
    if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True
    return None


def setup(app):
    app.connect("builder-inited", _figures_out_of_the_tree)
    app.connect("builder-inited", _kernel_settings)
    app.connect("doctree-resolved", _alt_texts_from_the_figures)
    app.connect("html-page-context", _break_names_at_dots, priority=900)  # after the theme built its tree
    app.connect("html-page-context", _wrap_code_with_hanging_indents)
    app.connect("html-page-context", _links_to_the_other_editions)
    app.connect("autodoc-skip-member", _skip_tuple_fields)
