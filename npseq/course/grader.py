"""The grader: a learner's backward, case by case, against finite differences and npseq's own.

For every exercise a file defines (:data:`npseq.course.sheet.EXERCISES`), and for each
of its cases (:mod:`npseq.course.cases`), the grader runs *npseq's* forward, hands its
cache to the learner's backward together with a seeded upstream gradient, and checks
every returned tensor twice:

* against centered finite differences of the forward (:mod:`npseq.gradcheck`, the
  five-point stencil with ``h = 1e-3``, error :math:`O(h^4)`): largest relative error
  (:func:`npseq.gradcheck.gradient_error`) below ``1e-7``;
* against npseq's own backward on the same cache: largest absolute difference
  below ``1e-9 * max(1, max |engine gradient|)`` (:data:`ENGINE_TOL`).

A tensor passes in a case when it has the right shape, is finite and passes both. A
failing tensor is located: its worst element, for a gate weight the gate and the unit
(``dWx[0, 15]: gate g, unit 0``), for a sequence gradient the first time step, walking
back from ``T-1``, where it leaves npseq's (:func:`npseq.gradcheck.step_report`), and for
NaN or inf where the first one sits. Each failing tensor also gets a *diagnosis*, the
same words for the same mistake in every file (``dWx: gate g, every unit``), so that a
whole class's mistakes can be counted.

**Isolation.** The file is imported, and each function graded, in a child process
(:mod:`npseq.course.isolation`) with a time limit (:data:`DEFAULT_TIMEOUT` per function)
and a memory limit (:data:`DEFAULT_MEMORY_MB`). A function that runs past the limit,
crashes the process, ends it or calls ``sys.exit`` scores 0 with one line saying which;
the other functions are still graded.

**Score.** Each function is worth one point, split evenly over its (case, tensor) pairs
(:class:`npseq.course.report.FunctionGrade`). A case whose call raises, or returns the
wrong number of arrays, scores 0 for all its tensors; a ``NotImplementedError`` is
reported as "not implemented". A name the file does not define is "not attempted".

**Honesty.** A submission that imports or calls npseq's own backward functions is
flagged (:mod:`npseq.course.honesty`); the score is unchanged.
"""
from __future__ import annotations

import functools
import time

from .. import backend
from ..gradcheck import DEFAULT_TOL, compare, first_wrong_step, gradient_error, numerical_gradient, step_report
from .cases import Case, normal
from .exercise import Exercise
from .honesty import NpseqCallWatch, scan_imports
from .isolation import Failed, run_isolated
from .report import CaseProblem, FunctionGrade, GradeReport, TensorGrade
from .sheet import EXERCISE_BY_NAME, EXERCISES, NAMES
from .submission import Submission, SubmissionError, describe, learner_line, load_submission, one_line, read_submission

ENGINE_TOL = 1e-9
"""Learner and engine gradients may differ by this much, relative to ``max(1, max |engine gradient|)``."""

DEFAULT_TIMEOUT = 60.0
"""Seconds each function (and the import of the file) may take, all its cases together."""

DEFAULT_MEMORY_MB = 4096
"""Megabytes of address space a child process may add to what it holds when it starts."""


def _upstream(outputs, seed: int):
    rng = backend.numpy.random.default_rng(seed)
    return tuple(normal(rng, *out.shape) for out in outputs)


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


def describe_index(name: str, index, shape: tuple, gates: tuple = (), time_axis: int | None = None) -> str:
    """Name one element so that a learner can act on it: ``dWx[0, 15]: gate g, unit 0`` or ``dx[1, 3, 0]: t=3``.

    Args:
        name: the tensor's name.
        index: the element's index.
        shape: the tensor's shape.
        gates: the gate names when the last axis holds ``len(gates)`` blocks of ``H`` columns.
        time_axis: the axis of the time steps, for a sequence gradient.
    """
    index = tuple(int(i) for i in index)
    where = []
    if time_axis is not None:
        where.append(f"t={index[time_axis]}")
    if gates and shape and shape[-1] % len(gates) == 0:
        hidden = shape[-1] // len(gates)
        where.append(f"gate {gates[index[-1] // hidden]}, unit {index[-1] % hidden}")
    return f"{name}[{', '.join(map(str, index))}]" + (f": {', '.join(where)}" if where else "")


def _not_finite(name: str, values, shape: tuple, gates: tuple, time_axis: int | None) -> str:
    """Count the NaN and inf and locate the one a backward pass meets first (the latest time step)."""
    xp = backend.numpy
    bad = xp.argwhere(~xp.isfinite(values))
    if time_axis is not None:  # backpropagation through time computes the last step first
        bad = bad[xp.argsort(-bad[:, time_axis], kind="stable")]
    first = tuple(bad[0])
    counts = [f"{int(xp.isnan(values).sum())} NaN", f"{int(xp.isinf(values).sum())} inf"]
    return (f"not finite: {' and '.join(counts)}; {'NaN' if xp.isnan(values[first]) else 'inf'} at "
            f"{describe_index(name, first, shape, gates, time_axis)}")


def grade_tensor(case: str, name: str, given, numeric, engine, gates: tuple = (),
                 time_axis: int | None = None) -> TensorGrade:
    """Grade one returned gradient ``given`` against finite differences ``numeric`` and npseq's ``engine``."""
    xp = backend.numpy
    shape = tuple(numeric.shape)
    try:
        row = compare(name, given, numeric, DEFAULT_TOL)
    except (TypeError, ValueError) as exc:  # e.g. an array of strings or objects
        return TensorGrade(case, name, shape, float("inf"), float("inf"), False,
                           f"not a float array: {one_line(exc)}", diagnosis=f"{name}: not a float array")
    if row.problem:
        return TensorGrade(case, name, shape, float("inf"), float("inf"), False, row.problem,
                           diagnosis=f"{name}: wrong shape" if "shape" in row.problem else f"{name}: {row.problem}")
    if row.analytic.size == 0:
        return TensorGrade(case, name, shape, 0.0, 0.0, True)
    expected = backend.to_numpy(engine).astype(xp.float64)
    finite = bool(xp.all(xp.isfinite(row.analytic)))
    diff = float(xp.abs(row.analytic - expected).max()) if finite else float("inf")
    limit = ENGINE_TOL * max(1.0, float(xp.abs(expected).max()))
    ok = row.ok and diff <= limit
    problem = ""
    if not finite:
        problem = _not_finite(name, row.analytic, shape, gates, time_axis)
    elif not row.ok:
        problem = (f"worst at {describe_index(name, row.worst_index, shape, gates, time_axis)}; "
                   f"yours {row.analytic_value:+.6e}, finite differences {row.numeric_value:+.6e}")
    elif not ok:
        worst = tuple(int(i) for i in xp.unravel_index(int(xp.argmax(xp.abs(row.analytic - expected))), shape))
        problem = (f"differs from npseq at {describe_index(name, worst, shape, gates, time_axis)}; "
                   f"yours {float(row.analytic[worst]):+.6e}, npseq {float(expected[worst]):+.6e}")
    step = None if ok or time_axis is None else first_wrong_step(row.analytic, expected, time_axis, DEFAULT_TOL)
    diagnosis = "" if ok else diagnose(name, row.analytic, expected, gates, step)
    return TensorGrade(case, name, shape, row.max_rel_error, diff, ok, problem, step, diagnosis)


def diagnose(name: str, given, expected, gates: tuple = (), first_wrong: int | None = None) -> str:
    """Where a wrong gradient is wrong, in words that are the same for the same mistake in every file.

    ``dWx: gate g, every unit``, ``db: gates i, f, units 0, 2``, ``dx: first wrong at t=2``,
    ``dW: some elements``, ``dx: not finite``: what an instructor counts over a class.
    """
    xp = backend.numpy
    if not bool(xp.all(xp.isfinite(given))):
        return f"{name}: not finite"
    if first_wrong is not None:
        return f"{name}: first wrong at t={first_wrong}"
    wrong = gradient_error(given, expected) > DEFAULT_TOL
    if gates and given.shape and given.shape[-1] % len(gates) == 0:
        hidden = given.shape[-1] // len(gates)
        by_unit = wrong.reshape(-1, len(gates), hidden).any(axis=0)  # (gates, H): a unit with any wrong element
        parts = []
        for gate, units in zip(gates, by_unit):
            if units.all():
                parts.append(f"gate {gate}, every unit")
            elif units.any():
                wrong_units = [str(int(unit)) for unit in xp.flatnonzero(units)]
                parts.append(f"gate {gate}, unit{'s' if len(wrong_units) > 1 else ''} {', '.join(wrong_units)}")
        return f"{name}: {'; '.join(parts)}"
    return f"{name}: {'every element' if wrong.all() else 'some elements'}"


def _source_of_wrong_step(fn, exercise: Exercise, case: Case, douts, grad_index: int, step: int, time_axis: int):
    """Tell apart a step wrong by itself from one handed a wrong gradient: ``"own"``, ``"handed back"`` or None.

    The learner's backward runs again with the upstream gradient zeroed after ``step``: a
    correct recurrence then hands nothing back to ``step``, so if the learner's gradient at
    ``step`` is now right, the error came from the later step (``None``: the rerun failed).
    """
    xp = backend.numpy
    probe = tuple(d.copy() for d in douts)
    later = [slice(None)] * probe[0].ndim
    later[exercise.upstream_time_axis] = slice(step + 1, None)
    probe[0][tuple(later)] = 0
    try:
        given = _as_grads(_call(fn, case, probe), exercise.grads)[0]
        mine = xp.take(backend.to_numpy(given[grad_index]).astype(xp.float64), step, axis=time_axis)
    except (Exception, SystemExit):  # the first run already reported whatever this one would
        return None
    engine = _as_grads(_call(exercise.engine, case, probe), exercise.grads)[0][grad_index]
    reference = xp.take(backend.to_numpy(engine).astype(xp.float64), step, axis=time_axis)
    if mine.shape != reference.shape:
        return None
    right = bool(xp.all(xp.isfinite(mine))) and (mine.size == 0 or
                                                 float(gradient_error(mine, reference).max()) < DEFAULT_TOL)
    return "handed back" if right else "own"


class _LearnerExit(Exception):
    """The learner's code called ``sys.exit``: the whole function scores 0."""


def grade_function(exercise: Exercise, fn, submission: Submission,
                   watch: NpseqCallWatch | None = None) -> FunctionGrade:
    """Grade one learner function (``fn``; ``None`` when the file does not define it) in every case.

    This runs the learner's code in the calling process; :func:`grade_file` calls it in a child.
    """
    watch = watch or NpseqCallWatch()
    grade = FunctionGrade(exercise.name, exercise.signature, attempted=fn is not None,
                          total=len(exercise.cases) * len(exercise.grads),
                          cases=tuple(case.label for case in exercise.cases))
    if fn is None:
        return grade
    if not callable(fn):
        grade.problems.append(CaseProblem("all cases", "error", f"{exercise.name} is not a function "
                                                                f"(it is of type {type(fn).__name__})"))
        return grade
    time_axes = dict(exercise.time_axes)
    for case in exercise.cases:
        outputs = case.forward(**case.make_inputs())[:case.outputs]
        # a loss function returns dLoss/dx itself: the upstream gradient of its loss is 1
        douts = tuple(backend.xp.ones_like(out) for out in outputs) if case.returns_loss else \
            _upstream(outputs, case.seed)
        try:
            result = _call(functools.partial(watch.run, fn), case, douts)
        except NotImplementedError as exc:
            grade.problems.append(CaseProblem(case.label, "not implemented", describe(exc, submission)))
            continue
        except SystemExit as exc:
            raise _LearnerExit(f"sys.exit: {exercise.name} called sys.exit({exc.code!r})"
                               f"{learner_line(exc, submission)}") from None
        except Exception as exc:
            grade.problems.append(CaseProblem(case.label, "error", describe(exc, submission)))
            continue
        grads, why = _as_grads(result, exercise.grads)
        if grads is None:
            grade.problems.append(CaseProblem(case.label, "error", why))
            continue
        numeric = _numerical_grads(case, douts)
        targets = case.wrt
        if case.returns_loss:  # the loss itself is checked against the forward's value
            numeric["loss"], targets = outputs[0], ("loss",) + case.wrt
        engine = _as_grads(_call(exercise.engine, case, douts), exercise.grads)[0]
        for index, (name, input_name, given, expected) in enumerate(zip(exercise.grads, targets, grads, engine)):
            gates = exercise.gates if name in exercise.gated else ()
            row = grade_tensor(case.label, name, given, numeric[input_name], expected, gates, time_axes.get(name))
            if row.first_wrong_step is not None:
                steps, source = row.shape[time_axes[name]], None
                if exercise.upstream_time_axis is not None and row.first_wrong_step < steps - 1:
                    source = _source_of_wrong_step(functools.partial(watch.run, fn), exercise, case, douts, index,
                                                   row.first_wrong_step, time_axes[name])
                row.problem += f"; {step_report(row.first_wrong_step, steps, source)}"
            grade.rows.append(row)
    grade.npseq_calls = tuple(sorted(watch.calls))
    if grade.npseq_calls:
        grade.note = f"honesty: its code called npseq's own {', '.join(grade.npseq_calls)}"
    return grade


def _import_and_list(submission: Submission):
    """In a child: import the learner's file; the names of :data:`NAMES` it defines, or why it cannot be imported."""
    try:
        NpseqCallWatch().install()
        module = load_submission(submission)
        return [name for name in NAMES if hasattr(module, name)]
    except SubmissionError as exc:
        return SubmissionError(str(exc))
    except BaseException as exc:  # a learner's KeyboardInterrupt, or a MemoryError outside a case
        return Failed(f"crashed: {describe(exc, submission)}")


def _import_and_grade(submission: Submission, name: str):
    """In a child: import the learner's file and grade its function ``name``; a FunctionGrade, or why not."""
    try:
        watch = NpseqCallWatch()
        watch.install()
        module = load_submission(submission)
        return grade_function(EXERCISE_BY_NAME[name], getattr(module, name, None), submission, watch)
    except SubmissionError as exc:  # the file imported once and not now: it changes from one import to the next
        return Failed(f"crashed: {exc}")
    except _LearnerExit as exc:
        return Failed(str(exc))
    except BaseException as exc:
        return Failed(f"crashed: {describe(exc, submission)}")


def grade_file(path: str, only=None, *, timeout: float = DEFAULT_TIMEOUT, memory_mb=DEFAULT_MEMORY_MB,
               quiet: bool = False) -> GradeReport:
    """Import the learner's file and grade every exercise function (or those named in ``only``).

    The import and each function run in their own child process, under ``timeout`` and
    ``memory_mb`` (see the module docstring), so nothing the learner's code does can stop
    the grading of the other functions.

    Args:
        path: a ``.py`` file or a notebook (``.ipynb``) defining some of :data:`NAMES`.
        only: ``None`` (all exercises) or an iterable of names from :data:`NAMES`.
        timeout: seconds for the import and for each function (all its cases).
        memory_mb: megabytes the child may add to its address space; ``None`` or 0 for no limit.
        quiet: send what the learner's code prints to standard error instead of standard output.

    Returns:
        A :class:`~npseq.course.report.GradeReport` (``.score`` in percent, ``.ok``, ``report[name]``;
        prints as tables).

    Raises:
        SubmissionError: the file cannot be imported (one-line message).
        ValueError: ``only`` names something that is not an exercise, or ``timeout`` is not positive.
    """
    names = list(NAMES) if only is None else list(dict.fromkeys(only))
    unknown = [name for name in names if name not in NAMES]
    if unknown:
        raise ValueError(f"only: expected names from {list(NAMES)}, got {unknown}")
    if not timeout > 0:
        raise ValueError(f"timeout: expected a positive number of seconds, got {timeout!r}")
    started = time.monotonic()
    submission = read_submission(path)
    limits = {"timeout": timeout, "memory_mb": memory_mb, "quiet": quiet}
    defined = run_isolated(_import_and_list, (submission,), what="importing the file", **limits)
    if isinstance(defined, SubmissionError):
        raise defined
    if isinstance(defined, Failed):
        raise SubmissionError(f"cannot import {submission.name}: {defined}")
    functions = []
    for exercise in EXERCISES:
        if exercise.name not in names:
            continue
        if exercise.name not in defined:
            functions.append(grade_function(exercise, None, submission))
            continue
        answer = run_isolated(_import_and_grade, (submission, exercise.name), what=exercise.name, **limits)
        if isinstance(answer, FunctionGrade):
            functions.append(answer)
        else:
            grade = grade_function(exercise, None, submission)
            grade.attempted, grade.failure = True, str(answer)
            functions.append(grade)
    return GradeReport(path, functions, scan_imports(submission), time.monotonic() - started,
                       notes=list(submission.notes))
