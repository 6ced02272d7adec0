"""The ``npseq`` command: one parser built from the subcommands in :mod:`npseq.commands`.

Each subcommand is a module of :mod:`npseq.commands` (``HELP``, ``add_arguments``, ``run``);
:func:`npseq.commands.runner.run_command` runs it and owns the exit codes (2 for a user's
mistake, 130 after Ctrl-C, 141 for a closed pipe). Only ``npseq.__main__`` and the
``npseq`` console script import this module.
"""
from __future__ import annotations

import argparse
import sys

from . import __version__
from .commands.arguments import Parser
from .commands.runner import COMMANDS, add_command, command_module, run_command


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="npseq",
        description="Sequence models written by hand in NumPy: RNN, GRU, LSTM, attention, seq2seq.")
    parser.add_argument("--version", action="version", version=f"npseq {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        if name == "data fetch":
            data = commands.add_parser("data", help="get a dataset by name (d2l's fra-eng) into npseq's cache")
            actions = data.add_subparsers(dest="data_command", metavar="ACTION", required=True, parser_class=Parser)
            add_command(actions, "fetch", command_module(name))
            data.set_defaults(command_parser=data)
        else:
            add_command(commands, name, command_module(name))
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
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
