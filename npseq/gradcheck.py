"""Finite-difference gradient checks that say which tensor and which element is wrong.

The analytic gradient of a backward pass is compared with the centered difference

.. math:: \\frac{\\partial f}{\\partial x_i} \\approx \\frac{f(x + h e_i) - f(x - h e_i)}{2h},

whose error is :math:`O(h^2)`. Array-valued functions are reduced to the scalar
:math:`\\sum_j \\text{out}_j \\, d\\text{out}_j` with a fixed random upstream gradient
``dout``, which makes its gradient exactly what a backward pass computes from ``dout``.

:func:`rel_error` is the CS231n measure, elementwise
:math:`|a_i - n_i| / \\max(10^{-8}, |a_i| + |n_i|)`. The reports use
:func:`gradient_error`, the same ratio with the denominator floored at a thousandth
of the tensor's largest :math:`|a_j| + |n_j|`: a centered difference carries an
absolute rounding error of about :math:`\\epsilon |f| / h` whatever the size of the
element, so an element a million times smaller than its neighbours cannot be
resolved to 7 digits, while any real mistake (a wrong sign, a missing term) still
shows as an error far above the tolerance. A check passes when the largest error
is below ``1e-7`` (float64 inputs; a correct backward reaches ``1e-9`` or better).

For a sequence gradient (a tensor with a time axis, such as ``dx`` ``(N, T, D)``),
backpropagation through time computes step :math:`T-1` first and hands each step's
gradient back to the step before. The first step, walking back from :math:`T-1`,
where the gradient leaves the reference is therefore where the mistake enters:
either in that step's own backward or in the gradient the later step handed back.
:func:`first_wrong_step` finds it and :func:`step_report` says it in words; pass
``time_axes`` to :func:`check_function` and the report adds it for those tensors.
A recurrence that read the sequence from its end (the backward direction of a
bidirectional layer) is walked the other way, up from :math:`t = 0` (``walks_up``).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from . import backend
from .errors import InvalidTypeError, InvalidValueError
from .grad_mode import no_grad
from .language import _

DEFAULT_TOL = 1e-7


def _relative_errors(a, b):
    xp = backend.get_array_module(a, b)
    return xp.abs(a - b) / xp.maximum(1e-8, xp.abs(a) + xp.abs(b))


def gradient_error(analytic, numeric):
    """Elementwise :math:`|a_i-n_i| / \\max(10^{-8},\\ |a_i|+|n_i|,\\ 10^{-3} \\max_j(|a_j|+|n_j|))`."""
    xp = backend.get_array_module(analytic, numeric)
    magnitude = xp.abs(analytic) + xp.abs(numeric)
    floor = max(1e-8, 1e-3 * float(magnitude.max())) if magnitude.size else 1e-8
    return xp.abs(analytic - numeric) / xp.maximum(floor, magnitude)


def rel_error(a, b) -> float:
    """Largest elementwise relative error :math:`\\max_i |a_i-b_i| / \\max(10^{-8}, |a_i|+|b_i|)`."""
    xp = backend.get_array_module(a, b)
    a, b = xp.asarray(a, dtype=xp.float64), xp.asarray(b, dtype=xp.float64)
    if a.shape != b.shape:
        raise InvalidValueError(f"b: expected shape {a.shape} (the shape of a), got {b.shape}")
    return float(_relative_errors(a, b).max()) if a.size else 0.0


STENCILS = {
    2: ((1, 1 / 2),),                   # (f(x+h) - f(x-h)) / 2h
    4: ((1, 8 / 12), (2, -1 / 12)),     # (8 f(x+h) - 8 f(x-h) - f(x+2h) + f(x-2h)) / 12h
}
"""Centered stencils: for each order, (multiple of h, weight of f(x + kh) - f(x - kh))."""


def numerical_gradient(f: Callable, x, df=None, h: float = 1e-5, order: int = 2):
    """Centered-difference gradient of :math:`\\sum f(x) \\odot df` with respect to ``x``.

    ``x`` is perturbed in place, one element at a time, and restored exactly, so
    ``f`` may ignore its argument and read ``x`` from a closure.

    Args:
        f: ``f(x)`` returns a scalar (``df=None``), an array (``df`` has its shape) or a
            tuple of arrays (``df`` a tuple of the same shapes; ``None`` entries skipped).
        x: float64 array of any shape, NumPy or CuPy.
        df: upstream gradient shaped like ``f(x)``; ``None`` for a scalar ``f``.
        h: step size.
        order: 2 for the classic centered difference (error :math:`O(h^2)`), 4 for the
            five-point stencil (error :math:`O(h^4)`, twice the evaluations), which
            deep compositions such as a whole encoder–decoder need to reach 1e-7.

    Returns:
        An array shaped like ``x`` (same backend).
    """
    if x.dtype != backend.numpy.float64:
        raise InvalidTypeError(f"x: expected a float64 array (finite differences in {x.dtype} are "
                               f"too coarse to check a gradient), got dtype {x.dtype}")
    if order not in STENCILS:
        raise InvalidValueError(f"order: expected one of {tuple(STENCILS)}, got {order!r}")
    xp = backend.get_array_module(x)
    grad = xp.zeros_like(x)
    for index in backend.numpy.ndindex(*x.shape):
        original = x[index].item()
        change = 0.0
        for step, weight in STENCILS[order]:
            x[index] = original + step * h
            plus = f(x)
            x[index] = original - step * h
            minus = f(x)
            if df is None:
                change += weight * (plus - minus)
            else:  # differencing outputs before reducing keeps the rounding error small
                change += weight * sum(float(((p - m) * d).sum())
                                       for p, m, d in zip(_leaves(plus), _leaves(minus), _leaves(df)))
        x[index] = original
        grad[index] = change / h
    return grad


@dataclasses.dataclass
class GradCheckRow:
    """One tensor's verdict: where the worst element is and what both gradients say there."""
    name: str
    shape: tuple
    max_rel_error: float
    worst_index: tuple | None
    analytic_value: float | None
    numeric_value: float | None
    ok: bool
    problem: str = ""
    analytic: Any = dataclasses.field(default=None, repr=False)
    numeric: Any = dataclasses.field(default=None, repr=False)
    first_wrong_step: int | None = None  # for a tensor with a time axis: see first_wrong_step()
    num_steps: int | None = None         # T, the length of that axis


@dataclasses.dataclass(repr=False)
class GradCheckReport:
    """The result of :func:`check_function` or :func:`check_module`; prints as a table."""
    rows: list
    tol: float = DEFAULT_TOL

    @property
    def ok(self) -> bool:
        """True when every tensor passed."""
        return all(row.ok for row in self.rows)

    @property
    def max_rel_error(self) -> float:
        return max((row.max_rel_error for row in self.rows), default=0.0)

    def __getitem__(self, name: str) -> GradCheckRow:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"name: no tensor {name!r} in this report; it has {[r.name for r in self.rows]}")

    def table(self) -> str:
        header = ("tensor", "shape", "max rel error", "worst at", "analytic", "numeric", "verdict")
        lines = []
        for row in self.rows:
            verdict = "ok" if row.ok else (f"FAIL ({row.problem})" if row.problem else "FAIL")
            if row.first_wrong_step is not None:
                verdict += f"; {step_report(row.first_wrong_step, row.num_steps)}"
            lines.append((
                row.name,
                "x".join(map(str, row.shape)) or "scalar",
                f"{row.max_rel_error:.2e}",
                "-" if row.worst_index is None else str(list(row.worst_index)),
                *_shown_values(row),
                verdict,
            ))
        widths = [max(len(str(cell)) for cell in column) for column in zip(header, *lines)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        rule = "  ".join("-" * w for w in widths)
        body = [fmt.format(*header).rstrip(), rule] + [fmt.format(*line).rstrip() for line in lines]
        summary = (f"all {len(self.rows)} tensors agree (tolerance {self.tol:.0e})" if self.ok else
                   f"{sum(not r.ok for r in self.rows)} of {len(self.rows)} tensors disagree "
                   f"(tolerance {self.tol:.0e})")
        return "\n".join(body + [summary])

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__


def wrong_steps(analytic, reference, time_axis: int = 1, tol: float = DEFAULT_TOL) -> list:
    r"""The time steps at which ``analytic`` leaves ``reference``, in increasing order.

    Step :math:`t` is wrong when some element of the slice ``t`` along ``time_axis`` has a
    :func:`gradient_error` above ``tol`` (the floor of that error is taken over the whole
    tensor, as in :func:`compare`) or is not finite.

    Args:
        analytic, reference: arrays of the same shape, e.g. ``dx`` ``(N, T, D)``.
        time_axis: the axis of the time steps.
        tol: the largest error still counted as agreement.
    """
    a = backend.to_numpy(analytic).astype(backend.numpy.float64)
    r = backend.to_numpy(reference).astype(backend.numpy.float64)
    if a.shape != r.shape:
        raise InvalidValueError(f"reference: expected shape {a.shape} (the shape of analytic), got {r.shape}")
    if a.size == 0:
        return []
    finite = backend.numpy.isfinite(a)
    errors = backend.numpy.where(finite, gradient_error(backend.numpy.where(finite, a, 0.0), r), backend.numpy.inf)
    per_step = backend.numpy.moveaxis(errors, time_axis, 0).reshape(a.shape[time_axis], -1).max(axis=1)
    return [int(t) for t in backend.numpy.flatnonzero(~(per_step < tol))]


def first_wrong_step(analytic, reference, time_axis: int = 1, tol: float = DEFAULT_TOL, *,
                     walks_up: bool = False) -> int | None:
    r"""The first time step, walking back from :math:`T-1`, at which ``analytic`` leaves ``reference``: the
    latest of :func:`wrong_steps` (same arguments), or ``None`` when every step agrees. With ``walks_up``, for a
    recurrence that ran from the last step to the first, walking up from :math:`t = 0`: the earliest."""
    wrong = wrong_steps(analytic, reference, time_axis, tol)
    return (wrong[0] if walks_up else wrong[-1]) if wrong else None


STEP_SOURCES = ("own", "handed back")
"""Where :func:`step_report` may say a mistake comes from, when a further check has told the two apart."""


def step_report(step: int, num_steps: int, source: str | None = None, *, walks_up: bool = False) -> str:
    """Say in words where a mistake found by :func:`first_wrong_step` enters the backward pass.

    Args:
        step, num_steps: the first wrong step and ``T``.
        source: ``None`` when unknown; ``"own"`` when the step is wrong by itself (it stays wrong
            with no upstream gradient after it); ``"handed back"`` when it is right by itself, so
            the error is in the gradient that step ``step + 1`` hands back to it.
        walks_up: the backward walked up from ``t = 0`` (a recurrence that read the sequence from its end):
            "after" is then "before", and the step that hands back is ``step - 1``.
    """
    if source not in (None,) + STEP_SOURCES:
        raise InvalidValueError(f"source: expected None or one of {STEP_SOURCES}, got {source!r}")
    last = num_steps - 1
    start, previous = (0, step - 1) if walks_up else (last, step + 1)
    agree = f"t={start}" if previous == start else f"t={start}..{previous}"
    # Whole sentences, one per case, so that a translation (npseq.language) can say each its own way.
    if step == start:
        said = (_("first wrong at t={step} (of 0..{last}), the first step: the error enters in the step's own "
                  "backward, before anything is handed back") if walks_up else
                _("first wrong at t={step} (of 0..{last}), the last step: the error enters in the step's own "
                  "backward, before anything is handed back"))
    elif walks_up:
        said = {"own": _("first wrong at t={step} (of 0..{last}, walking up from t={start}; {agree} agree): the "
                         "error enters at step t={step} itself (it stays wrong with no upstream gradient before "
                         "t={step})"),
                "handed back": _("first wrong at t={step} (of 0..{last}, walking up from t={start}; {agree} agree): "
                                 "the error enters in the gradient that step t={previous} hands back to t={step} "
                                 "(with no upstream gradient before t={step}, t={step} is right)"),
                None: _("first wrong at t={step} (of 0..{last}, walking up from t={start}; {agree} agree): the "
                        "error enters at the step that handles t={step}, or in the gradient that step t={previous} "
                        "hands back to it")}[source]
    else:
        said = {"own": _("first wrong at t={step} (of 0..{last}, walking back from t={start}; {agree} agree): the "
                         "error enters at step t={step} itself (it stays wrong with no upstream gradient after "
                         "t={step})"),
                "handed back": _("first wrong at t={step} (of 0..{last}, walking back from t={start}; {agree} "
                                 "agree): the error enters in the gradient that step t={previous} hands back to "
                                 "t={step} (with no upstream gradient after t={step}, t={step} is right)"),
                None: _("first wrong at t={step} (of 0..{last}, walking back from t={start}; {agree} agree): the "
                        "error enters at the step that handles t={step}, or in the gradient that step t={previous} "
                        "hands back to it")}[source]
    return said.format(step=step, last=last, start=start, agree=agree, previous=previous)


def distinct_numbers(first: float, second: float) -> tuple:
    """``first`` and ``second`` in scientific notation with the fewest significant digits, 7 to 17, that print
    them differently (17 tell any two float64 apart): a float32 slip no longer reads as two equal numbers."""
    for digits in range(7, 18):
        shown = f"{first:+.{digits - 1}e}", f"{second:+.{digits - 1}e}"
        if shown[0] != shown[1]:
            break
    return shown


def _shown_values(row: GradCheckRow) -> tuple:
    """The analytic and numeric values of a row's worst element as its table prints them ("-" for none); a failing
    row's with as many digits as it takes to print them differently."""
    if row.analytic_value is None or row.numeric_value is None:
        return tuple("-" if v is None else f"{v:+.6e}" for v in (row.analytic_value, row.numeric_value))
    if row.ok:
        return f"{row.analytic_value:+.6e}", f"{row.numeric_value:+.6e}"
    return distinct_numbers(row.analytic_value, row.numeric_value)


def compare(name: str, analytic, numeric, tol: float = DEFAULT_TOL, time_axis: int | None = None) -> GradCheckRow:
    """Compare one analytic gradient with its numerical estimate and locate the worst element.

    With ``time_axis`` (a tensor over time steps), a failing row also records
    :func:`first_wrong_step` and the number of steps.
    """
    shape = tuple(numeric.shape)
    if analytic is None or not hasattr(analytic, "shape") or tuple(analytic.shape) != shape:
        given = "None" if analytic is None else str(tuple(getattr(analytic, "shape", ())))
        return GradCheckRow(name, shape, float("inf"), None, None, None, False,
                            problem=_("backward gave shape {given}, expected {shape}").format(given=given,
                                                                                              shape=shape),
                            analytic=analytic, numeric=numeric)
    a = backend.to_numpy(analytic).astype(backend.numpy.float64)
    n = backend.to_numpy(numeric).astype(backend.numpy.float64)
    if a.size == 0:
        return GradCheckRow(name, shape, 0.0, None, None, None, True, analytic=a, numeric=n)
    errors = gradient_error(a, n)
    if not backend.numpy.all(backend.numpy.isfinite(a)):
        errors = backend.numpy.where(backend.numpy.isfinite(a), errors, backend.numpy.inf)
    flat = int(backend.numpy.argmax(errors))
    worst = tuple(int(i) for i in backend.numpy.unravel_index(flat, shape))
    max_error = float(errors.reshape(-1)[flat])
    ok = bool(max_error < tol)
    step = None if ok or time_axis is None else first_wrong_step(a, n, time_axis, tol)
    return GradCheckRow(name, shape, max_error, worst, float(a[worst]), float(n[worst]), ok,
                        analytic=a, numeric=n, first_wrong_step=step,
                        num_steps=None if step is None else shape[time_axis])


def _leaves(value):
    """Arrays inside a value that may be a nested tuple/list (``None`` skipped)."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _is_float_array(value) -> bool:
    return hasattr(value, "dtype") and hasattr(value, "shape") and value.dtype.kind == "f"


def _random_like(structure, rng):
    """Standard-normal upstream gradients with the nesting and shapes of ``structure``."""
    if structure is None:
        return None
    if isinstance(structure, (tuple, list)):
        return tuple(_random_like(item, rng) for item in structure)
    xp = backend.get_array_module(structure)
    return xp.asarray(rng.standard_normal(structure.shape), dtype=structure.dtype)


def check_function(forward: Callable, backward: Callable, inputs: dict, grad_names=None, *,
                   kwargs: dict | None = None, seed: int = 0, h: float = 1e-5, order: int = 2,
                   tol: float = DEFAULT_TOL, time_axes: dict | None = None) -> GradCheckReport:
    """Check a functional forward/backward pair against finite differences.

    ``forward(*inputs.values(), **kwargs)`` must return ``(*outputs, cache)`` and
    ``backward(*douts, cache)`` the gradients named by ``grad_names``, in that order.

    Args:
        forward, backward: the pair, e.g. ``rnn_step_forward`` and ``rnn_step_backward``.
        inputs: the forward's positional arguments by name, e.g.
            ``{"x": x, "prev_h": h, "Wx": Wx, "Wh": Wh, "b": b}`` (float64 arrays).
        grad_names: names of the inputs whose gradients backward returns, in order;
            default: every float-array input, in the order given.
        kwargs: keyword arguments for ``forward`` (``reset_after=True``, ...).
        seed: seeds the random upstream gradients.
        h, order: step and stencil of :func:`numerical_gradient`.
        time_axes: for sequence gradients, ``{name: axis of the time steps}`` (e.g.
            ``{"x": 1}`` for ``dx`` ``(N, T, D)``); a failing one is reported with the first
            wrong step walking back from ``T-1`` (:func:`first_wrong_step`).

    Returns:
        A :class:`GradCheckReport` with one row per checked tensor.
    """
    time_axes = time_axes or {}
    kwargs = kwargs or {}
    names = list(inputs)
    if grad_names is None:
        grad_names = [name for name in names if _is_float_array(inputs[name])]
    unknown = [name for name in grad_names if name not in inputs]
    if unknown:
        raise InvalidValueError(f"grad_names: expected names from inputs {names}, got {unknown}")
    args = list(inputs.values())
    rng = backend.numpy.random.default_rng(seed)

    result = forward(*args, **kwargs)
    outputs, cache = result[:-1], result[-1]
    douts = _random_like(outputs, rng)
    grads = backward(*douts, cache)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) != len(grad_names):
        raise InvalidValueError(f"grad_names: backward returned {len(grads)} gradients but "
                                f"{len(grad_names)} names were given ({list(grad_names)})")

    def outputs_of(_):
        return forward(*args, **kwargs)[:-1]

    rows = []
    for name, analytic in zip(grad_names, grads):
        numeric = numerical_gradient(outputs_of, inputs[name], df=douts, h=h, order=order)
        rows.append(compare(name, analytic, numeric, tol, time_axes.get(name)))
    return GradCheckReport(rows, tol)


def check_module(module, inputs: dict, wrt=None, *, seed: int = 0, h: float = 1e-5, order: int = 2,
                 tol: float = DEFAULT_TOL) -> GradCheckReport:
    """Check a Module's ``backward`` (input gradients and every ``Parameter.grad``).

    The module is called as ``module(**inputs)``; its ``backward(*douts)`` gets one
    random upstream gradient per output (same nesting) and returns the gradients
    of the inputs named in ``wrt``, in order (extra returned entries are ignored).
    Parameters are perturbed in place and restored. Use float64 parameters and a
    deterministic forward (``module.eval()`` when it has dropout).

    Args:
        module: an ``npseq.nn.Module``.
        inputs: keyword arguments of ``forward``, e.g. ``{"x": x, "valid_lens": lens}``.
        wrt: input names whose gradients backward returns; default: every input
            that is a float array or a tuple of float arrays, in order.

    Returns:
        A :class:`GradCheckReport`: a row per input leaf (``x``, ``state[0]``, ...)
        and per parameter, named as in ``named_parameters()``.
    """
    if wrt is None:
        wrt = [name for name, value in inputs.items()
               if _leaves(value) and all(_is_float_array(leaf) for leaf in _leaves(value))]
    rng = backend.numpy.random.default_rng(seed)

    module.zero_grad()
    outputs = module(**inputs)
    douts = _random_like(outputs, rng)
    grads = module.backward(*(douts if isinstance(outputs, tuple) else (douts,)))
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) < len(wrt):
        raise InvalidValueError(f"wrt: backward returned {len(grads)} input gradients, "
                                f"fewer than the {len(wrt)} inputs named ({list(wrt)})")

    def outputs_of(_):
        with no_grad():
            return module(**inputs)

    rows = []
    for name, grad in zip(wrt, grads):
        value = inputs[name]
        if isinstance(value, (tuple, list)):
            labelled = [(f"{name}[{i}]", leaf, g) for i, (leaf, g) in enumerate(zip(value, grad))]
        else:
            labelled = [(name, value, grad)]
        for label, leaf, analytic in labelled:
            numeric = numerical_gradient(outputs_of, leaf, df=douts, h=h, order=order)
            rows.append(compare(label, analytic, numeric, tol))
    for name, param in module.named_parameters():
        numeric = numerical_gradient(outputs_of, param.data, df=douts, h=h, order=order)
        rows.append(compare(name, param.grad, numeric, tol))
    return GradCheckReport(rows, tol)
