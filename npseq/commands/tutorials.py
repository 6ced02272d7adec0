"""``npseq tutorials --notebooks DIR``: write the tutorials as Jupyter notebooks (and run them with ``--execute``).

The notebooks are :mod:`npseq.tutorials`'; this module parses and prints.
"""
from __future__ import annotations

import os
import sys
import time

from ..tutorials import FAST_COST, FAST_ENV, FULL_COST, HELPER, INSTALL_HINT, execute_notebook, write_notebooks
from .arguments import EXIT_INTERRUPTED, positive, say

DESCRIPTION = ("Write the tutorials as Jupyter notebooks into a folder they run from (with their helper "
               "module), and optionally run them. Needs the notebooks extra: " + INSTALL_HINT + ".")


def add_arguments(parser) -> None:
    """The options of ``npseq tutorials``."""
    parser.add_argument("--notebooks", required=True, metavar="DIR",
                        help="the folder to write the .ipynb files to (made if missing)")
    parser.add_argument("--only", nargs="+", metavar="NN",
                        help="these tutorials, by number (02) or file name (02_rnn_by_hand); default: all")
    parser.add_argument("--force", action="store_true",
                        help="replace notebooks (and the helper) that hold other content: edits in them are lost "
                             "(not needed over notebooks as npseq's own --execute left them)")
    parser.add_argument("--execute", action="store_true",
                        help=f"then run each notebook and save its outputs, by default in full mode: {FULL_COST}")
    parser.add_argument("--fast", action="store_true",
                        help=f"with --execute: run them in fast mode (as {FAST_ENV}=1 in the environment does): "
                             f"{FAST_COST}")
    parser.add_argument("--timeout", type=positive(float), default=None, metavar="S",
                        help="with --execute: the most seconds one cell may run (default: no limit)")


def run(args) -> int:
    """Write (and with ``--execute`` run) the notebooks as ``npseq tutorials`` parsed it; return the exit code."""
    written = write_notebooks(args.notebooks, args.only, force=args.force)
    names = ", ".join(os.path.basename(path) for path in written)
    say(f"wrote {_count(written)} to {args.notebooks}: {names} (and {HELPER}, the helper they import)")
    code = _execute(args, written) if args.execute else 0
    if code != EXIT_INTERRUPTED:
        say(f"open them with: jupyter lab {args.notebooks}   (JupyterLab comes with {INSTALL_HINT})")
    return code


def _count(paths) -> str:
    """``"1 notebook"``, ``"11 notebooks"``."""
    return f"{len(paths)} notebook{'s' if len(paths) != 1 else ''}"


def _execute(args, written) -> int:
    """Run the notebooks ``written``, in the mode ``args`` chose, saying what it costs and how each ran; return 0,
    1 if a cell raised, or 130 after Ctrl-C (with one line on stderr)."""
    fast = args.fast or os.environ.get(FAST_ENV) == "1"
    why = f" ({FAST_ENV}=1 in the environment)" if fast and not args.fast else ""
    other = "" if fast else "; --fast runs them in fast mode"
    say(f"running {_count(written)} in {'fast' if fast else 'full'} mode{why}: {FAST_COST if fast else FULL_COST}"
        f"{other}")
    start, failed = time.perf_counter(), 0
    for number, path in enumerate(written, start=1):
        result = execute_notebook(path, args.timeout, fast=fast)
        if result.interrupted:
            rest = f"; {_count(written[number:])} after it did not run" if number < len(written) else ""
            say(f"\nnpseq tutorials: interrupted in {os.path.basename(path)}, saved with its outputs so far{rest}",
                file=sys.stderr)
            return EXIT_INTERRUPTED
        verdict = "ran" if result.error is None else f"FAILED at {result.error}"
        say(f"{os.path.basename(path)}: {verdict} in {result.seconds:.1f} s (saved with its outputs)")
        failed += result.error is not None
    say(f"ran {_count(written)} in {time.perf_counter() - start:.0f} s, {'fast' if fast else 'full'} mode")
    return 1 if failed else 0
