"""What a learner's function was computing when it raised: the tensor, and who called whom.

A bare ``ValueError ... (hw.py, line 30)`` leaves the learner to work out which gradient the
line was computing, and, when the line is inside another exercise of theirs (graded correct on
its own) called with the wrong arguments, which call handed them. The traceback holds both:

* the frames in the learner's file, outermost first: the graded function, and the learner's
  own functions it called down to the one that raised;
* in Python 3.11 and later, the columns of the failing expression on each frame's line.

The graded function's frame names the **computation**: on a ``return`` of a tuple, the element
the failing expression is in (its position names the gradient: ``dx``); on an assignment, its
targets (``dW_tgt``). A deeper frame names the **call** that led there, in the graded function's
own words (``word_embedding_backward(d, cache.source)``).
"""
from __future__ import annotations

import ast
import dataclasses
import os
import traceback

from ..language import _
from .submission import Submission


@dataclasses.dataclass(frozen=True)
class CrashContext:
    """What was being computed when a learner's function raised."""
    computing: str   # the gradient or variable being computed ("dx", "dW_tgt"), "" when the line does not say
    sentence: str    # "; while computing dx: `da @ cache.Wx` (hw.py, line 30)", or "" when nothing is known

    @classmethod
    def unknown(cls) -> CrashContext:
        return cls("", "")


def _statement_at(tree: ast.Module, line: int):
    """The innermost statement whose first line is ``line``, or ``None``."""
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno == line:
            if found is None or node.col_offset >= found.col_offset:
                found = node
    return found


def _element_at(node, column: int):
    """The position of the element of a tuple ``node`` (a return's or an assignment's value) that holds
    ``column``, or ``None``."""
    if not isinstance(node, ast.Tuple):
        return None
    for position, element in enumerate(node.elts):
        if element.lineno == node.lineno and element.col_offset <= column < (element.end_col_offset or 0):
            return position
    return None


def _computing(statement, column: int | None, grads: tuple) -> str:
    """The gradient or variable that ``statement`` computes where ``column`` points."""
    if isinstance(statement, ast.Return) and statement.value is not None:
        position = _element_at(statement.value, column) if column is not None else None
        if position is not None and position < len(grads):
            return grads[position]
        return "" if isinstance(statement.value, ast.Tuple) else (grads[0] if len(grads) == 1 else "")
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        names = [ast.unparse(target) for target in targets]
        if len(names) == 1 and isinstance(targets[0], ast.Tuple) and isinstance(statement.value, ast.Tuple):
            position = _element_at(statement.value, column) if column is not None else None
            if position is not None and position < len(targets[0].elts):
                return ast.unparse(targets[0].elts[position])
        return " = ".join(names)
    return ""


def _text(line: str, frame: traceback.FrameSummary) -> str:
    """The failing expression of ``frame`` on its ``line`` (the whole line when the columns are not known)."""
    start, end = getattr(frame, "colno", None), getattr(frame, "end_colno", None)
    if start is not None and end is not None and getattr(frame, "end_lineno", frame.lineno) == frame.lineno:
        return line[start:end].strip()
    return line.strip()


def crash_context(exc: BaseException, submission: Submission, function: str, grads: tuple) -> CrashContext:
    """What the learner's ``function`` (returning ``grads``, in order) was computing when ``exc`` was raised in it.

    Returns:
        :class:`CrashContext`; :meth:`CrashContext.unknown` when no frame of ``function`` is in the traceback or
        the source cannot be parsed.
    """
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if os.path.abspath(frame.filename) == submission.path]
    graded = next((index for index, frame in enumerate(frames) if frame.name == function), None)
    if graded is None:
        return CrashContext.unknown()
    source = submission.text
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return CrashContext.unknown()
    lines = source.splitlines()
    own = frames[graded]
    line = lines[own.lineno - 1] if 0 < own.lineno <= len(lines) else ""
    computing = _computing(_statement_at(tree, own.lineno), getattr(own, "colno", None), grads)
    where = f"({submission.name}, {submission.place(own.lineno)})"
    code = f"`{_text(line, own)}`"
    if graded == len(frames) - 1:  # it raised in the graded function itself: the place is said already
        return CrashContext(computing, "; " + _("while computing {what}: {code} {where}").format(
            what=computing, code=code, where=where)) if computing else CrashContext.unknown()
    deepest, called = frames[-1], frames[graded + 1]
    raised = f"{deepest.name} ({submission.name}, {submission.place(deepest.lineno)})"
    fields = dict(raised=raised, function=function, what=computing, code=code, where=where, through=called.name)
    if called is not deepest:
        said = _("raised in {raised}, called by {function} to compute {what}: {code} {where} through {through}") \
            if computing else _("raised in {raised}, called by {function} to compute this: {code} {where} through "
                                "{through}")
    else:
        said = _("raised in {raised}, called by {function} to compute {what}: {code} {where}") if computing else \
            _("raised in {raised}, called by {function} to compute this: {code} {where}")
    return CrashContext(computing, "; " + said.format(**fields))
