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
NaN or inf where the first one sits. In a network of parts (the layers of a stack, the
directions of a bidirectional layer: :class:`~npseq.course.exercise.Part`), the part where the
mistake enters is named, and its steps walked in its own order (``dx: the backward direction,
first wrong at t=0``). Each failing tensor also gets a *diagnosis*, the
same words for the same mistake in every file (``dWx: gate g, every unit``), so that a
whole class's mistakes can be counted.

**The verdict is the grader's.** The file is imported, and each function run, in a
sandboxed child process (:mod:`npseq.course.sandbox`) with a time limit
(:data:`DEFAULT_TIMEOUT` per function) and a memory limit (:data:`DEFAULT_MEMORY_MB`). The
child only runs the learner's function on the cases the grader asks for and sends back
what it returned, as arrays (JSON and ``np.save`` without pickles, size-capped); the grader
builds the cases, computes the finite differences and npseq's own backward itself, and
decides every verdict and every point, so nothing the submission does in its own process
(patching npseq or NumPy, forging a report) can raise a score. A function that runs past the
limit, crashes the process, ends it, calls ``sys.exit`` or sends something that is not an
answer scores 0 with one line saying which; the other functions are still graded. Every
message of the learner's is cut at :data:`MAX_MESSAGE_CHARS`, and the lists of a report at
:data:`MAX_LISTED` lines.

**Score.** Each function is worth one point, split evenly over its (case, tensor) pairs
(:class:`npseq.course.report.FunctionGrade`). A case whose call raises, or returns the
wrong number of arrays, scores 0 for all its tensors; a ``NotImplementedError`` is
reported as "not implemented". A name the file does not define is "not attempted".

**Honesty.** A submission that imports or calls npseq's own backward functions is
flagged (:mod:`npseq.course.honesty` reads the file; :mod:`npseq.course.watch`, in the
child, sees npseq's backward run and the watch switched off or reached around); the score
is unchanged unless the policy is ``"zero"``.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import sys
import time

from .. import backend
from ..gradcheck import (
    DEFAULT_TOL,
    compare,
    distinct_numbers,
    first_wrong_step,
    gradient_error,
    numerical_gradient,
    step_report,
    wrong_steps,
)
from ..language import _, current, speaking
from ..samples import normal
from . import watch
from .cases import Case, seed_of
from .copies import closest_copy
from .crashes import CrashContext, crash_context
from .exercise import Exercise, Part
from .honesty import scan_imports, scan_indirection
from .patterns import recognised, wrong_heads, wrong_rows
from .report import POLICIES, CaseProblem, FunctionGrade, GradeReport, TensorGrade
from .sandbox import (
    Channel,
    ChannelError,
    Child,
    Deadline,
    Limits,
    Message,
    check_memory_room,
    describe_end,
    end_kind,
    others_cannot_read_python,
    python_unreadable,
    spawn,
)
from .sheet import DEFAULT_SETS, EXERCISE_BY_NAME, EXERCISES, NAMES, graded_names, names_of_sets
from .submission import (
    Submission,
    SubmissionError,
    describe,
    exception_text,
    learner_line,
    load_submission,
    one_line,
    read_submission,
    type_name,
)

ENGINE_TOL = 1e-9
"""Learner and engine gradients may differ by this much, relative to ``max(1, max |engine gradient|)``."""

DEFAULT_TIMEOUT = 60.0
"""Seconds each function (and the import of the file) may take, all its cases together."""

DEFAULT_MEMORY_MB = 4096
"""Megabytes of address space a child process may add to what it holds when it starts."""


def _upstream(outputs, seed):
    rng = backend.numpy.random.default_rng(seed)
    return tuple(normal(rng, *out.shape) for out in outputs)


def _numerical_grads(case: Case, douts, variant: int = 0) -> dict:
    inputs = case.make_inputs(variant)
    if case.numerical is not None:  # gradients of what the forward computes on the way (a chain's links)
        return case.numerical(inputs, douts)

    def outputs_of(_):
        return case.forward(**inputs)[:case.outputs]

    return {name: numerical_gradient(outputs_of, inputs[name], df=douts, h=1e-3, order=4) for name in case.wrt}


def _call(fn, case: Case, douts, variant: int = 0):
    """Run ``fn`` on a fresh forward's cache and copies of the upstream gradients (it may edit either). The forward is
    npseq's own (:func:`npseq.course.watch.npseq_own`): a loss's forward computes its gradient too."""
    *_, cache = watch.npseq_own(case.forward, **case.make_inputs(variant))
    return case.call(fn, tuple(d.copy() for d in douts), cache)


def _as_grads(result, names: tuple):
    """The returned gradients as a tuple, or a one-line reason why they cannot be checked."""
    if len(names) == 1 and hasattr(result, "shape"):
        return (result,), ""
    if not isinstance(result, (tuple, list)):
        return None, _("returned {type}, expected a tuple of {count} arrays ({names})").format(
            type=type(result).__name__, count=len(names), names=", ".join(names))
    if len(result) != len(names):
        return None, _("returned {count} values, expected {expected} ({names})").format(
            count=len(result), expected=len(names), names=", ".join(names))
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
        where.append(_("gate {gate}, unit {unit}").format(gate=gates[index[-1] // hidden], unit=index[-1] % hidden))
    return f"{name}[{', '.join(map(str, index))}]" + (f": {', '.join(where)}" if where else "")


def _not_finite(name: str, values, shape: tuple, gates: tuple, time_axis: int | None) -> str:
    """Count the NaN and inf and locate the one a backward pass meets first (the latest time step)."""
    xp = backend.numpy
    bad = xp.argwhere(~xp.isfinite(values))
    if time_axis is not None:  # backpropagation through time computes the last step first
        bad = bad[xp.argsort(-bad[:, time_axis], kind="stable")]
    first = tuple(bad[0])
    return _("not finite: {nan} NaN and {inf} inf; {which} at {where}").format(
        nan=int(xp.isnan(values).sum()), inf=int(xp.isinf(values).sum()),
        which="NaN" if xp.isnan(values[first]) else "inf", where=describe_index(name, first, shape, gates, time_axis))


def grade_tensor(case: str, name: str, given, numeric, engine, gates: tuple = (),
                 time_axis: int | None = None, recurrent: bool = False, heads: int = 0,
                 head_axis: int | None = None, terms: tuple = (), owners: tuple = ()) -> TensorGrade:
    """Grade one returned gradient ``given`` against finite differences ``numeric`` and npseq's ``engine``.

    A wrong tensor is located (:func:`diagnose`), or named by the pattern it shows
    (:func:`~npseq.course.patterns.recognised`: one of ``terms``, the ``(path, array)`` parts it sums,
    left out; two gates swapped, the steps reversed, a constant factor, the attention heads' layout).
    Along a ``time_axis`` computed by a ``recurrent`` backward,
    walking back from the last step, the first wrong step is where the error enters; along one whose
    steps are computed each on its own, the wrong steps are listed; along a ``head_axis`` holding
    ``heads`` blocks, the wrong heads; of a tensor whose rows belong to parts of the network (``owners``,
    ``(words, index along the first axis)`` pairs: the initial states of layers or directions, stacked), the parts
    whose rows are wrong."""
    xp = backend.numpy
    shape = tuple(numeric.shape)
    try:
        row = compare(name, given, numeric, DEFAULT_TOL)
    except (TypeError, ValueError) as exc:  # e.g. an array of strings or objects
        return TensorGrade(case, name, shape, float("inf"), float("inf"), False,
                           _("not a float array: {reason}").format(reason=one_line(exc)),
                           diagnosis=f"{name}: not a float array")
    if row.problem:
        return TensorGrade(case, name, shape, float("inf"), float("inf"), False, row.problem,
                           diagnosis=f"{name}: wrong shape")
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
        yours, theirs = distinct_numbers(row.analytic_value, row.numeric_value)
        problem = _("worst at {where}; yours {yours}, finite differences {theirs}").format(
            where=describe_index(name, row.worst_index, shape, gates, time_axis), yours=yours, theirs=theirs)
    elif not ok:
        worst = tuple(int(i) for i in xp.unravel_index(int(xp.argmax(xp.abs(row.analytic - expected))), shape))
        yours, theirs = distinct_numbers(float(row.analytic[worst]), float(expected[worst]))
        problem = _("differs from npseq at {where}; yours {yours}, npseq {theirs}").format(
            where=describe_index(name, worst, shape, gates, time_axis), yours=yours, theirs=theirs)
    pattern = recognised(name, row.analytic, expected, gates, time_axis, heads, head_axis, terms) \
        if finite and not ok else None
    walked = not ok and pattern is None and time_axis is not None
    step = first_wrong_step(row.analytic, expected, time_axis, DEFAULT_TOL) if walked and recurrent else None
    diagnosis = "" if ok else pattern.diagnosis if pattern else diagnose(name, row.analytic, expected, gates, step)
    if pattern:
        problem += f"; {pattern.sentence}"
    elif not ok and finite and heads > 1 and head_axis is not None and row.analytic.ndim:
        wrong = wrong_heads(row.analytic, expected, heads, head_axis)
        if 0 < len(wrong) < heads:
            which = f"head{'s' if len(wrong) > 1 else ''} {', '.join(map(str, wrong))}"
            diagnosis = f"{name}: {which}"  # class-wide words: English, as every diagnosis
            said = _("wrong in heads {heads} of 0..{last} (each head's block: {width} of the {size} along axis "
                     "{axis})") if len(wrong) > 1 else _("wrong in head {heads} of 0..{last} (each head's block: "
                                                         "{width} of the {size} along axis {axis})")
            problem += "; " + said.format(heads=", ".join(map(str, wrong)), last=heads - 1,
                                          width=shape[head_axis] // heads, size=shape[head_axis], axis=head_axis)
    elif not ok and finite and owners and row.analytic.ndim:
        wrong = wrong_rows(row.analytic, expected, tuple(index for _, index in owners))
        if wrong:
            named = " and ".join(words for words, index in owners if index in wrong)
            diagnosis = f"{name}: {named}"
            said = _("wrong in the rows of {parts}") if len(wrong) > 1 else _("wrong in the row of {parts}")
            problem += "; " + said.format(parts=named)
    elif walked and not recurrent and finite:
        wrong = wrong_steps(row.analytic, expected, time_axis, DEFAULT_TOL)
        if 0 < len(wrong) < shape[time_axis]:
            at = ", ".join(map(str, wrong))
            diagnosis = f"{name}: wrong at t={at}"
            problem += "; " + _("wrong at t={steps} of 0..{last}, each step computed on its own here").format(
                steps=at, last=shape[time_axis] - 1)
    given_dtype = getattr(given, "dtype", None)
    if not ok and finite and given_dtype is not None and given_dtype != numeric.dtype:
        # The precision is the mistake to fix first: the elements it spoils depend on rounding luck.
        problem += "; " + _("yours is {yours}, the case's arrays are {theirs}").format(yours=given_dtype,
                                                                                      theirs=numeric.dtype)
        diagnosis = f"{name}: {given_dtype}, not {numeric.dtype}"
    return TensorGrade(case, name, shape, row.max_rel_error, diff, ok, problem, step, diagnosis)


def diagnose(name: str, given, expected, gates: tuple = (), first_wrong: int | None = None) -> str:
    """Where a wrong gradient is wrong, in words that are the same for the same mistake in every file.

    ``dWx: gate g, every unit``, ``db: gate i, unit 2``, ``dx: first wrong at t=2``,
    ``dW: some elements``, ``loss: wrong value``, ``dx: not finite``: what an instructor counts over a class.
    """
    xp = backend.numpy
    if not bool(xp.all(xp.isfinite(given))):
        return f"{name}: not finite"
    if given.ndim == 0:  # a loss: one number
        return f"{name}: wrong value"
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


def _source_of_wrong_step(ask, exercise: Exercise, case: Case, index: int, variant: int, douts, grad_index: int,
                          step: int, time_axis: int, walks_up: bool = False):
    """Tell apart a step wrong by itself from one handed a wrong gradient: ``"own"``, ``"handed back"`` or None.

    The learner's backward runs again (``ask``, in its child) with the upstream gradient zeroed
    after ``step`` (before it, for a backward that ``walks_up`` from ``t = 0``): a correct recurrence
    then hands nothing back to ``step``, so if the learner's gradient at ``step`` is now right, the error
    came from the step visited before (``None``: the rerun gave nothing to compare).
    """
    xp = backend.numpy
    probe = tuple(d.copy() for d in douts)
    later = [slice(None)] * probe[0].ndim
    later[exercise.upstream_time_axis] = slice(None, step) if walks_up else slice(step + 1, None)
    probe[0][tuple(later)] = 0
    reply = ask({"kind": "call", "case": index, "variant": variant}, probe)
    grads = _learner_grads(reply, exercise.grads) if reply.header.get("kind") == "returned" else None
    if grads is None or not hasattr(grads[grad_index], "shape") or grads[grad_index].ndim <= time_axis:
        return None
    mine = xp.take(grads[grad_index], step, axis=time_axis)
    engine = _as_grads(_call(exercise.engine, case, probe, variant), exercise.grads)[0][grad_index]
    reference = xp.take(backend.to_numpy(engine).astype(xp.float64), step, axis=time_axis)
    if mine.shape != reference.shape:
        return None
    right = bool(xp.all(xp.isfinite(mine))) and (mine.size == 0 or
                                                 float(gradient_error(mine, reference).max()) < DEFAULT_TOL)
    return "handed back" if right else "own"


MAX_MESSAGE_CHARS = 600
"""The longest message of a learner's (an exception's text) a report keeps; the rest is cut, and the cut is said."""

MAX_LISTED = 50
"""The most honesty lines and notebook notes a report lists; the rest are counted."""


def capped(text, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters, saying how much was cut."""
    line = one_line(text)
    if len(line) <= limit:
        return line
    return f"{line[:limit]} " + _("[... {count} more characters cut]").format(count=len(line) - limit)


# ------------------------------------------------ in the child: run, answer with arrays
def _load_in_child(submission: Submission, channel: Channel):
    """Import the learner's file under the honesty watch, which stays on for the child's life (it sends what it sees
    on ``channel`` at once, :mod:`npseq.course.watch`); the module, or ``None`` after saying why not."""
    watch.start(channel.write_fd, roots=(_serve_exercise, _serve_listing), learners_file=submission.path)
    try:
        return load_submission(submission)
    except SubmissionError as exc:
        channel.send(Message({"kind": "unloadable", "message": capped(exc, 4 * MAX_MESSAGE_CHARS)}))
        return None


def _serve_listing(submission: Submission, language: str, channel: Channel) -> None:
    """In a child: import the file and say which exercise names it defines (what it says, in ``language``)."""
    with speaking(language):
        module = _load_in_child(submission.moved_to(os.getcwd()), channel)
    if module is not None:
        channel.send(Message({"kind": "loaded", "defined": [name for name in NAMES if hasattr(module, name)]}))


def _returned(result, names: tuple) -> Message:
    """What the learner's function returned, as arrays only: a ``float64`` array per gradient, or a word why not."""
    grads, why = _as_grads(result, names)
    if grads is None:
        return Message({"kind": "unusable", "message": capped(why)})
    items, arrays = [], []
    for value in grads:
        if value is None:
            items.append({"none": True})
            continue
        try:
            array = backend.numpy.asarray(value)
        except Exception as exc:  # an object whose conversion itself fails
            items.append({"not_array": capped(f"{type_name(value)}: {exception_text(exc)}")})
            continue
        if array.dtype.kind not in "biuf":
            items.append({"not_array": _("an array of dtype {dtype} ({type})").format(dtype=array.dtype,
                                                                                      type=type(value).__name__)})
        elif array.nbytes > 8 * 2 ** 20:
            items.append({"not_array": _("an array of {count} bytes, more than any gradient here").format(
                count=array.nbytes)})
        else:
            items.append({"array": len(arrays), "dtype": array.dtype.name})
            arrays.append(array.astype(backend.numpy.float64))
    return Message({"kind": "returned", "items": items}, tuple(arrays))


def _serve_exercise(submission: Submission, name: str, which: str, language: str, channel: Channel) -> None:
    """In a child: import the file, then run the learner's ``name`` on each case the grader asks for.

    Each request names a case and carries the upstream gradients; the child runs npseq's
    forward on the case's seeded inputs, hands the cache to the learner's function and sends
    back what it returned (:func:`_returned`), what it raised, or that it called ``sys.exit``.
    The watch sends its records on the same channel as it sees them, from the import on.
    What it says (a message, where a crash was) is in ``language``.
    """
    with speaking(language):  # in this very frame: the watch knows it as the child's start
        submission = submission.moved_to(os.getcwd())  # the child's scratch folder: where its frames say it is
        call, returned = _call, _returned  # the grader's own, before the learner's file can replace the module's
        module = _load_in_child(submission, channel)
        if module is None:
            return
        fn = getattr(module, name, None)
        if not callable(fn):
            channel.send(Message({"kind": "not callable", "type": type(fn).__name__}))
            return
        exercise = EXERCISE_BY_NAME[name]
        cases = _cases(exercise, which)
        channel.send(Message({"kind": "ready"}))
        while True:
            request = channel.receive()
            if request.header.get("kind") != "call":
                return
            case = cases[int(request.header["case"])]
            try:
                variant = int(request.header.get("variant", 0))
                answer = returned(call(fn, case, request.arrays, variant), exercise.grads)
            except NotImplementedError as exc:
                answer = Message({"kind": "raised", "problem": "not implemented",
                                  "message": capped(describe(exc, submission))})
            except SystemExit as exc:
                said = _("sys.exit: {name} called sys.exit({code})").format(name=name, code=_code_of(exc))
                answer = Message({"kind": "exit", "message": capped(said + learner_line(exc, submission))})
            except BaseException as exc:  # MemoryError, KeyboardInterrupt and the like: the case's, not the child's
                if isinstance(exc, GeneratorExit):
                    raise
                unreadable = python_unreadable(exc)
                context = CrashContext.unknown() if unreadable else _context_of(exc, submission, name, exercise.grads)
                module = getattr(exc, "name", None) if unreadable else None
                answer = Message({"kind": "raised", "problem": "grader" if unreadable else "error",
                                  "module": module if isinstance(module, str) else "",
                                  "computing": capped(context.computing, 80),
                                  "message": capped(describe(exc, submission) + (unreadable or context.sentence))})
            channel.send(answer)
            if answer.header["kind"] == "exit":
                return


def _code_of(exc: SystemExit) -> str:
    """The ``repr`` of a ``sys.exit`` code, or its type when that ``repr`` raises (the code is the learner's)."""
    try:
        text = repr(exc.code)
        return capped(text, 80) if isinstance(text, str) else type_name(exc.code)
    except BaseException:
        return _("a {type}").format(type=type_name(exc.code))


def _context_of(exc: BaseException, submission: Submission, name: str, grads: tuple) -> CrashContext:
    """:func:`~npseq.course.crashes.crash_context`, or nothing when reading the traceback fails: the case's error is
    reported either way."""
    try:
        return crash_context(exc, submission, name, grads)
    except BaseException:  # a traceback the learner's code made unreadable
        return CrashContext.unknown()


# ---------------------------------------------- in the grader: ask, and decide everything
class _ChildFailed(Exception):
    """The child stopped answering: a time limit, a crash, an exit, or something that is not an answer; ``kind`` says
    which of :data:`~npseq.course.report.FAILURES` (the message may be in another language)."""

    def __init__(self, message: str, kind: str = "crashed"):
        super().__init__(message)
        self.kind = kind


def _ask(child: Child, deadline: float, what: str, header: dict, arrays=(), records: dict | None = None) -> Message:
    """Send ``header`` (if any) and the child's answer; the watch's records that come before it go into ``records``
    (kind -> set of what it saw, at most :data:`npseq.course.watch.MAX_RECORDS` of each kind)."""
    try:
        if header:
            child.channel.send(Message(header, tuple(backend.to_numpy(a) for a in arrays)))
        while True:
            reply = child.channel.receive(deadline)
            kind = reply.header.get("kind")
            if kind not in watch.KINDS:
                return reply
            seen = (records if records is not None else {}).setdefault(kind, set())
            if len(seen) < watch.MAX_RECORDS:
                seen.add(capped(reply.header.get("what", "?"), 200))
    except Deadline:
        raise _ChildFailed(_("time limit: {what} did not finish within {seconds:g} s (an endless loop?)").format(
            what=what, seconds=child.limits.timeout), "time limit") from None
    except (EOFError, BrokenPipeError, OSError):
        status = child.exit_status(wait=5.0)
        if status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == watch.WATCH_EXIT:
            raise _ChildFailed(_("crashed: the process running {what} replaced its channel to the grader while "
                                 "npseq's code ran (the watch ended it)").format(what=what)) from None
        raise _ChildFailed(describe_end(status, what), end_kind(status)) from None
    except ChannelError as exc:
        raise _ChildFailed(_("crashed: the process running {what} sent something that is not an answer ({reason})")
                           .format(what=what, reason=exc)) from None


def _given(reply: Message, index: int):
    """The learner's gradient number ``index`` as the grader sees it: an array, ``None``, or a word why not."""
    item = reply.header["items"][index]
    if not isinstance(item, dict):
        return _("an answer the grader cannot read")
    if item.get("none"):
        return None
    position = item.get("array")
    if isinstance(position, int) and 0 <= position < len(reply.arrays):
        return _as_sent(reply.arrays[position], item.get("dtype"))
    return str(item.get("not_array", _("an answer the grader cannot read")))[:MAX_MESSAGE_CHARS]


def _as_sent(array, dtype_name):
    """A returned array (carried as float64) back in the dtype the learner's function gave it, so that a report can
    name a precision slip; the dtype is the child's word, so only a plain number type of at most 8 bytes, into which
    the float64 copy converts back exactly, is taken."""
    try:
        dtype = backend.numpy.dtype(dtype_name if isinstance(dtype_name, str) else "float64")
    except TypeError:
        return array
    return array.astype(dtype) if dtype.kind in "biuf" and dtype.itemsize <= 8 else array


def _installed(module) -> bool:
    """Whether the grader's Python has the top-level package of ``module`` (a dotted name the child sent). Only the
    top level is looked up: finding ``a.b`` imports ``a``, and the name is the learner's to choose."""
    if not isinstance(module, str) or not module or len(module) > 200:
        return False
    try:
        return importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def _learner_grads(reply: Message, names: tuple):
    """The gradients of a ``returned`` reply, one per name; ``None`` if the reply does not have that many."""
    items = reply.header.get("items")
    if not isinstance(items, list) or len(items) != len(names):
        return None
    return tuple(_given(reply, index) for index in range(len(names)))


def _grade_case(grade: FunctionGrade, exercise: Exercise, case: Case, index: int, variant: int, ask) -> None:
    """Grade ``exercise`` in one case (the numbers of its ``variant``) through ``ask(header, arrays)``."""
    outputs = case.forward(**case.make_inputs(variant))[:case.outputs]
    # a loss function returns dLoss/dx itself: the upstream gradient of its loss is 1
    douts = tuple(backend.xp.ones_like(out) for out in outputs) if case.returns_loss else \
        _upstream(outputs, seed_of(case.seed, variant))
    reply = ask({"kind": "call", "case": index, "variant": variant}, douts)
    kind = reply.header.get("kind")
    if kind == "exit":
        raise _ChildFailed(capped(reply.header.get("message", "sys.exit")), "sys.exit")
    if kind == "raised":
        problem = reply.header.get("problem")
        # "grader" is the child's word that it could not read Python: taken only where the grader sees it is so, and
        # finds the module the child could not (a module nobody has is the file's mistake)
        problem = problem if problem == "not implemented" or (
            problem == "grader" and others_cannot_read_python() and _installed(reply.header.get("module"))) \
            else "error"
        computing = reply.header.get("computing")
        grade.problems.append(CaseProblem(case.label, problem, capped(reply.header.get("message", "")),
                                          capped(computing, 80) if isinstance(computing, str) else ""))
        return
    grads = _learner_grads(reply, exercise.grads) if kind == "returned" else None
    if grads is None:
        grade.problems.append(CaseProblem(case.label, "error", capped(reply.header.get("message", _("no answer")))))
        return
    numeric = _numerical_grads(case, douts, variant)
    targets = case.wrt
    if case.returns_loss:  # the loss itself is checked against the forward's value
        numeric["loss"], targets = outputs[0], ("loss",) + case.wrt
    engine = _as_grads(_call(exercise.engine, case, douts, variant), exercise.grads)[0]
    terms = _call(exercise.terms, case, douts, variant) if exercise.terms else ()
    time_axes = dict(exercise.time_axes)
    graded = {}
    for name, input_name, given, expected in zip(exercise.grads, targets, grads, engine):
        gates = exercise.gates if name in exercise.gated else ()
        if isinstance(given, str):
            row = TensorGrade(case.label, name, tuple(numeric[input_name].shape), float("inf"), float("inf"), False,
                              _("not a float array: {reason}").format(reason=given),
                              diagnosis=f"{name}: not a float array")
        else:
            row = grade_tensor(case.label, name, given, numeric[input_name], expected, gates, time_axes.get(name),
                               name in exercise.recurrent, case.heads, dict(exercise.headed).get(name),
                               tuple((term.path, term.value) for term in terms if term.gradient == name),
                               tuple(sorted(((part.words, row_index) for part in exercise.parts
                                             for owned, row_index in part.rows if owned == name),
                                            key=lambda owner: owner[1])))
        graded[name] = (row, given, expected)
        grade.rows.append(row)
    at_fault = _parts_at_fault(exercise.parts, graded)
    for position, name in enumerate(exercise.grads):
        row, given, expected = graded[name]
        if row.first_wrong_step is None:
            continue
        walks_up = _entered_in(row, at_fault, given, expected, time_axes[name])
        if row.first_wrong_step is None:
            continue
        steps, source = row.shape[time_axes[name]], None
        start = 0 if walks_up else steps - 1
        if exercise.upstream_time_axis is not None and row.first_wrong_step != start:
            source = _source_of_wrong_step(ask, exercise, case, index, variant, douts, position,
                                           row.first_wrong_step, time_axes[name], walks_up)
        row.problem += f"; {step_report(row.first_wrong_step, steps, source, walks_up=walks_up)}"


def _parts_at_fault(parts: tuple, graded: dict) -> list:
    """The :class:`~npseq.course.exercise.Part` records where the mistakes of one case enter: those with a wrong
    gradient of their own (or a wrong row of a shared one) that are not fed by a part that is wrong too.

    Args:
        parts: the exercise's parts.
        graded: ``gradient name -> (TensorGrade, the learner's array, npseq's)`` of the case.
    """
    xp = backend.numpy

    def wrong(part: Part) -> bool:
        if any(not graded[name][0].ok for name in part.grads):
            return True
        for name, row_index in part.rows:
            row, given, expected = graded[name]
            if row.ok:
                continue
            comparable = (not isinstance(given, str) and tuple(xp.shape(given)) == row.shape
                          and bool(xp.all(xp.isfinite(given))))
            if not comparable or wrong_rows(xp.asarray(given, dtype=xp.float64),
                                            backend.to_numpy(expected).astype(xp.float64), (row_index,)):
                return True
        return False

    broken = {part.words for part in parts if wrong(part)}
    return [part for part in parts if part.words in broken and part.fed_by not in broken]


def _entered_in(row: TensorGrade, at_fault: list, given, expected, time_axis: int) -> bool:
    """Name in ``row`` (a sequence gradient wrong from a step on) the parts where the mistake enters, and walk its
    steps in their order; whether that walk goes up from ``t = 0``. Parts that walk opposite ways share the
    gradient's errors, so no step is first: ``row.first_wrong_step`` becomes ``None``."""
    if not at_fault:
        return False
    named = " and ".join(part.words for part in at_fault)
    fed_by = [part.fed_by for part in at_fault if part.fed_by]
    row.problem += "; " + (_("the mistake enters in {parts} (or in what {feeders} hands down to it)") if fed_by else
                           _("the mistake enters in {parts}")).format(parts=named, feeders=" and ".join(fed_by))
    walks = {part.walks_up for part in at_fault}
    if len(walks) > 1:
        row.first_wrong_step = None
        row.diagnosis = f"{row.tensor}: {named}"
        return False
    walks_up = walks.pop()
    row.first_wrong_step = first_wrong_step(given, expected, time_axis, DEFAULT_TOL, walks_up=walks_up)
    row.diagnosis = f"{row.tensor}: {named}, first wrong at t={row.first_wrong_step}"
    return walks_up


def _cases(exercise: Exercise, which: str) -> tuple:
    """The exercise's own cases (``"own"``), or those in the shapes its callers hand it (``"callers"``)."""
    return exercise.caller_cases if which == "callers" else exercise.cases


def _grade_in_child(exercise: Exercise, submission: Submission, limits: Limits, quiet: bool,
                    variants: tuple, which: str = "own") -> FunctionGrade:
    """Grade the learner's ``exercise`` case by case (case ``i`` in its variant ``variants[i]``) on its own cases or
    its callers' (``which``, see :func:`_cases`), the learner's code running in a sandboxed child."""
    cases = _cases(exercise, which)
    grade = FunctionGrade(exercise.name, exercise.signature, attempted=True, total=len(cases) * len(exercise.grads),
                          cases=tuple(case.label for case in cases), chained=exercise.chained)
    child = spawn(functools.partial(_serve_exercise, submission, exercise.name, which, current()), limits,
                  submission.scratch_files(), hidden=submission.folders() + limits.private)
    waited = [0.0]  # the child's time: what the grader spends between its answers (finite differences) is not
    records = {}  # what the watch saw, from the import on: all of it belongs to this function

    def ask(header, arrays=()):
        asked = time.monotonic()
        try:
            return _ask(child, asked + limits.timeout - waited[0], exercise.name, header, arrays, records)
        finally:
            waited[0] += time.monotonic() - asked

    try:
        hello = ask({})
        kind = hello.header.get("kind")
        if kind == "unloadable":  # it imported once and not now: it changes from one import to the next
            grade.failure_kind = "crashed"
            grade.failure = _("crashed: {message}").format(message=capped(hello.header.get("message", "")))
        elif kind == "not callable":
            grade.problems.append(CaseProblem("all cases", "error", _("{name} is not a function (it is of type {type})")
                                              .format(name=exercise.name, type=capped(hello.header.get("type"), 80))))
        elif kind != "ready":
            grade.failure_kind = "crashed"
            grade.failure = _("crashed: the child's first answer was not that it was ready")
        else:
            for index, (case, variant) in enumerate(zip(cases, variants)):
                _grade_case(grade, exercise, case, index, variant, ask)
    except _ChildFailed as exc:
        grade.failure, grade.failure_kind = str(exc), exc.kind
    finally:
        printed = child.printed()
        child.close()
    if printed:
        print("--- " + _("what {name} printed while graded").format(name=exercise.name) + f" ---\n{printed}",
              end="" if printed.endswith("\n") else
              "\n", file=sys.stderr if quiet else sys.stdout, flush=True)
    grade.npseq_calls = tuple(sorted(records.get("watched", ())))
    grade.evasions = tuple(sorted(records.get("evaded", ())))
    notes = [_("honesty: its code called npseq's own {names}").format(names=", ".join(grade.npseq_calls))] \
        if grade.npseq_calls else []
    if grade.evasions:
        notes.append(_("honesty: its code reached around the grader's watch: {what}").format(
            what=", ".join(grade.evasions)))
    grade.note = "; ".join(notes)
    return grade


def _defined_names(submission: Submission, limits: Limits) -> list:
    """The exercise names the learner's file defines, read by a sandboxed child.

    Raises:
        SubmissionError: the file does not import (one line, as the child reported it or as it ended).
    """
    child = spawn(functools.partial(_serve_listing, submission, current()), limits, submission.scratch_files(),
                  hidden=submission.folders() + limits.private)
    try:
        reply = _ask(child, time.monotonic() + limits.timeout, _("importing the file"), {})
    except _ChildFailed as exc:
        raise SubmissionError(_("cannot import {name}: {reason}").format(name=submission.name, reason=exc)) from None
    finally:
        printed = child.printed()
        child.close()
    if printed:
        print(printed, end="", file=sys.stderr, flush=True)
    if reply.header.get("kind") == "unloadable":
        raise SubmissionError(capped(reply.header.get("message", ""), 4 * MAX_MESSAGE_CHARS))
    defined = reply.header.get("defined")
    if reply.header.get("kind") != "loaded" or not isinstance(defined, list):
        raise SubmissionError(_("cannot import {name}: the child's answer was not a list of names").format(
            name=submission.name))
    return [name for name in NAMES if name in defined]


def _load_what_children_use(exercises: list) -> None:
    """Run, in the grader, what a child will run of npseq's (a case's inputs and forward, the pipe's encoding),
    so that every module it needs is loaded before the fork: NumPy loads some on first use (``numpy.random``),
    and a child running as another user may not be allowed to read them from the grader's installation; and work
    out what the honesty watch looks for (:func:`npseq.course.watch.prepare`)."""
    for exercise in exercises:
        case = exercise.cases[0]
        case.forward(**case.make_inputs())
    Channel.round_trip(Message({"kind": "ready"}, (backend.numpy.zeros(2),)))
    _("ok")  # the catalogs of the language spoken, read now: a child may not be allowed to read them
    watch.prepare()  # what the watch looks for, once for all the children


def grade_file(path: str, only=None, *, sets=None, timeout: float = DEFAULT_TIMEOUT, memory_mb=DEFAULT_MEMORY_MB,
               quiet: bool = False, private: tuple = (), policy: str = "note", seed: int = 0,
               case_seeds: dict | None = None) -> GradeReport:
    """Import the learner's file and grade the exercises it defines, or those of ``only`` and ``sets``.

    The import and each function run in their own child process, under ``timeout`` and
    ``memory_mb`` (see the module docstring), so nothing the learner's code does can stop
    the grading of the other functions.

    Args:
        path: a ``.py`` file or a notebook (``.ipynb``) defining some of :data:`NAMES`.
        only: names from :data:`NAMES` to grade, defined in the file or not (one it does not define scores 0).
        sets: names of exercise sets (:data:`~npseq.course.sheet.SET_NAMES`) whose every exercise is graded,
            with what they build on (a hand-out of these sets, whole). Neither ``only`` nor ``sets``: every
            exercise the file defines, or, if it defines none, those of the default sets.
        timeout: seconds for the import and for each function (all its cases).
        memory_mb: megabytes the child may add to its address space; ``None`` or 0 for no limit.
        quiet: send what the learner's code prints to standard error instead of standard output.
        private: folders the learner's code may not see, besides its own folder and the working folder
            (the autograder's own files), where the platform allows hiding them.
        policy: ``"note"`` (a function that calls npseq's own backward, or is a copy of it or of the
            sheet's solution after renaming, is graded as it is and noted) or ``"zero"`` (it scores 0).
        seed: the variant of every case's numbers (0: the sheet's own; a student's seed gives the same
            shapes and other numbers, :func:`~npseq.course.cases.seed_of`).
        case_seeds: ``(exercise name, case number from 1) -> seed`` for cases graded with another seed
            than ``seed`` (hidden cases drawn at grading time).

    Returns:
        A :class:`~npseq.course.report.GradeReport` (``.score`` in percent, ``.ok``, ``report[name]``;
        prints as tables).

    Raises:
        SubmissionError: the file cannot be imported (one-line message).
        SandboxError: the grader runs under a memory limit that leaves a submission's process too little to run.
        ValueError: ``only`` names something that is not an exercise, ``sets`` something that is not a set, or
            ``timeout`` is not positive.
    """
    chosen = None if only is None and sets is None else graded_names(only, sets)
    if not timeout > 0:
        raise ValueError(f"timeout: expected a positive number of seconds, got {timeout!r}")
    if policy not in POLICIES:
        raise ValueError(f"policy: expected one of {list(POLICIES)}, got {policy!r}")
    case_seeds = dict(case_seeds or {})
    for label, value in [("seed", seed)] + [(f"case_seeds[{key!r}]", value) for key, value in case_seeds.items()]:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 63:
            raise ValueError(f"{label}: expected an int in [0, 2**63), got {value!r}")
    check_memory_room(memory_mb)  # the grader's own limit, not the file's: said before anything runs
    started = time.monotonic()
    submission = read_submission(path)
    _load_what_children_use(EXERCISES if chosen is None else [EXERCISE_BY_NAME[name] for name in chosen])
    limits = Limits(timeout=timeout, memory_mb=memory_mb, private=tuple(private))
    defined = _defined_names(submission, limits)
    names = chosen if chosen is not None else (defined or names_of_sets(DEFAULT_SETS))
    functions = []
    for exercise in EXERCISES:
        if exercise.name not in names:
            continue
        if exercise.name in defined:
            variants = tuple(case_seeds.get((exercise.name, number), seed)
                             for number in range(1, len(exercise.cases) + 1))
            functions.append(_judged(_grade_in_child(exercise, submission, limits, quiet, variants), exercise,
                                     submission, policy))
        else:
            functions.append(FunctionGrade(exercise.name, exercise.signature, attempted=False,
                                           total=len(exercise.cases) * len(exercise.grads),
                                           cases=tuple(case.label for case in exercise.cases)))
    _suspect_helpers(functions, submission, limits, quiet, seed)
    return GradeReport(path, functions, _listed(scan_imports(submission) + scan_indirection(submission)),
                       time.monotonic() - started, notes=_listed(submission.notes), policy=policy)


def _suspect_helpers(functions: list, submission: Submission, limits: Limits, quiet: bool, seed: int) -> None:
    """Tell a wrong function whether the learner's own helpers it calls (its exercise builds on them), graded correct
    on their own cases, are at fault. A helper with cases in its callers' shapes (:attr:`Exercise.caller_cases`) is
    run on them, unscored: wrong there, both the caller and the helper say so; right there, the caller is told to
    look at itself. A helper without them may still be at fault on the numbers the caller hands it: the note says
    so."""
    correct = {function.name: function for function in functions if function.status == "correct"}
    on_callers_shapes = {}
    for function in functions:
        helpers = [name for name in EXERCISE_BY_NAME[function.name].builds_on if name in correct]
        if function.status != "incorrect" or not helpers:
            continue
        notes = []
        for name in helpers:
            helper = EXERCISE_BY_NAME[name]
            if not helper.caller_cases:
                notes.append(_("it calls your {helper}, correct on its own cases; on the numbers {caller} hands it, it "
                               "may still be at fault: check it there too").format(helper=name, caller=function.name))
                continue
            if name not in on_callers_shapes:
                on_callers_shapes[name] = _grade_in_child(helper, submission, limits, quiet,
                                                          (seed,) * len(helper.caller_cases), "callers")
            there = on_callers_shapes[name]
            if there.status == "correct":
                notes.append(_("your {helper} is right on the shapes {caller} hands it too: the mistake is here")
                             .format(helper=name, caller=function.name))
                continue
            shapes = ", ".join(there.cases)
            wrong = "; ".join(there.diagnoses())
            notes.append(_("your {helper}, correct on its own cases, is wrong on the shapes {caller} hands it "
                           "({shapes}: {wrong}): fix it there first").format(helper=name, caller=function.name,
                                                                            shapes=shapes, wrong=wrong))
            correct[name].note = "; ".join(filter(None, [correct[name].note, _(
                "wrong on the shapes {caller} hands it ({shapes}: {wrong}), which its own cases do not have (not "
                "scored here)").format(caller=function.name, shapes=shapes, wrong=wrong)]))
        function.note = "; ".join(filter(None, [function.note] + notes))


def _judged(grade: FunctionGrade, exercise: Exercise, submission: Submission, policy: str) -> FunctionGrade:
    """The honesty verdict on one graded function: is its code npseq's own, seen running or the watch reached around
    while graded, or copied from a text a learner could copy (:func:`~npseq.course.copies.closest_copy`, above the
    size floor and the threshold)?"""
    grade.likeness = closest_copy(submission.text, exercise.name, submission.place if submission.where else None)
    if grade.likeness is not None and grade.likeness.copied:
        grade.copied = grade.likeness.source
        grade.note = "; ".join(filter(None, [grade.note, _("honesty: {summary}").format(
            summary=grade.likeness.summary())]))
    if policy == "zero" and (grade.copied or grade.npseq_calls or grade.evasions):
        grade.penalty = _("honesty, policy zero: npseq's own code")
    return grade


def _listed(lines, most: int = MAX_LISTED) -> list:
    """At most ``most`` of ``lines``, each capped, and a last line saying how many more there were."""
    lines = [capped(line) for line in lines]
    return lines if len(lines) <= most else lines[:most] + [_("... and {count} more (cut)").format(
        count=len(lines) - most)]
