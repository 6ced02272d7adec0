"""The argparse pieces every ``npseq`` subcommand shares: the one-line parser and the argument types.

Each type checks one flag's value and words the error as the rest of npseq does (what was
expected, what was given); argparse then reports it in one line with exit code 2.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

from ..errors import UserError

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports after Ctrl-C


def say(*parts, file=None) -> None:
    """Print a line of a command's output now (flushed: progress bars and pipes see lines in order)."""
    print(*parts, file=file or sys.stdout, flush=True)


class UsageError(UserError):
    """A mistake the user can fix; reported in one line with exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is reported in one line (no usage block) with exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class Spelled(argparse.Action):
    """``store``, recording in ``args.spelled`` (``{dest: "--flag"}``) how the flag was typed: for a setting with two
    spellings (``--heads`` and ``--num-heads``), so that a later message names the one the user typed."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.spelled = {**(getattr(namespace, "spelled", None) or {}), self.dest: option_string}


def number(kind, expected: str, ok):
    """An argparse type: ``kind(text)`` that satisfies ``ok``; ``expected`` words it for the error."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value
    return parse


def positive(kind, maximum=None):
    """An argparse type: a positive, finite ``kind``, at most ``maximum`` (a cap, named in the error) when given."""
    expected = f"a positive {kind.__name__}" + (f" up to {maximum}" if maximum is not None else "")
    return number(kind, expected, lambda v: 0 < v < math.inf and (maximum is None or v <= maximum))


seed = number(int, "an int in [0, 2**63)", lambda v: 0 <= v < 2 ** 63)
"""An argparse type: a seed, as NumPy's generators take one (a negative one is NumPy's ValueError otherwise)."""
clip_norm = number(float, "a number >= 0 (0: no clipping)", lambda v: 0.0 <= v < math.inf)
probability = number(float, "a probability in [0, 1)", lambda v: 0.0 <= v < 1.0)


def show_progress(args) -> bool:
    """A progress bar only where someone watches it: not with ``--no-progress``, and only on a terminal (a bar
    redrawn into a log file or a pipe is hundreds of lines of noise)."""
    return not args.no_progress and sys.stderr.isatty()


def existing_file(text):
    """An argparse type: the path of a file that exists."""
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    return text


def non_empty(what: str):
    """An argparse type: any text but the empty string (which would mean "here" or "nothing" without a word)."""
    def parse(text):
        if not text:
            raise argparse.ArgumentTypeError(f"expected {what}, got an empty string")
        return text
    return parse


new_file_path = non_empty("a file path")
"""An argparse type: a non-empty path to write (whether it may be replaced is the command's to check)."""
folder_path = non_empty("a folder")


def output_dir(path: str) -> str:
    """``--out``'s folder, made if missing; its absolute path. A folder that cannot be made is a :class:`UsageError`."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out: cannot create the folder {path!r} ({exc.strerror})") from None
    return os.path.abspath(path)
