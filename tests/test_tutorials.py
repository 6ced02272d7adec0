"""The tutorials (tutorials/NN_*.py, percent-format notebooks) run top to bottom in fast mode and draw figures.

Every ``tutorials/[0-9][0-9]_*.py`` is found automatically. Each is run once in the suite: those of
``tutorial_runs.AS_NOTEBOOKS`` as notebooks by tests/test_notebooks.py where the notebooks extra is
installed, which makes the checks below too, and every other one here, as a script in
a fresh process with ``NPSEQ_FAST=1`` (tiny sizes), its figures sent to a temporary
folder, ``MPLBACKEND`` unset (the tutorial must pick a headless backend itself) and
one BLAS thread; it must exit with status 0 and write at least one readable,
non-blank PNG. The source must be a jupytext percent file whose Markdown cells are
comments and which ends its arc with an "Exercises" cell. The environment passes
through, so the d2l tutorial trains on the real corpus where ``$NPSEQ_FRA`` or npseq's
cache (``npseq data fetch fra-eng``) holds it, and skips those cells elsewhere.
"""
import ast
import inspect
import os
import re
import subprocess
import sys
import textwrap

import pytest
from tutorial_runs import COLUMN_PX, RAW_TEX, TUTORIALS_DIR, as_scripts, check_png

TUTORIALS = sorted(TUTORIALS_DIR.glob("[0-9][0-9]_*.py"))
# Fast mode aims at well under 30 s per tutorial; the margin absorbs a busy shared machine.
TIMEOUT_S = 180
CELL_MARKER = re.compile(r"^# %%(?P<rest>.*)$")
EXERCISES_HEADING = re.compile(r"^#\s+#{1,6}\s+Exercises\b", re.IGNORECASE)


def _cells(source: str) -> list:
    """``[(kind, lines)]`` of a percent-format file: kind is "markdown" or "code"; text before the first marker is
    returned as kind "preamble"."""
    cells, kind, lines = [], "preamble", []
    for line in source.splitlines():
        match = CELL_MARKER.match(line)
        if match:
            if kind != "preamble" or any(l.strip() for l in lines):
                cells.append((kind, lines))
            kind = "markdown" if "[markdown]" in match.group("rest") else "code"
            lines = []
        else:
            lines.append(line)
    cells.append((kind, lines))
    return cells


def test_there_are_tutorials():
    assert TUTORIALS, f"no tutorials/[0-9][0-9]_*.py found in {TUTORIALS_DIR}"


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_is_a_percent_notebook_with_exercises(path):
    source = path.read_text(encoding="utf-8")
    ast.parse(source, filename=str(path))
    assert source.startswith("# %%"), f"{path.name}: expected the first line to be a '# %%' cell marker"
    cells = _cells(source)
    kinds = [kind for kind, _ in cells]
    assert "preamble" not in kinds, f"{path.name}: text before the first cell marker"
    assert "markdown" in kinds and "code" in kinds, f"{path.name}: expected Markdown and code cells, got {set(kinds)}"
    for index, (kind, lines) in enumerate(cells):
        if kind == "markdown":
            stray = [line for line in lines if line.strip() and not line.startswith("#")]
            assert not stray, f"{path.name}: Markdown cell {index} has lines that are not comments: {stray[:2]}"
    exercises = [lines for kind, lines in cells if kind == "markdown"
                 and any(EXERCISES_HEADING.match(line) for line in lines)]
    assert exercises, f"{path.name}: expected a Markdown cell with an 'Exercises' heading"
    items = [line for line in exercises[-1] if re.match(r"^#\s+(?:\d+\.|[-*])\s+\S", line)]
    assert items, f"{path.name}: the Exercises cell has no list items"


CLAIMS = {
    # What a figure of a trained model shows, as the number the tutorial prints beside it (what, the printed line,
    # the least it may print). Held in fast mode, the mode the book is built in, so that no figure of the book goes
    # back to noise unnoticed (06's maps once did: vertical stripes under a paragraph on monotone bands).
    "00_sequence_models.py": [
        ("MLP, 16 steps ahead: drifting off the wave",
         r"^MLP: error against the signal, in % of the signal's variance: .*k = 16: (\d+)%", 15),
        ("MLP, 64 steps ahead: no longer on the wave",
         r"^MLP: error against the signal, in % of the signal's variance: .*k = 64: (\d+)%", 50),
        ("RNN, 16 steps ahead: drifting off the wave",
         r"^RNN: error against the signal, in % of the signal's variance: .*k = 16: (\d+)%", 15),
        ("RNN, 64 steps ahead: no longer on the wave",
         r"^RNN: error against the signal, in % of the signal's variance: .*k = 64: (\d+)%", 50),
    ],
    "05_encoder_decoder.py": [
        ("early on, greedy falls behind the teacher-forced reading later in the output",
         r"^epoch \d+, greedy below teacher-forced by \d+ points on positions \d+-\d+, by (\d+) points", 15),
        ("at the end, the exact-match rate is high", r"^epoch \d+: exact match (\d+)%", 85),
        ("after a first mistake, greedy far below teacher-forced", r"^epoch \d+: exact match .*, (\d+) points lower",
         30),
        ("greedy after a first mistake falls late in training",
         r"^greedy after a first mistake: .*, then down (\d+) points", 20),
        ("the mistakes left mostly change the length", r"^final model: .* \((\d+)%\) with a wrong length", 55),
    ],
    "04_char_language_model.py": [
        ("all four GRUs end below the trigram", r"^all four end below the trigram: .*, (\d+)% below the trigram's", 5),
        ("random T = 5 stays far behind", r"^random T = 5 stays far behind: .*, (\d+)% above random T = 35's", 12),
        ("random T = 5: training perplexity high too",
         r"^random T = 5's training perplexity .*, (\d+)% above random T = 35's", 20),
        ("sequential T = 5: falls fastest in epoch 1",
         r"^sequential T = 5 falls fastest in epoch 1: .*, (\d+)% below the next lowest", 8),
        ("sequential T = 5: ends clearly worse than T = 35",
         r"^sequential T = 5 ends clearly worse: .*, (\d+)% above sequential T = 35's", 5),
        ("random and sequential T = 35: end close",
         r"^random and sequential T = 35 end close: .* the lower (\d+)\.\d% of the higher", 95),
        ("sequential T = 35: the lower training perplexity",
         r"^sequential T = 35 has the lower training perplexity: .*, (\d+)% below random T = 35's", 3),
    ],
    "06_attention.py": [
        ("numbers: a monotone band", r"^numbers\s+monotone steps (\d+)%", 90),
        ("dates, year first: the year read on the year", r"^dates, year first .* put (\d+)% .*positions 0-3 of", 80),
        ("dates, year last: the year read on the year", r"^dates, year last .* put (\d+)% ", 80),
        ("dates, year last: the year at the source's end", r"^dates, year last .* positions (\d+)-\d+ of", 5),
        ("reverse: the anti-diagonal", r"^reverse\s+weight on the reversal or one position to its right (\d+)%", 70),
        ("Bahdanau, 8 tokens: soft, reaching one to the right", r"^Bahdanau, 8 tokens .* to its right (\d+)%", 25),
        ("Luong, 8 tokens: sharp on the reversal", r"^Luong, 8 tokens\s+weight on the exact reversal (\d+)%", 70),
        ("Luong, 10 tokens: sharp on the reversal", r"^Luong, 10 tokens\s+weight on the exact reversal (\d+)%", 70),
    ],
    "07_search.py": [
        ("greedy decoding misses the optimum on most sources",
         r"^optimum missed by greedy decoding on (\d+)% of the sources", 60),
        ("a wider beam misses it less often", r"^optimum missed by greedy .* \((\d+) points fewer\)", 15),
        ("even a beam of 4 misses some", r"^optimum missed by greedy .*, by a beam of 4 on (\d+)%", 20),
        ("a beam can end below greedy decoding", r"^a beam ends below greedy decoding on (\d+) of the", 1),
        ("alpha = 0 stops short of the reference length", r"^chosen length: .* \((\d+) short of the reference", 1),
        ("a large alpha goes past it", r"^chosen length: .* \((\d+) past it\)", 1),
        ("alpha = 0: shorter than the references on average", r"^mean chosen length (\d+)% below", 5),
        ("a large alpha: longer than the references on average", r"^mean chosen length .*, (\d+)% above", 10),
        ("on the real model, beam search beats greedy decoding",
         r"^the best search .* and (\d+) exact-match points over greedy", 2),
    ],
    "09_transformer.py": [
        ("reverse, Bahdanau: the anti-diagonal", r"^  weight on the reversal or one position to its right: Bahdanau "
                                                r"(\d+)%", 70),
        ("reverse, the last block averaged: as sharp", r"^  weight on the reversal .* the last block's heads averaged "
                                                     r"(\d+)%", 70),
        *[(f"reverse, block 2, head {head}: the anti-diagonal", r"^  weight on the reversal[^\n]*\n.*\n  block 2, "
           r"heads 1-4: " + r"\d+%, " * (head - 1) + r"(\d+)%", 60) for head in range(1, 5)],
        ("dates, Bahdanau: the year on the year", r"^  weight of the year's output digits .*: Bahdanau (\d+)%", 80),
    ],
    "10_captions.py": [
        ("overfit: the first-step loss falls towards zero", r"^first_step: loss .* on 16 captions, (\d+) times lower",
         100),
        ("overfit: the every-step loss too", r"^every_step: loss .* on 16 captions, (\d+) times lower", 50),
        ("first step: most unseen scenes captioned exactly", r"^first_step: BLEU [\d.]+, exact match (\d+)\.\d%", 50),
        ("every step: most unseen scenes captioned exactly", r"^every_step: BLEU [\d.]+, exact match (\d+)\.\d%", 50),
        ("the two modes end close", r"^the lower BLEU is (\d+)% of the higher", 90),
        ("untrained first step: two orders of magnitude from the first word to the last",
         r"^first_step untrained: the last step sends 1/(\d+) of", 100),
        ("untrained every step: level", r"^every_step untrained: the smallest step sends (\d+)% of", 40),
        ("trained first step: shapes and relation far above 'a' and the end",
         r"^first_step trained: .* send (\d+) times the gradient of", 10),
        ("trained first step: colours little", r"^first_step trained: .*, (\d+) times that of steps 1, 5", 4),
        ("trained every step: shapes and relation far above 'a' and the end",
         r"^every_step trained: .* send (\d+) times the gradient of", 10),
        ("trained every step: colours little", r"^every_step trained: .*, (\d+) times that of steps 1, 5", 4),
        ("trained: the two curves nearly meet", r"^at step 6, first step / every step: .*, (\d+)% trained", 50),
        ("the captions shown are mostly right", r"^(\d+) of the 6 captions shown match", 3),
    ],
    "11_deep_bidirectional.py": [
        ("RNN stack: far back in time the bottom layer gets more than the top",
         r"^RNN: .*at step 1 the bottom layer gets (\d+)% of the top layer's", 100),
        ("GRU stack: a layer down costs more than a step back", r"^GRU: .*costs as much as (\d+)\.\d steps back", 2),
        ("GRU with remembering gates: a layer down costs tens of steps back",
         r"^GRU, z biased \+2: .*costs as much as (\d+)\.\d steps back", 10),
        ("GRU with remembering gates: the smallest gradient at the loss's own step",
         r"^GRU, z biased \+2: .*reaches layer \d at step (\d+)", 25),
        ("the bidirectional LM's teacher-forced perplexity far below the unidirectional one's",
         r"^bidirectional LM: teacher-forced .* the bidirectional one's is (\d+)% below", 40),
        ("read as it generates, the bidirectional LM several times worse",
         r"^read one character at a time, .* is [\d.]+: (\d+)\.\d times the unidirectional", 2),
        ("read as it generates, the bidirectional LM worse than uniform guessing",
         r"^read one character at a time, .*, and (\d+)% of uniform guessing's", 100),
        ("the bidirectional encoder: higher exact match over the epochs",
         r"^averaged over the \d+ epochs, exact match: .*, (\d+)\.\d points higher", 5),
        ("the bidirectional encoder reaches 90% exact match sooner",
         r"^first epoch at 90% exact match or more: .*the bidirectional encoder is (\d+) epochs? ahead", 1),
    ],
    "12_attention_pooling.py": [
        ("the kernel regression fits better than average pooling",
         r"^fit error of the non-parametric kernel regression: [\d.]+ \((\d+)% lower than average pooling\)", 30),
        ("non-parametric: the weights spread over many keys", r"^non-parametric: .*spread over about (\d+)\.\d keys",
         15),
        ("the formula for dL/dw agrees with finite differences",
         r"^relative error against finite differences: formula \d\.\de-(\d+),", 8),
        ("training lowers the leave-one-out loss", r"^the loss fell by (\d+)% in 5 steps", 40),
        ("the learned width fits better than w = 1", r"^fit error: .*parametric [\d.]+ \((\d+)% lower than the "
                                                     r"non-parametric\)", 50),
        ("parametric: the weights on the nearest keys", r"^parametric: the 3 nearest keys hold (\d+)% ", 70),
    ],
}


def unmet_claims(name: str, printed: str) -> list:
    """The claims of :data:`CLAIMS` for tutorial ``name`` that what it ``printed`` does not hold."""
    unmet = []
    for what, pattern, least in CLAIMS.get(name, ()):
        found = re.findall(pattern, printed, flags=re.MULTILINE)
        if len(found) != 1 or int(found[0]) < least:
            unmet.append(f"{what}: expected one line {pattern!r} printing at least {least}, got {found}")
    return unmet


def test_every_claim_is_a_line_its_tutorial_prints():
    """Cheap, and always run: a print reworded in a tutorial must be followed here."""
    for name, claims in CLAIMS.items():
        source = (TUTORIALS_DIR / name).read_text(encoding="utf-8")
        for what, pattern, _ in claims:
            words = re.sub(r"\\[sd]|[()+*^%\\]|\.\*|\d-\d", " ", pattern).split()
            assert all(word in source for word in words if word.isalpha()), (name, what)


@pytest.mark.slow
@pytest.mark.parametrize("path", as_scripts(), ids=lambda p: p.name)
def test_tutorial_runs_in_fast_mode(path, tmp_path):
    figures = tmp_path / "figures"
    env = dict(os.environ, NPSEQ_FAST="1", NPSEQ_FIGURES=str(figures), OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("MPLBACKEND", None)
    try:
        result = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{path.name}: still running after {TIMEOUT_S} s in fast mode\n"
                    f"{(exc.stdout or '')[-3000:] if isinstance(exc.stdout, str) else ''}")
    assert result.returncode == 0, (f"{path.name} exited with {result.returncode}\n--- stdout (tail)\n"
                                    f"{result.stdout[-3000:]}\n--- stderr (tail)\n{result.stderr[-5000:]}")
    left = RAW_TEX.search(result.stdout)
    assert left is None, (f"{path.name}: a script prints plain text, but LaTeX or reST maths was left in its "
                          f"output: ...{result.stdout[max(0, left.start() - 200):left.end() + 100]}...")
    here = [str(tmp_path), str(TUTORIALS_DIR.parent)]  # a script names its figures; nothing else names a folder
    leaked = [line for line in result.stdout.splitlines()
              if not line.startswith("figure: ") and any(folder in line for folder in here)]
    assert not leaked, f"{path.name} printed a path of this machine (a book page would show it): {leaked[:3]}"
    unmet = unmet_claims(path.name, result.stdout)
    assert not unmet, f"{path.name}: a figure no longer shows what its text says:\n" + "\n".join(unmet)
    pngs = sorted(figures.glob("**/*.png"))
    assert pngs, f"{path.name}: wrote no PNG into NPSEQ_FIGURES ({figures})"
    for png in pngs:
        check_png(png)


@pytest.fixture(scope="module")
def common(tmp_path_factory):
    """The tutorials' shared module ``_common`` (imported from the tutorials folder, figures elsewhere)."""
    import matplotlib

    os.environ.setdefault("NPSEQ_FIGURES", str(tmp_path_factory.mktemp("figures")))
    sys.path.insert(0, str(TUTORIALS_DIR))
    try:
        with matplotlib.rc_context():  # its font size is the tutorials' own, not the other tests'
            import _common
    finally:
        sys.path.remove(str(TUTORIALS_DIR))
    return _common


def test_save_figure_keeps_a_figure_to_the_books_column_and_its_body_text(common, tmp_path):
    """A figure wider than the column, or with a text smaller than the body's, is refused by name; one that fits
    is saved with its alt text, at the width the book's test expects."""
    import matplotlib
    from matplotlib.figure import Figure
    from PIL import Image

    assert common.COLUMN_PX == COLUMN_PX
    wide = Figure(figsize=(10.0, 3.0))
    with pytest.raises(ValueError, match=r"wide.png: the figure is 1000 px wide at 100 dpi; the book's column "
                                         r"holds 736"):
        common.save_figure(wide, "wide.png", alt="a figure that is too wide for the page")
    small = Figure(figsize=(7.0, 3.0))
    small.add_subplot().set_title("tiny title", fontsize=9)
    with pytest.raises(ValueError, match=r"texts smaller than the book's body text .*'tiny title' at 9 pt"):
        common.save_figure(small, "small.png", alt="a figure whose title is too small")
    with pytest.raises(ValueError, match="alt: expected a sentence"):
        common.save_figure(Figure(figsize=(7.0, 3.0)), "mute.png", alt=" ")
    with matplotlib.rc_context({"font.size": common.FONT_PT}):  # as in a tutorial
        fits = Figure(figsize=(7.2, 3.0))
        fits.add_subplot().plot([0, 1], [1, 0], label="a line")
        path = common.save_figure(fits, "fits.png", alt="A line falling from 1 to 0.")
    with Image.open(path) as png:
        assert png.size == (720, 300) and png.text["Description"] == "A line falling from 1 to 0."


def _reference_functions():
    from npseq.functional import recurrent

    return [getattr(recurrent, name) for name in recurrent.__all__ if callable(getattr(recurrent, name))
            and not isinstance(getattr(recurrent, name), type)]


def _attention_functions():
    """The attention code tutorials 6 and 9 print: the score pairs, the pooling pairs and their compositions."""
    from npseq.functional import attention, local_attention, pooling, scores, transformer

    modules = (scores, pooling, attention, local_attention)
    functions = [getattr(module, name) for module in modules for name in module.__all__
                 if callable(getattr(module, name)) and not isinstance(getattr(module, name), type)
                 and getattr(module, name).__module__ == module.__name__]
    return functions + [transformer.scaled_dot_product_attention_forward,
                        transformer.scaled_dot_product_attention_backward]


def test_printed_code_is_the_source_as_it_stands_in_its_file_but_its_docstring(common):
    """What a tutorial prints of a function is its file's text: the lines above and below the docstring, verbatim
    (the docstring's equations are shown rendered, by equations())."""
    for function in _reference_functions() + _attention_functions():
        shown = common.code(function)
        definition = ast.parse(shown).body[0]
        assert not (isinstance(definition.body[0], ast.Expr) and isinstance(definition.body[0].value, ast.Constant)), \
            (function.__name__, "the docstring is printed")
        source = textwrap.dedent(inspect.getsource(function)).splitlines(keepends=True)
        docstring = ast.parse("".join(source)).body[0].body[0]
        assert shown == "".join(source[:docstring.lineno - 1] + source[docstring.end_lineno:]), function.__name__
    shown = common.code(__import__("npseq").functional.recurrent.gru_step_forward)
    assert "r = sigmoid(x @ Wx[:, r_] + bx[r_] + prev_h @ Wh[:, r_] + bh[r_])" in shown


def _functional_references():
    """Every public function of the functional layer's references (not the fast twins fast_recurrent.py, fused.py,
    fast_attention.py, where speed comes first)."""
    import importlib

    names = ("activations", "attention", "conditioned", "decoder_step", "layers", "local_attention", "losses",
             "normalization", "pooling", "recurrent", "scores", "transformer")
    modules = [importlib.import_module(f"npseq.functional.{name}") for name in names]
    return [function for module in modules for name, function in vars(module).items()
            if not name.startswith("_") and inspect.isfunction(function) and function.__module__ == module.__name__]


def test_every_functional_reference_checks_its_arguments_in_one_call_at_its_top(common):
    """The body of a functional reference is its maths: the checks, if any, are one call, its first statement."""
    from npseq._checks import is_check_statement

    for function in _functional_references():
        body = ast.parse(common.code(function)).body[0].body  # code() leaves the docstring out
        checks = [index for index, statement in enumerate(body) if is_check_statement(statement)
                  and not isinstance(statement, ast.Assign)]
        assert checks in ([], [0]), (function.__name__, [ast.unparse(body[i]) for i in checks])


def test_printed_equations_are_readable_text(common):
    for function in _reference_functions():
        text = common.rest_to_text(__import__("inspect").getdoc(function).split("Args:")[0])
        for raw in ("\\", ":math:", ".. math::", "``", ":func:"):
            assert raw not in text, (function.__name__, raw, text)
    assert common.latex_to_text(r"W_{xr} + h_{t-1}^\top \odot \sigma(a_i)") == "W_xr + h_{t-1}ᵀ ⊙ σ(a_i)"
    assert common.latex_to_text(r"\frac{\partial L}{\partial h_t} = 1 - n^2") == "(∂L)/(∂h_t) = 1 - n²"
    assert common.latex_to_text(r"a \\ b") == "a \n b"


def test_in_a_notebook_equations_are_markdown_maths(common):
    doc = "Step.\n\n.. math::\n    a &= b \\\\\n    c &= d\n\nwith :math:`x_t` and ``code``."
    assert common.rest_to_markdown(doc) == ("Step.\n\n$$\\begin{aligned}a &= b \\\\ c &= d\\end{aligned}$$\n\n"
                                            "with $x_t$ and `code`.")


def test_show_leaves_no_path_under_a_figure(common, capsys, monkeypatch, tmp_path):
    """A cell ending in ``show(path)`` printed its return value, the figure's absolute path, under the figure."""
    picture = tmp_path / "figure.png"
    picture.write_bytes(b"")
    shown = []
    monkeypatch.setattr(common, "in_notebook", lambda: True)
    monkeypatch.setitem(sys.modules, "IPython.display", type(sys)("IPython.display"))
    sys.modules["IPython.display"].Image = lambda filename: filename
    sys.modules["IPython.display"].display = shown.append
    assert common.show(picture) is None and shown == [str(picture)]
    assert capsys.readouterr().out == ""
