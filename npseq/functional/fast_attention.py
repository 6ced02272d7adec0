"""The fast twin of global attention: the keys projected once per batch, the rest arranged for speed.

A decoder attends over the same encoder outputs at every step. The reference,
:func:`npseq.functional.attention.additive_attention_forward` (the concat score of
:func:`npseq.functional.scores.concat_scores_forward` followed by
:func:`npseq.functional.pooling.attention_pooling_forward`), would project those keys again at
every step. This module computes the same maths with the keys projected beforehand,
:math:`\\hat k = k W_k`, and with the tricks that speed makes worth it:

* every projection is one 2-d product over all rows (:func:`~npseq.functional.layers.project`):
  NumPy's ``@`` on a stack of ``(1, D)`` rows (one query per example) runs one small product per example;
* the ``(N, Q, K, h)`` features are one buffer, summed and passed through ``tanh`` in place,
  and the backward builds :math:`du` in one more buffer, in place;
* with one query (a decoder step) the sum over queries is that query's slice, and the
  products :math:`a^\\top dc` are outer products, one broadcast multiplication
  (``_transposed_product``) instead of ``N`` matrix products with an inner size of 1.

The dot and general scores (twins of :func:`npseq.functional.scores.dot_scores_forward` and
:func:`npseq.functional.scores.general_scores_forward`, with the same caches) and the pooling's
backward (twin of :func:`npseq.functional.pooling.attention_pooling_backward`) use the same
products; they are the pairs :data:`npseq.nn.SCORES` hands to the layers.

``tests/test_scores.py`` holds every function here to its reference within 1e-12 in float64:
outputs and every gradient, on hypothesis-drawn shapes. Read the references first; this is what
the layers of :mod:`npseq.nn` run at each decoder step.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import (
    check_additive_projected,
    check_dot_scores,
    check_dscores,
    check_general_scores,
    check_pooling_upstream,
)
from .activations import masked_softmax_backward
from .layers import dropout_backward, project, project_weight_grad
from .pooling import AttentionPoolingCache, attention_pooling_forward
from .scores import ScoresCache

__all__ = ["AdditiveAttentionProjectedCache", "additive_attention_projected_forward",
           "additive_attention_projected_backward", "fast_attention_pooling_backward",
           "fast_dot_scores_forward", "fast_dot_scores_backward", "fast_general_scores_forward",
           "fast_general_scores_backward"]


def _transposed_product(a, b):
    """:math:`a_n^\\top b_n` per example: ``a`` ``(N, Q, K)``, ``b`` ``(N, Q, D)`` -> ``(N, K, D)``; with one
    query, the outer products as one broadcast ``(N, K, 1) * (N, 1, D)``."""
    if a.shape[1] == 1:
        return a.swapaxes(1, 2) * b
    return a.swapaxes(1, 2) @ b


def fast_attention_pooling_backward(dcontext, cache: AttentionPoolingCache, dweights=None):
    """:func:`npseq.functional.pooling.attention_pooling_backward` with :math:`dv = \\tilde a^\\top dc` as
    outer products for one query. Returns ``dscores`` ``(N, Q, K)``, ``dvalues`` ``(N, K, Dv)``."""
    check_pooling_upstream(dcontext, dweights, cache)
    values, softmax, _, dropout_cache, pooled = cache
    dvalues = _transposed_product(pooled, dcontext)
    dweights_total = dropout_backward(dcontext @ values.swapaxes(1, 2), dropout_cache)
    if dweights is not None:
        dweights_total = dweights_total + dweights
    return masked_softmax_backward(dweights_total, softmax), dvalues


def fast_dot_scores_forward(queries, keys):
    """:func:`npseq.functional.scores.dot_scores_forward` on ``(N, Q, D)`` queries: :math:`s = q k^\\top`."""
    check_dot_scores(queries, keys)
    return queries @ keys.swapaxes(1, 2), ScoresCache(queries, keys, None)


def fast_dot_scores_backward(dscores, cache: ScoresCache):
    """:func:`npseq.functional.scores.dot_scores_backward`, :math:`dk = ds^\\top q` as outer products
    for one query. Returns ``dqueries``, ``dkeys``."""
    check_dscores(dscores, cache)
    queries, keys, _ = cache
    return dscores @ keys, _transposed_product(dscores, queries)


def fast_general_scores_forward(queries, keys, W):
    """:func:`npseq.functional.scores.general_scores_forward`, :math:`s = (q W) k^\\top`, with :math:`q W`
    one 2-d product over all rows."""
    check_general_scores(queries, keys, W)
    return project(queries, W) @ keys.swapaxes(1, 2), ScoresCache(queries, keys, W)


def fast_general_scores_backward(dscores, cache: ScoresCache):
    """:func:`npseq.functional.scores.general_scores_backward` with 2-d products over all rows and the
    one-query outer products. Returns ``dqueries``, ``dkeys``, ``dW``."""
    check_dscores(dscores, cache)
    queries, keys, W = cache
    dprojected = dscores @ keys
    dkeys = _transposed_product(dscores, project(queries, W))
    dW = project_weight_grad(queries, dprojected)
    return project(dprojected, W.T), dkeys, dW


class AdditiveAttentionProjectedCache(NamedTuple):
    queries: Any                   # (N, Q, Dq)
    Wq: Any                        # (Dq, h)
    wv: Any                        # (h,)
    features: Any                  # (N, Q, K, h) tanh(q Wq + k Wk), the one tensor additive attention must keep
    pooling: AttentionPoolingCache


def additive_attention_projected_forward(queries, projected_keys, values, Wq, wv, valid_lens=None, *,
                                         dropout: float = 0.0, rng=None):
    """Additive (Bahdanau) attention on keys that were projected once, beforehand.

    The maths of :func:`npseq.functional.attention.additive_attention_forward` after its key
    projection :math:`\\hat k = k W_k`, which the caller computes once per source batch and reuses
    at every decoder step. Over the steps the caller sums the :math:`d\\hat k` this backward
    returns and backpropagates through the projection once (:math:`dk = d\\hat k W_k^\\top`,
    :math:`dW_k = \\sum_n k_n^\\top d\\hat k_n`).

    .. math::
        \\hat q &= q W_q                                                      && (N, Q, h) \\\\
        f_{nqk} &= \\tanh(\\hat q_{nq} + \\hat k_{nk})                         && (N, Q, K, h) \\\\
        s_{nqk} &= f_{nqk} \\cdot w_v                                          && (N, Q, K)

    followed by :func:`npseq.functional.pooling.attention_pooling_forward`.

    Args:
        queries: ``(N, Q, Dq)``.
        projected_keys: :math:`\\hat k = k W_k`, ``(N, K, h)``.
        values: ``(N, K, Dv)``.
        Wq: ``(Dq, h)``.
        wv: ``(h,)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        dropout, rng: dropout on the weights, see :func:`~npseq.functional.pooling.attention_pooling_forward`.

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` ``(N, Q, K)``, an :class:`AdditiveAttentionProjectedCache`.
    """
    check_additive_projected(queries, projected_keys, values, Wq, wv, valid_lens, dropout, rng)
    xp = backend.get_array_module(queries)
    hidden = Wq.shape[1]
    # Broadcast (N, Q, 1, h) + (N, 1, K, h) into one buffer and tanh it in place: the
    # (N, Q, K, h) features are the only large tensor this attention creates.
    features = project(queries, Wq)[:, :, None, :] + projected_keys[:, None, :, :]
    xp.tanh(features, out=features)
    scores = (features.reshape(-1, hidden) @ wv).reshape(features.shape[:-1])
    context, weights, pooling = attention_pooling_forward(scores, values, valid_lens, dropout=dropout, rng=rng)
    return context, weights, AdditiveAttentionProjectedCache(queries, Wq, wv, features, pooling)


def additive_attention_projected_backward(dcontext, cache: AdditiveAttentionProjectedCache, dweights=None):
    """Backward of :func:`additive_attention_projected_forward`.

    The pooling's backward (:func:`fast_attention_pooling_backward`) gives
    :math:`ds` and :math:`dv`; then, with :math:`u = \\hat q + \\hat k` (:math:`f = \\tanh u`):

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
    dscores, dvalues = fast_attention_pooling_backward(dcontext, pooling, dweights)
    dwv = dscores.reshape(-1) @ features.reshape(-1, hidden)
    # One (N, Q, K, h) buffer for du, filled in place: 1 - f^2, then times ds and w_v.
    dpre = features * features
    xp.subtract(features.dtype.type(1), dpre, out=dpre)
    dpre *= dscores[..., None]
    dpre *= wv
    dprojected_queries = dpre.sum(axis=2)
    # With one query (a decoder step) the sum over queries is that query's slice: no pass over du.
    dprojected_keys = dpre[:, 0] if dpre.shape[1] == 1 else dpre.sum(axis=1)
    dqueries = project(dprojected_queries, Wq.T)
    dWq = project_weight_grad(queries, dprojected_queries)
    return dqueries, dprojected_keys, dvalues, dWq, dwv
