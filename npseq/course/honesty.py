"""The honesty watch: does a submission hand in npseq's own backward instead of its own work?

Looks that read the file: :func:`scan_imports` (without running it) for lines that import
or name one of npseq's backward functions; :func:`scan_indirection` for lines that reach code
by a name or a text built at run time, as a file hiding from the watch must; and
:func:`copied_from`, for a function that is npseq's own renamed. The runtime watch, which
sees npseq's backward run while the learner's code runs, is :mod:`npseq.course.watch`.
None changes the score but under the policy ``"zero"``: the instructor decides.
"""
from __future__ import annotations

import ast
import copy
import inspect
import textwrap

from .. import functional as F
from .._checks import is_check_statement
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


# ------------------------------------------------------- the same code under other names
class _Erase(ast.NodeTransformer):
    """Names become ``v0, v1, ...`` in the order they first appear, constants ``0``: what renaming cannot hide."""

    def __init__(self):
        self.names = {}

    def _canonical(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(self._canonical(node.id), node.ctx), node)

    def visit_arg(self, node):
        return ast.copy_location(ast.arg(self._canonical(node.arg)), node)

    def visit_Constant(self, node):
        return ast.copy_location(ast.Constant(0), node)


def normalized(function: ast.FunctionDef) -> str:
    """A function's code with its docstring, checks and array-module line left out and its names and constants
    erased (:class:`_Erase`): two functions that differ only in names, constants, comments, docstrings and
    layout normalise alike."""
    body = [statement for statement in function.body if not is_check_statement(statement)]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    bare = copy.deepcopy(function)
    bare.name, bare.body, bare.decorator_list, bare.returns = "f", copy.deepcopy(body) or [ast.Pass()], [], None
    return ast.dump(_Erase().visit(bare), annotate_fields=False)


def _function_in(source, name: str):
    try:
        tree = ast.parse(textwrap.dedent(source) if isinstance(source, str) else source)
    except (SyntaxError, ValueError):
        return None
    return next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name), None)


def copied_from(submission: Submission, exercise) -> str:
    """What the learner's ``exercise`` function is, after normalisation, a copy of: npseq's reference backward
    (the code a tutorial prints) or the sheet's own solution; ``""`` when neither."""
    mine = _function_in(submission.source, exercise.name)
    if mine is None:
        return ""
    theirs = normalized(mine)
    for label, function in ((f"npseq's own {exercise.engine.__module__}.{exercise.engine.__name__} (what the "
                             "tutorials print)", exercise.engine),
                            ("the solution in npseq's exercise sheet", exercise.solution)):
        try:
            reference = _function_in(inspect.getsource(function), function.__name__)
        except (OSError, TypeError):
            continue
        if reference is not None and normalized(reference) == theirs:
            return label
    return ""
