"""Shared settings of the npseq tutorials: fast mode and the figure folder.

Every tutorial starts with ``from _common import FAST, figure_path, show``. A
tutorial run as a script finds this module because Python puts the script's own
folder first on ``sys.path``; in Jupyter or VS Code the notebook's folder is the
working directory, which works too.

* ``NPSEQ_FAST=1`` selects fast mode: tiny corpora, epochs and sizes, so that the
  test suite can run every tutorial in seconds. The numbers are then not meant to
  be meaningful; the full mode (the default) gives the results the text discusses.
* ``NPSEQ_FIGURES`` is the folder the figures are saved to (default
  ``tutorials/figures`` next to this file); it is created on import.
* Figures are drawn with matplotlib's headless ``Agg`` backend unless a backend was
  chosen already (``MPLBACKEND``, or a notebook's inline backend). Every figure is
  saved by :func:`save_figure` as a PNG under :data:`FIGURES`, with a sentence that
  says what it shows (the book's alt text), and then passed to :func:`show`, which
  displays it inline in a notebook and prints its path in a script.
* Figures are drawn for the book's column: at most :data:`COLUMN_PX` pixels wide, so
  that the page never scales them down, with no text smaller than the book's body
  text (:data:`BODY_TEXT_PX`). :func:`save_figure` refuses a figure that breaks either.
"""
from __future__ import annotations

import ast
import inspect
import os
import pathlib
import re
import textwrap

import matplotlib

FAST = os.environ.get("NPSEQ_FAST") == "1"

FIGURES = pathlib.Path(os.environ.get("NPSEQ_FIGURES", pathlib.Path(__file__).resolve().parent / "figures"))
FIGURES.mkdir(parents=True, exist_ok=True)

if "MPLBACKEND" not in os.environ:
    # A notebook kernel imports matplotlib_inline (or ipykernel) before any cell runs; a script does not.
    import sys
    if not any(name in sys.modules for name in ("ipykernel", "matplotlib_inline")):
        matplotlib.use("Agg")

DPI = 100           # pixels per inch of every saved figure
COLUMN_PX = 736     # the width of the book's text column (46em of 16 px): a figure no wider is shown at its own size
BODY_TEXT_PX = 16   # the book's body text; no text of a figure is smaller
FONT_PT = 12        # every text's default size, from tick labels to legends: 16.7 px at 100 dpi
matplotlib.rcParams["font.size"] = FONT_PT


def figure_path(name: str) -> str:
    """The path of figure ``name`` (e.g. ``"zipf.png"``) in :data:`FIGURES`, as a str."""
    return str(FIGURES / name)


def save_figure(figure, name: str, alt: str) -> str:
    """Save ``figure`` as the PNG ``name`` in :data:`FIGURES` at :data:`DPI`, with ``alt`` as its description.

    ``alt`` says what the figure shows, in a sentence a screen reader can read in its place; it is stored in the
    PNG's ``Description`` field, from which the book takes each image's alt text. Raises ``ValueError`` if the
    figure is wider than the book's column (:data:`COLUMN_PX`) or holds a text smaller than its body text
    (:data:`BODY_TEXT_PX`): either would be unreadable on the page. Returns the path, for :func:`show`.
    """
    if not alt.strip():
        raise ValueError(f"{name}: alt: expected a sentence saying what the figure shows, got {alt!r}")
    width_px = figure.get_figwidth() * DPI
    if width_px > COLUMN_PX:
        raise ValueError(f"{name}: the figure is {width_px:.0f} px wide at {DPI} dpi; the book's column holds "
                         f"{COLUMN_PX} px (figsize width at most {COLUMN_PX / DPI:.2f} in): split it or draw it narrower")
    from matplotlib.text import Text

    figure.draw_without_rendering()  # lays out the ticks, so that their labels exist
    least = BODY_TEXT_PX * 72 / DPI
    small = sorted({(text.get_fontsize(), text.get_text()) for text in figure.findobj(Text)
                    if text.get_visible() and text.get_text().strip() and text.get_fontsize() < least})
    if small:
        raise ValueError(f"{name}: texts smaller than the book's body text ({least:.1f} pt at {DPI} dpi): "
                         + ", ".join(f"{text!r} at {size:g} pt" for size, text in small[:5]))
    path = figure_path(name)
    figure.savefig(path, dpi=DPI, metadata={"Description": alt.strip()})
    return path


def show(path) -> None:
    """Display the PNG at ``path`` inline when running in a Jupyter kernel; otherwise print its path.

    It returns nothing: a cell ending in ``show(path)`` would otherwise print its value under the figure, a path of
    the machine that ran it.
    """
    path = str(path)
    if in_notebook():
        from IPython.display import Image, display
        display(Image(filename=path))
    else:
        print(f"figure: {path}")


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (where Markdown and math render) rather than as a script."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def code(function) -> str:
    """A function's source as it stands in its file, all but its docstring: the signature, the one call
    that checks its arguments, then the maths. (The docstring's equations are in the tutorial's text,
    or shown rendered by :func:`equations`; printed as code they would be raw LaTeX.)"""
    source = textwrap.dedent(inspect.getsource(function))
    first = ast.parse(source).body[0].body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines = source.splitlines(keepends=True)
        source = "".join(lines[:first.lineno - 1] + lines[first.end_lineno:])
    return source


def equations(function, until: str = "Args:") -> str:
    """The maths of a function's (or a class's) docstring, the part before ``until`` (by default its
    argument list), shown readably: rendered as Markdown with LaTeX in a notebook; as plain text
    with Unicode symbols in a script. Returns the text (empty in a notebook, where it is displayed
    instead)."""
    doc = inspect.getdoc(function).split(until)[0].strip()
    if in_notebook():
        from IPython.display import Markdown, display
        display(Markdown(rest_to_markdown(doc)))
        return ""
    return rest_to_text(doc)


_MATH_ROLE = re.compile(r":math:`([^`]*)`")
_LITERAL = re.compile(r"``([^`]*)``")
_REFERENCE = re.compile(r":(?:func|class|mod|meth|data):`~?([^`]*)`")


def _rest_blocks(doc: str):
    """``(kind, text)`` pieces of a reST docstring: ``"math"`` for a ``.. math::`` block (its
    LaTeX), ``"text"`` for everything else."""
    pieces, lines = [], doc.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.lstrip().startswith(".. math::"):
            indent = len(line) - len(line.lstrip())
            body = [line.split(".. math::", 1)[1].strip()]
            k += 1
            while k < len(lines) and (not lines[k].strip() or len(lines[k]) - len(lines[k].lstrip()) > indent):
                body.append(lines[k].strip())
                k += 1
            while not body[-1] and lines[k - 1].strip() == "":  # a blank line after the block stays text
                body.pop()
                k -= 1
            pieces.append(("math", " ".join(part for part in body if part)))
        else:
            pieces.append(("text", line))
            k += 1
    return pieces


def rest_to_markdown(doc: str) -> str:
    """A reST docstring as Markdown: ``.. math::`` blocks as display maths (aligned when they
    have several lines), ``:math:`` roles as inline maths, literals as code."""
    out = []
    for kind, text in _rest_blocks(doc):
        if kind == "math":
            aligned = "\\\\" in text or "&" in text
            out.append("$$\\begin{aligned}" + text + "\\end{aligned}$$" if aligned else "$$" + text + "$$")
        else:
            text = _MATH_ROLE.sub(lambda m: "$" + m.group(1) + "$", text)
            out.append(_REFERENCE.sub(lambda m: "`" + m.group(1).split(".")[-1] + "`", _LITERAL.sub(r"`\1`", text)))
    return "\n".join(out)


def rest_to_text(doc: str) -> str:
    """A reST docstring as plain text: each ``.. math::`` block indented, one equation a line,
    and all LaTeX turned into Unicode (``\\odot`` -> ⊙, ``W_{xr}`` -> W_xr, ``h^\\top`` -> hᵀ)."""
    out = []
    for kind, text in _rest_blocks(doc):
        if kind == "math":
            out.extend("    " + line.strip() for line in latex_to_text(text).split("\n") if line.strip())
        else:
            text = _MATH_ROLE.sub(lambda m: latex_to_text(m.group(1)), text)
            out.append(_REFERENCE.sub(lambda m: m.group(1).split(".")[-1], _LITERAL.sub(r"\1", text)))
    return "\n".join(out)


_SYMBOLS = {
    "odot": "⊙", "cdot": "·", "times": "×", "top": "ᵀ", "sigma": "σ", "sum": "Σ", "prod": "∏", "delta": "δ",
    "partial": "∂", "ell": "ℓ", "rho": "ρ", "eta": "η", "alpha": "α", "lambda": "λ", "theta": "θ", "mu": "μ",
    "ldots": "…", "dots": "…", "cdots": "⋯", "in": "∈", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "to": "→",
    "infty": "∞", "leftarrow": "←", "gets": "←", "rightarrow": "→", "Rightarrow": "⇒", "mapsto": "↦", "approx": "≈", "neq": "≠", "pm": "±", "tanh": "tanh", "exp": "exp", "log": "log", "max": "max",
    "min": "min", "qquad": "    ", "quad": "  ", ",": "", ";": " ", " ": " ", "!": "", "textstyle": "",
    "displaystyle": "", "left": "", "right": "", "big": "", "bigl": "", "bigr": "", "Big": "", "Bigl": "",
    "Bigr": "", "tfrac12": "½", "mathbb{R}": "ℝ", "omega": "ω", "epsilon": "ε", "pi": "π", "tau": "τ", "sim": "~",
}
_SUPERSCRIPTS = dict(zip("0123456789+-=()abcdefghijklmnoprstuvwxyzT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᵀ"))


def _braced(text: str, start: int):
    """The content of the brace group that opens at ``text[start]``, and the index after it."""
    depth = 0
    for end in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            return text[start + 1:end], end + 1
    return text[start + 1:], len(text)


def _subscript(content: str) -> str:
    """``_content`` for a name-like subscript (``W_hn``, ``h_prev``), else ``_{content}`` (``h_{t-1}``)."""
    content = content.strip()
    return "_" + content if content.isalnum() else "_{" + content + "}"


def _superscript(content: str) -> str:
    """``content`` in Unicode superscripts when every character has one (``n²``, ``daʰ``), else ``^{content}``."""
    content = content.strip()
    if content and all(ch in _SUPERSCRIPTS for ch in content):
        return "".join(_SUPERSCRIPTS[ch] for ch in content)
    return "^" + content if len(content) == 1 else "^{" + content + "}"


def latex_to_text(latex: str) -> str:
    """The LaTeX of npseq's docstrings as plain Unicode text (``\\\\`` becomes a line break)."""
    out, k = [], 0
    while k < len(latex):
        ch = latex[k]
        if latex.startswith("\\\\", k):
            out.append("\n")
            k += 2
        elif ch == "\\":
            name = re.match(r"[A-Za-z]+|.", latex[k + 1:]).group(0)
            k += 1 + len(name)
            if name in ("text", "operatorname", "mathrm", "mathbf", "mathit", "mathcal") and latex[k:k + 1] == "{":
                content, k = _braced(latex, k)
                out.append(latex_to_text(content))
            elif name == "frac" and latex[k:k + 1] == "{":
                numerator, k = _braced(latex, k)
                denominator, k = _braced(latex, k)
                out.append(f"({latex_to_text(numerator)})/({latex_to_text(denominator)})")
            elif name == "sqrt" and latex[k:k + 1] == "{":
                content, k = _braced(latex, k)
                out.append("√(" + latex_to_text(content) + ")")
            elif name == "tilde":
                argument = latex[k + 1] if latex[k:k + 1] == " " else latex[k]
                k += 2 if latex[k:k + 1] == " " else 1
                out.append(argument + "\u0303")
            elif name == "mathrel" and latex[k:k + 1] == "{":
                content, k = _braced(latex, k)
                out.append(latex_to_text(content))
            elif name == "mathbb" and latex[k:k + 1] == "{":
                content, k = _braced(latex, k)
                out.append({"R": "ℝ", "N": "ℕ", "Z": "ℤ"}.get(content, content))
            else:
                out.append(_SYMBOLS.get(name, name))
                if name == "partial" and latex[k:k + 1] == " ":  # \partial L reads ∂L
                    k += 1
        elif ch in "_^":
            k += 1
            if latex[k:k + 1] == "{":
                content, k = _braced(latex, k)
            elif latex[k:k + 1] == "\\":
                name = re.match(r"[A-Za-z]+", latex[k + 1:]).group(0)
                content, k = "\\" + name, k + 1 + len(name)
            else:
                content, k = latex[k:k + 1], k + 1
            rendered = latex_to_text(content)
            out.append(_subscript(rendered) if ch == "_" else "ᵀ" if rendered == "ᵀ" else _superscript(rendered))
        elif ch in "{}&":
            k += 1
        else:
            out.append(ch)
            k += 1
    return "".join(out)


__all__ = ["FAST", "FIGURES", "DPI", "COLUMN_PX", "BODY_TEXT_PX", "FONT_PT", "figure_path", "save_figure", "show", "code",
           "equations", "in_notebook"]
