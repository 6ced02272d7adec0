"""``npseq tutorials --notebooks DIR``: write the tutorials as Jupyter notebooks (and run them with ``--execute``).

The notebooks are :mod:`npseq.tutorials`'; this module parses and prints.
"""
from __future__ import annotations

import os

from ..tutorials import HELPER, INSTALL_HINT, execute_notebook, write_notebooks
from .arguments import positive, say

HELP = "write the tutorials as Jupyter notebooks (and run them)"
DESCRIPTION = ("Write the tutorials as Jupyter notebooks into a folder they run from (with their helper "
               "module), and optionally run them. Needs the notebooks extra: " + INSTALL_HINT + ".")


def add_arguments(parser) -> None:
    """The options of ``npseq tutorials``."""
    parser.add_argument("--notebooks", required=True, metavar="DIR",
                        help="the folder to write the .ipynb files to (made if missing)")
    parser.add_argument("--only", nargs="+", metavar="NN",
                        help="these tutorials, by number (02) or file name (02_rnn_by_hand); default: all")
    parser.add_argument("--force", action="store_true",
                        help="replace notebooks (and the helper) that hold other content: edits in them are lost")
    parser.add_argument("--execute", action="store_true",
                        help="then run each notebook and save its outputs (NPSEQ_FAST=1: fast mode)")
    parser.add_argument("--timeout", type=positive(float), default=None, metavar="S",
                        help="with --execute: the most seconds one cell may run (default: no limit)")


def run(args) -> int:
    """Write (and with ``--execute`` run) the notebooks as ``npseq tutorials`` parsed it; return the exit code."""
    written = write_notebooks(args.notebooks, args.only, force=args.force)
    names = ", ".join(os.path.basename(path) for path in written)
    say(f"wrote {len(written)} notebook{'s' if len(written) != 1 else ''} to {args.notebooks}: {names} "
          f"(and {HELPER}, the helper they import)")
    failed = 0
    for path in written if args.execute else ():
        result = execute_notebook(path, args.timeout)
        verdict = "ran" if result.error is None else f"FAILED at {result.error}"
        say(f"{os.path.basename(path)}: {verdict} in {result.seconds:.1f} s (saved with its outputs)")
        failed += result.error is not None
    say(f"open them with: jupyter lab {args.notebooks}   (JupyterLab comes with {INSTALL_HINT})")
    return 1 if failed else 0

