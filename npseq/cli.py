"""The ``npseq`` command: demo, train, translate, lm, gradcheck, grade, exercises, data fetch, tutorials.

User errors (a missing file, a bad option value, a checkpoint that does not fit,
an empty input, a request beyond a cap, a diverged run, a full disk) end with exit
code 2 and one line saying what to fix; a failed gradient check ends with exit
code 1; Ctrl-C ends with exit code 130 and one line (``train`` first saves a
checkpoint from which ``--resume`` continues exactly); a reader that goes away
(``npseq translate ... | head -1``) ends the command quietly with exit code 141,
as 128 + SIGPIPE, like other Unix tools.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from . import __version__
from ._arguments import EXIT_INTERRUPTED, Parser, say
from .errors import UserError

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away


# ------------------------------------------------------------------- parser
def _add_command(commands, name: str, command) -> None:
    """Register a subcommand module: its ``HELP``, ``DESCRIPTION`` (if any), ``add_arguments`` and ``run``."""
    subparser = commands.add_parser(name, help=command.HELP, description=getattr(command, "DESCRIPTION", None))
    command.add_arguments(subparser)
    subparser.set_defaults(run=command.run)


def build_parser() -> argparse.ArgumentParser:
    from .data import datasets
    parser = Parser(
        prog="npseq",
        description="Sequence models written by hand in NumPy: RNN, GRU, LSTM, attention, seq2seq.")
    parser.add_argument("--version", action="version", version=f"npseq {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    from . import exercises, grade, tutorials
    from .commands import demo, gradcheck, lm, train, translate
    for name, command in (("demo", demo), ("train", train), ("translate", translate), ("lm", lm),
                          ("gradcheck", gradcheck), ("grade", grade), ("exercises", exercises)):
        _add_command(commands, name, command)
    data = commands.add_parser("data", help="get a dataset by name (d2l's fra-eng) into npseq's cache")
    data_commands = data.add_subparsers(dest="data_command", metavar="ACTION", required=True, parser_class=Parser)
    _add_command(data_commands, "fetch", datasets)
    _add_command(commands, "tutorials", tutorials)
    for subparser in commands.choices.values():
        subparser.set_defaults(command_parser=subparser)
    return parser


class _Interrupts:
    """Ctrl-C for a whole command: raise KeyboardInterrupt, and again every quarter second until it ends.

    One KeyboardInterrupt is not always enough: C code that calls back into Python and then
    clears the error it sees (it happens inside NumPy during gradient checks, about one Ctrl-C
    in ten) swallows it, and the command would run on. Repeating the interrupt from a helper
    thread makes Ctrl-C stop the command within a second all the same.
    """
    REPEAT_S = 0.25

    def __init__(self):
        self.pressed = threading.Event()
        self.finished = threading.Event()  # main() is reporting: no more interrupts

    def handler(self, signum, frame):
        if self.finished.is_set():
            return
        if not self.pressed.is_set():
            self.pressed.set()
            threading.Thread(target=self._repeat, args=(threading.main_thread().ident,), daemon=True).start()
        raise KeyboardInterrupt

    def _repeat(self, main_thread: int):
        while not self.finished.wait(self.REPEAT_S):
            signal.pthread_kill(main_thread, signal.SIGINT)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's final flush does not fail again on a closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


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
    interrupts = _Interrupts()
    previous_handler = signal.signal(signal.SIGINT, interrupts.handler)
    try:
        from .backend import backend_name
        backend_name()  # applies NPSEQ_BACKEND now, so a missing GPU is reported before any work
        code = args.run(args)
        if not interrupts.pressed.is_set():
            return code
        raise KeyboardInterrupt  # every interrupt was swallowed on the way: report it all the same
    except UserError as exc:  # a mistake in the input; anything else is a bug in npseq and shows its traceback
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        say(f"npseq {args.command}: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        interrupts.finished.set()
        say(f"\nnpseq {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    finally:
        interrupts.finished.set()
        signal.signal(signal.SIGINT, previous_handler)


if __name__ == "__main__":
    sys.exit(main())
