"""The ``npseq`` command: one parser built from the subcommands in :mod:`npseq.commands`.

Each subcommand is a module of :mod:`npseq.commands` (``add_arguments``, ``run``);
:func:`npseq.commands.runner.run_command` runs it and owns the exit codes (2 for a user's
mistake, 130 after Ctrl-C, 141 for a closed pipe). Only ``npseq.__main__`` and the
``npseq`` console script import this module.

**Start-up.** ``import npseq`` loads nothing yet (its subpackages load when first used), and
the parser imports the module of the one command it runs, which imports what that command
needs: ``npseq translate`` and ``npseq train`` never load the course or matplotlib unless they
draw. All of it happens inside :func:`main`, so that Ctrl-C while NumPy and the models load is
the command's one line and exit code 130, as at any later moment.
"""
from __future__ import annotations

import argparse
import sys

from . import __version__
from .commands.arguments import EXIT_INTERRUPTED, Parser, say
from .commands.runner import COMMANDS, add_command, command_module, run_command


def _chosen_command(argv) -> str | None:
    """The subcommand a command line runs (``data`` runs ``data fetch``), or None: its first word that is not an
    option, if that names a command."""
    word = next((word for word in argv if not word.startswith("-")), None)
    return next((name for name in COMMANDS if name.split()[0] == word), None)


def build_parser(argv=()) -> argparse.ArgumentParser:
    """The parser of ``npseq``: every command listed, the options of the one ``argv`` runs (its module imported)."""
    chosen = _chosen_command(argv)
    parser = Parser(
        prog="npseq",
        description="Sequence models written by hand in NumPy: RNN, GRU, LSTM, attention, seq2seq.")
    parser.add_argument("--version", action="version", version=f"npseq {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        module = command_module(name) if name == chosen else None
        if name == "data fetch":
            data = commands.add_parser("data", help="get a dataset by name (d2l's fra-eng) into npseq's cache")
            actions = data.add_subparsers(dest="data_command", metavar="ACTION", required=True, parser_class=Parser)
            add_command(actions, "fetch", module)
            data.set_defaults(command_parser=data)
        else:
            add_command(commands, name, module)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)
        args, extra = parser.parse_known_args(argv)  # argument types may read files
    except KeyboardInterrupt:
        chosen = _chosen_command(argv)
        say(f"\nnpseq{' ' + chosen if chosen else ''}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if extra and args.command == "translate" and not any(word.startswith("-") for word in extra):
        args.sentences += extra  # sentences after the options: argparse leaves them over
    elif extra:
        getattr(args, "command_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return 0
    return run_command(args.command, args)


if __name__ == "__main__":
    sys.exit(main())
