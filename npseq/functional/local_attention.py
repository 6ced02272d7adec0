"""Luong's local attention (Luong, Pham and Manning 2015, section 3.2).

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

Local attention is a score function of :mod:`npseq.functional.scores` (dot, general, concat,
or Luong's historical location-based score, which ignores the source states altogether,
:math:`a_t = \\operatorname{softmax}(W_a h_t)`), then :func:`local_attention_pooling_forward`: the
masked pooling of :mod:`npseq.functional.pooling` with the window as its mask and, for local-p,
the Gaussian as its gain.

Shapes: queries :math:`h` ``(N, Q, Dq)``, keys :math:`\\bar h` ``(N, K, Dk)``, values ``(N, K, Dv)``,
scores and weights ``(N, Q, K)``, centres :math:`p` ``(N, Q)``, context ``(N, Q, Dv)``; source
lengths ``(N,)``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_local_pooling, check_predictive_position
from .layers import project_weight_grad
from .pooling import AttentionPoolingCache, masked_pooling_backward, masked_pooling_forward

__all__ = [
    "LocalPoolingCache", "PredictivePositionCache",
    "local_window", "local_attention_pooling_forward", "local_attention_pooling_backward",
    "monotonic_positions", "predictive_position_forward", "predictive_position_backward",
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
    centers: Any                   # p (N, Q)
    sigma: float                   # D / 2
    gaussian: Any                  # gamma (N, Q, K), or None for local-m
    pooling: AttentionPoolingCache  # the softmax inside the window (alpha and the window mask), the values

    @property
    def values(self):
        """``(N, K, Dv)``."""
        return self.pooling.values

    @property
    def softmax(self):
        """The :class:`~npseq.functional.activations.MaskedSoftmaxCache` of :math:`\\alpha`, masked by the window."""
        return self.pooling.softmax

    @property
    def weights(self):
        """:math:`a = \\alpha \\odot \\gamma` ``(N, Q, K)`` (:math:`\\alpha` for local-m)."""
        return self.pooling.pooled


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

    :func:`~npseq.functional.pooling.masked_pooling_forward` with the window :math:`m` as its mask
    and :math:`\\gamma` as its gain. A window with no valid key (a centre beyond the sentence by
    more than :math:`D`) gives all-zero weights and a zero context. With ``gaussian=True`` the
    weights of a query sum to less than 1 (Luong does not renormalise), and :math:`D \\ge 1` is
    required (:math:`\\sigma > 0`).

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
    check_local_pooling(scores, values, centers, source_lens, half_width, gaussian)
    xp = backend.get_array_module(scores)
    mask = local_window(centers, source_lens, scores.shape[2], half_width)
    sigma = half_width / 2
    gamma = None
    if gaussian:
        distance = xp.arange(scores.shape[2], dtype=scores.dtype) - centers[:, :, None]
        gamma = xp.exp(-distance * distance / (2 * sigma * sigma))
    context, weights, pooling = masked_pooling_forward(scores, values, mask, gamma)
    return context, weights, LocalPoolingCache(centers, sigma, gamma, pooling)


def local_attention_pooling_backward(dcontext, cache: LocalPoolingCache, dweights=None):
    """Backward of :func:`local_attention_pooling_forward`.

    :func:`~npseq.functional.pooling.masked_pooling_backward` gives :math:`ds`, :math:`dv` and the
    gradient :math:`d\\gamma = da \\odot \\alpha` of the gain; the Gaussian
    :math:`\\gamma = \\exp(-(k - p)^2 / (2\\sigma^2))` takes it to the centres:

    .. math::
        dv &= a^\\top dc, \\qquad da = dc\\, v^\\top + d\\text{weights}     && (N, K, Dv),\\ (N, Q, K) \\\\
        d\\alpha &= da \\odot \\gamma                                           && \\\\
        ds_{nqk} &= \\alpha_{nqk}\\,\\bigl(d\\alpha_{nqk} - \\textstyle\\sum_j d\\alpha_{nqj}\\,\\alpha_{nqj}\\bigr)
                                                                          && \\text{(0 outside the window)} \\\\
        dp_{nq} &= \\textstyle\\sum_k d\\gamma_{nqk}\\, \\gamma_{nqk}\\, (k - p_{nq}) / \\sigma^2   && (N, Q)

    (for local-m :math:`\\gamma = 1` and there is no :math:`dp`). The window's edges move with
    :math:`p` in steps, which carry no gradient.

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None``.

    Returns:
        ``dscores`` ``(N, Q, K)``, ``dvalues`` ``(N, K, Dv)``, ``dcenters`` ``(N, Q)`` (``None`` for local-m).
    """
    centers, sigma, gamma, pooling = cache
    xp = backend.get_array_module(dcontext)
    dscores, dvalues, dgamma = masked_pooling_backward(dcontext, pooling, dweights)
    dcenters = None
    if gamma is not None:
        distance = xp.arange(gamma.shape[2], dtype=gamma.dtype) - centers[:, :, None]
        dcenters = (dgamma * gamma * distance).sum(axis=-1) / (sigma * sigma)
    return dscores, dvalues, dcenters


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
    check_predictive_position(queries, Wp, vp, source_lens)
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
    dWp = project_weight_grad(queries, dprojected)
    return dqueries, dWp, dvp
