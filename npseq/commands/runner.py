"""The one runner of every ``npseq`` command: exit codes, Ctrl-C and broken pipes, in one place.

User errors (a missing file, a bad option value, a checkpoint that does not fit, an empty
input, a request beyond a cap, a diverged run, a full disk) end with exit code 2 and one
line saying what to fix, and so do the errors of the machine that no check foresees (an
``OSError``, a ``UnicodeError``, a ``MemoryError`` or a ``FloatingPointError``: one line
naming the file or the cause, not a traceback); a failed check ends with exit code 1 (the command's own return);
Ctrl-C ends with exit code 130 and one line (``train`` first saves a checkpoint from which
``--resume`` continues exactly); a reader that goes away (``npseq translate ... | head -1``)
ends the command quietly with exit code 141, as 128 + SIGPIPE, like other Unix tools.

:func:`run_command` runs a parsed command line; :func:`run_alone` parses and runs one
subcommand by itself, for ``python -m npseq.grade`` and a hand-out's own ``__main__`` block.
"""
from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import warnings

from ..errors import UserError
from .arguments import EXIT_INTERRUPTED, Parser, say

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away

COMMANDS = {
    "demo": "train a small attention translator (or a captioner) on built-in data and show it",
    "train": "train an encoder-decoder on a task or a corpus file",
    "translate": "translate sentences with a saved model",
    "lm": "train a character language model, then sample from it",
    "gradcheck": "check every backward against finite differences",
    "grade": "grade a learner's backward exercises against finite differences",
    "exercises": "write a hand-out of the backward exercises (and its Gradescope or PrairieLearn autograder)",
    "data fetch": "download a dataset, check its SHA-1, unpack it into the cache",
    "tutorials": "write the tutorials as Jupyter notebooks (and run them)",
}
"""Every subcommand and its line in ``npseq --help``, in that order; ``data fetch`` is the ``fetch`` action of
``data``. The lines live here, not in the commands' modules, so that listing the commands imports none of them."""


def command_module(name: str):
    """The module of the subcommand ``name`` (``npseq.commands.<name>``; ``data fetch`` is ``commands.data``)."""
    return importlib.import_module(f"{__package__}.{name.split()[0]}")


def add_command(subparsers, name: str, module=None) -> None:
    """Register the subcommand ``name``: with its module, its ``DESCRIPTION`` (if any), ``add_arguments`` and
    ``run``; without, only its name and help line, for a command that this command line does not run (its module,
    and what the module imports, is never loaded)."""
    help_line = COMMANDS[name] if name in COMMANDS else COMMANDS[f"data {name}"]
    if module is None:
        subparsers.add_parser(name, help=help_line)
        return
    subparser = subparsers.add_parser(name, help=help_line, description=getattr(module, "DESCRIPTION", None))
    module.add_arguments(subparser)
    subparser.set_defaults(run=module.run, command_parser=subparser)


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
        self.finished = threading.Event()  # the command is reporting: no more interrupts

    def handler(self, signum, frame):
        if self.finished.is_set():
            return
        if not self.pressed.is_set():
            self.pressed.set()
            # The interrupt may land inside a constructor (zipfile.ZipFile.__init__ reading a checkpoint), and
            # the half-built object's __del__ then fails at exit with "Exception ignored in ...": a consequence
            # of the Ctrl-C, which the command reports in its one line, not a second error to show.
            sys.unraisablehook = _ignore_unraisable
            threading.Thread(target=self._repeat, args=(threading.main_thread().ident,), daemon=True).start()
        raise KeyboardInterrupt

    def _repeat(self, main_thread: int):
        while not self.finished.wait(self.REPEAT_S):
            signal.pthread_kill(main_thread, signal.SIGINT)


def _ignore_unraisable(unraisable) -> None:
    """``sys.unraisablehook`` once Ctrl-C was pressed: what fails in a destructor after it is not reported."""


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's final flush does not fail again on a closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def environment_error(exc: BaseException) -> str:
    """One line for what the machine, not the command line, refused: a file that cannot be read or written, text
    in another encoding, memory that ran out, numbers that overflowed. The command checks what it can before it
    starts; these are what no check foresees (a file made unreadable meanwhile, a full disk, a diverging run)."""
    if isinstance(exc, OSError):
        where = f": {exc.filename!r}" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    if isinstance(exc, UnicodeError):
        return f"text this command cannot read or write in its encoding ({exc}); use UTF-8 (PYTHONIOENCODING=utf-8)"
    if isinstance(exc, MemoryError):
        return "out of memory: what was asked for does not fit in this machine's memory; ask for smaller sizes"
    return f"the numbers overflowed ({exc}): the run diverged; a smaller learning rate (--lr) may keep it finite"


def _one_line_warnings(name: str):
    """``warnings.showwarning`` for the command ``name``: a warning is one line naming the command, as its errors
    are, not Python's two lines of the file and the source line that raised it."""
    def show(message, category, filename, lineno, file=None, line=None):
        say(f"npseq {name}: warning: {message}", file=sys.stderr)
    return show


def run_command(name: str, args) -> int:
    """Run ``args.run(args)`` for the command ``name`` (as ``npseq NAME`` prints it) and map its end to an exit code."""
    interrupts = _Interrupts()
    previous_handler = signal.signal(signal.SIGINT, interrupts.handler)
    try:
        from ..backend import backend_name
        backend_name()  # applies NPSEQ_BACKEND now, so a missing GPU is reported before any work
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings(name)
            code = args.run(args)
        if not interrupts.pressed.is_set():
            return code
        raise KeyboardInterrupt  # every interrupt was swallowed on the way: report it all the same
    except UserError as exc:  # a mistake in the input; anything but the families below is a bug and shows its traceback
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        say(f"npseq {name}: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        interrupts.finished.set()
        say(f"\nnpseq {name}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except (OSError, UnicodeError, MemoryError, FloatingPointError) as exc:
        say(f"npseq {name}: {environment_error(exc)}", file=sys.stderr)
        return 2
    finally:
        interrupts.finished.set()
        signal.signal(signal.SIGINT, previous_handler)


def run_alone(name: str, argv) -> int:
    """Parse ``argv`` as the options of the one subcommand ``name`` (``npseq NAME ...``) and run it."""
    module = command_module(name)
    parser = Parser(prog=f"npseq {name}", description=getattr(module, "DESCRIPTION", None))
    module.add_arguments(parser)
    parser.set_defaults(run=module.run)
    return run_command(name, parser.parse_args(list(argv)))
