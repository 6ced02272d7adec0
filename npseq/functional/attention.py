"""Global attention: a score function followed by attention pooling, over every valid key.

Every pair has the same shape. A score function of :mod:`npseq.functional.scores` compares
each query with each key,

.. math:: s_{nqk} = \\operatorname{score}(q_{nq}, k_{nk}),

and *attention pooling* (:mod:`npseq.functional.pooling`) turns the scores into weights over
the valid keys and averages the values with them:

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

These are the references, each a score pair and the pooling pair. The additive attention
that a decoder runs at every step, on keys projected once per batch, is their fast twin
:func:`~npseq.functional.fast_attention.additive_attention_projected_forward` (importable
from here too).
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .._checks import check_additive_attention, check_dot_attention, check_general_attention
from .fast_attention import (
    AdditiveAttentionProjectedCache,
    additive_attention_projected_backward,
    additive_attention_projected_forward,
)
from .pooling import AttentionPoolingCache, attention_pooling_backward, attention_pooling_forward
from .scores import (
    ConcatScoresCache,
    ScoresCache,
    concat_scores_backward,
    concat_scores_forward,
    dot_scores_backward,
    dot_scores_forward,
    general_scores_backward,
    general_scores_forward,
    scaled_dot_scores_backward,
    scaled_dot_scores_forward,
)

__all__ = [
    "AttentionPoolingCache", "DotAttentionCache", "GeneralAttentionCache",
    "AdditiveAttentionProjectedCache", "AdditiveAttentionCache",
    "attention_pooling_forward", "attention_pooling_backward",
    "dot_attention_forward", "dot_attention_backward",
    "general_attention_forward", "general_attention_backward",
    "additive_attention_projected_forward", "additive_attention_projected_backward",
    "additive_attention_forward", "additive_attention_backward",
]


# ------------------------------------------------------------- dot product
class DotAttentionCache(NamedTuple):
    scaled: bool                   # which dot score: scaled by 1/sqrt(D) or not
    scores: Any                    # the score's cache: ScaledDotScoresCache, or ScoresCache unscaled
    pooling: AttentionPoolingCache


def dot_attention_forward(queries, keys, values, valid_lens=None, scaled=True, *,
                          dropout: float = 0.0, rng=None):
    """Dot-product attention, scaled by :math:`1/\\sqrt{D}` (Vaswani et al.) or not (Luong "dot").

    .. math::
        s_{nqk} = \\lambda\\, q_{nq} \\cdot k_{nk} \\quad (s = \\lambda\\, q k^\\top), \\qquad
        \\lambda = 1/\\sqrt{D} \\text{ if scaled else } 1

    (:func:`~npseq.functional.scores.scaled_dot_scores_forward` or
    :func:`~npseq.functional.scores.dot_scores_forward`) followed by
    :func:`~npseq.functional.pooling.attention_pooling_forward`
    (:math:`a = \\operatorname{masked\\_softmax}(s)`, :math:`c = a v`).

    Args:
        queries: ``(N, Q, D)``.
        keys: ``(N, K, D)`` (the same feature size as the queries).
        values: ``(N, K, Dv)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        scaled: divide the scores by :math:`\\sqrt{D}`.
        dropout, rng: dropout on the weights, see :func:`~npseq.functional.pooling.attention_pooling_forward`.

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` ``(N, Q, K)``, a :class:`DotAttentionCache`.
    """
    check_dot_attention(queries, keys, values, valid_lens, dropout, rng)
    score = scaled_dot_scores_forward if scaled else dot_scores_forward
    scores, score_cache = score(queries, keys)
    context, weights, pooling = attention_pooling_forward(scores, values, valid_lens, dropout=dropout, rng=rng)
    return context, weights, DotAttentionCache(scaled, score_cache, pooling)


def dot_attention_backward(dcontext, cache: DotAttentionCache, dweights=None):
    """Backward of :func:`dot_attention_forward`.

    With :math:`ds, dv` from :func:`~npseq.functional.pooling.attention_pooling_backward` and
    :math:`s = \\lambda q k^\\top`:

    .. math::
        dq &= \\lambda\\, ds\\, k       && (N, Q, D) \\\\
        dk &= \\lambda\\, ds^\\top q    && (N, K, D)

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None``.

    Returns:
        ``dqueries`` ``(N, Q, D)``, ``dkeys`` ``(N, K, D)``, ``dvalues`` ``(N, K, Dv)``.
    """
    scaled, score_cache, pooling = cache
    dscores, dvalues = attention_pooling_backward(dcontext, pooling, dweights)
    score_backward = scaled_dot_scores_backward if scaled else dot_scores_backward
    dqueries, dkeys = score_backward(dscores, score_cache)
    return dqueries, dkeys, dvalues


# ---------------------------------------------------------------- general
class GeneralAttentionCache(NamedTuple):
    scores: ScoresCache            # of s = (q W) k^T
    pooling: AttentionPoolingCache


def general_attention_forward(queries, keys, values, W, valid_lens=None, *, dropout: float = 0.0, rng=None):
    """Luong's "general" attention: a bilinear form between each query and each key scores the pair.

    .. math::
        s_{nqk} = q_{nq}\\, W\\, k_{nk}^\\top \\quad (s = (q W) k^\\top)

    (:func:`~npseq.functional.scores.general_scores_forward`) followed by
    :func:`~npseq.functional.pooling.attention_pooling_forward`.

    Args:
        queries: ``(N, Q, Dq)``.
        keys: ``(N, K, Dk)``.
        values: ``(N, K, Dv)``.
        W: ``(Dq, Dk)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        dropout, rng: dropout on the weights, see :func:`~npseq.functional.pooling.attention_pooling_forward`.

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` ``(N, Q, K)``, a :class:`GeneralAttentionCache`.
    """
    check_general_attention(queries, keys, values, W, valid_lens, dropout, rng)
    scores, score_cache = general_scores_forward(queries, keys, W)
    context, weights, pooling = attention_pooling_forward(scores, values, valid_lens, dropout=dropout, rng=rng)
    return context, weights, GeneralAttentionCache(score_cache, pooling)


def general_attention_backward(dcontext, cache: GeneralAttentionCache, dweights=None):
    """Backward of :func:`general_attention_forward`: the pooling's backward, then the score's
    (:func:`~npseq.functional.scores.general_scores_backward`), with :math:`\\hat q = q W`:

    .. math::
        d\\hat q &= ds\\, k, \\qquad dk = ds^\\top \\hat q                         && \\\\
        dq &= d\\hat q\\, W^\\top                                               && (N, Q, Dq) \\\\
        dW &= \\textstyle\\sum_{n} q_n^\\top\\, d\\hat q_n                       && (Dq, Dk)

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None``.

    Returns:
        ``dqueries`` ``(N, Q, Dq)``, ``dkeys`` ``(N, K, Dk)``, ``dvalues`` ``(N, K, Dv)``, ``dW`` ``(Dq, Dk)``.
    """
    score_cache, pooling = cache
    dscores, dvalues = attention_pooling_backward(dcontext, pooling, dweights)
    dqueries, dkeys, dW = general_scores_backward(dscores, score_cache)
    return dqueries, dkeys, dvalues, dW


# --------------------------------------------------------------- additive
class AdditiveAttentionCache(NamedTuple):
    scores: ConcatScoresCache      # of s = w_v . tanh(q Wq + k Wk)
    pooling: AttentionPoolingCache

    @property
    def keys(self):
        """``(N, K, Dk)``."""
        return self.scores.keys

    @property
    def Wk(self):
        """``(Dk, h)``."""
        return self.scores.Wk

    @property
    def projected(self) -> AdditiveAttentionProjectedCache:
        """Everything after the key projection, laid out as the cache of the fast twin
        :func:`~npseq.functional.fast_attention.additive_attention_projected_forward`."""
        return AdditiveAttentionProjectedCache(self.scores.queries, self.scores.Wq, self.scores.wv,
                                               self.scores.features, self.pooling)


def additive_attention_forward(queries, keys, values, Wq, Wk, wv, valid_lens=None, *,
                               dropout: float = 0.0, rng=None):
    """Additive (Bahdanau) attention: a one-hidden-layer MLP scores each query-key pair.

    .. math::
        s_{nqk} = w_v \\cdot \\tanh(q_{nq} W_q + k_{nk} W_k)

    with :math:`q W_q` broadcast as ``(N, Q, 1, h)`` and :math:`k W_k` as ``(N, 1, K, h)``
    (:func:`~npseq.functional.scores.concat_scores_forward`), followed by
    :func:`~npseq.functional.pooling.attention_pooling_forward`. A decoder, which attends over
    the same keys at every step, projects them once per source batch and calls the fast twin
    :func:`~npseq.functional.fast_attention.additive_attention_projected_forward` instead.

    Args:
        queries: ``(N, Q, Dq)``.
        keys: ``(N, K, Dk)``.
        values: ``(N, K, Dv)``.
        Wq: ``(Dq, h)``.
        Wk: ``(Dk, h)``.
        wv: ``(h,)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        dropout, rng: dropout on the weights, see :func:`~npseq.functional.pooling.attention_pooling_forward`.

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` ``(N, Q, K)``, an :class:`AdditiveAttentionCache`.
    """
    check_additive_attention(queries, keys, values, Wq, Wk, wv, valid_lens, dropout, rng)
    scores, score_cache = concat_scores_forward(queries, keys, Wq, Wk, wv)
    context, weights, pooling = attention_pooling_forward(scores, values, valid_lens, dropout=dropout, rng=rng)
    return context, weights, AdditiveAttentionCache(score_cache, pooling)


def additive_attention_backward(dcontext, cache: AdditiveAttentionCache, dweights=None):
    """Backward of :func:`additive_attention_forward`: the pooling's backward, then the score's
    (:func:`~npseq.functional.scores.concat_scores_backward`), with :math:`u = q W_q + k W_k`
    and :math:`f = \\tanh u`:

    .. math::
        dw_v &= \\textstyle\\sum_{n,q,k} ds_{nqk}\\, f_{nqk}                 && (h,) \\\\
        du_{nqk} &= ds_{nqk}\\, w_v \\odot (1 - f_{nqk}^2)                  && (N, Q, K, h) \\\\
        dq &= \\bigl(\\textstyle\\sum_k du_{nqk}\\bigr) W_q^\\top, \\qquad
        dk = \\bigl(\\textstyle\\sum_q du_{nqk}\\bigr) W_k^\\top              &&

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None``.

    Returns:
        ``dqueries`` ``(N, Q, Dq)``, ``dkeys`` ``(N, K, Dk)``, ``dvalues`` ``(N, K, Dv)``,
        ``dWq`` ``(Dq, h)``, ``dWk`` ``(Dk, h)``, ``dwv`` ``(h,)``.
    """
    score_cache, pooling = cache
    dscores, dvalues = attention_pooling_backward(dcontext, pooling, dweights)
    dqueries, dkeys, dWq, dWk, dwv = concat_scores_backward(dscores, score_cache)
    return dqueries, dkeys, dvalues, dWq, dWk, dwv
