r"""Two attentions of the attention set, each as one forward and its backward, kept with the course.

- **local-p attention** (Luong, Pham and Manning 2015, section 3.2) with the "general" score: the decoder
  predicts where to look, :math:`p = S\,\sigma(\tanh(h W_p)\, v_p)`, and attends to a window of
  :math:`2D + 1` source positions around it, the windowed softmax of the scores damped by a Gaussian centred
  on :math:`p`. The composition of :mod:`npseq.functional.local_attention`'s pairs
  (:func:`~npseq.functional.scores.general_scores_forward`,
  :func:`~npseq.functional.local_attention.predictive_position_forward`,
  :func:`~npseq.functional.local_attention.local_attention_pooling_forward`), whose backward adds the two
  paths into the query: through the scores and through the position.
- **masked dot attention**: Luong's unscaled "dot" score :math:`s = q k^\top` under a key-padding mask and a
  causal mask at once, the mask built by :func:`~npseq.functional.transformer.attention_mask`.

Shapes as in :mod:`npseq.functional.local_attention`: queries ``(N, Q, Dq)``, keys ``(N, K, Dk)``, values
``(N, K, Dv)``, scores and weights ``(N, Q, K)``, context ``(N, Q, Dv)``.

These are the graded references of :mod:`npseq.course.sets.attention` and its hand-out's forwards; they are not
part of npseq's public API.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import backend
from ..._checks import check_count, check_qkv, check_shape, check_valid_lens
from ...errors import InvalidValueError
from ...functional.activations import MaskedSoftmaxCache, masked_softmax_backward, softmax_where
from ...functional.local_attention import (
    LocalPoolingCache,
    PredictivePositionCache,
    local_attention_pooling_backward,
    local_attention_pooling_forward,
    predictive_position_backward,
    predictive_position_forward,
)
from ...functional.scores import ScoresCache, general_scores_backward, general_scores_forward
from ...functional.transformer import attention_mask

__all__ = ["LocalPAttentionCache", "MaskedDotAttentionCache", "local_p_attention_forward",
           "local_p_attention_backward", "masked_dot_attention_forward", "masked_dot_attention_backward"]


def _check_upstream(dcontext, dweights, weights, values) -> None:
    """``dcontext`` ``(N, Q, Dv)`` and, when given, ``dweights`` shaped like the weights ``(N, Q, K)``."""
    check_shape("dcontext", dcontext, tuple(weights.shape[:2]) + (values.shape[2],))
    if dweights is not None:
        check_shape("dweights", dweights, tuple(weights.shape))


# ============================================================== local-p attention
class LocalPAttentionCache(NamedTuple):
    scores: ScoresCache                 # of s = (h W) hbar^T
    position: PredictivePositionCache   # of p = S sigma(tanh(h Wp) vp)
    pooling: LocalPoolingCache          # of a = alpha * gamma and c = a v, in the window around p


def _check_local_p(queries, keys, values, source_lens, half_width) -> None:
    """What the parts would not say in the composition's words: one value per key, ``source_lens`` ``(N,)`` in
    ``[0, K]``, ``half_width >= 1`` (the Gaussian's :math:`\\sigma = D/2` must be positive). The parts check the
    rest (ranks, dtypes, the weights' shapes)."""
    check_qkv(queries, keys, values, None)
    check_valid_lens("source_lens", source_lens, (queries.shape[0],), keys.shape[1])
    check_count("half_width", half_width, 1)


def local_p_attention_forward(queries, keys, values, W, Wp, vp, source_lens, half_width: int):
    r"""Luong's local-p attention with the general score.

    .. math::
        s_{nqk} &= h_{nq}\, W\, \bar h_{nk}^\top                                       && (N, Q, K) \\
        u &= \tanh(h W_p), \qquad p_{nq} = S_n\, \sigma(u_{nq} \cdot v_p)                 && (N, Q) \\
        m_{nqk} &= [\, |k - p_{nq}| \le D \,]\, [\, k < S_n \,]                           && \text{(the window)} \\
        \alpha_{nq\cdot} &= \operatorname{softmax}(s_{nq\cdot} \text{ over } m_{nq\cdot} = 1)
                                                                                          && \text{(0 outside)} \\
        \gamma_{nqk} &= \exp\bigl(-(k - p_{nq})^2 / (2\sigma^2)\bigr), \quad \sigma = D/2 \\
        a_{nqk} &= \alpha_{nqk}\, \gamma_{nqk}, \qquad c_{nq} = \textstyle\sum_k a_{nqk}\, v_{nk}
                                                                                          && (N, Q, Dv)

    The window's edges move with :math:`p` in steps, which carry no gradient: :math:`p` reaches the
    context through :math:`\gamma` only. A sentence of length 0 has :math:`p = 0` and an empty window:
    zero weights and a zero context.

    Args:
        queries: :math:`h` ``(N, Q, Dq)``, the decoder states.
        keys: :math:`\bar h` ``(N, K, Dk)``, what the scores compare the queries with.
        values: ``(N, K, Dv)``, what the context averages (Luong's :math:`\bar h` again, here its own array).
        W: ``(Dq, Dk)``, the general score's bilinear form.
        Wp: ``(Dq, H)``; vp: ``(H,)``, the position predictor.
        source_lens: :math:`S_n` ``(N,)`` integers in ``[0, K]``.
        half_width: :math:`D \ge 1`.

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` :math:`a` ``(N, Q, K)`` and a :class:`LocalPAttentionCache`.
    """
    _check_local_p(queries, keys, values, source_lens, half_width)
    scores, score_cache = general_scores_forward(queries, keys, W)
    centers, position_cache = predictive_position_forward(queries, Wp, vp, source_lens)
    context, weights, pooling_cache = local_attention_pooling_forward(scores, values, centers, source_lens,
                                                                      half_width, gaussian=True)
    return context, weights, LocalPAttentionCache(score_cache, position_cache, pooling_cache)


def local_p_attention_backward(dcontext, cache: LocalPAttentionCache):
    r"""Backward of :func:`local_p_attention_forward`: the pooling's backward gives the gradients of the scores
    and of the centres, each walked back through its own part; the query gets the sum of both.

    .. math::
        dv &= a^\top dc, \qquad da = dc\, v^\top                                          && \\
        dp_{nq} &= \textstyle\sum_k da_{nqk}\, a_{nqk}\, (k - p_{nq}) / \sigma^2             && (N, Q) \\
        ds_{nqk} &= \alpha_{nqk} \bigl(da_{nqk} \gamma_{nqk}
                    - \textstyle\sum_j da_{nqj} \gamma_{nqj} \alpha_{nqj}\bigr)             && (N, Q, K) \\
        d\bar h &= ds^\top (h W), \qquad dW = \textstyle\sum_n h_n^\top ds_n \bar h_n       && \\
        dz &= dp \odot S\, \sigma(z) (1 - \sigma(z)), \qquad dv_p = \textstyle\sum_{n,q} dz_{nq}\, u_{nq} \\
        d(hW_p) &= (dz\, v_p^\top) \odot (1 - u^2), \qquad dW_p = \textstyle\sum_n h_n^\top d(hW_p)_n \\
        dh &= ds\, \bar h\, W^\top + d(hW_p)\, W_p^\top                                     && (N, Q, Dq)

    Args:
        dcontext: ``(N, Q, Dv)``.

    Returns:
        ``dqueries`` ``(N, Q, Dq)``, ``dkeys`` ``(N, K, Dk)``, ``dvalues`` ``(N, K, Dv)``, ``dW`` ``(Dq, Dk)``,
        ``dWp`` ``(Dq, H)``, ``dvp`` ``(H,)``.
    """
    _check_upstream(dcontext, None, cache.pooling.weights, cache.pooling.values)
    dscores, dvalues, dcenters = local_attention_pooling_backward(dcontext, cache.pooling)
    dqueries_by_scores, dkeys, dW = general_scores_backward(dscores, cache.scores)
    dqueries_by_position, dWp, dvp = predictive_position_backward(dcenters, cache.position)
    dqueries = dqueries_by_scores + dqueries_by_position
    return dqueries, dkeys, dvalues, dW, dWp, dvp


# ============================================================== masked dot attention
class MaskedDotAttentionCache(NamedTuple):
    queries: Any                 # (N, Q, D)
    keys: Any                    # (N, K, D)
    values: Any                  # (N, K, Dv)
    mask: Any                    # (N, Q, K) bool, or (1, Q, K) without valid_lens: True where a key counts
    softmax: MaskedSoftmaxCache  # the weights A (N, Q, K), exactly 0 where masked, and the mask


def masked_dot_attention_forward(queries, keys, values, valid_lens=None, causal: bool = True):
    r"""Luong's "dot" attention (unscaled) under a key-padding mask and a causal mask together.

    .. math::
        S &= Q K^\top                                                        && (N, Q, K) \\
        m_{nqk} &= [\, k < \ell_{n(q)} \,] \wedge [\, k \le q \text{ if causal} \,]
                                                                             && \text{(attention\_mask)} \\
        A_{nq\cdot} &= \operatorname{softmax}(S_{nq\cdot} \text{ over } m_{nq\cdot} = 1)
                                                                             && \text{(0 where masked)} \\
        C &= A V                                                             && (N, Q, Dv)

    Query :math:`q` sees keys :math:`0 .. q` (positions counted from the start of both sequences), and none
    at or past its valid length; a query that sees no key gets all-zero weights and a zero context.

    Args:
        queries: ``(N, Q, D)``.
        keys: ``(N, K, D)``, ``K >= 1``.
        values: ``(N, K, Dv)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        causal: also hide the keys after each query's own position.

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` :math:`A` ``(N, Q, K)`` and a :class:`MaskedDotAttentionCache`.
    """
    check_qkv(queries, keys, values, valid_lens)
    if keys.shape[2] != queries.shape[2]:
        raise InvalidValueError(f"keys: expected feature size {queries.shape[2]} (that of queries; dot scores "
                                f"need equal sizes), got shape {tuple(keys.shape)}")
    xp = backend.get_array_module(queries)
    scores = queries @ keys.swapaxes(1, 2)
    mask = attention_mask(queries.shape[1], keys.shape[1], valid_lens, causal, xp)
    weights, softmax = softmax_where(scores, mask)
    context = weights @ values
    return context, weights, MaskedDotAttentionCache(queries, keys, values, mask, softmax)


def masked_dot_attention_backward(dcontext, cache: MaskedDotAttentionCache, dweights=None):
    r"""Backward of :func:`masked_dot_attention_forward`. The masks need nothing of their own: the weights are
    exactly 0 where a key is masked, so the softmax's backward gives those scores exactly 0.

    .. math::
        dV &= A^\top dC                                                      && (N, K, Dv) \\
        dA &= dC\, V^\top + d\text{weights}                                  && (N, Q, K) \\
        dS_{nqk} &= A_{nqk} \bigl(dA_{nqk} - \textstyle\sum_j dA_{nqj} A_{nqj}\bigr) && \\
        dQ &= dS\, K, \qquad dK = dS^\top Q

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)``, an upstream gradient on the returned weights, or ``None``.

    Returns:
        ``dqueries`` ``(N, Q, D)``, ``dkeys`` ``(N, K, D)``, ``dvalues`` ``(N, K, Dv)``.
    """
    weights = cache.softmax.weights
    _check_upstream(dcontext, dweights, weights, cache.values)
    dvalues = weights.swapaxes(1, 2) @ dcontext
    dA = dcontext @ cache.values.swapaxes(1, 2)
    if dweights is not None:
        dA = dA + dweights
    dscores = masked_softmax_backward(dA, cache.softmax)
    dqueries = dscores @ cache.keys
    dkeys = dscores.swapaxes(1, 2) @ cache.queries
    return dqueries, dkeys, dvalues
