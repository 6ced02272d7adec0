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
  saved as a PNG under :data:`FIGURES` (:func:`figure_path`) and then passed to
  :func:`show`, which displays it inline in a notebook and prints its path in a script.
"""
from __future__ import annotations

import inspect
import os
import pathlib

FAST = os.environ.get("NPSEQ_FAST") == "1"

FIGURES = pathlib.Path(os.environ.get("NPSEQ_FIGURES", pathlib.Path(__file__).resolve().parent / "figures"))
FIGURES.mkdir(parents=True, exist_ok=True)

if "MPLBACKEND" not in os.environ:
    # A notebook kernel imports matplotlib_inline (or ipykernel) before any cell runs; a script does not.
    import sys
    if not any(name in sys.modules for name in ("ipykernel", "matplotlib_inline")):
        import matplotlib
        matplotlib.use("Agg")


def figure_path(name: str) -> str:
    """The path of figure ``name`` (e.g. ``"zipf.png"``) in :data:`FIGURES`, as a str."""
    return str(FIGURES / name)


def show(path) -> str:
    """Display the PNG at ``path`` inline when running in a Jupyter kernel; otherwise print its path."""
    path = str(path)
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and getattr(shell, "kernel", None) is not None:
        from IPython.display import Image, display
        display(Image(filename=path))
    else:
        print(f"figure: {path}")
    return path


__all__ = ["FAST", "FIGURES", "figure_path", "show"]


def code(function):
    """A function's source without its docstring (the equations are in the text)."""
    source = inspect.getsource(function)
    if function.__doc__ is None:
        return source
    head, _, body = source.split('"""', 2)
    return head.rstrip() + body
