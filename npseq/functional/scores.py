"""Score functions: how well each query matches each key, one forward/backward pair each.

A score function compares every query with every key of its example,

.. math:: s_{nqk} = \\operatorname{score}(q_{nq}, k_{nk}),

and every attention in npseq is one of these followed by a masked pooling
(:mod:`npseq.functional.pooling`): global attention (:mod:`npseq.functional.attention`),
Luong's local attention (:mod:`npseq.functional.local_attention`) and the Transformer's
scaled dot-product attention (:mod:`npseq.functional.transformer`).

=============  ==========================================================  ===================
score          :math:`s_{nqk}`                                             weights
=============  ==========================================================  ===================
dot            :math:`q_{nq} \\cdot k_{nk}` (Luong)                         none
scaled dot     :math:`q_{nq} \\cdot k_{nk} / \\sqrt{D}` (Vaswani et al.)     none
general        :math:`q_{nq}\\, W\\, k_{nk}^\\top` (Luong)                    ``W`` ``(Dq, Dk)``
concat         :math:`w_v \\cdot \\tanh(q_{nq} W_q + k_{nk} W_k)`            ``Wq``, ``Wk``, ``wv``
               (Luong's concat, Bahdanau's additive)
location       :math:`(q_{nq} W_a)_k` (Luong; reads no key)                  ``Wa`` ``(Dq, K_max)``
gaussian       :math:`-w^2 \\|q_{nq} - k_{nk}\\|^2 / 2`                      ``w`` ``()`` (a scalar)
               (Nadaraya-Watson kernel regression)
=============  ==========================================================  ===================

Shapes: queries ``(N, Q, Dq)``, keys ``(N, K, Dk)``, scores ``(N, Q, K)``; the dot scores also
take a head axis, ``(N, h, Q, D)`` and ``(N, h, K, D)``. Each forward returns
``(scores, cache)``; each backward takes ``(dscores, cache)`` and returns the gradients of the
queries, the keys (but location's) and the weights, in the forward's order.

The Gaussian score is the one of Nadaraya-Watson kernel regression
(:mod:`npseq.functional.kernel_regression`), the first attention of d2l's chapter; it is not in
:data:`npseq.nn.SCORES`, whose scores are those a translation model offers (``npseq train --score``),
and whose weights are matrices and vectors drawn by their rows, where this one is a scalar width.

These are the references: one line per equation, nothing in place.
:mod:`npseq.functional.fast_attention` holds the additive attention that a decoder runs at
every step, rearranged for speed and held equal to them.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from .. import backend
from .._checks import (
    check_concat_scores,
    check_dot_scores,
    check_dscores,
    check_gaussian_scores,
    check_general_scores,
    check_location_scores,
)
from .layers import project_weight_grad

__all__ = [
    "ScoresCache", "ScaledDotScoresCache", "ConcatScoresCache",
    "dot_scores_forward", "dot_scores_backward", "scaled_dot_scores_forward", "scaled_dot_scores_backward",
    "general_scores_forward", "general_scores_backward", "concat_scores_forward", "concat_scores_backward",
    "location_scores_forward", "location_scores_backward",
    "GaussianScoresCache", "gaussian_scores_forward", "gaussian_scores_backward",
]


class ScoresCache(NamedTuple):
    queries: Any  # (N, Q, Dq)
    keys: Any     # (N, K, Dk); None for location
    W: Any        # (Dq, Dk) for general, Wa (Dq, K_max) for location; None for dot


class ScaledDotScoresCache(NamedTuple):
    queries: Any  # (N, [h,] Q, D)
    keys: Any     # (N, [h,] K, D)
    scale: Any    # 1/sqrt(D), a scalar of the inputs' dtype


class ConcatScoresCache(NamedTuple):
    queries: Any   # (N, Q, Dq)
    keys: Any      # (N, K, Dk)
    Wq: Any        # (Dq, h)
    Wk: Any        # (Dk, h)
    wv: Any        # (h,)
    features: Any  # tanh(q Wq + k Wk) (N, Q, K, h)


class GaussianScoresCache(NamedTuple):
    queries: Any      # (N, Q, D)
    keys: Any         # (N, K, D)
    w: Any            # () the width parameter
    differences: Any  # q_nq - k_nk (N, Q, K, D)


# ------------------------------------------------------------------ dot
def dot_scores_forward(queries, keys):
    """Luong's "dot" score: the dot product of each query with each key.

    .. math:: s_{nqk} = q_{nq} \\cdot k_{nk} \\quad (s = q k^\\top)

    Args:
        queries: ``(N, [h,] Q, D)``.
        keys: ``(N, [h,] K, D)`` (the same feature size).

    Returns:
        ``scores`` ``(N, [h,] Q, K)`` and a :class:`ScoresCache`.
    """
    check_dot_scores(queries, keys)
    scores = queries @ keys.swapaxes(-1, -2)
    return scores, ScoresCache(queries, keys, None)


def dot_scores_backward(dscores, cache: ScoresCache):
    """Backward of :func:`dot_scores_forward`.

    .. math::
        dq &= ds\\, k         && (N, [h,] Q, D) \\\\
        dk &= ds^\\top q      && (N, [h,] K, D)

    Returns:
        ``dqueries``, ``dkeys``.
    """
    check_dscores(dscores, cache)
    queries, keys, _ = cache
    dqueries = dscores @ keys
    dkeys = dscores.swapaxes(-1, -2) @ queries
    return dqueries, dkeys


# ------------------------------------------------------------------ scaled dot
def scaled_dot_scores_forward(queries, keys):
    """The scaled dot score of Vaswani et al.: the dot product divided by :math:`\\sqrt{D}`.

    .. math:: s_{nqk} = \\lambda\\, q_{nq} \\cdot k_{nk}, \\qquad \\lambda = 1/\\sqrt{D}
              \\quad (s = \\lambda\\, q k^\\top)

    With entries of unit variance, :math:`q \\cdot k` has variance :math:`D`; the scale brings it
    back to 1, so that the softmax after it does not saturate as :math:`D` grows.

    Args:
        queries: ``(N, [h,] Q, D)``.
        keys: ``(N, [h,] K, D)``.

    Returns:
        ``scores`` ``(N, [h,] Q, K)`` and a :class:`ScaledDotScoresCache`.
    """
    check_dot_scores(queries, keys)
    scale = queries.dtype.type(1.0 / math.sqrt(queries.shape[-1]))
    scores = scale * (queries @ keys.swapaxes(-1, -2))
    return scores, ScaledDotScoresCache(queries, keys, scale)


def scaled_dot_scores_backward(dscores, cache: ScaledDotScoresCache):
    """Backward of :func:`scaled_dot_scores_forward`.

    .. math::
        dq &= \\lambda\\, ds\\, k         && (N, [h,] Q, D) \\\\
        dk &= \\lambda\\, ds^\\top q      && (N, [h,] K, D)

    Returns:
        ``dqueries``, ``dkeys``.
    """
    check_dscores(dscores, cache)
    queries, keys, scale = cache
    dscaled = scale * dscores
    dqueries = dscaled @ keys
    dkeys = dscaled.swapaxes(-1, -2) @ queries
    return dqueries, dkeys


# ------------------------------------------------------------------ general
def general_scores_forward(queries, keys, W):
    """Luong's "general" score: a bilinear form between each query and each key.

    .. math::
        \\hat q &= q W                                          && (N, Q, Dk) \\\\
        s_{nqk} &= \\hat q_{nq} \\cdot k_{nk} = q_{nq}\\, W\\, k_{nk}^\\top   && (N, Q, K)

    Args:
        queries: ``(N, Q, Dq)``.
        keys: ``(N, K, Dk)``.
        W: ``(Dq, Dk)``.

    Returns:
        ``scores`` ``(N, Q, K)`` and a :class:`ScoresCache`.
    """
    check_general_scores(queries, keys, W)
    projected = queries @ W
    scores = projected @ keys.swapaxes(1, 2)
    return scores, ScoresCache(queries, keys, W)


def general_scores_backward(dscores, cache: ScoresCache):
    """Backward of :func:`general_scores_forward`, with :math:`\\hat q = q W`:

    .. math::
        d\\hat q &= ds\\, k                                      && (N, Q, Dk) \\\\
        dk &= ds^\\top \\hat q                                   && (N, K, Dk) \\\\
        dq &= d\\hat q\\, W^\\top                                && (N, Q, Dq) \\\\
        dW &= \\textstyle\\sum_{n,q} q_{nq}^\\top\\, d\\hat q_{nq}  && (Dq, Dk)

    Returns:
        ``dqueries``, ``dkeys``, ``dW``.
    """
    check_dscores(dscores, cache)
    queries, keys, W = cache
    dprojected = dscores @ keys
    dkeys = dscores.swapaxes(1, 2) @ (queries @ W)
    dqueries = dprojected @ W.T
    dW = project_weight_grad(queries, dprojected)
    return dqueries, dkeys, dW


# ------------------------------------------------------------------ concat (additive)
def concat_scores_forward(queries, keys, Wq, Wk, wv):
    """Luong's "concat" score, Bahdanau's additive one: a one-hidden-layer MLP on each query-key pair.

    .. math::
        \\hat q &= q W_q                                          && (N, Q, h) \\\\
        \\hat k &= k W_k                                          && (N, K, h) \\\\
        f_{nqk} &= \\tanh(\\hat q_{nq} + \\hat k_{nk})             && (N, Q, K, h) \\\\
        s_{nqk} &= f_{nqk} \\cdot w_v                             && (N, Q, K)

    (:math:`\\hat q` is broadcast over the keys, :math:`\\hat k` over the queries). Luong writes
    :math:`v_a^\\top \\tanh(W_a [h_t; \\bar h_s])`; :math:`W_a` cut into a block for the query and
    one for the key is :math:`[W_q; W_k]`.

    Args:
        queries: ``(N, Q, Dq)``.
        keys: ``(N, K, Dk)``.
        Wq: ``(Dq, h)``.
        Wk: ``(Dk, h)``.
        wv: ``(h,)``.

    Returns:
        ``scores`` ``(N, Q, K)`` and a :class:`ConcatScoresCache`.
    """
    check_concat_scores(queries, keys, Wq, Wk, wv)
    xp = backend.get_array_module(queries)
    projected_queries = queries @ Wq
    projected_keys = keys @ Wk
    features = xp.tanh(projected_queries[:, :, None, :] + projected_keys[:, None, :, :])
    scores = features @ wv
    return scores, ConcatScoresCache(queries, keys, Wq, Wk, wv, features)


def concat_scores_backward(dscores, cache: ConcatScoresCache):
    """Backward of :func:`concat_scores_forward`, with :math:`u = \\hat q + \\hat k` (so :math:`f = \\tanh u`):

    .. math::
        dw_v &= \\textstyle\\sum_{n,q,k} ds_{nqk}\\, f_{nqk}                  && (h,) \\\\
        du_{nqk} &= ds_{nqk}\\, w_v \\odot (1 - f_{nqk}^2)                   && (N, Q, K, h) \\\\
        d\\hat q_{nq} &= \\textstyle\\sum_k du_{nqk}                          && (N, Q, h) \\\\
        d\\hat k_{nk} &= \\textstyle\\sum_q du_{nqk}                          && (N, K, h) \\\\
        dq &= d\\hat q\\, W_q^\\top, \\qquad dW_q = \\textstyle\\sum_{n,q} q_{nq}^\\top d\\hat q_{nq}
                                                                            && (N, Q, Dq),\\ (Dq, h) \\\\
        dk &= d\\hat k\\, W_k^\\top, \\qquad dW_k = \\textstyle\\sum_{n,k} k_{nk}^\\top d\\hat k_{nk}
                                                                            && (N, K, Dk),\\ (Dk, h)

    :math:`\\hat q` was broadcast over the keys and :math:`\\hat k` over the queries: each gets the sum
    over the axis it was broadcast along, and each projection is then differentiated once.

    Returns:
        ``dqueries``, ``dkeys``, ``dWq``, ``dWk``, ``dwv``.
    """
    check_dscores(dscores, cache)
    queries, keys, Wq, Wk, wv, features = cache
    dwv = (dscores[..., None] * features).sum(axis=(0, 1, 2))
    dpre = dscores[..., None] * wv * (1 - features * features)
    dprojected_queries = dpre.sum(axis=2)
    dprojected_keys = dpre.sum(axis=1)
    dqueries = dprojected_queries @ Wq.T
    dWq = project_weight_grad(queries, dprojected_queries)
    dkeys = dprojected_keys @ Wk.T
    dWk = project_weight_grad(keys, dprojected_keys)
    return dqueries, dkeys, dWq, dWk, dwv


# ------------------------------------------------------------------ location
def location_scores_forward(queries, Wa, num_keys: int):
    """Luong's location-based score: the positions' scores from the decoder state alone.

    .. math:: s_{nq\\cdot} = q_{nq} W_a[:, :K] \\quad (N, Q, K)

    ``Wa`` ``(Dq, K_max)`` has one column per source position the model can see, ``K <= K_max``;
    the batch's ``K = num_keys`` positions use the first ``K``. No key is read.

    Returns:
        ``scores`` ``(N, Q, K)`` and a :class:`ScoresCache` (``keys`` is ``None``, ``W`` is ``Wa``).
    """
    check_location_scores(queries, Wa, num_keys)
    scores = queries @ Wa[:, :num_keys]
    return scores, ScoresCache(queries, None, Wa)


def location_scores_backward(dscores, cache: ScoresCache):
    """Backward of :func:`location_scores_forward`.

    .. math::
        dq &= ds\\, W_a[:, :K]^\\top                                  && (N, Q, Dq) \\\\
        dW_a[:, :K] &= \\textstyle\\sum_{n,q} q_{nq}^\\top ds_{nq}, \\qquad dW_a[:, K:] = 0   && (Dq, K_max)

    Returns:
        ``dqueries``, ``dWa``.
    """
    check_dscores(dscores, cache)
    queries, _, Wa = cache
    xp = backend.get_array_module(dscores)
    num_keys = dscores.shape[2]
    dused = project_weight_grad(queries, dscores)
    dWa = xp.concatenate([dused, xp.zeros((Wa.shape[0], Wa.shape[1] - num_keys), dtype=dused.dtype)], axis=1)
    dqueries = dscores @ Wa[:, :num_keys].T
    return dqueries, dWa


# ------------------------------------------------------------------ gaussian (kernel regression)
def gaussian_scores_forward(queries, keys, w):
    """The Gaussian kernel as a score: minus half the squared distance from query to key, scaled by ``w``.

    .. math::
        \\delta_{nqk} &= q_{nq} - k_{nk}                                         && (N, Q, K, D) \\\\
        s_{nqk} &= -\\| w\\, \\delta_{nqk} \\|^2 / 2 = -w^2 \\|\\delta_{nqk}\\|^2 / 2             && (N, Q, K)

    :math:`e^{s}` is the Gaussian kernel of width :math:`\\sigma = 1/|w|`, so the softmax of these scores over
    the keys weighs each key by the kernel, normalised: Nadaraya-Watson kernel regression
    (:mod:`npseq.functional.kernel_regression`). The closest key gets the largest score; a larger
    :math:`|w|` narrows the kernel.

    Args:
        queries: ``(N, Q, D)``.
        keys: ``(N, K, D)`` (the same feature size: a distance needs both in one space).
        w: ``()``, a 0-d array of the queries' dtype.

    Returns:
        ``scores`` ``(N, Q, K)`` and a :class:`GaussianScoresCache`.
    """
    check_gaussian_scores(queries, keys, w)
    differences = queries[:, :, None, :] - keys[:, None, :, :]
    scores = -0.5 * (w * w) * (differences * differences).sum(axis=-1)
    return scores, GaussianScoresCache(queries, keys, w, differences)


def gaussian_scores_backward(dscores, cache: GaussianScoresCache):
    """Backward of :func:`gaussian_scores_forward`.

    .. math::
        d\\delta_{nqk} &= -w^2\\, ds_{nqk}\\, \\delta_{nqk}                             && (N, Q, K, D) \\\\
        dq_{nq} &= \\textstyle\\sum_k d\\delta_{nqk}                                    && (N, Q, D) \\\\
        dk_{nk} &= -\\textstyle\\sum_q d\\delta_{nqk}                                   && (N, K, D) \\\\
        dw &= -w \\textstyle\\sum_{n,q,k} ds_{nqk}\\, \\|\\delta_{nqk}\\|^2                  && ()

    The difference :math:`\\delta_{nqk}` uses each query for every key and each key for every query:
    each gets the sum over the axis it was repeated along, the key's with the sign of :math:`-k`.

    Returns:
        ``dqueries``, ``dkeys``, ``dw``.
    """
    check_dscores(dscores, cache)
    _, _, w, differences = cache
    ddifferences = -(w * w) * dscores[..., None] * differences
    dqueries = ddifferences.sum(axis=2)
    dkeys = -ddifferences.sum(axis=1)
    dw = -w * (dscores * (differences * differences).sum(axis=-1)).sum()
    return dqueries, dkeys, dw
