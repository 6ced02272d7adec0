"""Elementwise nonlinearities and (masked) softmax: forward/backward pairs."""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_float, check_ndim, check_valid_lens


class ActivationCache(NamedTuple):
    out: Any  # the forward's output, which is all that tanh' and sigmoid' need


def sigmoid(x):
    """The logistic function, stable for any finite input (no overflow warnings).

    .. math:: \\sigma(x) = \\frac{1}{1 + e^{-x}} = \\frac{e^{x}}{1 + e^{x}}

    Each branch is evaluated with :math:`z = e^{-|x|} \\le 1`, so nothing overflows:
    :math:`\\sigma(x) = 1/(1+z)` for :math:`x \\ge 0` and :math:`z/(1+z)` otherwise.
    """
    xp = backend.get_array_module(x)
    z = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + z), z / (1 + z))


def sigmoid_forward(x):
    """:math:`\\text{out} = \\sigma(x)`, any shape; returns ``(out, cache)``."""
    check_float("x", x)
    out = sigmoid(x)
    return out, ActivationCache(out)


def sigmoid_backward(dout, cache: ActivationCache):
    """:math:`dx = dout \\odot \\sigma(x) (1 - \\sigma(x))`."""
    return dout * cache.out * (1 - cache.out)


def tanh_forward(x):
    """:math:`\\text{out} = \\tanh(x)`, any shape; returns ``(out, cache)``."""
    check_float("x", x)
    out = backend.get_array_module(x).tanh(x)
    return out, ActivationCache(out)


def tanh_backward(dout, cache: ActivationCache):
    """:math:`dx = dout \\odot (1 - \\tanh^2(x))`."""
    return dout * (1 - cache.out * cache.out)


# ------------------------------------------------------------------- softmax
def softmax_forward(x):
    """Softmax over the last axis, stable for logits of any magnitude.

    .. math:: p_i = \\frac{e^{x_i - m}}{\\sum_j e^{x_j - m}}, \\qquad m = \\max_j x_j

    Args:
        x: ``(..., C)``.

    Returns:
        ``p`` ``(..., C)`` and an :class:`ActivationCache` holding ``p``.
    """
    check_float("x", x)
    xp = backend.get_array_module(x)
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return p, ActivationCache(p)


def softmax_backward(dp, cache: ActivationCache):
    """Backward of :func:`softmax_forward` (the softmax Jacobian applied to ``dp``).

    .. math:: dx_i = p_i \\left(dp_i - \\textstyle\\sum_j dp_j\\, p_j\\right)
    """
    p = cache.out
    return p * (dp - (dp * p).sum(axis=-1, keepdims=True))


def log_softmax_forward(x):
    """Log-softmax over the last axis, stable for logits of any magnitude.

    .. math:: y_i = x_i - m - \\log \\textstyle\\sum_j e^{x_j - m}, \\qquad m = \\max_j x_j

    Args:
        x: ``(..., C)``.

    Returns:
        ``y`` ``(..., C)`` and an :class:`ActivationCache` holding ``y``.
    """
    check_float("x", x)
    xp = backend.get_array_module(x)
    shifted = x - x.max(axis=-1, keepdims=True)
    y = shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))
    return y, ActivationCache(y)


def log_softmax_backward(dy, cache: ActivationCache):
    """Backward of :func:`log_softmax_forward`.

    .. math:: dx_i = dy_i - p_i \\textstyle\\sum_j dy_j, \\qquad p = e^{y}
    """
    xp = backend.get_array_module(dy)
    return dy - xp.exp(cache.out) * dy.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------ masked softmax
class MaskedSoftmaxCache(NamedTuple):
    weights: Any  # (N, Q, K), exactly 0 at masked keys
    mask: Any     # (N, Q, K) bool, True where key k < valid_len


def sequence_mask(valid_lens, num_keys: int, num_queries: int):
    """Boolean mask ``(N, Q, K)``: ``mask[n, q, k] = k < valid_lens[n(, q)]``.

    Args:
        valid_lens: ``(N,)`` (one length per example) or ``(N, Q)`` (one per query).
    """
    xp = backend.get_array_module(valid_lens)
    lens = valid_lens[:, None] if valid_lens.ndim == 1 else valid_lens
    lens = xp.broadcast_to(lens, (lens.shape[0], num_queries))
    return xp.arange(num_keys) < lens[:, :, None]


def masked_softmax(scores, valid_lens=None):
    """Softmax over the keys axis that ignores the keys past each valid length.

    .. math::
        a_{nqk} = \\frac{[k < \\ell]\\, e^{s_{nqk} - m}}{\\sum_{j < \\ell} e^{s_{nqj} - m}},
        \\qquad \\ell = \\text{valid\\_lens}_{n(q)},\\ m = \\max_{j<\\ell} s_{nqj}

    Masked keys get exactly 0; a row with :math:`\\ell = 0` is all zeros (never NaN).

    Args:
        scores: ``(N, Q, K)``.
        valid_lens: ``None`` (all keys valid), ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.

    Returns:
        ``weights`` ``(N, Q, K)`` and a :class:`MaskedSoftmaxCache`.
    """
    check_float("scores", scores)
    check_ndim("scores", scores, 3, "(N, Q, K)")
    xp = backend.get_array_module(scores)
    n, q, k = scores.shape
    if valid_lens is None:
        mask = xp.ones(scores.shape, dtype=bool)
    else:
        check_valid_lens("valid_lens", valid_lens, (n, q), k)
        mask = sequence_mask(valid_lens, k, q)
    # The max runs over valid keys only (a row with none uses 0), and masked keys are
    # zeroed before exp, so nothing overflows, underflows to an all-zero row, or turns NaN.
    row_max = xp.where(mask, scores, -xp.inf).max(axis=-1, keepdims=True)
    row_max = xp.where(xp.isfinite(row_max), row_max, scores.dtype.type(0))
    e = xp.exp(xp.where(mask, scores - row_max, scores.dtype.type(0))) * mask
    total = e.sum(axis=-1, keepdims=True)
    weights = e / xp.where(total > 0, total, scores.dtype.type(1))
    return weights, MaskedSoftmaxCache(weights, mask)


def masked_softmax_backward(dweights, cache: MaskedSoftmaxCache):
    """Backward of :func:`masked_softmax`.

    .. math:: ds_{nqk} = a_{nqk} \\left(da_{nqk} - \\textstyle\\sum_j da_{nqj}\\, a_{nqj}\\right)

    Masked keys have :math:`a = 0` and so receive exactly zero gradient.

    Args:
        dweights: ``(N, Q, K)``.

    Returns:
        ``dscores`` ``(N, Q, K)``.
    """
    a = cache.weights
    return a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))
