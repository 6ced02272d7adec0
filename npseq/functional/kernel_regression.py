"""Nadaraya-Watson kernel regression: attention pooling before anything in it was learned.

Given training pairs :math:`(x_i, y_i)`, Nadaraya (1964) and Watson (1964) predict at :math:`x` an
average of the :math:`y_i`, each weighted by a kernel :math:`\\kappa` of the distance from :math:`x` to
:math:`x_i`:

.. math::
    f(x) = \\sum_i \\frac{\\kappa(x - x_i)}{\\sum_j \\kappa(x - x_j)}\\, y_i .

With the Gaussian kernel :math:`\\kappa(u) = \\exp(-u^2 / 2)` the normalised weights are a softmax
over negative squared distances: attention, with the query :math:`x`, the keys :math:`x_i` and the
values :math:`y_i`,

.. math::
    \\alpha_i(x) = \\operatorname{softmax}_i\\bigl(-(x - x_i)^2 / 2\\bigr), \\qquad f(x) = \\sum_i \\alpha_i(x)\\, y_i .

The parametric form (d2l, section 10.2) learns a width :math:`w` that scales the distance,
:math:`\\alpha_i(x) = \\operatorname{softmax}_i\\bigl(-((x - x_i)\\, w)^2 / 2\\bigr)`, a Gaussian of standard
deviation :math:`1/|w|`; the non-parametric form is :math:`w = 1`.

In npseq it is the Gaussian score of :mod:`npseq.functional.scores` (on features of size 1)
followed by the attention pooling of :mod:`npseq.functional.pooling`, with every key valid.

Shapes: ``queries`` ``(N,)`` (one query per example, each with its own keys: d2l's leave-one-out
training) or ``(N, Q)`` (``Q`` queries per example sharing its keys: ``N = 1`` for a test grid
against every training point); ``keys`` and ``values`` ``(N, K)``; ``w`` ``()`` or ``None``;
predictions shaped like the queries; weights ``(N, K)`` or ``(N, Q, K)``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_nadaraya_watson, check_nadaraya_watson_upstream
from .pooling import AttentionPoolingCache, attention_pooling_backward, attention_pooling_forward
from .scores import GaussianScoresCache, gaussian_scores_backward, gaussian_scores_forward

__all__ = ["NadarayaWatsonCache", "NadarayaWatsonGrads", "nadaraya_watson_forward", "nadaraya_watson_backward"]


class NadarayaWatsonCache(NamedTuple):
    weights: Any                   # alpha (N, [Q,] K), each row summing to 1
    scores: GaussianScoresCache    # on queries (N, Q, 1) and keys (N, K, 1)
    pooling: AttentionPoolingCache
    parametric: bool               # w was given; without it w = 1 and there is no dw


class NadarayaWatsonGrads(NamedTuple):
    """Gradients of :func:`nadaraya_watson_forward`, in its argument order."""
    dqueries: Any  # the queries' shape, (N,) or (N, Q)
    dkeys: Any     # (N, K)
    dvalues: Any   # (N, K)
    dw: Any        # (), or None for the non-parametric form


def nadaraya_watson_forward(queries, keys, values, w=None):
    """Nadaraya-Watson kernel regression with a Gaussian kernel: a softmax over negative squared distances.

    .. math::
        s_{nqk} &= -\\bigl((x_{nq} - x_{nk})\\, w\\bigr)^2 / 2               && (N, Q, K) \\\\
        \\alpha_{nq\\cdot} &= \\operatorname{softmax}(s_{nq\\cdot})           && (N, Q, K) \\\\
        p_{nq} &= \\textstyle\\sum_k \\alpha_{nqk}\\, y_{nk}                    && (N, Q)

    with the query :math:`x_{nq}`, the keys :math:`x_{nk}`, the values :math:`y_{nk}` and the predictions
    :math:`p_{nq}`; ``w=None`` is the non-parametric form, :math:`w = 1`. The score is
    :func:`~npseq.functional.scores.gaussian_scores_forward` on features of size 1, the rest
    :func:`~npseq.functional.pooling.attention_pooling_forward` over every key. Queries ``(N,)`` are
    ``Q = 1``, and the ``Q`` axis is left out of the results.

    Args:
        queries: ``(N,)`` or ``(N, Q)``.
        keys: ``(N, K)``, ``K >= 1``.
        values: ``(N, K)``.
        w: ``()``, a 0-d array of the queries' dtype (the parametric form), or ``None``.

    Returns:
        ``predictions`` (the queries' shape) and a :class:`NadarayaWatsonCache`, whose ``weights`` are
        :math:`\\alpha` ``(N, K)`` or ``(N, Q, K)``.
    """
    check_nadaraya_watson(queries, keys, values, w)
    xp = backend.get_array_module(queries)
    grid = queries if queries.ndim == 2 else queries[:, None]
    width = xp.ones((), dtype=queries.dtype) if w is None else w
    scores, score_cache = gaussian_scores_forward(grid[..., None], keys[..., None], width)
    context, weights, pooling = attention_pooling_forward(scores, values[..., None])
    predictions = context.reshape(queries.shape)
    return predictions, NadarayaWatsonCache(weights.reshape(queries.shape + keys.shape[1:]), score_cache, pooling,
                                            w is not None)


def nadaraya_watson_backward(dpredictions, cache: NadarayaWatsonCache) -> NadarayaWatsonGrads:
    """Backward of :func:`nadaraya_watson_forward`.

    The pooling's backward, then the Gaussian score's, with :math:`\\delta_{nqk} = x_{nq} - x_{nk}`:

    .. math::
        dy_{nk} &= \\textstyle\\sum_q \\alpha_{nqk}\\, dp_{nq}                                  && (N, K) \\\\
        ds_{nqk} &= \\alpha_{nqk}\\, dp_{nq}\\, (y_{nk} - p_{nq})                              && (N, Q, K) \\\\
        dx_{nq} &= -w^2 \\textstyle\\sum_k ds_{nqk}\\, \\delta_{nqk}, \\qquad
        dx_{nk} = w^2 \\textstyle\\sum_q ds_{nqk}\\, \\delta_{nqk}                             && (N, Q),\\ (N, K) \\\\
        dw &= -w \\textstyle\\sum_{n,q,k} ds_{nqk}\\, \\delta_{nqk}^2                          && ()

    (:math:`ds` is the softmax's backward with :math:`d\\alpha_{nqk} = dp_{nq}\\, y_{nk}`.) A key far
    from the query has a weight near 0 and sends almost no gradient; :math:`dw` is large where the
    values of the near and the far keys differ.

    Args:
        dpredictions: the queries' shape, ``(N,)`` or ``(N, Q)``.

    Returns:
        a :class:`NadarayaWatsonGrads` (``dqueries``, ``dkeys``, ``dvalues``, ``dw``; ``dw`` is ``None``
        for the non-parametric form).
    """
    check_nadaraya_watson_upstream(dpredictions, cache)
    dscores, dvalues = attention_pooling_backward(dpredictions.reshape(cache.scores.queries.shape), cache.pooling)
    dgrid, dkeys, dw = gaussian_scores_backward(dscores, cache.scores)
    return NadarayaWatsonGrads(dgrid.reshape(dpredictions.shape), dkeys[..., 0], dvalues[..., 0],
                               dw if cache.parametric else None)
