"""The honesty watch: does a submission hand in npseq's own backward instead of its own work?

Three looks: :func:`scan_imports` reads the file (without running it) for lines that import
or name one of npseq's backward functions; :func:`scan_indirection` for lines that reach code
by a name or a text built at run time, as a file hiding from the watch must; and
:class:`NpseqCallWatch` records, while the learner's function runs in its sandbox, every call it
makes into one of them, however the name was built (a record the grader trusts for nothing but
a note: code in the same process could hide from it, which the reading in the grader sees).
None changes the score: the instructor decides.
"""
from __future__ import annotations

import ast
import functools
import sys

from .. import functional as F
from .sheet import EXERCISES, NAMES
from .submission import Submission


def npseq_backward_names() -> tuple:
    """The names whose use the grader flags: npseq's backward functions, its gradient-returning losses, the
    references the course keeps of its own and the sets' solutions (:mod:`npseq.functional`,
    :mod:`npseq.course.references`, :mod:`npseq.course.sets`)."""
    names = {name for name in dir(F) if name.endswith("_backward") and callable(getattr(F, name))}
    engines = {exercise.engine.__name__ for exercise in EXERCISES}
    return tuple(sorted(names | engines | {"softmax_loss", "temporal_softmax_loss"} | set(NAMES)))


WATCHED = ("npseq.functional", "npseq.exercises", "npseq.course.sheet", "npseq.course.sets",
           "npseq.course.references")
"""The modules (and their submodules) whose backward functions the watch wraps."""


def _watched_module(name: str) -> bool:
    return any(name == watched or name.startswith(watched + ".") for watched in WATCHED)


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

        # the wrapper's name and docstring are the original's, but not ``__wrapped__``: a submission must not
        # reach past the watch to the function it records
        @functools.wraps(original, updated=())
        def recorded(*args, **kwargs):
            if watch.active and watch._depth == 0:
                watch.calls.add(f"{original.__module__}.{original.__name__}")
            watch._depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                watch._depth -= 1
        del recorded.__wrapped__
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


INDIRECTION = {
    "__wrapped__": "unwraps a function (npseq's own, behind the watch?)",
    "getsource": "reads a function's source (npseq's own, to rebuild it?)",
    "getsourcelines": "reads a function's source (npseq's own, to rebuild it?)",
    "import_module": "imports a module by a name built at run time",
    "__import__": "imports a module by a name built at run time",
    "exec": "runs code built at run time",
    "eval": "runs code built at run time",
    "compile": "compiles code built at run time",
}
"""Names whose use lets a file reach npseq's backward without naming it, so that only reading the file sees it."""


def scan_indirection(submission: Submission) -> list:
    """Lines of the learner's file that reach code by a name or a text built at run time (read, not run).

    The watch records the calls a submission makes into npseq while it is graded, but code
    in the submission's own process can hide from it (unwrap a wrapper, rebuild npseq's
    function from its source, call it through ``exec``): these lines are what reading the
    file, in the grader, sees of that.
    """
    try:
        tree = ast.parse(submission.source, filename=submission.path)
    except (SyntaxError, ValueError):
        return []
    found = set()
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if name in INDIRECTION:
            found.add((node.lineno, f"{submission.place(node.lineno)}: {INDIRECTION[name]} ({name})"))
    return [text for _, text in sorted(found)]
