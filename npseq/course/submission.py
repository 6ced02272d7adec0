"""A learner's submission: a ``.py`` file or a notebook, read as Python source and imported as a fresh module.

A notebook (``.ipynb``) is its code cells in order; IPython's own lines (magics, shell
escapes) are not Python and are skipped, each with a note the report shows
(:mod:`npseq.course.notebook`). Everything the grader says about a place in the file
names it as the learner sees it: ``line 6`` in a ``.py``, ``cell 3, line 2`` in a notebook.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import traceback
import types
from typing import Callable

from ..language import _
from .notebook import NotebookError, read_notebook_code
from .sandbox import python_unreadable

MODULE_NAME = "_npseq_submission"
"""The name the learner's file is imported under (so its ``if __name__ == "__main__":`` block does not run)."""


class SubmissionError(Exception):
    """The learner's file cannot be graded (missing, unreadable, or it fails to import); one line."""


@dataclasses.dataclass(frozen=True)
class Submission:
    """A learner's file as Python source."""
    path: str                 # absolute
    source: str | bytes
    notes: tuple = ()         # what was skipped in a notebook, one line each
    where: Callable = None    # line number of ``source`` -> "line 6" or "cell 3, line 2"

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def text(self) -> str:
        """The source as text (a ``.py`` file's bytes decoded as UTF-8, anything undecodable replaced): what the copy
        check and the crash report read; :meth:`load_submission` compiles :attr:`source` itself."""
        return self.source.decode("utf-8", "replace") if isinstance(self.source, bytes) else self.source

    def place(self, line: int) -> str:
        return self.where(line) if self.where else _("line {lines}").format(lines=line)

    def scratch_files(self) -> dict:
        """What a sandboxed child gets in its scratch folder: the file itself, under its own name."""
        source = self.source if isinstance(self.source, bytes) else self.source.encode("utf-8")
        return {self.name: source}

    def moved_to(self, folder: str) -> Submission:
        """The same submission, as if it lay in ``folder`` (the child's scratch folder)."""
        return dataclasses.replace(self, path=os.path.join(folder, self.name))

    def folders(self) -> tuple:
        """The folders a child grading it has no business seeing: its own (other students' files may lie
        there) and the grader's working folder."""
        return tuple(dict.fromkeys([os.path.dirname(self.path), os.getcwd()]))


def one_line(text) -> str:
    return " ".join(str(text).split())


def read_submission(path: str) -> Submission:
    """Read the learner's ``.py`` (or ``.ipynb``) file at ``path``.

    Raises:
        SubmissionError: no such file, unreadable, or a notebook that is not one (one line).
    """
    given, path = path, os.path.abspath(path)
    if not os.path.isfile(path):
        raise SubmissionError(_("no such file: {path}").format(path=given))
    if path.endswith(".ipynb"):
        try:
            code = read_notebook_code(path)
        except NotebookError as exc:
            raise SubmissionError(one_line(exc)) from None
        return Submission(path, code.source, code.notes, code.where)
    try:
        with open(path, "rb") as handle:
            source = handle.read()  # bytes: compile() honours an encoding declaration
    except OSError as exc:
        raise SubmissionError(_("cannot read {path}: {reason}").format(path=given, reason=exc.strerror)) from None
    return Submission(path, source)


def learner_line(exc: BaseException, submission: Submission) -> str:
    """`` (file.py, line n)``: the deepest frame of the traceback that is in the learner's file, or ``""``."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if os.path.abspath(frame.filename) == submission.path:
            return f" ({submission.name}, {submission.place(frame.lineno)})"
    return ""


def exception_text(exc: BaseException) -> str:
    """``str(exc)`` on one line, or a word that it cannot be read: a learner's exception may raise in its own
    ``__str__`` (or return something that is not text), and describing it must never fail."""
    try:
        text = str(exc)
        return one_line(text) if isinstance(text, str) else _("(its message is not text)")
    except BaseException:  # whatever its __str__ raises, KeyboardInterrupt included, is the learner's
        return _("(its message cannot be read: its __str__ raised)")


def type_name(value) -> str:
    """The name of ``value``'s type, read without trusting it (a metaclass may make ``__name__`` anything)."""
    try:
        name = type(value).__name__
        return name if isinstance(name, str) else "an object"
    except BaseException:
        return "an object"


def describe(exc: BaseException, submission: Submission) -> str:
    """``Type: message (file.py, line n)``, the line being the deepest one in the learner's file; an exception whose
    message cannot be read is described by its type."""
    message = exception_text(exc)
    return f"{type_name(exc)}{': ' + message if message else ''}{learner_line(exc, submission)}"


def load_submission(submission: Submission) -> types.ModuleType:
    """Import the learner's source as a fresh module (its ``if __name__ == "__main__":`` block does not run).

    This runs the learner's code in the calling process: the grader calls it only in a
    child process.

    Raises:
        SubmissionError: a syntax error, or an exception while importing; one line naming the learner's line.
    """
    try:
        code = compile(submission.source, submission.path, "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes in the source
        line = f", {submission.place(exc.lineno)}" if getattr(exc, "lineno", None) else ""
        text = getattr(exc, "msg", None) or one_line(exc)
        raise SubmissionError(f"{submission.name}{line}: {type(exc).__name__}: {text}") from None
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = submission.path
    # Registered (dataclasses look their module up while it runs; the next file graded
    # replaces it), and its folder is importable, as when the learner runs it with python.
    sys.modules[MODULE_NAME] = module
    folder = os.path.dirname(submission.path)
    sys.path.insert(0, folder)
    try:
        exec(code, module.__dict__)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from the learner's file included
        sys.modules.pop(MODULE_NAME, None)
        parsed = isinstance(exc, SyntaxError) and isinstance(exc.filename, (str, type(None))) \
            and isinstance(exc.lineno, int) and isinstance(exc.msg, str)
        if parsed:  # in a module the learner's file imports (its fields checked: a learner may raise one)
            raise SubmissionError(f"{os.path.basename(exc.filename or '?')}, "
                                  + _("line {lines}").format(lines=exc.lineno)
                                  + f": {type_name(exc)}: {one_line(exc.msg)}") from None
        raise SubmissionError(_("cannot import {name}: {reason}").format(
            name=submission.name, reason=describe(exc, submission) + python_unreadable(exc))) from None
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return module
