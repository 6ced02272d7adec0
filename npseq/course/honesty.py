"""The honesty watch: does a submission hand in npseq's own backward instead of its own work?

Two looks: :func:`scan_imports` reads the file (without running it) for lines that import
or name one of npseq's backward functions, and :class:`NpseqCallWatch` records, while the
learner's function runs, every call it makes into one of them, however the name was built.
Neither changes the score: the instructor decides.
"""
from __future__ import annotations

import ast
import functools
import sys

from .. import functional as F
from .sheet import NAMES
from .submission import Submission


def npseq_backward_names() -> tuple:
    """The names whose use the grader flags: npseq's backward functions, its gradient-returning losses and the
    sheet's solutions (:mod:`npseq.functional`, :mod:`npseq.course.sheet`)."""
    names = {name for name in dir(F) if name.endswith("_backward") and callable(getattr(F, name))}
    return tuple(sorted(names | {"softmax_loss", "temporal_softmax_loss"} | set(NAMES)))


WATCHED = ("npseq.functional", "npseq.exercises", "npseq.course.sheet")
"""The modules (and for ``npseq.functional`` its submodules) whose backward functions the watch wraps."""


def _watched_module(name: str) -> bool:
    return name in WATCHED or name.startswith("npseq.functional.")


class NpseqCallWatch:
    """Records which npseq backward functions the learner's code calls while it is graded.

    Every module of :data:`WATCHED` gets its backward functions replaced by
    wrappers before the learner's file is imported (so whatever the file imports is a
    wrapper); a wrapper records its name only while :attr:`active` (during the learner's
    call) and only for the outermost call (npseq's backward calling its own helpers is
    not the learner's doing).
    """

    def __init__(self):
        self.active = False
        self.calls = set()
        self._depth = 0

    def install(self) -> None:
        names = set(npseq_backward_names())
        wrappers = {}
        for module_name, module in list(sys.modules.items()):
            if not _watched_module(module_name):
                continue
            for name in names & set(vars(module)):
                original = getattr(module, name)
                if id(original) not in wrappers:
                    wrappers[id(original)] = self._wrap(original)
                setattr(module, name, wrappers[id(original)])

    def _wrap(self, original):
        watch = self

        @functools.wraps(original)
        def recorded(*args, **kwargs):
            if watch.active and watch._depth == 0:
                watch.calls.add(f"{original.__module__}.{original.__name__}")
            watch._depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                watch._depth -= 1
        return recorded

    def run(self, fn, *args):
        """Call the learner's ``fn`` with recording on."""
        self.active = True
        try:
            return fn(*args)
        finally:
            self.active = False


def scan_imports(submission: Submission) -> list:
    """Lines of the learner's file that import or name one of :func:`npseq_backward_names` (read, not run)."""
    try:
        tree = ast.parse(submission.source, filename=submission.path)
    except (SyntaxError, ValueError):
        return []
    names = set(npseq_backward_names())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "npseq":
            for alias in node.names:
                if alias.name in names or alias.name == "*":
                    where = submission.place(node.lineno)
                    found.append((node.lineno, f"{where}: imports {alias.name} from {node.module}"))
        elif isinstance(node, ast.Attribute) and node.attr in names:
            found.append((node.lineno, f"{submission.place(node.lineno)}: uses {ast.unparse(node)}"))
    return [text for _, text in sorted(set(found))]


