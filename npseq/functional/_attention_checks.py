"""The argument checks of the attention functions, apart from their maths.

Every public function of :mod:`~npseq.functional.scores`, :mod:`~npseq.functional.pooling`,
:mod:`~npseq.functional.attention`, :mod:`~npseq.functional.fast_attention`,
:mod:`~npseq.functional.local_attention` and :mod:`~npseq.functional.transformer` checks its
arguments in one call at its top, to the function here that bears its name; the body that
follows is the maths alone. Each check raises an error that names the argument, what was
expected and what was given (:mod:`npseq._checks`).
"""
from __future__ import annotations

from .._checks import (
    check_count,
    check_float_array,
    check_float_like,
    check_ndim,
    check_probability,
    check_qkv,
    check_same_backend,
    check_shape,
    check_valid_lens,
)
from ..errors import InvalidValueError

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


# ------------------------------------------------------------------ scores
def check_dot_scores(queries, keys) -> None:
    """:func:`~npseq.functional.scores.dot_scores_forward` and its scaled twin: queries ``(N, [h,] Q, D)``,
    keys ``(N, [h,] K, D)``, the same leading axes, dtype and backend, ``K >= 1``."""
    check_float_array("queries", queries)
    if queries.ndim not in (3, 4):
        raise InvalidValueError("queries: expected a 3-d array (N, Q, D) or a 4-d array (N, h, Q, D), "
                                f"got shape {tuple(queries.shape)}")
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


def check_dscores(dscores, cache) -> None:
    """A score backward's upstream gradient: one per (query, key) pair of the cache's queries and keys,
    ``(N, [h,] Q, K)`` (any ``K`` without keys: the location score)."""
    keys = cache.keys
    check_shape("dscores", dscores, tuple(cache.queries.shape[:-1]) + (None if keys is None else keys.shape[-2],))


# ------------------------------------------------------------------ pooling
def check_masked_pooling(scores, values, mask, gain, dropout, rng) -> None:
    """:func:`~npseq.functional.pooling.masked_pooling_forward`: scores ``(N, [h,] Q, K)``, one value per key,
    a boolean mask that broadcasts to the scores, a gain shaped like them (or None), and the dropout."""
    check_float_array("scores", scores)
    if scores.ndim not in (3, 4):
        raise InvalidValueError("scores: expected a 3-d array (N, Q, K) or a 4-d array (N, h, Q, K), "
                                f"got shape {tuple(scores.shape)}")
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
