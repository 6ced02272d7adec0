"""Input checks for public boundaries, and explicit randomness: the one home of both.

Python values (counts, real numbers, probabilities, seeds) are checked by :func:`check_count`,
:func:`check_real` and :func:`check_probability`; arrays by the ``check_*`` functions below them;
:func:`as_rng` turns a seed into a ``numpy.random.Generator``.

Each check raises an error that names the argument, what was expected and what
was given, so a learner never has to decode a NumPy broadcasting error.

:func:`check_memory` refuses a run whose :class:`MemoryEstimate` exceeds :func:`memory_budget`, before
anything is allocated.

Checks of shape, rank, dtype and backend read only metadata. Checks of *values* (ids
in range, lengths in range) must read the array, which on a GPU is a synchronising
copy to the host; there they would cost more than the layers they guard, so they run
on host (NumPy) arrays only. Data reaches the GPU through the training loops and the
decoders, which check it on the host before copying it over.
"""
from __future__ import annotations

import ast
import dataclasses
import math
import os

from . import backend
from .errors import InvalidIndexError, InvalidTypeError, InvalidValueError, LimitError


# ----------------------------------------------------------------- Python values
def check_count(name: str, value, minimum: int = 1, *, maximum: int | None = None, allow_none: bool = False):
    """``value`` as a Python int ``>= minimum`` and, when ``maximum`` is given, at most that cap (a
    :class:`~npseq.errors.LimitError` naming it); ``None`` where ``allow_none``. Sizes, counts, seeds."""
    if value is None and allow_none:
        return None
    what = "a positive int" if minimum == 1 else f"an int >= {minimum}"
    if allow_none:
        what += " or None"
    # bool is an int subclass, but True as a batch size is a bug, not a request for 1
    if isinstance(value, bool) or not isinstance(value, (int, backend.numpy.integer)):
        raise InvalidTypeError(f"{name}: expected {what}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise InvalidValueError(f"{name}: expected {what}, got {value}")
    if maximum is not None and value > maximum:
        raise LimitError(f"{name}: expected {what} up to {maximum}, got {value}")
    return int(value)


def check_real(name: str, value, expected: str, ok) -> float:
    """``value`` as a Python float, checked by ``ok``; ``expected`` words the condition for the error
    (e.g. ``"> 0 and finite"``). NaN never passes."""
    if isinstance(value, bool):
        raise InvalidTypeError(f"{name}: expected a real number {expected}, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"{name}: expected a real number {expected}, got {value!r}") from None
    if math.isnan(number) or not ok(number):
        raise InvalidValueError(f"{name}: expected a real number {expected}, got {value!r}")
    return number


def check_probability(name: str, value, what: str = "a drop probability") -> float:
    """``value`` in [0, 1) (a dropout rate: 1 would drop everything), as a Python float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, backend.numpy.floating, backend.numpy.integer)) \
            or not 0.0 <= value < 1.0:
        raise InvalidValueError(f"{name}: expected {what} in [0, 1), got {value!r}")
    return float(value)


def as_rng(rng=None):
    """A ``numpy.random.Generator`` from a Generator (returned as is), an int seed, or ``None`` (seed 0)."""
    if isinstance(rng, backend.numpy.random.Generator):
        return rng
    if rng is None or (isinstance(rng, (int, backend.numpy.integer)) and not isinstance(rng, bool)):
        return backend.numpy.random.default_rng(0 if rng is None else int(rng))
    raise InvalidTypeError(f"rng: expected a numpy.random.Generator, an int seed or None, got {type(rng).__name__}")


# ------------------------------------------------------------------------ memory
MEMORY_BUDGET_FRACTION = 0.5
"""The share of this machine's physical memory one run may ask for (see :func:`memory_budget`)."""
FALLBACK_MEMORY_BUDGET = 8 * 2 ** 30
"""The budget where the system does not say how much memory it has (no ``os.sysconf``, as on Windows)."""


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """What a training run holds at once, in bytes, estimated from its sizes before anything is allocated.

    ``parameters``: the model's parameter count. ``parameter_bytes``: the parameters with their gradients
    and the optimizer's state (Adam's two moments: four copies in all). ``activation_bytes``: what one
    training step keeps for its backward pass at the run's batch size and steps (layer caches, attention
    weights, the logits and their softmax), and the gradients flowing back through them. ``data_bytes``:
    the data the run generates or reads and keeps.
    """
    parameters: int
    parameter_bytes: int
    activation_bytes: int
    data_bytes: int = 0

    @property
    def total(self) -> int:
        return self.parameter_bytes + self.activation_bytes + self.data_bytes


def memory_budget() -> int:
    """The most memory one run may ask for, in bytes: :data:`MEMORY_BUDGET_FRACTION` (half) of this machine's
    physical memory (``os.sysconf``), or :data:`FALLBACK_MEMORY_BUDGET` (8 GiB) where the system does not say.

    The budget is the host's memory on every backend: on a GPU the arrays live in the device's memory, which
    on the machines npseq is measured on is at least as large as half the host's."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return FALLBACK_MEMORY_BUDGET
    return int(physical * MEMORY_BUDGET_FRACTION) if physical > 0 else FALLBACK_MEMORY_BUDGET


def format_bytes(count: float) -> str:
    """``count`` bytes in binary units, three significant figures: ``'11.6 GiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count:.3g} {unit}" if unit != "B" else f"{int(count)} B"
        count /= 1024


def check_memory(what: str, estimate: MemoryEstimate) -> MemoryEstimate:
    """``estimate`` if its total is within :func:`memory_budget`; otherwise a :class:`~npseq.errors.LimitError`
    naming ``what`` (the sizes that were asked for, e.g. ``"--num-hiddens 4096, --layers 64"``), the budget and the
    estimate, in one line."""
    budget = memory_budget()
    if estimate.total > budget:
        parts = [f"{what}: {format_bytes(count)}" for what, count in (
            (f"{estimate.parameters:,} parameters with their gradients and optimizer state", estimate.parameter_bytes),
            ("one training step's activations", estimate.activation_bytes), ("data", estimate.data_bytes)) if count]
        raise LimitError(f"{what}: expected a run within the memory budget of {format_bytes(budget)} (half of this "
                         f"machine's memory), got an estimate of {format_bytes(estimate.total)} ({'; '.join(parts)}); "
                         f"ask for smaller sizes")
    return estimate


# ------------------------------------------------------------------------ arrays
def _describe_shape(shape) -> str:
    return "(" + ", ".join("*" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def check_array(name: str, array) -> None:
    """``array`` must be a NumPy or CuPy array."""
    if type(array) is backend.numpy.ndarray:
        return
    if not hasattr(array, "shape") or not hasattr(array, "dtype"):
        raise InvalidTypeError(f"{name}: expected an array, got {type(array).__name__}")


def check_ndim(name: str, array, ndim: int, layout: str = "") -> None:
    """``array.ndim == ndim``; ``layout`` (e.g. ``"(N, T, D)"``) is named in the error."""
    check_array(name, array)
    if array.ndim != ndim:
        what = f"a {ndim}-d array {layout}".rstrip()
        raise InvalidValueError(f"{name}: expected {what}, got shape {tuple(array.shape)}")


def check_shape(name: str, array, expected: tuple) -> None:
    """``array.shape`` matches ``expected``, where ``None`` matches any size."""
    check_array(name, array)
    shape = tuple(array.shape)
    if len(shape) != len(expected) or any(e is not None and e != s for e, s in zip(expected, shape)):
        raise InvalidValueError(f"{name}: expected shape {_describe_shape(expected)}, got {shape}")


def check_float_array(name: str, array) -> None:
    """``array`` holds floating-point numbers."""
    check_array(name, array)
    if array.dtype.kind != "f":
        raise InvalidTypeError(f"{name}: expected a floating-point array, got dtype {array.dtype}")


def check_int_array(name: str, array) -> None:
    """``array`` holds integers (token ids, labels, lengths)."""
    check_array(name, array)
    if array.dtype.kind not in "iu":
        raise InvalidTypeError(f"{name}: expected an integer array, got dtype {array.dtype}")


def _on_host(array) -> bool:
    return backend.get_array_module(array) is backend.numpy


def check_index_range(name: str, array, size: int, what: str = "ids") -> None:
    """Integer ``array`` holds values in ``[0, size)`` (values checked on the host only)."""
    check_int_array(name, array)
    if array.size == 0 or not _on_host(array):
        return
    low, high = int(array.min()), int(array.max())
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise InvalidIndexError(f"{name}: expected {what} in [0, {size - 1}], got {bad}")


def check_token_ids(name: str, ids, vocab_size: int) -> None:
    """Integer ``ids`` index a vocabulary of ``vocab_size`` tokens (values checked on the host only)."""
    check_index_range(name, ids, vocab_size, what=f"token ids (vocabulary of {vocab_size})")


def check_same_backend(name: str, array, reference) -> None:
    """``array`` lives on the same backend (host or device) as ``reference``."""
    have = backend.get_array_module(array).__name__
    want = backend.get_array_module(reference).__name__
    if have != want:
        raise InvalidTypeError(f"{name}: expected a {want} array (the model's backend), got a {have} array")


def check_same_dtype(name: str, array, reference, reference_name: str) -> None:
    """Mixing float32 and float64 would silently promote the result; say so instead."""
    if array.dtype != reference.dtype:
        raise InvalidTypeError(f"{name}: expected dtype {reference.dtype} (the dtype of {reference_name}), "
                               f"got {array.dtype}")


def check_float_like(name: str, array, reference, reference_name: str) -> None:
    """A floating-point array on the backend and of the dtype of ``reference``."""
    check_float_array(name, array)
    check_same_backend(name, array, reference)
    check_same_dtype(name, array, reference, reference_name)


def check_qkv(queries, keys, values, valid_lens, keys_name: str = "keys") -> None:
    """Ranks, dtypes and backends of the three inputs, their shared N and K, and ``valid_lens``."""
    check_float_array("queries", queries)
    check_ndim("queries", queries, 3, "(N, Q, Dq)")
    check_float_like(keys_name, keys, queries, "queries")
    check_ndim(keys_name, keys, 3, "(N, K, Dk)")
    check_float_like("values", values, queries, "queries")
    check_ndim("values", values, 3, "(N, K, Dv)")
    n, k = queries.shape[0], keys.shape[1]
    if k == 0:
        raise InvalidValueError(f"{keys_name}: expected at least one key (K >= 1) in (N, K, Dk), "
                                f"got shape {tuple(keys.shape)}")
    if keys.shape[0] != n:
        raise InvalidValueError(f"{keys_name}: expected batch size {n} (that of queries), "
                                f"got shape {tuple(keys.shape)}")
    if values.shape[:2] != keys.shape[:2]:
        raise InvalidValueError(f"values: expected shape ({n}, {k}, *) (one value per key), "
                                f"got {tuple(values.shape)}")
    if valid_lens is not None:
        check_same_backend("valid_lens", valid_lens, queries)
        check_valid_lens("valid_lens", valid_lens, (n, queries.shape[1]), k)

def check_valid_lens(name: str, valid_lens, leading: tuple, limit: int) -> None:
    """``valid_lens`` is an integer array of shape ``leading`` or ``leading[:1]``, values in [0, limit]
    (values checked on the host only)."""
    check_int_array(name, valid_lens)
    shape = tuple(valid_lens.shape)
    if shape not in (tuple(leading), tuple(leading[:1])):
        raise InvalidValueError(f"{name}: expected shape {_describe_shape(leading[:1])} or "
                                f"{_describe_shape(leading)}, got {shape}")
    check_index_range(name, valid_lens, limit + 1, what="lengths")


def check_recurrent_inputs(x, states: dict, Wx, Wh, biases: dict, gates: int) -> None:
    """The arguments of a recurrent cell or sequence: ``x`` ``(N, D)`` (a step) or ``(N, T, D)``
    (a sequence, ``T >= 1``), each state in ``states`` ``(N, H)``, ``Wx`` ``(D, gates*H)``, ``Wh``
    ``(H, gates*H)`` and each bias ``(gates*H,)``. Only shapes and kinds are checked: the dtypes
    may differ and then follow NumPy's promotion, as in the CS231n assignments."""
    check_float_array("x", x)
    if x.ndim not in (2, 3):
        raise InvalidValueError(f"x: expected a 2-d array (N, D) or a 3-d array (N, T, D), got shape {tuple(x.shape)}")
    if x.ndim == 3 and x.shape[1] == 0:
        raise InvalidValueError(f"x: expected at least one time step, got shape {tuple(x.shape)}")
    n, d = x.shape[0], x.shape[-1]
    first = next(iter(states))
    check_ndim(first, states[first], 2, "(N, H)")
    hidden = states[first].shape[1]
    for name, state in states.items():
        check_float_array(name, state)
        check_shape(name, state, (n, hidden))
    for name, array, shape in (("Wx", Wx, (d, gates * hidden)), ("Wh", Wh, (hidden, gates * hidden)),
                               *((name, b, (gates * hidden,)) for name, b in biases.items())):
        check_float_array(name, array)
        check_shape(name, array, shape)



def check_padding_lens(valid_lens, x) -> None:
    """``valid_lens`` is ``None`` or ``(N,)`` integers in ``[0, T]`` for the inputs ``x`` ``(N, T, ...)``."""
    if valid_lens is not None:
        check_valid_lens("valid_lens", valid_lens, tuple(x.shape[:1]), x.shape[1])


def check_state_grads(state, **grads) -> None:
    """Each upstream gradient of a recurrent step, named by its keyword, is shaped like ``state`` ``(N, H)``."""
    for name, grad in grads.items():
        check_shape(name, grad, tuple(state.shape))


def check_sequence_grads(dh, cache, **last) -> None:
    """The upstream gradients of a recurrent sequence: ``dh`` ``(N, T, H)`` for a ``cache`` with ``mask``
    ``(N, T)`` and ``h_last`` ``(N, H)``, and each gradient of a final state given by keyword (``dh_last``,
    ``dc_last``; ``None`` means zeros) ``(N, H)``."""
    check_shape("dh", dh, tuple(cache.mask.shape) + tuple(cache.h_last.shape[1:]))
    for name, grad in last.items():
        if grad is not None:
            check_shape(name, grad, tuple(cache.h_last.shape))

# ---------------------------------------------------------- checks in the source
def is_check_statement(statement: ast.stmt) -> bool:
    """Whether a function's statement is plumbing rather than maths: a ``check_...(...)`` call, an
    ``if ...: raise`` without ``else``, or the line that picks the array module (``xp = ...get_array_module(...)``).

    What the course's copy check leaves out before comparing a learner's function with npseq's.
    """
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        callee = statement.value.func
        name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", "")
        return name.lstrip("_").startswith("check")
    if isinstance(statement, ast.If) and not statement.orelse:
        return all(isinstance(inner, ast.Raise) for inner in statement.body)
    if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
        return ast.unparse(statement.value.func).endswith("get_array_module")
    return False
