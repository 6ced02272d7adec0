"""The honesty watch: does a submission hand in npseq's own backward instead of its own work?

Looks that read the file: :func:`scan_imports` (without running it) for lines that import
or name one of npseq's backward functions; :func:`scan_indirection` for lines that reach code
by a name or a text built at run time, as a file hiding from the watch must. A function
copied and disguised is the copy check's (:mod:`npseq.course.copies`). The runtime watch, which
sees npseq's backward run while the learner's code runs, is :mod:`npseq.course.watch`.
None changes the score but under the policy ``"zero"``: the instructor decides.
"""
from __future__ import annotations

import ast

from .. import functional as F
from ..language import _
from .sheet import EXERCISES, NAMES
from .submission import Submission


def npseq_backward_names() -> tuple:
    """The names whose use the grader flags: npseq's backward functions, its gradient-returning losses, the
    references the course keeps of its own and the sets' solutions (:mod:`npseq.functional`,
    :mod:`npseq.course.references`, :mod:`npseq.course.sets`)."""
    names = {name for name in dir(F) if name.endswith("_backward") and callable(getattr(F, name))}
    engines = {exercise.engine.__name__ for exercise in EXERCISES}
    return tuple(sorted(names | engines | {"softmax_loss", "temporal_softmax_loss"} | set(NAMES)))


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
                    found.append((node.lineno, _("{where}: imports {name} from {module}").format(
                        where=where, name=alias.name, module=node.module)))
        elif isinstance(node, ast.Attribute) and node.attr in names:
            found.append((node.lineno, _("{where}: uses {code}").format(where=submission.place(node.lineno),
                                                                         code=ast.unparse(node))))
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
            found.add((node.lineno, f"{submission.place(node.lineno)}: {_indirection(name)} ({name})"))
    return [text for _, text in sorted(found)]


def _indirection(name: str) -> str:
    """:data:`INDIRECTION`'s words for ``name`` in the language spoken."""
    said = {"unwraps a function (npseq's own, behind the watch?)":
            _("unwraps a function (npseq's own, behind the watch?)"),
            "reads a function's source (npseq's own, to rebuild it?)":
            _("reads a function's source (npseq's own, to rebuild it?)"),
            "imports a module by a name built at run time": _("imports a module by a name built at run time"),
            "runs code built at run time": _("runs code built at run time"),
            "compiles code built at run time": _("compiles code built at run time")}
    return said.get(INDIRECTION[name], INDIRECTION[name])
