"""Grade a learner's backward passes: ``npseq grade my_file.py`` (or ``python -m npseq.grade my_file.py``).

The course exercises (``tutorials/exercises/``) ask for five backward functions,
each with the exact signature of npseq's own:

* ``rnn_step_backward(dnext_h, cache) -> (dx, dprev_h, dWx, dWh, db)``
* ``lstm_step_backward(dnext_h, dnext_c, cache) -> (dx, dprev_h, dprev_c, dWx, dWh, db)``
* ``gru_step_backward(dnext_h, cache) -> (dx, dprev_h, dWx, dWh, dbx, dbh)``, both GRU
  variants in one function, which branches on ``cache.reset_after``
* ``masked_softmax_backward(dweights, cache) -> dscores``
* ``additive_attention_backward(dcontext, cache, dweights=None) -> (dqueries, dkeys, dvalues, dWq, dWk, dwv)``

For every one of these names that the learner's file defines, and for each of a
few fixed cases (seeded float64 inputs; both GRU variants, a masked softmax with a
zero-length row, attention with valid lengths per example and per query), the
grader runs *npseq's* forward, hands its cache to the learner's backward together
with a seeded upstream gradient, and checks every returned tensor twice:

* against centered finite differences of the forward (:mod:`npseq.gradcheck`, the
  five-point stencil with ``h = 1e-3``, error :math:`O(h^4)`): largest relative error
  (:func:`npseq.gradcheck.gradient_error`) below ``1e-7``;
* against npseq's own backward on the same cache: largest absolute difference
  below ``1e-9 * max(1, max |engine gradient|)``.

A tensor passes in a case when it has the right shape, is finite and passes both.

**Score.** Each function is worth one point, split evenly over its (case, tensor)
pairs: points = correct pairs / all pairs (all or nothing per tensor per case).
A case whose call raises, or returns the wrong number of arrays, scores 0 for all
its tensors; a ``NotImplementedError`` is reported as "not implemented" rather
than as a crash. A name the file does not define is "not attempted" (0 points).
The total is the sum of points over the graded functions, as a percentage.

Exit codes: 0 at 100 %, 1 below, 2 when the file cannot be graded (missing,
syntax error, error while importing) or the command line is wrong.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import traceback
import types
from typing import Callable

from . import backend
from . import functional as F
from .gradcheck import DEFAULT_TOL, compare, numerical_gradient

ENGINE_TOL = 1e-9
"""Learner and engine gradients may differ by this much, relative to ``max(1, max |engine gradient|)``."""


class SubmissionError(Exception):
    """The learner's file cannot be graded (missing, unreadable, or it fails to import); one line."""


# ------------------------------------------------------------------ exercises
@dataclasses.dataclass(frozen=True)
class Case:
    """One fixed situation a backward is graded in."""
    label: str
    make_inputs: Callable[[], dict]  # fresh seeded float64 inputs, the forward's arguments by name
    forward: Callable                # npseq's forward: forward(**inputs) -> (*outputs, cache)
    outputs: int                     # how many leading outputs get an upstream gradient
    wrt: tuple                       # inputs whose gradients the backward returns, in order
    call: Callable                   # call(backward, douts, cache) -> what the backward returns
    seed: int                        # seeds the upstream gradients


@dataclasses.dataclass(frozen=True)
class Exercise:
    name: str
    signature: str
    grads: tuple  # names of the returned gradients, in order
    engine: Callable
    cases: tuple


def _normal(rng, *shape, scale=1.0):
    return backend.xp.asarray(scale * rng.standard_normal(shape))


def _lens(values):
    return backend.xp.asarray(backend.numpy.array(values, dtype=backend.numpy.int64))


def _seeded(seed: int, build: Callable) -> Callable[[], dict]:
    return lambda: build(backend.numpy.random.default_rng(seed))


def _step_inputs(n, d, hidden, gates, biases):
    """Inputs of a recurrent step; weights scaled by 0.5 so that no gate saturates."""
    def build(rng):
        inputs = {"x": _normal(rng, n, d), "prev_h": _normal(rng, n, hidden)}
        if "prev_c" in biases:
            inputs["prev_c"] = _normal(rng, n, hidden)
        inputs["Wx"] = _normal(rng, d, gates * hidden, scale=0.5)
        inputs["Wh"] = _normal(rng, hidden, gates * hidden, scale=0.5)
        for name in biases:
            if name != "prev_c":
                inputs[name] = _normal(rng, gates * hidden)
        return inputs
    return build


def _one_upstream(fn, douts, cache):
    return fn(douts[0], cache)


def _two_upstream(fn, douts, cache):
    return fn(douts[0], douts[1], cache)


def _with_dweights(fn, douts, cache):
    return fn(douts[0], cache, douts[1])


def _rnn_cases():
    cases = []
    for seed, (n, d, hidden) in ((1, (3, 4, 5)), (2, (1, 2, 1))):
        cases.append(Case(f"N={n} D={d} H={hidden}", _seeded(seed, _step_inputs(n, d, hidden, 1, ["b"])),
                          F.rnn_step_forward, 1, ("x", "prev_h", "Wx", "Wh", "b"), _one_upstream, seed))
    return tuple(cases)


def _lstm_cases():
    cases = []
    for seed, (n, d, hidden) in ((3, (3, 4, 5)), (4, (1, 2, 2))):
        cases.append(Case(f"N={n} D={d} H={hidden}", _seeded(seed, _step_inputs(n, d, hidden, 4, ["prev_c", "b"])),
                          F.lstm_step_forward, 2, ("x", "prev_h", "prev_c", "Wx", "Wh", "b"), _two_upstream, seed))
    return tuple(cases)


def _gru_cases():
    cases = []
    for seed, reset_after in ((5, False), (6, True)):
        build = _step_inputs(3, 4, 5, 3, ["bx", "bh"])
        cases.append(Case(f"reset_after={reset_after}, N=3 D=4 H=5", _seeded(seed, build),
                          lambda reset_after=reset_after, **inputs: F.gru_step_forward(**inputs,
                                                                                       reset_after=reset_after),
                          1, ("x", "prev_h", "Wx", "Wh", "bx", "bh"), _one_upstream, seed))
    return tuple(cases)


def _masked_softmax_cases():
    def per_example(rng):
        return {"scores": _normal(rng, 3, 2, 4), "valid_lens": _lens([4, 1, 0])}

    def per_query(rng):
        return {"scores": _normal(rng, 2, 3, 5), "valid_lens": _lens([[5, 2, 1], [0, 3, 4]])}

    def large(rng):
        return {"scores": _normal(rng, 2, 2, 6, scale=4.0), "valid_lens": None}

    return tuple(Case(label, _seeded(seed, build), F.masked_softmax, 1, ("scores",), _one_upstream, seed)
                 for seed, label, build in ((7, "valid_lens=[4, 1, 0] (a zero-length row)", per_example),
                                            (8, "valid_lens per query (N, Q), one row empty", per_query),
                                            (9, "valid_lens=None, large scores (std 4)", large)))


def _additive_attention_cases():
    def build(lens):
        def make(rng):
            n, q, k, dq, dk, dv, hidden = 2, 3, 4, 3, 5, 2, 4
            return {"queries": _normal(rng, n, q, dq), "keys": _normal(rng, n, k, dk), "values": _normal(rng, n, k, dv),
                    "Wq": _normal(rng, dq, hidden, scale=0.5), "Wk": _normal(rng, dk, hidden, scale=0.5),
                    "wv": _normal(rng, hidden, scale=2.0), "valid_lens": _lens(lens)}
        return make

    wrt = ("queries", "keys", "values", "Wq", "Wk", "wv")
    return (
        Case("valid_lens=[2, 4], dweights=None", _seeded(10, build([2, 4])), F.additive_attention_forward,
             1, wrt, _one_upstream, 10),
        Case("valid_lens per query (N, Q) with a 0, dweights given", _seeded(11, build([[4, 1, 3], [0, 2, 4]])),
             F.additive_attention_forward, 2, wrt, _with_dweights, 11),
    )


EXERCISES = (
    Exercise("rnn_step_backward", "rnn_step_backward(dnext_h, cache)",
             ("dx", "dprev_h", "dWx", "dWh", "db"), F.rnn_step_backward, _rnn_cases()),
    Exercise("lstm_step_backward", "lstm_step_backward(dnext_h, dnext_c, cache)",
             ("dx", "dprev_h", "dprev_c", "dWx", "dWh", "db"), F.lstm_step_backward, _lstm_cases()),
    Exercise("gru_step_backward", "gru_step_backward(dnext_h, cache)",
             ("dx", "dprev_h", "dWx", "dWh", "dbx", "dbh"), F.gru_step_backward, _gru_cases()),
    Exercise("masked_softmax_backward", "masked_softmax_backward(dweights, cache)",
             ("dscores",), F.masked_softmax_backward, _masked_softmax_cases()),
    Exercise("additive_attention_backward", "additive_attention_backward(dcontext, cache, dweights=None)",
             ("dqueries", "dkeys", "dvalues", "dWq", "dWk", "dwv"), F.additive_attention_backward,
             _additive_attention_cases()),
)
"""The graded functions, in the order of the exercise sheet."""

NAMES = tuple(exercise.name for exercise in EXERCISES)


# --------------------------------------------------------------------- report
@dataclasses.dataclass
class TensorGrade:
    """One returned gradient in one case."""
    case: str
    tensor: str
    shape: tuple           # the expected shape
    fd_error: float        # largest relative error against finite differences (inf when not comparable)
    engine_diff: float     # largest absolute difference from npseq's own backward (inf when not comparable)
    ok: bool
    problem: str = ""      # what is wrong, for a failing tensor


@dataclasses.dataclass
class CaseProblem:
    """A case in which the learner's function gave no gradients to check."""
    case: str
    kind: str     # "not implemented" or "error"
    message: str


@dataclasses.dataclass
class FunctionGrade:
    """The verdict on one exercise function."""
    name: str
    signature: str
    attempted: bool                            # the file defines the name
    rows: list = dataclasses.field(default_factory=list)      # TensorGrade, case by case
    problems: list = dataclasses.field(default_factory=list)  # CaseProblem
    total: int = 0                             # (case, tensor) pairs
    cases: tuple = ()                          # the case labels, in grading order
    note: str = ""

    @property
    def correct(self) -> int:
        return sum(row.ok for row in self.rows)

    @property
    def points(self) -> float:
        """Fraction of this function's (case, tensor) pairs that are correct, in ``[0, 1]``."""
        return self.correct / self.total if self.total else 0.0

    @property
    def status(self) -> str:
        """``"not attempted"``, ``"not implemented"``, ``"correct"`` or ``"incorrect"``."""
        if not self.attempted:
            return "not attempted"
        if self.problems and all(p.kind == "not implemented" for p in self.problems) and not self.rows:
            return "not implemented"
        return "correct" if self.correct == self.total else "incorrect"

    def rows_for(self, tensor: str) -> list:
        return [row for row in self.rows if row.tensor == tensor]

    def section(self) -> str:
        if self.status == "not attempted":
            return f"== {self.signature}: not attempted (not defined in the file), 0 points"
        if self.status == "not implemented":
            messages = dict.fromkeys(p.message for p in self.problems)
            return "\n".join([f"== {self.signature}: not implemented, 0 points"]
                             + [f"   {message}" for message in messages])
        lines = [f"== {self.signature}: {self.correct}/{self.total} tensors correct, {self.points:.2f} points"]
        if self.note:
            lines.append(f"   note: {self.note}")
        header = ("case", "tensor", "shape", "rel err vs FD", "abs diff vs npseq", "verdict")
        cells = []
        problems = {p.case: p for p in self.problems}
        for case in ("all cases",) + tuple(self.cases):
            if case in problems:
                p = problems[case]
                cells.append((case, "-", "-", "-", "-", f"{p.kind.upper()}: {p.message}"))
            for row in (r for r in self.rows if r.case == case):
                cells.append((case, row.tensor, "x".join(map(str, row.shape)) or "scalar",
                              _number(row.fd_error), _number(row.engine_diff),
                              "ok" if row.ok else f"FAIL ({row.problem})"))
        widths = [max(len(str(cell)) for cell in column) for column in zip(header, *cells)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines += ["   " + fmt.format(*header).rstrip(), "   " + "  ".join("-" * w for w in widths)]
        lines += ["   " + fmt.format(*cell).rstrip() for cell in cells]
        return "\n".join(lines)


def _number(value: float) -> str:
    return "-" if value == float("inf") else f"{value:.1e}"


@dataclasses.dataclass(repr=False)
class GradeReport:
    """The result of :func:`grade_file`; prints as one table per function and a score."""
    path: str
    functions: list  # FunctionGrade, in exercise order

    @property
    def score(self) -> float:
        """Total points as a percentage of the graded functions (each worth one point)."""
        return 100.0 * sum(f.points for f in self.functions) / len(self.functions) if self.functions else 0.0

    @property
    def ok(self) -> bool:
        """True when every graded function is entirely correct (100 %)."""
        return all(f.status == "correct" for f in self.functions)

    @property
    def missing(self) -> list:
        """Names of the exercise functions the file does not define."""
        return [f.name for f in self.functions if not f.attempted]

    def __getitem__(self, name: str) -> FunctionGrade:
        for function in self.functions:
            if function.name == name:
                return function
        raise KeyError(f"name: no function {name!r} in this report; it has {[f.name for f in self.functions]}")

    def table(self) -> str:
        lines = [f"grading {self.path}", ""]
        for function in self.functions:
            lines += [function.section(), ""]
        if self.missing:
            lines.append(f"not attempted (0 points): {', '.join(self.missing)}")
        points = sum(f.points for f in self.functions)
        unit = "point" if len(self.functions) == 1 else "points"
        lines.append(f"score: {points:.2f} / {len(self.functions)} {unit} = {self.score:.1f}%"
                     + ("  -- all correct" if self.ok else ""))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__


# -------------------------------------------------------------------- grading
def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _describe(exc: BaseException, path: str) -> str:
    """``Type: message (file.py, line n)``, the line being the deepest one in the learner's file."""
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if os.path.abspath(frame.filename) == path:
            where = f" ({os.path.basename(path)}, line {frame.lineno})"
            break
    message = _one_line(exc)
    return f"{type(exc).__name__}{': ' + message if message else ''}{where}"


def load_submission(path: str) -> types.ModuleType:
    """Import the learner's file as a fresh module (its ``if __name__ == "__main__":`` block does not run).

    Raises:
        SubmissionError: the file is missing or unreadable, has a syntax error, or
            raises while importing; the message is one line naming the learner's line.
    """
    given, path = path, os.path.abspath(path)
    shown = os.path.basename(path)
    if not os.path.isfile(path):
        raise SubmissionError(f"no such file: {given}")
    try:
        with open(path, "rb") as handle:
            source = handle.read()
        code = compile(source, path, "exec")
    except OSError as exc:
        raise SubmissionError(f"cannot read {given}: {exc.strerror}") from None
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes in the source
        line = f", line {exc.lineno}" if getattr(exc, "lineno", None) else ""
        text = getattr(exc, "msg", None) or _one_line(exc)
        raise SubmissionError(f"{shown}{line}: {type(exc).__name__}: {text}") from None
    name = "_npseq_submission"
    module = types.ModuleType(name)
    module.__file__ = path
    # Registered (dataclasses look their module up while it runs; the next file graded
    # replaces it), and its folder is importable, as when the learner runs it with python.
    sys.modules[name] = module
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, SyntaxError):  # in a module the learner's file imports
            raise SubmissionError(f"{os.path.basename(exc.filename or '?')}, line {exc.lineno}: "
                                  f"{type(exc).__name__}: {exc.msg}") from None
        raise SubmissionError(f"cannot import {shown}: {_describe(exc, path)}") from None
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return module


def _upstream(outputs, seed: int):
    rng = backend.numpy.random.default_rng(seed)
    return tuple(_normal(rng, *out.shape) for out in outputs)


def _numerical_grads(case: Case, douts) -> dict:
    inputs = case.make_inputs()

    def outputs_of(_):
        return case.forward(**inputs)[:case.outputs]

    return {name: numerical_gradient(outputs_of, inputs[name], df=douts, h=1e-3, order=4) for name in case.wrt}


def _call(fn, case: Case, douts):
    """Run ``fn`` on a fresh forward's cache and copies of the upstream gradients (it may edit either)."""
    *_, cache = case.forward(**case.make_inputs())
    return case.call(fn, tuple(d.copy() for d in douts), cache)


def _as_grads(result, names: tuple):
    """The returned gradients as a tuple, or a one-line reason why they cannot be checked."""
    if len(names) == 1 and hasattr(result, "shape"):
        return (result,), ""
    if not isinstance(result, (tuple, list)):
        return None, (f"returned {type(result).__name__}, expected a tuple of {len(names)} arrays "
                      f"({', '.join(names)})")
    if len(result) != len(names):
        return None, f"returned {len(result)} values, expected {len(names)} ({', '.join(names)})"
    return tuple(result), ""


def _grade_tensor(case: str, name: str, given, numeric, engine) -> TensorGrade:
    xp = backend.numpy
    shape = tuple(numeric.shape)
    try:
        row = compare(name, given, numeric, DEFAULT_TOL)
    except (TypeError, ValueError) as exc:  # e.g. an array of strings or objects
        return TensorGrade(case, name, shape, float("inf"), float("inf"), False,
                           f"not a float array: {_one_line(exc)}")
    if row.problem:
        return TensorGrade(case, name, shape, float("inf"), float("inf"), False, row.problem)
    if row.analytic.size == 0:
        return TensorGrade(case, name, shape, 0.0, 0.0, True)
    expected = backend.to_numpy(engine).astype(xp.float64)
    diff = float(xp.abs(row.analytic - expected).max()) if xp.all(xp.isfinite(row.analytic)) else float("inf")
    limit = ENGINE_TOL * max(1.0, float(xp.abs(expected).max()))
    ok = row.ok and diff <= limit
    problem = ""
    if not xp.all(xp.isfinite(row.analytic)):
        problem = "not finite (NaN or inf)"
    elif not row.ok:
        problem = (f"worst at {list(row.worst_index)}: yours {row.analytic_value:+.6e}, "
                   f"finite differences {row.numeric_value:+.6e}")
    elif not ok:
        worst = tuple(int(i) for i in xp.unravel_index(int(xp.argmax(xp.abs(row.analytic - expected))), shape))
        problem = (f"differs from npseq at {list(worst)}: yours {float(row.analytic[worst]):+.6e}, "
                   f"npseq {float(expected[worst]):+.6e}")
    return TensorGrade(case, name, shape, row.max_rel_error, diff, ok, problem)


def grade_function(exercise: Exercise, fn, path: str) -> FunctionGrade:
    """Grade one learner function (``fn``; ``None`` when the file does not define it) in every case."""
    grade = FunctionGrade(exercise.name, exercise.signature, attempted=fn is not None,
                          total=len(exercise.cases) * len(exercise.grads),
                          cases=tuple(case.label for case in exercise.cases))
    if fn is None:
        return grade
    if not callable(fn):
        grade.problems.append(CaseProblem("all cases", "error", f"{exercise.name} is not a function "
                                                                f"(it is of type {type(fn).__name__})"))
        return grade
    if getattr(fn, "__module__", "").startswith("npseq"):
        grade.note = f"this is npseq's own {fn.__module__}.{getattr(fn, '__name__', exercise.name)}, imported"
    for case in exercise.cases:
        douts = _upstream(case.forward(**case.make_inputs())[:case.outputs], case.seed)
        try:
            result = _call(fn, case, douts)
        except NotImplementedError as exc:
            grade.problems.append(CaseProblem(case.label, "not implemented", _describe(exc, path)))
            continue
        except (Exception, SystemExit) as exc:
            grade.problems.append(CaseProblem(case.label, "error", _describe(exc, path)))
            continue
        grads, why = _as_grads(result, exercise.grads)
        if grads is None:
            grade.problems.append(CaseProblem(case.label, "error", why))
            continue
        numeric = _numerical_grads(case, douts)
        engine = _as_grads(_call(exercise.engine, case, douts), exercise.grads)[0]
        for name, input_name, given, expected in zip(exercise.grads, case.wrt, grads, engine):
            grade.rows.append(_grade_tensor(case.label, name, given, numeric[input_name], expected))
    return grade


def grade_file(path: str, only=None) -> GradeReport:
    """Import the learner's file and grade every exercise function (or those named in ``only``).

    Args:
        path: a Python file defining some of :data:`NAMES`.
        only: ``None`` (all exercises) or an iterable of names from :data:`NAMES`.

    Returns:
        A :class:`GradeReport` (``.score`` in percent, ``.ok``, ``report[name]``; prints as tables).

    Raises:
        SubmissionError: the file cannot be imported (one-line message).
        ValueError: ``only`` names something that is not an exercise.
    """
    names = list(NAMES) if only is None else list(dict.fromkeys(only))
    unknown = [name for name in names if name not in NAMES]
    if unknown:
        raise ValueError(f"only: expected names from {list(NAMES)}, got {unknown}")
    module = load_submission(path)
    learner_path = os.path.abspath(path)
    functions = [grade_function(exercise, getattr(module, exercise.name, None), learner_path)
                 for exercise in EXERCISES if exercise.name in names]
    return GradeReport(path, functions)


# ------------------------------------------------------------------------ CLI
class _Parser(argparse.ArgumentParser):
    """A bad command line is reported in one line with exit code 2 (as the ``npseq`` command does)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="npseq grade",
                     description="Grade the backward functions in a course exercise file against finite "
                                 "differences and npseq's own backward. Exit code 0 at 100%%, 1 below, "
                                 "2 when the file cannot be graded.")
    parser.add_argument("file", help="the learner's Python file (defines some of: " + ", ".join(NAMES) + ")")
    parser.add_argument("--only", action="append", choices=NAMES, metavar="NAME",
                        help="grade only this function (repeatable); the score counts only these")
    return parser


def main(argv=None) -> int:
    """``npseq grade FILE [--only NAME ...]``: print the report; return the exit code."""
    args = build_parser().parse_args(argv)
    try:
        report = grade_file(args.file, only=args.only)
    except SubmissionError as exc:
        print(f"npseq grade: {exc}", file=sys.stderr, flush=True)
        return 2
    print(report, flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
