"""Input checks for public boundaries, and explicit randomness: the one home of both.

Python values (counts, real numbers, probabilities, seeds) are checked by :func:`check_count`,
:func:`check_real` and :func:`check_probability`; arrays by the ``check_*`` functions below them;
:func:`as_rng` turns a seed into a ``numpy.random.Generator``. The last section holds the checks of the
attention functions, one per function, named after it (``check_additive_attention`` for
``additive_attention_forward`` and its backward), built from the pieces above.

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


# ------------------------------------------------------------------ registries
def check_registration(registry_name: str, registry: dict, name, argument: str, record, record_type: type,
                       replace: bool) -> None:
    """A new entry ``name`` -> ``record`` for a registry of records (``SCORES``, ``CELLS``): a non-empty str not
    yet in it (unless ``replace``), and a record of ``record_type``; ``argument`` names the record's argument."""
    if not isinstance(name, str) or not name:
        raise InvalidTypeError(f"name: expected a non-empty str, got {type(name).__name__} {name!r}")
    if not isinstance(record, record_type):
        raise InvalidTypeError(f"{argument}: expected a {record_type.__name__} record, got {type(record).__name__}")
    if name in registry and not replace:
        raise InvalidValueError(f"name: expected a name not yet in {registry_name} {tuple(registry)} "
                                f"(or replace=True), got {name!r}")


# ================================================================ the attention functions
# Every public function of functional.scores, .pooling, .attention, .fast_attention, .local_attention and
# .transformer checks its arguments in one call at its top, to the function below that bears its name; the body
# that follows is the maths alone.
NORM_ORDERS = ("post", "pre")
"""Where :func:`~npseq.functional.transformer.residual_norm_forward` normalises: after the residual sum,
or before the sublayer."""


# ------------------------------------------------------------------ pieces
def check_features(name: str, array, size: int, weight_name: str, side: str) -> None:
    """The last axis of ``array`` matches the ``side`` ("rows"/"columns") of a weight matrix."""
    if array.shape[-1] != size:
        raise InvalidValueError(f"{name}: expected feature size {size} (the {side} of {weight_name}), "
                                f"got shape {tuple(array.shape)}")


def check_dropout(dropout: float, rng) -> None:
    """A drop probability in ``[0, 1)``, and a generator to draw the mask when it is not 0."""
    check_probability("dropout", dropout)
    if dropout > 0.0 and rng is None:
        raise InvalidValueError("rng: expected a random Generator to draw the dropout mask "
                                f"(dropout={dropout}), got None")


def _check_weight(name: str, array, queries, ndim: int, layout: str) -> None:
    check_float_like(name, array, queries, "queries")
    check_ndim(name, array, ndim, layout)


def _check_equal_features(queries, keys) -> None:
    if keys.shape[-1] != queries.shape[-1]:
        raise InvalidValueError(f"keys: expected feature size {queries.shape[-1]} (that of queries; dot-product "
                                f"scores need equal sizes), got shape {tuple(keys.shape)}")


def _check_with_or_without_heads(name: str, array, last_axes: str) -> None:
    """``array`` a float array ``(N, <last_axes>)``, or ``(N, h, <last_axes>)`` with an axis of heads."""
    check_float_array(name, array)
    if array.ndim not in (3, 4):
        raise InvalidValueError(f"{name}: expected a 3-d array (N, {last_axes}) or a 4-d array (N, h, {last_axes}), "
                                f"got shape {tuple(array.shape)}")


# ------------------------------------------------------------------ scores
def check_dot_scores(queries, keys) -> None:
    """:func:`~npseq.functional.scores.dot_scores_forward` and its scaled twin: queries ``(N, [h,] Q, D)``,
    keys ``(N, [h,] K, D)``, the same leading axes, dtype and backend, ``K >= 1``."""
    _check_with_or_without_heads("queries", queries, "Q, D")
    check_float_like("keys", keys, queries, "queries")
    check_ndim("keys", keys, queries.ndim, "(N, K, D)" if queries.ndim == 3 else "(N, h, K, D)")
    if tuple(keys.shape[:-2]) != tuple(queries.shape[:-2]):
        raise InvalidValueError(f"keys: expected leading axes {tuple(queries.shape[:-2])} (those of queries), "
                                f"got shape {tuple(keys.shape)}")
    if keys.shape[-2] == 0:
        raise InvalidValueError(f"keys: expected at least one key (K >= 1), got shape {tuple(keys.shape)}")
    _check_equal_features(queries, keys)


def _check_query_key_pair(queries, keys) -> None:
    check_float_array("queries", queries)
    check_ndim("queries", queries, 3, "(N, Q, Dq)")
    check_float_like("keys", keys, queries, "queries")
    check_ndim("keys", keys, 3, "(N, K, Dk)")
    if keys.shape[0] != queries.shape[0]:
        raise InvalidValueError(f"keys: expected batch size {queries.shape[0]} (that of queries), "
                                f"got shape {tuple(keys.shape)}")


def check_general_scores(queries, keys, W) -> None:
    """:func:`~npseq.functional.scores.general_scores_forward`: ``W`` ``(Dq, Dk)`` between the two."""
    _check_query_key_pair(queries, keys)
    _check_weight("W", W, queries, 2, "(Dq, Dk)")
    check_features("queries", queries, W.shape[0], "W", "rows")
    check_features("keys", keys, W.shape[1], "W", "columns")


def check_concat_scores(queries, keys, Wq, Wk, wv) -> None:
    """:func:`~npseq.functional.scores.concat_scores_forward`: ``Wq`` ``(Dq, h)``, ``Wk`` ``(Dk, h)``,
    ``wv`` ``(h,)``."""
    _check_query_key_pair(queries, keys)
    _check_additive_weights(queries, Wq, wv)
    _check_key_projection(keys, Wk, Wq)


def check_location_scores(queries, Wa, num_keys: int) -> None:
    """:func:`~npseq.functional.scores.location_scores_forward`: ``Wa`` ``(Dq, K_max)``, ``1 <= num_keys <= K_max``."""
    check_float_array("queries", queries)
    check_ndim("queries", queries, 3, "(N, Q, Dq)")
    _check_weight("Wa", Wa, queries, 2, "(Dq, K_max)")
    check_features("queries", queries, Wa.shape[0], "Wa", "rows")
    if not 1 <= num_keys <= Wa.shape[1]:
        raise InvalidValueError(f"num_keys: expected 1 to {Wa.shape[1]} (the columns of Wa, one per source "
                                f"position), got {num_keys}")


def _check_width(w, queries) -> None:
    """A kernel's width parameter: a 0-d float array of the queries' dtype and backend."""
    check_float_like("w", w, queries, "queries")
    check_ndim("w", w, 0, "(a scalar width, shape ())")


def check_gaussian_scores(queries, keys, w) -> None:
    """:func:`~npseq.functional.scores.gaussian_scores_forward`: queries ``(N, Q, D)`` and keys ``(N, K, D)``
    in one space, ``w`` ``()``."""
    _check_query_key_pair(queries, keys)
    if keys.shape[-1] != queries.shape[-1]:
        raise InvalidValueError(f"keys: expected feature size {queries.shape[-1]} (that of queries; a distance "
                                f"needs both in one space), got shape {tuple(keys.shape)}")
    _check_width(w, queries)


def check_dscores(dscores, cache) -> None:
    """A score backward's upstream gradient: one per (query, key) pair of the cache's queries and keys,
    ``(N, [h,] Q, K)`` (any ``K`` without keys: the location score)."""
    keys = cache.keys
    check_shape("dscores", dscores, tuple(cache.queries.shape[:-1]) + (None if keys is None else keys.shape[-2],))


# ------------------------------------------------------------------ pooling
def check_masked_pooling(scores, values, mask, gain, dropout, rng) -> None:
    """:func:`~npseq.functional.pooling.masked_pooling_forward`: scores ``(N, [h,] Q, K)``, one value per key,
    a boolean mask that broadcasts to the scores, a gain shaped like them (or None), and the dropout."""
    _check_with_or_without_heads("scores", scores, "Q, K")
    check_float_like("values", values, scores, "scores")
    check_ndim("values", values, scores.ndim, "(N, K, Dv)" if scores.ndim == 3 else "(N, h, K, Dv)")
    expected = tuple(scores.shape[:-2]) + (scores.shape[-1],)
    if tuple(values.shape[:-2]) + (values.shape[-2],) != expected:
        raise InvalidValueError(f"values: expected shape ({', '.join(map(str, expected))}, *) (one value per key), "
                                f"got {tuple(values.shape)}")
    if getattr(mask, "dtype", None) is None or mask.dtype.kind != "b" or mask.ndim != scores.ndim \
            or any(m not in (1, s) for m, s in zip(mask.shape, scores.shape)):
        raise InvalidValueError(f"mask: expected a bool array that broadcasts to the scores' shape "
                                f"{tuple(scores.shape)}, got {getattr(mask, 'dtype', type(mask).__name__)} "
                                f"{tuple(getattr(mask, 'shape', ()))}")
    if gain is not None:
        check_float_like("gain", gain, scores, "scores")
        check_shape("gain", gain, tuple(scores.shape))
    check_dropout(dropout, rng)


def check_attention_pooling(scores, values, valid_lens, dropout, rng) -> None:
    """:func:`~npseq.functional.pooling.attention_pooling_forward`: scores ``(N, Q, K)``, values ``(N, K, Dv)``,
    ``valid_lens`` ``None``, ``(N,)`` or ``(N, Q)`` in ``[0, K]``, and the dropout."""
    check_float_array("scores", scores)
    check_ndim("scores", scores, 3, "(N, Q, K)")
    check_float_like("values", values, scores, "scores")
    check_ndim("values", values, 3, "(N, K, Dv)")
    n, q, k = scores.shape
    if values.shape[:2] != (n, k):
        raise InvalidValueError(f"values: expected shape ({n}, {k}, *) (one value per key), got {tuple(values.shape)}")
    if valid_lens is not None:
        check_same_backend("valid_lens", valid_lens, scores)
        check_valid_lens("valid_lens", valid_lens, (n, q), k)
    check_dropout(dropout, rng)


def check_pooling_upstream(dcontext, dweights, cache) -> None:
    """A pooling backward's upstream gradients, for its :class:`~npseq.functional.pooling.AttentionPoolingCache`:
    ``dcontext`` ``(N, [h,] Q, Dv)`` and ``dweights`` shaped like the weights, or None."""
    check_shape("dcontext", dcontext, tuple(cache.pooled.shape[:-1]) + (cache.values.shape[-1],))
    if dweights is not None:
        check_shape("dweights", dweights, tuple(cache.pooled.shape))


# ------------------------------------------------------------------ global attention
def check_dot_attention(queries, keys, values, valid_lens, dropout, rng) -> None:
    """:func:`~npseq.functional.attention.dot_attention_forward`."""
    check_qkv(queries, keys, values, valid_lens)
    check_dropout(dropout, rng)
    _check_equal_features(queries, keys)


def check_general_attention(queries, keys, values, W, valid_lens, dropout, rng) -> None:
    """:func:`~npseq.functional.attention.general_attention_forward`."""
    check_qkv(queries, keys, values, valid_lens)
    check_dropout(dropout, rng)
    _check_weight("W", W, queries, 2, "(Dq, Dk)")
    check_features("queries", queries, W.shape[0], "W", "rows")
    check_features("keys", keys, W.shape[1], "W", "columns")


def _check_additive_weights(queries, Wq, wv) -> None:
    _check_weight("Wq", Wq, queries, 2, "(Dq, h)")
    check_features("queries", queries, Wq.shape[0], "Wq", "rows")
    check_float_like("wv", wv, queries, "queries")
    check_shape("wv", wv, (Wq.shape[1],))


def _check_key_projection(keys, Wk, Wq) -> None:
    _check_weight("Wk", Wk, keys, 2, "(Dk, h)")
    check_features("keys", keys, Wk.shape[0], "Wk", "rows")
    if Wk.shape[1] != Wq.shape[1]:
        raise InvalidValueError(f"Wk: expected {Wq.shape[1]} columns (the hidden size h of Wq), "
                                f"got shape {tuple(Wk.shape)}")


def check_additive_attention(queries, keys, values, Wq, Wk, wv, valid_lens, dropout, rng) -> None:
    """:func:`~npseq.functional.attention.additive_attention_forward`."""
    check_qkv(queries, keys, values, valid_lens)
    check_dropout(dropout, rng)
    _check_additive_weights(queries, Wq, wv)
    _check_key_projection(keys, Wk, Wq)


def check_additive_projected(queries, projected_keys, values, Wq, wv, valid_lens, dropout, rng) -> None:
    """:func:`~npseq.functional.fast_attention.additive_attention_projected_forward`: keys already
    projected to the hidden size ``h`` of ``Wq``."""
    check_qkv(queries, projected_keys, values, valid_lens, keys_name="projected_keys")
    check_dropout(dropout, rng)
    _check_additive_weights(queries, Wq, wv)
    check_features("projected_keys", projected_keys, Wq.shape[1], "Wq", "columns")


# ------------------------------------------------------------------ kernel regression
def check_nadaraya_watson(queries, keys, values, w) -> None:
    """:func:`~npseq.functional.kernel_regression.nadaraya_watson_forward`: scalar queries ``(N,)`` or ``(N, Q)``,
    keys and values ``(N, K)`` with ``K >= 1``, ``w`` ``()`` or None."""
    check_float_array("queries", queries)
    if queries.ndim not in (1, 2):
        raise InvalidValueError(f"queries: expected a 1-d array (N,) (one query per example) or a 2-d array "
                                f"(N, Q), got shape {tuple(queries.shape)}")
    check_float_like("keys", keys, queries, "queries")
    check_ndim("keys", keys, 2, "(N, K)")
    if keys.shape[0] != queries.shape[0]:
        raise InvalidValueError(f"keys: expected batch size {queries.shape[0]} (that of queries), "
                                f"got shape {tuple(keys.shape)}")
    if keys.shape[1] == 0:
        raise InvalidValueError(f"keys: expected at least one key (K >= 1), got shape {tuple(keys.shape)}")
    check_float_like("values", values, queries, "queries")
    if values.shape != keys.shape:
        raise InvalidValueError(f"values: expected shape {tuple(keys.shape)} (one value per key), "
                                f"got {tuple(values.shape)}")
    if w is not None:
        _check_width(w, queries)


def check_nadaraya_watson_upstream(dpredictions, cache) -> None:
    """:func:`~npseq.functional.kernel_regression.nadaraya_watson_backward`: one gradient per prediction,
    the shape of the queries (the weights' ``(N, [Q,] K)`` without ``K``)."""
    check_shape("dpredictions", dpredictions, tuple(cache.weights.shape[:-1]))


# ------------------------------------------------------------------ local attention
def check_local_pooling(scores, values, centers, source_lens, half_width: int, gaussian: bool) -> None:
    """:func:`~npseq.functional.local_attention.local_attention_pooling_forward`."""
    check_float_array("scores", scores)
    check_ndim("scores", scores, 3, "(N, Q, K)")
    n, q, k = scores.shape
    check_float_like("values", values, scores, "scores")
    check_ndim("values", values, 3, "(N, K, Dv)")
    if values.shape[:2] != (n, k):
        raise InvalidValueError(f"values: expected shape ({n}, {k}, *) (one value per key), got {tuple(values.shape)}")
    check_shape("centers", centers, (n, q))
    check_valid_lens("source_lens", source_lens, (n,), k)
    check_count("half_width", half_width, 0)
    if gaussian and half_width < 1:
        raise InvalidValueError(f"half_width: expected at least 1 with the Gaussian (sigma = D/2), got {half_width}")
    if gaussian:
        check_float_like("centers", centers, scores, "scores")


def check_predictive_position(queries, Wp, vp, source_lens) -> None:
    """:func:`~npseq.functional.local_attention.predictive_position_forward`."""
    check_float_array("queries", queries)
    check_ndim("queries", queries, 3, "(N, Q, Dq)")
    check_shape("Wp", Wp, (queries.shape[2], None))
    check_shape("vp", vp, (Wp.shape[1],))
    check_shape("source_lens", source_lens, (queries.shape[0],))


# ------------------------------------------------------------------ the Transformer
def check_scaled_dot_product_attention(queries, keys, values, valid_lens, dropout, rng) -> None:
    """:func:`~npseq.functional.transformer.scaled_dot_product_attention_forward`: queries ``(N, [h,] T_q, d)``,
    keys and values with the same leading axes, ``T_k >= 1``, ``valid_lens`` per example."""
    check_float_array("queries", queries)
    if queries.ndim not in (3, 4):
        raise InvalidValueError("queries: expected a 3-d array (N, T_q, d) or a 4-d array (N, h, T_q, d), "
                                f"got shape {tuple(queries.shape)}")
    layout = "(N, T_q, d)" if queries.ndim == 3 else "(N, h, T_q, d)"
    lead = tuple(queries.shape[:-2])
    for name, array in (("keys", keys), ("values", values)):
        check_float_like(name, array, queries, "queries")
        check_ndim(name, array, queries.ndim, layout.replace("T_q", "T_k"))
        if tuple(array.shape[:-2]) != lead:
            raise InvalidValueError(f"{name}: expected leading axes {lead} (those of queries), "
                                    f"got shape {tuple(array.shape)}")
    num_queries, num_keys, dim = queries.shape[-2], keys.shape[-2], queries.shape[-1]
    if num_keys == 0:
        raise InvalidValueError(f"keys: expected at least one key (T_k >= 1), got shape {tuple(keys.shape)}")
    if keys.shape[-1] != dim:
        raise InvalidValueError(f"keys: expected feature size {dim} (that of queries), got shape {tuple(keys.shape)}")
    if values.shape[-2] != num_keys:
        raise InvalidValueError(f"values: expected {num_keys} rows (one value per key), got shape "
                                f"{tuple(values.shape)}")
    if valid_lens is not None:
        check_same_backend("valid_lens", valid_lens, queries)
        check_valid_lens("valid_lens", valid_lens, (lead[0], num_queries), num_keys)
    check_dropout(dropout, rng)


def check_split_heads(x, num_heads: int) -> None:
    """:func:`~npseq.functional.transformer.split_heads`: ``x`` ``(N, T, h d)``, ``h`` a divisor of its features."""
    check_ndim("x", x, 3, "(N, T, h d)")
    if x.shape[2] % num_heads:
        raise InvalidValueError(f"num_heads: expected a divisor of the feature size {x.shape[2]} of x, got {num_heads}")


def check_multihead(queries, keys, values, params, num_heads, names) -> int:
    """:func:`~npseq.functional.transformer.multihead_attention_forward`; ``names`` are the keys ``params`` must
    have. Returns ``num_heads`` as an int."""
    check_float_array("queries", queries)
    check_ndim("queries", queries, 3, "(N, T_q, D_q)")
    for name, array, layout in (("keys", keys, "(N, T_k, D_k)"), ("values", values, "(N, T_k, D_v)")):
        check_float_like(name, array, queries, "queries")
        check_ndim(name, array, 3, layout)
    if not isinstance(params, dict) or set(params) != set(names):
        given = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise InvalidValueError(f"params: expected a dict with the keys {list(names)}, got {given}")
    for name in names:
        check_float_like(name, params[name], queries, "queries")
    check_ndim("W_q", params["W_q"], 2, "(D_q, D)")
    hidden = params["W_q"].shape[1]
    for name, rows, source in (("W_q", queries.shape[2], "queries"), ("W_k", keys.shape[2], "keys"),
                               ("W_v", values.shape[2], "values"), ("W_o", hidden, "W_q's columns")):
        check_ndim(name, params[name], 2)
        if params[name].shape[0] != rows:
            raise InvalidValueError(f"{name}: expected {rows} rows (the feature size of {source}), "
                                    f"got shape {tuple(params[name].shape)}")
    for name in ("W_k", "W_v"):
        check_shape(name, params[name], (None, hidden))
    for name, size in (("b_q", hidden), ("b_k", hidden), ("b_v", hidden), ("b_o", params["W_o"].shape[1])):
        check_shape(name, params[name], (size,))
    num_heads = check_count("num_heads", num_heads)
    if hidden % num_heads:
        raise InvalidValueError(f"num_heads: expected a divisor of the projected size D = {hidden} "
                                f"(the columns of W_q), got {num_heads}")
    if keys.shape[0] != queries.shape[0] or values.shape[:2] != keys.shape[:2]:
        raise InvalidValueError(f"values: expected keys and values of shape ({queries.shape[0]}, T_k, *) "
                                f"(the batch of queries, one value per key), got keys {tuple(keys.shape)} "
                                f"and values {tuple(values.shape)}")
    return num_heads


def check_positional_encoding(num_steps: int, dim: int) -> tuple:
    """:func:`~npseq.functional.transformer.positional_encoding`: two positive ints, returned as ints."""
    return check_count("num_steps", num_steps), check_count("dim", dim)


def check_add_positions(x, positions) -> None:
    """:func:`~npseq.functional.transformer.add_positions_forward`: a table with at least ``T`` rows of ``d``."""
    check_float_array("x", x)
    check_ndim("x", x, 3, "(N, T, d)")
    check_float_like("positions", positions, x, "x")
    check_ndim("positions", positions, 2, "(T_max, d)")
    num_steps = x.shape[1]
    if positions.shape[0] < num_steps or positions.shape[1] != x.shape[2]:
        raise InvalidValueError(f"positions: expected shape (T_max, {x.shape[2]}) with T_max >= {num_steps} "
                                f"(the steps and features of x), got {tuple(positions.shape)}")


def check_feed_forward(x, W1, b1, W2, b2, activation: str, activations) -> None:
    """:func:`~npseq.functional.transformer.feed_forward_forward`; ``activations`` are the known names."""
    check_float_array("x", x)
    if x.ndim == 0:
        raise InvalidValueError("x: expected an array (..., D), got a scalar")
    if activation not in activations:
        raise InvalidValueError(f"activation: expected one of {list(activations)}, got {activation!r}")
    for name, array, ndim, layout in (("W1", W1, 2, "(D, F)"), ("b1", b1, 1, "(F,)"),
                                      ("W2", W2, 2, "(F, D_o)"), ("b2", b2, 1, "(D_o,)")):
        check_float_like(name, array, x, "x")
        check_ndim(name, array, ndim, layout)
    if W1.shape[0] != x.shape[-1]:
        raise InvalidValueError(f"W1: expected {x.shape[-1]} rows (the feature size of x), got shape {tuple(W1.shape)}")
    check_shape("b1", b1, (W1.shape[1],))
    check_shape("W2", W2, (W1.shape[1], None))
    check_shape("b2", b2, (W2.shape[1],))


def check_residual_norm(x, order: str) -> None:
    """:func:`~npseq.functional.transformer.residual_norm_forward`: a float input and a known order."""
    check_float_array("x", x)
    if order not in NORM_ORDERS:
        raise InvalidValueError(f"order: expected one of {list(NORM_ORDERS)}, got {order!r}")


def check_sublayer_output(f, x) -> None:
    """The residual adds the sublayer's output to its input: the same shape."""
    if tuple(getattr(f, "shape", ())) != tuple(x.shape):
        raise InvalidValueError(f"sublayer: expected an output of x's shape {tuple(x.shape)} (the residual "
                                f"adds them), got {tuple(getattr(f, 'shape', ()))}")
