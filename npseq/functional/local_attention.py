"""Luong's local attention and his location-based score (Luong, Pham and Manning 2015, section 3.2).

Global attention spreads a decoder step's weights over every source position. Local
attention looks only at a window of :math:`2D + 1` positions around an aligned position
:math:`p_t`:

.. math::
    W_t &= \\{\\, s : |s - p_t| \\le D,\\ 0 \\le s < S_n \\,\\} \\\\
    a_t(s) &= \\frac{\\exp(\\operatorname{score}(h_t, \\bar h_s))}
                    {\\sum_{s' \\in W_t} \\exp(\\operatorname{score}(h_t, \\bar h_{s'}))}\\,
              \\gamma_t(s) \\quad (s \\in W_t), \\qquad a_t(s) = 0 \\quad (s \\notin W_t) \\\\
    c_t &= \\textstyle\\sum_s a_t(s)\\, \\bar h_s

with :math:`S_n` the example's own source length. Two ways to choose :math:`p_t`:

- **local-m** (monotonic): :math:`p_t = t`, and :math:`\\gamma_t(s) = 1`;
- **local-p** (predictive): the decoder predicts it,
  :math:`p_t = S_n\\, \\sigma(v_p^\\top \\tanh(W_p h_t))` (:func:`predictive_position_forward`),
  and a Gaussian favours the positions near it,
  :math:`\\gamma_t(s) = \\exp\\bigl(-(s - p_t)^2 / (2\\sigma^2)\\bigr)` with :math:`\\sigma = D/2`.
  The gradient reaches :math:`W_p` and :math:`v_p` through :math:`\\gamma`; the window's edges
  move with :math:`p_t` in steps, which carry no gradient (as in the paper).

The scores inside the window come from any of Luong's score functions, written here as
pairs of their own (the global attention functions fuse them with the pooling):
:func:`dot_scores_forward`, :func:`general_scores_forward` and :func:`concat_scores_forward`.
Luong's historical **location-based** score ignores the source states altogether,
:math:`a_t = \\operatorname{softmax}(W_a h_t)`: :func:`location_scores_forward`.

Shapes: queries :math:`h` ``(N, Q, Dq)``, keys :math:`\\bar h` ``(N, K, Dk)``, values ``(N, K, Dv)``,
scores and weights ``(N, Q, K)``, centres :math:`p` ``(N, Q)``, context ``(N, Q, Dv)``; source
lengths ``(N,)``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_count, check_float_array, check_ndim, check_shape, check_valid_lens
from ..errors import InvalidValueError
from .activations import MaskedSoftmaxCache, masked_softmax_backward, softmax_where

__all__ = [
    "LocalPoolingCache", "PredictivePositionCache", "ConcatScoresCache", "ScoresCache",
    "local_window", "local_attention_pooling_forward", "local_attention_pooling_backward",
    "monotonic_positions", "predictive_position_forward", "predictive_position_backward",
    "dot_scores_forward", "dot_scores_backward", "general_scores_forward", "general_scores_backward",
    "concat_scores_forward", "concat_scores_backward", "location_scores_forward", "location_scores_backward",
]


# ------------------------------------------------------------------ the window
def local_window(centers, source_lens, num_keys: int, half_width: int):
    """Which keys each query may look at: :math:`|s - p| \\le D` and :math:`s < S_n`.

    Args:
        centers: :math:`p` ``(N, Q)``, real or integer positions.
        source_lens: :math:`S_n` ``(N,)`` integers in ``[0, K]``.
        num_keys: ``K``.
        half_width: :math:`D \\ge 0`; the window holds up to :math:`2D + 1` positions.

    Returns:
        A boolean mask ``(N, Q, K)``.
    """
    xp = backend.get_array_module(centers)
    positions = xp.arange(num_keys)
    near = abs(positions - centers[:, :, None]) <= half_width
    return near & (positions < source_lens[:, None, None])


def monotonic_positions(step: int, batch_size: int, num_queries: int = 1, *, like=None):
    """local-m's aligned positions :math:`p_t = t` for the queries of decoder steps ``step .. step + Q - 1``:
    ``(N, Q)`` integers (on the backend of ``like``, when given)."""
    xp = backend.get_array_module(like) if like is not None else backend.xp
    return xp.broadcast_to(xp.arange(step, step + num_queries), (batch_size, num_queries))


class LocalPoolingCache(NamedTuple):
    values: Any                  # (N, K, Dv)
    softmax: MaskedSoftmaxCache  # the weights inside the window (before the Gaussian) and the window mask
    centers: Any                 # p (N, Q)
    gaussian: Any                # gamma (N, Q, K), or None for local-m
    sigma: float                 # D / 2
    weights: Any                 # a = softmax * gamma (N, Q, K)


def _check_pooling(scores, values, centers, source_lens, half_width: int) -> None:
    check_float_array("scores", scores)
    check_ndim("scores", scores, 3, "(N, Q, K)")
    n, q, k = scores.shape
    check_float_array("values", values)
    check_ndim("values", values, 3, "(N, K, Dv)")
    if values.shape[:2] != (n, k):
        raise InvalidValueError(f"values: expected shape ({n}, {k}, *) (one value per key), got {tuple(values.shape)}")
    check_shape("centers", centers, (n, q))
    check_valid_lens("source_lens", source_lens, (n,), k)
    check_count("half_width", half_width, 0)


def local_attention_pooling_forward(scores, values, centers, source_lens, half_width: int, *,
                                    gaussian: bool = False):
    """Softmax of the scores inside the window around each centre, then the weighted sum of the values.

    .. math::
        m_{nqk} &= [\\, |k - p_{nq}| \\le D \\,]\\,[\\, k < S_n \\,]            && \\text{(the window)} \\\\
        \\alpha_{nq\\cdot} &= \\operatorname{softmax}(s_{nq\\cdot} \\text{ over } m_{nq\\cdot} = 1)
                                                                               && \\text{(0 outside)} \\\\
        \\gamma_{nqk} &= \\exp\\bigl(-(k - p_{nq})^2 / (2\\sigma^2)\\bigr),\\ \\sigma = D/2
                                                                               && \\text{(local-p; 1 for local-m)} \\\\
        a_{nqk} &= \\alpha_{nqk}\\, \\gamma_{nqk}, \\qquad c_{nq} = \\textstyle\\sum_k a_{nqk}\\, v_{nk}

    A window with no valid key (a centre beyond the sentence by more than :math:`D`) gives
    all-zero weights and a zero context. With ``gaussian=True`` the weights of a query sum to
    less than 1 (Luong does not renormalise), and :math:`D \\ge 1` is required (:math:`\\sigma > 0`).

    Args:
        scores: ``(N, Q, K)``.
        values: ``(N, K, Dv)``.
        centers: :math:`p` ``(N, Q)`` (the dtype of the scores for local-p).
        source_lens: ``(N,)`` integers in ``[0, K]``.
        half_width: :math:`D`.
        gaussian: multiply by :math:`\\gamma` (local-p).

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` :math:`a` ``(N, Q, K)``, a :class:`LocalPoolingCache`.
    """
    _check_pooling(scores, values, centers, source_lens, half_width)
    if gaussian and half_width < 1:
        raise InvalidValueError(f"half_width: expected at least 1 with the Gaussian (sigma = D/2), got {half_width}")
    xp = backend.get_array_module(scores)
    mask = local_window(centers, source_lens, scores.shape[2], half_width)
    alpha, softmax = softmax_where(scores, mask)
    sigma = half_width / 2
    gamma = None
    weights = alpha
    if gaussian:
        distance = xp.arange(scores.shape[2], dtype=scores.dtype) - centers[:, :, None]
        gamma = xp.exp(-distance * distance / (2 * sigma * sigma))
        weights = alpha * gamma
    context = weights @ values
    return context, weights, LocalPoolingCache(values, softmax, centers, gamma, sigma, weights)


def local_attention_pooling_backward(dcontext, cache: LocalPoolingCache, dweights=None):
    """Backward of :func:`local_attention_pooling_forward`.

    From :math:`c = a v`, :math:`a = \\alpha \\odot \\gamma`,
    :math:`\\gamma = \\exp(-(k - p)^2 / (2\\sigma^2))` and the windowed softmax :math:`\\alpha`:

    .. math::
        dv &= a^\\top dc                                                         && (N, K, Dv) \\\\
        da &= dc\\, v^\\top + d\\text{weights}                                   && (N, Q, K) \\\\
        d\\alpha &= da \\odot \\gamma                                             && \\\\
        dp_{nq} &= \\textstyle\\sum_k da_{nqk}\\, \\alpha_{nqk}\\, \\gamma_{nqk}\\,
                   (k - p_{nq}) / \\sigma^2                                       && (N, Q) \\\\
        ds_{nqk} &= \\alpha_{nqk}\\,\\bigl(d\\alpha_{nqk} - \\textstyle\\sum_j d\\alpha_{nqj}\\,\\alpha_{nqj}\\bigr)
                                                                                  && \\text{(0 outside the window)}

    (for local-m :math:`\\gamma = 1` and there is no :math:`dp`).

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None``.

    Returns:
        ``dscores`` ``(N, Q, K)``, ``dvalues`` ``(N, K, Dv)``, ``dcenters`` ``(N, Q)`` (``None`` for local-m).
    """
    values, softmax, centers, gamma, sigma, weights = cache
    xp = backend.get_array_module(dcontext)
    dvalues = weights.swapaxes(1, 2) @ dcontext
    da = dcontext @ values.swapaxes(1, 2)
    if dweights is not None:
        da = da + dweights
    dcenters = None
    dalpha = da
    if gamma is not None:
        distance = xp.arange(weights.shape[2], dtype=weights.dtype) - centers[:, :, None]
        dcenters = (da * weights * distance).sum(axis=-1) / (sigma * sigma)
        dalpha = da * gamma
    return masked_softmax_backward(dalpha, softmax), dvalues, dcenters


# ------------------------------------------------------- local-p's predicted position
class PredictivePositionCache(NamedTuple):
    queries: Any      # h (N, Q, Dq)
    Wp: Any           # (Dq, h)
    vp: Any           # (h,)
    features: Any     # u = tanh(h Wp) (N, Q, h)
    ratio: Any        # sigma(z) (N, Q)
    source_lens: Any  # S (N,) in the queries' dtype


def predictive_position_forward(queries, Wp, vp, source_lens):
    """local-p's aligned position: a point in :math:`[0, S_n]` predicted from the decoder state.

    .. math::
        u &= \\tanh(h W_p)                     && (N, Q, h) \\\\
        z &= u\\, v_p                          && (N, Q) \\\\
        p &= S_n\\, \\sigma(z)                  && (N, Q)

    Args:
        queries: :math:`h` ``(N, Q, Dq)``.
        Wp: ``(Dq, h)``.
        vp: ``(h,)``.
        source_lens: :math:`S_n` ``(N,)`` integers (each sentence's own length).

    Returns:
        ``centers`` :math:`p` ``(N, Q)`` and a :class:`PredictivePositionCache`.
    """
    check_float_array("queries", queries)
    check_ndim("queries", queries, 3, "(N, Q, Dq)")
    check_shape("Wp", Wp, (queries.shape[2], None))
    check_shape("vp", vp, (Wp.shape[1],))
    check_shape("source_lens", source_lens, (queries.shape[0],))
    xp = backend.get_array_module(queries)
    features = xp.tanh(queries @ Wp)
    ratio = 1 / (1 + xp.exp(-(features @ vp)))
    lengths = source_lens.astype(queries.dtype)
    centers = lengths[:, None] * ratio
    return centers, PredictivePositionCache(queries, Wp, vp, features, ratio, lengths)


def predictive_position_backward(dcenters, cache: PredictivePositionCache):
    """Backward of :func:`predictive_position_forward`.

    .. math::
        dz &= dp \\odot S_n\\, \\sigma(z)\\,(1 - \\sigma(z))     && (N, Q) \\\\
        dv_p &= \\textstyle\\sum_{n,q} dz_{nq}\\, u_{nq}          && (h,) \\\\
        d(hW_p) &= (dz\\, v_p^\\top) \\odot (1 - u^2)             && (N, Q, h) \\\\
        dh &= d(hW_p)\\, W_p^\\top, \\qquad dW_p = \\textstyle\\sum_{n} h_n^\\top\\, d(hW_p)_n

    Returns:
        ``dqueries`` ``(N, Q, Dq)``, ``dWp`` ``(Dq, h)``, ``dvp`` ``(h,)``.
    """
    queries, Wp, vp, features, ratio, lengths = cache
    dz = dcenters * lengths[:, None] * ratio * (1 - ratio)
    dvp = (dz[:, :, None] * features).sum(axis=(0, 1))
    dprojected = dz[:, :, None] * vp * (1 - features * features)
    dqueries = dprojected @ Wp.T
    dWp = queries.reshape(-1, Wp.shape[0]).T @ dprojected.reshape(-1, Wp.shape[1])
    return dqueries, dWp, dvp


# ---------------------------------------------------------- score functions
class ScoresCache(NamedTuple):
    queries: Any  # (N, Q, Dq)
    keys: Any     # (N, K, Dk)
    W: Any        # (Dq, Dk) for general; None for dot


def dot_scores_forward(queries, keys):
    """Luong's "dot" score, :math:`s_{nqk} = h_{nq} \\cdot \\bar h_{nk}` (:math:`s = h \\bar h^\\top`).

    Returns ``scores`` ``(N, Q, K)`` and a :class:`ScoresCache`."""
    check_ndim("queries", queries, 3, "(N, Q, D)")
    check_shape("keys", keys, (queries.shape[0], None, queries.shape[2]))
    return queries @ keys.swapaxes(1, 2), ScoresCache(queries, keys, None)


def dot_scores_backward(dscores, cache: ScoresCache):
    """:math:`dh = ds\\, \\bar h`, :math:`d\\bar h = ds^\\top h`: returns ``dqueries``, ``dkeys``."""
    queries, keys, _ = cache
    return dscores @ keys, dscores.swapaxes(1, 2) @ queries


def general_scores_forward(queries, keys, W):
    """Luong's "general" score, :math:`s_{nqk} = h_{nq}\\, W\\, \\bar h_{nk}^\\top`, with ``W`` ``(Dq, Dk)``.

    Returns ``scores`` ``(N, Q, K)`` and a :class:`ScoresCache`."""
    check_ndim("queries", queries, 3, "(N, Q, Dq)")
    check_shape("W", W, (queries.shape[2], None))
    check_shape("keys", keys, (queries.shape[0], None, W.shape[1]))
    return (queries @ W) @ keys.swapaxes(1, 2), ScoresCache(queries, keys, W)


def general_scores_backward(dscores, cache: ScoresCache):
    """With :math:`\\hat h = h W`: :math:`d\\hat h = ds\\, \\bar h`, :math:`dh = d\\hat h W^\\top`,
    :math:`dW = \\sum_n h_n^\\top d\\hat h_n`, :math:`d\\bar h = ds^\\top \\hat h`.

    Returns ``dqueries``, ``dkeys``, ``dW``."""
    queries, keys, W = cache
    dprojected = dscores @ keys
    dW = queries.reshape(-1, W.shape[0]).T @ dprojected.reshape(-1, W.shape[1])
    return dprojected @ W.T, dscores.swapaxes(1, 2) @ (queries @ W), dW


class ConcatScoresCache(NamedTuple):
    queries: Any   # (N, Q, Dq)
    keys: Any      # (N, K, Dk)
    Wq: Any        # (Dq, h)
    Wk: Any        # (Dk, h)
    wv: Any        # (h,)
    features: Any  # tanh(h Wq + hbar Wk) (N, Q, K, h)


def concat_scores_forward(queries, keys, Wq, Wk, wv):
    """Luong's "concat" score (Bahdanau's additive one),
    :math:`s_{nqk} = w_v^\\top \\tanh(h_{nq} W_q + \\bar h_{nk} W_k)`.

    Returns ``scores`` ``(N, Q, K)`` and a :class:`ConcatScoresCache`."""
    check_ndim("queries", queries, 3, "(N, Q, Dq)")
    check_shape("Wq", Wq, (queries.shape[2], None))
    check_shape("Wk", Wk, (None, Wq.shape[1]))
    check_shape("wv", wv, (Wq.shape[1],))
    check_shape("keys", keys, (queries.shape[0], None, Wk.shape[0]))
    xp = backend.get_array_module(queries)
    features = xp.tanh((queries @ Wq)[:, :, None, :] + (keys @ Wk)[:, None, :, :])
    return features @ wv, ConcatScoresCache(queries, keys, Wq, Wk, wv, features)


def concat_scores_backward(dscores, cache: ConcatScoresCache):
    """With :math:`f = \\tanh(hW_q + \\bar h W_k)` and :math:`s = f w_v`:

    .. math::
        dw_v &= \\textstyle\\sum_{n,q,k} ds_{nqk}\\, f_{nqk}, \\qquad
        dg = (ds \\otimes w_v) \\odot (1 - f^2) \\quad (N, Q, K, h) \\\\
        dh &= \\bigl(\\textstyle\\sum_k dg_{\\cdot\\cdot k}\\bigr) W_q^\\top, \\qquad
        d\\bar h = \\bigl(\\textstyle\\sum_q dg_{\\cdot q \\cdot}\\bigr) W_k^\\top, \\qquad
        dW_q = \\textstyle\\sum h^\\top \\sum_k dg, \\qquad dW_k = \\sum \\bar h^\\top \\sum_q dg

    Returns ``dqueries``, ``dkeys``, ``dWq``, ``dWk``, ``dwv``."""
    queries, keys, Wq, Wk, wv, features = cache
    dwv = (dscores[..., None] * features).sum(axis=(0, 1, 2))
    dgate = dscores[..., None] * wv * (1 - features * features)
    dprojected_queries, dprojected_keys = dgate.sum(axis=2), dgate.sum(axis=1)
    dWq = queries.reshape(-1, Wq.shape[0]).T @ dprojected_queries.reshape(-1, Wq.shape[1])
    dWk = keys.reshape(-1, Wk.shape[0]).T @ dprojected_keys.reshape(-1, Wk.shape[1])
    return dprojected_queries @ Wq.T, dprojected_keys @ Wk.T, dWq, dWk, dwv


def location_scores_forward(queries, Wa, num_keys: int):
    """Luong's location-based score: the positions' scores from the decoder state alone,
    :math:`s_{nq\\cdot} = h_{nq} W_a`, cut to the batch's ``K`` source positions.

    ``Wa`` ``(Dq, K_max)`` has one column per source position the model can see, ``K <= K_max``.
    Returns ``scores`` ``(N, Q, K)`` and a :class:`ScoresCache` (``keys`` is ``None``)."""
    check_ndim("queries", queries, 3, "(N, Q, Dq)")
    check_shape("Wa", Wa, (queries.shape[2], None))
    if not 1 <= num_keys <= Wa.shape[1]:
        raise InvalidValueError(f"num_keys: expected 1 to {Wa.shape[1]} (the columns of Wa, one per source "
                                f"position), got {num_keys}")
    return queries @ Wa[:, :num_keys], ScoresCache(queries, None, Wa)


def location_scores_backward(dscores, cache: ScoresCache):
    """:math:`dh = ds\\, W_a^\\top`, :math:`dW_a = \\sum_n h_n^\\top ds_n` (zero in the columns beyond ``K``).

    Returns ``dqueries``, ``dWa``."""
    queries, _, Wa = cache
    xp = backend.get_array_module(dscores)
    num_keys = dscores.shape[2]
    dWa = xp.zeros_like(Wa)
    dWa[:, :num_keys] = queries.reshape(-1, Wa.shape[0]).T @ dscores.reshape(-1, num_keys)
    return dscores @ Wa[:, :num_keys].T, dWa
