"""How well the grader finds, locates and pinpoints mistakes it has never seen, per exercise set.

    python benchmarks/mistakes/measure.py            # the rates per set
    python benchmarks/mistakes/measure.py --list     # also every mistake not located, with what was said
    python benchmarks/mistakes/measure.py --set classic

The corpus is made here, not written by hand, and it is not the hand-out's list of known mistakes
(``npseq/course/mistakes.py``): each is one edit of one exercise's solution, of the kinds a
learner makes, at each place it fits (the first two places per kind and exercise):

* ``transpose``: a ``.T`` left out (``da @ W`` for ``da @ W.T``);
* ``sign``: a difference written as a sum (``a + b`` for ``a - b``);
* ``path``: one term of a sum left out (``a`` for ``a + b``: a path not followed back);
* ``axis``: a reduction over another axis (``axis=0`` for ``axis=-1``, and the other way);
* ``mean``: a mean for a sum (``x.mean(...)`` for ``x.sum(...)``);
* ``square``: a square left out (``x`` for ``x ** 2``: tanh' written as ``1 - y``).

An edit whose function returns what the solution returns in every case is no mistake and is left
out. For the others the truth comes from running the edited function in this process on every case
and holding each gradient to npseq's (the grader's tolerance): the tensors that differ, or the
crash. Then ``npseq grade``'s own :func:`~npseq.course.grade_file` grades the file, and the edit is

* **detected** when the function is not graded correct;
* **located** when the grader's diagnoses name exactly the tensors that differ (for a chain, the
  first broken link of each case), or, for a crash, report it;
* **pinpointed** when, located, every diagnosis says more than the tensor: a gate, a step, a head,
  a pattern (swap, factor, sign, order), or what a crash was computing.

Nothing here is timed; the numbers are the same on every machine.
"""
import argparse
import ast
import collections
import copy
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from npseq import backend  # noqa: E402
from npseq.course import grade_file  # noqa: E402
from npseq.course.cases import seed_of  # noqa: E402
from npseq.course.exercise import solution_source  # noqa: E402
from npseq.course.grader import _as_grads, _call, _upstream  # noqa: E402
from npseq.course.handout import chosen_exercises, solutions  # noqa: E402
from npseq.course.sets import SETS  # noqa: E402
from npseq.gradcheck import DEFAULT_TOL, gradient_error  # noqa: E402

SITES_PER_KIND = 2
"""Places edited per kind of mistake and exercise: the first ones in the function's text."""

VAGUE = ("every element", "some elements", "wrong value", "wrong shape", "not finite")
"""Diagnosis endings that name a tensor and no more."""


# ------------------------------------------------------------------ the edits
def _sites(tree: ast.FunctionDef, kind: str) -> list:
    """The nodes of the function's body (its docstring aside) that an edit of ``kind`` applies to, in text order."""
    found = []
    for node in ast.walk(tree):
        if kind == "transpose" and isinstance(node, ast.Attribute) and node.attr == "T":
            found.append(node)
        elif kind == "sign" and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            found.append(node)
        elif kind == "path" and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            found.append(node)
        elif kind == "axis" and isinstance(node, ast.keyword) and node.arg == "axis" \
                and isinstance(node.value, (ast.Constant, ast.UnaryOp)):
            found.append(node)
        elif kind == "mean" and isinstance(node, ast.Attribute) and node.attr == "sum":
            found.append(node)
        elif kind == "square" and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) \
                and isinstance(node.right, ast.Constant) and node.right.value == 2:
            found.append(node)
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))


class _Edit(ast.NodeTransformer):
    """Replace the one node ``target`` (the node itself: a call's ``np.exp`` and its ``.sum`` start at one place) as
    ``kind`` says."""

    def __init__(self, kind: str, target):
        self.kind, self.target, self.done = kind, target, False

    def _here(self, node) -> bool:
        return not self.done and node is self.target

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if self._here(node) and self.kind == "transpose":
            self.done = True
            return node.value
        if self._here(node) and self.kind == "mean":
            self.done = True
            return ast.Attribute(node.value, "mean", node.ctx)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if self._here(node) and self.kind == "sign":
            self.done = True
            return ast.BinOp(node.left, ast.Add(), node.right)
        if self._here(node) and self.kind in ("path", "square"):
            self.done = True
            return node.left
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        if self._here(node) and self.kind == "axis":
            self.done = True
            value = ast.literal_eval(node.value)
            return ast.keyword("axis", ast.Constant(0 if value != 0 else -1))
        return node


def edits(source: str) -> list:
    """``(kind, line of the edit in the function, edited function source)`` for every edit of every kind."""
    def sites(tree, kind):
        function = tree.body[0]
        body = function.body[1:] if ast.get_docstring(function) else function.body
        return [node for statement in body for node in _sites(ast.Module([statement], []), kind)]

    tree = ast.parse(source)
    made = []
    for kind in ("transpose", "sign", "path", "axis", "mean", "square"):
        for index in range(min(SITES_PER_KIND, len(sites(tree, kind)))):
            copied = copy.deepcopy(tree)
            target = sites(copied, kind)[index]
            edited = _Edit(kind, target).visit(copied)
            made.append((kind, target.lineno, ast.unparse(ast.fix_missing_locations(edited))))
    return made


# ------------------------------------------------------------------ the truth
def truth(exercise, function) -> list:
    """Per case: ``"crash"``, or the gradients that differ from npseq's (in the order the exercise returns them)."""
    xp = backend.numpy
    per_case = []
    for case in exercise.cases:
        outputs = case.forward(**case.make_inputs(0))[:case.outputs]
        douts = tuple(xp.ones_like(out) for out in outputs) if case.returns_loss else \
            _upstream(outputs, seed_of(case.seed, 0))
        engine = _as_grads(_call(exercise.engine, case, douts, 0), exercise.grads)[0]
        try:
            mine, _ = _as_grads(_call(function, case, douts, 0), exercise.grads)
        except Exception:
            per_case.append("crash")
            continue
        if mine is None:
            per_case.append("crash")
            continue
        differ = []
        for name, given, expected in zip(exercise.grads, mine, engine):
            given = xp.asarray(given, dtype=float) if given is not None else None
            expected = xp.asarray(backend.to_numpy(expected), dtype=float)
            if given is None or given.shape != expected.shape or not xp.all(xp.isfinite(given)) or (
                    given.size and float(gradient_error(given, expected).max()) >= DEFAULT_TOL):
                differ.append(name)
        per_case.append(tuple(differ))
    return per_case


def expected_names(exercise, per_case: list) -> set:
    """The tensors a located diagnosis names: every one that differs, or a chain's first broken link per case."""
    if exercise.chained:
        return {differ[0] for differ in per_case if differ != "crash" and differ}
    return {name for differ in per_case if differ != "crash" for name in differ}


# ------------------------------------------------------------------ the measure
def judge(exercise, per_case: list, function_grade) -> tuple:
    """``(detected, located, pinpointed)`` of one graded edit."""
    diagnoses = function_grade.diagnoses()
    detected = function_grade.status != "correct"
    named = {d.split(":")[0] for d in diagnoses if not d.startswith("error:")}
    crashes = "crash" in per_case
    located = detected and named == expected_names(exercise, per_case) and \
        (not crashes or any(d.startswith("error:") for d in diagnoses))
    pinpointed = located and all(
        ("computing " in d) if d.startswith("error:") else not d.endswith(VAGUE) for d in diagnoses)
    return detected, located, pinpointed


def measure(sets=None, listed: bool = False) -> dict:
    """Grade every edit of every exercise of ``sets`` (default: all); ``{set: Counter}`` of mutants, detected,
    located, pinpointed, and equivalent edits left out. With ``listed``, print each edit not located."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="npseq-mistakes-") as folder:
        for set_name, exercises in SETS.items():
            if sets and set_name not in sets:
                continue
            counts = collections.Counter()
            for exercise in exercises:
                source = solution_source(exercise.solution)
                solved = solutions(chosen_exercises([exercise.name]))
                for kind, line, edited in edits(source):
                    text = solved.replace(source, edited)
                    namespace = {}
                    try:
                        exec(compile(text, "<edited>", "exec"), namespace)
                    except SyntaxError:
                        continue
                    per_case = truth(exercise, namespace[exercise.name])
                    if all(differ == () for differ in per_case):
                        counts["equivalent"] += 1
                        continue
                    path = os.path.join(folder, "learner.py")
                    with open(path, "w", encoding="utf-8") as handle:
                        handle.write(text)
                    graded = grade_file(path, only=[exercise.name], quiet=True)[exercise.name]
                    detected, located, pinpointed = judge(exercise, per_case, graded)
                    counts.update(mutants=1, detected=detected, located=located, pinpointed=pinpointed)
                    if listed and not located:
                        print(f"  not located: {exercise.name}, {kind} at line {line}: truth {per_case}; "
                              f"said {graded.diagnoses()}")
            results[set_name] = counts
    return results


def rate(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "0/0"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="sets", action="append", choices=list(SETS), help="only these sets")
    parser.add_argument("--list", action="store_true", help="print every edit not located")
    args = parser.parse_args(argv)
    results = measure(args.sets, args.list)
    print(f"{'set':12} {'mistakes':>8}  {'detected':>16}  {'located':>16}  {'pinpointed':>16}  {'equivalent':>10}")
    total = collections.Counter()
    for set_name, counts in results.items():
        total.update(counts)
        print(f"{set_name:12} {counts['mutants']:>8}  {rate(counts['detected'], counts['mutants']):>16}  "
              f"{rate(counts['located'], counts['mutants']):>16}  {rate(counts['pinpointed'], counts['mutants']):>16}"
              f"  {counts['equivalent']:>10}")
    print(f"{'all':12} {total['mutants']:>8}  {rate(total['detected'], total['mutants']):>16}  "
          f"{rate(total['located'], total['mutants']):>16}  {rate(total['pinpointed'], total['mutants']):>16}  "
          f"{total['equivalent']:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
