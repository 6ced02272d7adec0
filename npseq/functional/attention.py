"""Attention: dot-product (scaled or not), general (Luong) and additive (Bahdanau) scores.

Every pair has the same shape. A score function compares each query with each key,

.. math:: s_{nqk} = \\operatorname{score}(q_{nq}, k_{nk}),

and *attention pooling* turns the scores into weights over the valid keys and
averages the values with them:

.. math::
    a_{nq\\cdot} = \\operatorname{masked\\_softmax}(s_{nq\\cdot}), \\qquad
    c_{nq} = \\textstyle\\sum_k a_{nqk}\\, v_{nk}.

Shapes: queries ``(N, Q, Dq)``, keys ``(N, K, Dk)``, values ``(N, K, Dv)``,
scores and weights ``(N, Q, K)``, context ``(N, Q, Dv)``; ``valid_lens`` is
``None`` (every key valid), ``(N,)`` (one length per example) or ``(N, Q)``
(one per query). Keys at positions ``k >= valid_len`` get exactly zero weight,
and a query with ``valid_len == 0`` gets all-zero weights and a zero context.

Each forward returns ``(context, weights, cache)``; each backward takes
``(dcontext, cache, dweights=None)``. ``dweights`` is an optional upstream
gradient on the weights themselves (a loss on the attention map), added to the
one that flows back from the context.

Dropout on the weights (as in d2l, where ``context = dropout(a) v``) is
available through ``dropout=p, rng=generator``; the weights returned are always
the ones before dropout.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from .. import backend
from .._checks import (
    check_float_array,
    check_ndim,
    check_probability,
    check_same_backend,
    check_shape,
    check_valid_lens,
)
from ..errors import InvalidTypeError, InvalidValueError
from .activations import MaskedSoftmaxCache, _masked_softmax, masked_softmax_backward
from .layers import DropoutCache, dropout_backward, dropout_forward

__all__ = [
    "AttentionPoolingCache", "DotAttentionCache", "GeneralAttentionCache",
    "AdditiveAttentionProjectedCache", "AdditiveAttentionCache",
    "attention_pooling_forward", "attention_pooling_backward",
    "dot_attention_forward", "dot_attention_backward",
    "general_attention_forward", "general_attention_backward",
    "additive_attention_projected_forward", "additive_attention_projected_backward",
    "additive_attention_forward", "additive_attention_backward",
]


# ------------------------------------------------------------------- checks
def _check_same_dtype(name: str, array, reference, reference_name: str) -> None:
    # Mixing float32 and float64 would silently promote the result; say so instead.
    if array.dtype != reference.dtype:
        raise InvalidTypeError(f"{name}: expected dtype {reference.dtype} (the dtype of {reference_name}), "
                               f"got {array.dtype}")


def _check_float_like(name: str, array, reference, reference_name: str) -> None:
    check_float_array(name, array)
    check_same_backend(name, array, reference)
    _check_same_dtype(name, array, reference, reference_name)


def _check_qkv(queries, keys, values, valid_lens, keys_name: str = "keys") -> None:
    """Ranks, dtypes and backends of the three inputs, their shared N and K, and ``valid_lens``."""
    check_float_array("queries", queries)
    check_ndim("queries", queries, 3, "(N, Q, Dq)")
    _check_float_like(keys_name, keys, queries, "queries")
    check_ndim(keys_name, keys, 3, "(N, K, Dk)")
    _check_float_like("values", values, queries, "queries")
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


def _check_features(name: str, array, size: int, weight_name: str, side: str) -> None:
    """The last axis of ``array`` matches the ``side`` ("rows"/"columns") of a weight matrix."""
    if array.shape[-1] != size:
        raise InvalidValueError(f"{name}: expected feature size {size} (the {side} of {weight_name}), "
                                f"got shape {tuple(array.shape)}")


def _check_dropout(dropout: float, rng) -> None:
    check_probability("dropout", dropout)
    if dropout > 0.0 and rng is None:
        raise InvalidValueError("rng: expected a random Generator to draw the dropout mask "
                                f"(dropout={dropout}), got None")


# ------------------------------------------------------------------ products
def _project(x, W):
    """``x @ W`` for ``x`` ``(..., D)`` and ``W`` ``(D, M)`` as one 2-d product over all rows.

    NumPy's ``@`` on a stack of ``(1, D)`` rows (one query per example) runs one small
    product per example; the same rows as a ``(rows, D)`` matrix are one product.
    """
    return (x.reshape(-1, x.shape[-1]) @ W).reshape(x.shape[:-1] + (W.shape[-1],))


def _transposed_product(a, b):
    """:math:`a_n^\\top b_n` per example: ``a`` ``(N, Q, K)``, ``b`` ``(N, Q, D)`` -> ``(N, K, D)``.

    With one query (a decoder step) each product is an outer product; broadcasting
    ``(N, K, 1) * (N, 1, D)`` computes it in one pass instead of ``N`` matrix products
    with an inner size of 1.
    """
    if a.shape[1] == 1:
        return a.swapaxes(1, 2) * b
    return a.swapaxes(1, 2) @ b


# --------------------------------------------------------- attention pooling
class AttentionPoolingCache(NamedTuple):
    values: Any                  # (N, K, Dv)
    softmax: MaskedSoftmaxCache  # the weights a (N, Q, K) and the key mask
    dropout: DropoutCache        # mask on a; its .mask is None without dropout
    pooled: Any                  # (N, Q, K) the weights that multiplied the values: a, or dropout(a)


def attention_pooling_forward(scores, values, valid_lens=None, *, dropout: float = 0.0, rng=None):
    """Masked softmax of the scores, then the weighted average of the values.

    .. math::
        a = \\operatorname{masked\\_softmax}(s, \\text{valid\\_lens}), \\qquad
        \\tilde a = \\operatorname{dropout}_p(a), \\qquad
        c_{nq} = \\textstyle\\sum_k \\tilde a_{nqk}\\, v_{nk} \\quad (c = \\tilde a\\, v)

    This is the part every score function shares; the three attention pairs below
    are a score function followed by this.

    Args:
        scores: ``(N, Q, K)``.
        values: ``(N, K, Dv)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        dropout: probability of dropping each weight (inverted dropout); 0 = none.
        rng: a ``numpy.random.Generator`` that draws the mask (needed when ``dropout > 0``).

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` :math:`a` ``(N, Q, K)`` (before dropout),
        and an :class:`AttentionPoolingCache`.
    """
    check_float_array("scores", scores)
    check_ndim("scores", scores, 3, "(N, Q, K)")
    _check_float_like("values", values, scores, "scores")
    check_ndim("values", values, 3, "(N, K, Dv)")
    n, q, k = scores.shape
    if values.shape[:2] != (n, k):
        raise InvalidValueError(f"values: expected shape ({n}, {k}, *) (one value per key), got {tuple(values.shape)}")
    if valid_lens is not None:
        check_valid_lens("valid_lens", valid_lens, (n, q), k)
    _check_dropout(dropout, rng)
    return _pool(scores, values, valid_lens, dropout, rng)


def _pool(scores, values, valid_lens, dropout: float, rng):
    """:func:`attention_pooling_forward` after its checks (the score functions, which check
    their own inputs, call this)."""
    weights, softmax_cache = _masked_softmax(scores, valid_lens)
    pooled, dropout_cache = dropout_forward(weights, dropout, rng, train=dropout > 0.0)
    context = pooled @ values
    return context, weights, AttentionPoolingCache(values, softmax_cache, dropout_cache, pooled)


def attention_pooling_backward(dcontext, cache: AttentionPoolingCache, dweights=None):
    """Backward of :func:`attention_pooling_forward`.

    From :math:`c = \\tilde a v`, :math:`\\tilde a = a \\odot m` and :math:`a = \\operatorname{masked\\_softmax}(s)`:

    .. math::
        dv &= \\tilde a^\\top dc                          && (N, K, Dv) \\\\
        d\\tilde a &= dc\\, v^\\top                       && (N, Q, K) \\\\
        da &= d\\tilde a \\odot m + d\\text{weights}      && \\text{(dropout mask } m\\text{; 1 without dropout)} \\\\
        ds_{nqk} &= a_{nqk}\\,\\bigl(da_{nqk} - \\textstyle\\sum_j da_{nqj}\\, a_{nqj}\\bigr)
                                                          && \\text{(softmax Jacobian; 0 at masked keys)}

    (transposes act on the last two axes, one matrix per example).

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None`` (no loss on the weights).

    Returns:
        ``dscores`` ``(N, Q, K)``, ``dvalues`` ``(N, K, Dv)``.
    """
    values, softmax_cache, dropout_cache, pooled = cache
    check_shape("dcontext", dcontext, pooled.shape[:2] + values.shape[2:])
    dvalues = _transposed_product(pooled, dcontext)
    dweights_total = dropout_backward(dcontext @ values.swapaxes(1, 2), dropout_cache)
    if dweights is not None:
        check_shape("dweights", dweights, pooled.shape)
        dweights_total = dweights_total + dweights
    return masked_softmax_backward(dweights_total, softmax_cache), dvalues


# ------------------------------------------------------------- dot product
class DotAttentionCache(NamedTuple):
    queries: Any                   # (N, Q, D)
    keys: Any                      # (N, K, D)
    scale: Any                     # 1/sqrt(D) when scaled, else 1 (a scalar of the inputs' dtype)
    pooling: AttentionPoolingCache


def dot_attention_forward(queries, keys, values, valid_lens=None, scaled=True, *,
                          dropout: float = 0.0, rng=None):
    """Dot-product attention, scaled by :math:`1/\\sqrt{D}` (Vaswani et al.) or not (Luong "dot").

    .. math::
        s_{nqk} = \\lambda\\, q_{nq} \\cdot k_{nk} \\quad (s = \\lambda\\, q k^\\top), \\qquad
        \\lambda = 1/\\sqrt{D} \\text{ if scaled else } 1

    followed by :func:`attention_pooling_forward` (:math:`a = \\operatorname{masked\\_softmax}(s)`,
    :math:`c = a v`).

    Args:
        queries: ``(N, Q, D)``.
        keys: ``(N, K, D)`` (the same feature size as the queries).
        values: ``(N, K, Dv)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        scaled: divide the scores by :math:`\\sqrt{D}`.
        dropout, rng: dropout on the weights, see :func:`attention_pooling_forward`.

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` ``(N, Q, K)``, a :class:`DotAttentionCache`.
    """
    _check_qkv(queries, keys, values, valid_lens)
    _check_dropout(dropout, rng)
    if keys.shape[2] != queries.shape[2]:
        raise InvalidValueError(f"keys: expected feature size {queries.shape[2]} (that of queries; dot-product "
                                f"scores need equal sizes), got shape {tuple(keys.shape)}")
    scale = queries.dtype.type(1.0 / math.sqrt(queries.shape[2]) if scaled else 1.0)
    scores = queries @ keys.swapaxes(1, 2)
    scores *= scale
    context, weights, pooling = _pool(scores, values, valid_lens, dropout, rng)
    return context, weights, DotAttentionCache(queries, keys, scale, pooling)


def dot_attention_backward(dcontext, cache: DotAttentionCache, dweights=None):
    """Backward of :func:`dot_attention_forward`.

    With :math:`ds, dv` from :func:`attention_pooling_backward` and :math:`s = \\lambda q k^\\top`:

    .. math::
        dq &= \\lambda\\, ds\\, k       && (N, Q, D) \\\\
        dk &= \\lambda\\, ds^\\top q    && (N, K, D)

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None``.

    Returns:
        ``dqueries`` ``(N, Q, D)``, ``dkeys`` ``(N, K, D)``, ``dvalues`` ``(N, K, Dv)``.
    """
    queries, keys, scale, pooling = cache
    dscores, dvalues = attention_pooling_backward(dcontext, pooling, dweights)
    dscores *= scale
    dqueries = dscores @ keys
    dkeys = _transposed_product(dscores, queries)
    return dqueries, dkeys, dvalues


# ---------------------------------------------------------------- general
class GeneralAttentionCache(NamedTuple):
    queries: Any            # (N, Q, Dq)
    W: Any                  # (Dq, Dk)
    dot: DotAttentionCache  # the unscaled dot attention of (q W) with the keys


def general_attention_forward(queries, keys, values, W, valid_lens=None, *, dropout: float = 0.0, rng=None):
    """Luong's "general" score: a bilinear form between each query and each key.

    .. math::
        s_{nqk} = q_{nq}\\, W\\, k_{nk}^\\top \\quad (s = (q W) k^\\top)

    computed as the unscaled :func:`dot_attention_forward` of the projected queries
    :math:`\\hat q = q W` with the keys.

    Args:
        queries: ``(N, Q, Dq)``.
        keys: ``(N, K, Dk)``.
        values: ``(N, K, Dv)``.
        W: ``(Dq, Dk)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        dropout, rng: dropout on the weights, see :func:`attention_pooling_forward`.

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` ``(N, Q, K)``, a :class:`GeneralAttentionCache`.
    """
    _check_qkv(queries, keys, values, valid_lens)
    _check_float_like("W", W, queries, "queries")
    check_ndim("W", W, 2, "(Dq, Dk)")
    _check_features("queries", queries, W.shape[0], "W", "rows")
    _check_features("keys", keys, W.shape[1], "W", "columns")
    projected = _project(queries, W)
    context, weights, dot = dot_attention_forward(projected, keys, values, valid_lens, scaled=False,
                                                  dropout=dropout, rng=rng)
    return context, weights, GeneralAttentionCache(queries, W, dot)


def general_attention_backward(dcontext, cache: GeneralAttentionCache, dweights=None):
    """Backward of :func:`general_attention_forward`.

    With :math:`d\\hat q, dk, dv` from :func:`dot_attention_backward` and :math:`\\hat q = q W`:

    .. math::
        dq &= d\\hat q\\, W^\\top                               && (N, Q, Dq) \\\\
        dW &= \\textstyle\\sum_{n} q_n^\\top\\, d\\hat q_n       && (Dq, Dk)

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None``.

    Returns:
        ``dqueries`` ``(N, Q, Dq)``, ``dkeys`` ``(N, K, Dk)``, ``dvalues`` ``(N, K, Dv)``, ``dW`` ``(Dq, Dk)``.
    """
    queries, W, dot = cache
    dprojected, dkeys, dvalues = dot_attention_backward(dcontext, dot, dweights)
    dqueries = _project(dprojected, W.T)
    dW = queries.reshape(-1, W.shape[0]).T @ dprojected.reshape(-1, W.shape[1])
    return dqueries, dkeys, dvalues, dW


# --------------------------------------------------------------- additive
class AdditiveAttentionProjectedCache(NamedTuple):
    queries: Any                   # (N, Q, Dq)
    Wq: Any                        # (Dq, h)
    wv: Any                        # (h,)
    features: Any                  # (N, Q, K, h) tanh(q Wq + k Wk), the one tensor additive attention must keep
    pooling: AttentionPoolingCache


def additive_attention_projected_forward(queries, projected_keys, values, Wq, wv, valid_lens=None, *,
                                         dropout: float = 0.0, rng=None):
    """Additive (Bahdanau) attention on keys that were projected once, beforehand.

    The same math as :func:`additive_attention_forward`, less work: the caller
    computes :math:`\\hat k = k W_k` once per source batch and reuses it at every
    decoder step, instead of projecting the same keys again at each step. Over
    the steps the caller sums the :math:`d\\hat k` this backward returns and
    backpropagates through the projection once (:math:`dk = d\\hat k W_k^\\top`,
    :math:`dW_k = \\sum_n k_n^\\top d\\hat k_n`).

    .. math::
        \\hat q &= q W_q                                                      && (N, Q, h) \\\\
        f_{nqk} &= \\tanh(\\hat q_{nq} + \\hat k_{nk})                         && (N, Q, K, h) \\\\
        s_{nqk} &= f_{nqk} \\cdot w_v                                          && (N, Q, K)

    followed by :func:`attention_pooling_forward`.

    Args:
        queries: ``(N, Q, Dq)``.
        projected_keys: :math:`\\hat k = k W_k`, ``(N, K, h)``.
        values: ``(N, K, Dv)``.
        Wq: ``(Dq, h)``.
        wv: ``(h,)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        dropout, rng: dropout on the weights, see :func:`attention_pooling_forward`.

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` ``(N, Q, K)``, an :class:`AdditiveAttentionProjectedCache`.
    """
    _check_qkv(queries, projected_keys, values, valid_lens, keys_name="projected_keys")
    _check_dropout(dropout, rng)
    _check_float_like("Wq", Wq, queries, "queries")
    check_ndim("Wq", Wq, 2, "(Dq, h)")
    _check_features("queries", queries, Wq.shape[0], "Wq", "rows")
    hidden = Wq.shape[1]
    _check_features("projected_keys", projected_keys, hidden, "Wq", "columns")
    _check_float_like("wv", wv, queries, "queries")
    check_shape("wv", wv, (hidden,))
    xp = backend.get_array_module(queries)
    # Broadcast (N, Q, 1, h) + (N, 1, K, h) into one buffer and tanh it in place: the
    # (N, Q, K, h) features are the only large tensor this attention creates.
    features = _project(queries, Wq)[:, :, None, :] + projected_keys[:, None, :, :]
    xp.tanh(features, out=features)
    scores = (features.reshape(-1, hidden) @ wv).reshape(features.shape[:-1])
    context, weights, pooling = _pool(scores, values, valid_lens, dropout, rng)
    return context, weights, AdditiveAttentionProjectedCache(queries, Wq, wv, features, pooling)


def additive_attention_projected_backward(dcontext, cache: AdditiveAttentionProjectedCache, dweights=None):
    """Backward of :func:`additive_attention_projected_forward`.

    With :math:`ds, dv` from :func:`attention_pooling_backward`, and :math:`u = \\hat q + \\hat k`
    the pre-activation (:math:`f = \\tanh u`):

    .. math::
        dw_v &= \\textstyle\\sum_{n,q,k} ds_{nqk}\\, f_{nqk}                      && (h,) \\\\
        du_{nqk} &= ds_{nqk}\\, w_v \\odot (1 - f_{nqk}^2)                       && (N, Q, K, h) \\\\
        d\\hat q_{nq} &= \\textstyle\\sum_k du_{nqk}                              && (N, Q, h) \\\\
        d\\hat k_{nk} &= \\textstyle\\sum_q du_{nqk}                              && (N, K, h) \\\\
        dq &= d\\hat q\\, W_q^\\top                                                && (N, Q, Dq) \\\\
        dW_q &= \\textstyle\\sum_n q_n^\\top d\\hat q_n                           && (Dq, h)

    Masked keys have :math:`ds = 0`, so their :math:`d\\hat k` and :math:`dv` are exactly 0.

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None``.

    Returns:
        ``dqueries`` ``(N, Q, Dq)``, ``dprojected_keys`` ``(N, K, h)``, ``dvalues`` ``(N, K, Dv)``,
        ``dWq`` ``(Dq, h)``, ``dwv`` ``(h,)``.
    """
    queries, Wq, wv, features, pooling = cache
    xp = backend.get_array_module(features)
    hidden = wv.shape[0]
    dscores, dvalues = attention_pooling_backward(dcontext, pooling, dweights)
    dwv = dscores.reshape(-1) @ features.reshape(-1, hidden)
    # One (N, Q, K, h) buffer for du, filled in place: 1 - f^2, then times ds and w_v.
    dpre = features * features
    xp.subtract(features.dtype.type(1), dpre, out=dpre)
    dpre *= dscores[..., None]
    dpre *= wv
    dprojected_queries = dpre.sum(axis=2)
    # With one query (a decoder step) the sum over queries is that query's slice: no pass over du.
    dprojected_keys = dpre[:, 0] if dpre.shape[1] == 1 else dpre.sum(axis=1)
    dqueries = _project(dprojected_queries, Wq.T)
    dWq = queries.reshape(-1, Wq.shape[0]).T @ dprojected_queries.reshape(-1, hidden)
    return dqueries, dprojected_keys, dvalues, dWq, dwv


class AdditiveAttentionCache(NamedTuple):
    keys: Any                                   # (N, K, Dk)
    Wk: Any                                     # (Dk, h)
    projected: AdditiveAttentionProjectedCache  # everything after the key projection


def additive_attention_forward(queries, keys, values, Wq, Wk, wv, valid_lens=None, *,
                               dropout: float = 0.0, rng=None):
    """Additive (Bahdanau) attention: a one-hidden-layer MLP scores each query-key pair.

    .. math::
        s_{nqk} = w_v \\cdot \\tanh(q_{nq} W_q + k_{nk} W_k)

    with :math:`q W_q` broadcast as ``(N, Q, 1, h)`` and :math:`k W_k` as ``(N, 1, K, h)``,
    followed by :func:`attention_pooling_forward`. Computed as :math:`\\hat k = k W_k`
    and :func:`additive_attention_projected_forward` (which a decoder calls directly
    to project the keys only once per source batch).

    Args:
        queries: ``(N, Q, Dq)``.
        keys: ``(N, K, Dk)``.
        values: ``(N, K, Dv)``.
        Wq: ``(Dq, h)``.
        Wk: ``(Dk, h)``.
        wv: ``(h,)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        dropout, rng: dropout on the weights, see :func:`attention_pooling_forward`.

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` ``(N, Q, K)``, an :class:`AdditiveAttentionCache`.
    """
    _check_qkv(queries, keys, values, valid_lens)
    check_ndim("Wq", Wq, 2, "(Dq, h)")
    _check_float_like("Wk", Wk, queries, "queries")
    check_ndim("Wk", Wk, 2, "(Dk, h)")
    _check_features("keys", keys, Wk.shape[0], "Wk", "rows")
    if Wk.shape[1] != Wq.shape[1]:
        raise InvalidValueError(f"Wk: expected {Wq.shape[1]} columns (the hidden size h of Wq), "
                                f"got shape {tuple(Wk.shape)}")
    projected_keys = _project(keys, Wk)
    context, weights, projected = additive_attention_projected_forward(
        queries, projected_keys, values, Wq, wv, valid_lens, dropout=dropout, rng=rng)
    return context, weights, AdditiveAttentionCache(keys, Wk, projected)


def additive_attention_backward(dcontext, cache: AdditiveAttentionCache, dweights=None):
    """Backward of :func:`additive_attention_forward`.

    With :math:`d\\hat k` (and the rest) from :func:`additive_attention_projected_backward`
    and :math:`\\hat k = k W_k`:

    .. math::
        dk &= d\\hat k\\, W_k^\\top                           && (N, K, Dk) \\\\
        dW_k &= \\textstyle\\sum_n k_n^\\top d\\hat k_n       && (Dk, h)

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None``.

    Returns:
        ``dqueries`` ``(N, Q, Dq)``, ``dkeys`` ``(N, K, Dk)``, ``dvalues`` ``(N, K, Dv)``,
        ``dWq`` ``(Dq, h)``, ``dWk`` ``(Dk, h)``, ``dwv`` ``(h,)``.
    """
    keys, Wk, projected = cache
    dqueries, dprojected_keys, dvalues, dWq, dwv = additive_attention_projected_backward(
        dcontext, projected, dweights)
    dkeys = _project(dprojected_keys, Wk.T)
    dWk = keys.reshape(-1, Wk.shape[0]).T @ dprojected_keys.reshape(-1, Wk.shape[1])
    return dqueries, dkeys, dvalues, dWq, dWk, dwv
