"""Elementwise nonlinearities and (masked) softmax: forward/backward pairs."""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from .. import backend
from .._checks import check_float_array, check_ndim, check_valid_lens
from ..errors import InvalidValueError


class ActivationCache(NamedTuple):
    out: Any  # the forward's output, which is all that tanh', sigmoid' and relu' need


def sigmoid(x, out=None):
    """The logistic function, stable for any input (no overflow warnings).

    .. math:: \\sigma(x) = \\frac{1}{1 + e^{-x}} = \\frac{e^{x}}{1 + e^{x}}
              = \\tfrac12 \\bigl(1 + \\tanh(x / 2)\\bigr)

    It is evaluated through the last form: one transcendental pass and three cheap
    ones (halve, tanh, halve, add a half), several times faster than ``exp`` with a
    branch per sign, and nothing overflows (:math:`\\tanh` saturates at :math:`\\pm 1`,
    so :math:`\\sigma(\\pm 10^4)` is exactly 1 and 0, and :math:`\\sigma(0) = 0.5`).
    The error is absolute, a few units of roundoff of 1 (below :math:`10^{-15}` in
    float64): what is given up is *relative* precision in the far left tail, where
    values below about :math:`10^{-16}` (:math:`x < -37`) come out as 0 rather than
    as tiny positive numbers, which no gate here can tell apart.

    Args:
        x: any shape.
        out: optional array of ``x``'s shape and dtype to write into (may be ``x`` itself).

    Returns:
        :math:`\\sigma(x)`, shaped like ``x`` (``out`` when given).
    """
    xp = backend.get_array_module(x)
    out = xp.multiply(x, 0.5, out=xp.empty_like(x) if out is None else out)
    xp.tanh(out, out=out)
    out *= 0.5
    out += 0.5
    return out


def sigmoid_forward(x):
    """:math:`\\text{out} = \\sigma(x)`, any shape; returns ``(out, cache)``."""
    check_float_array("x", x)
    out = sigmoid(x)
    return out, ActivationCache(out)


def sigmoid_backward(dout, cache: ActivationCache):
    """:math:`dx = dout \\odot \\sigma(x) (1 - \\sigma(x))`."""
    return dout * cache.out * (1 - cache.out)


def tanh_forward(x):
    """:math:`\\text{out} = \\tanh(x)`, any shape; returns ``(out, cache)``."""
    check_float_array("x", x)
    out = backend.get_array_module(x).tanh(x)
    return out, ActivationCache(out)


def tanh_backward(dout, cache: ActivationCache):
    """:math:`dx = dout \\odot (1 - \\tanh^2(x))`."""
    return dout * (1 - cache.out * cache.out)


def relu_forward(x):
    """:math:`\\text{out} = \\max(0, x)`, any shape; returns ``(out, cache)``."""
    check_float_array("x", x)
    out = backend.get_array_module(x).maximum(x, 0)
    return out, ActivationCache(out)


def relu_backward(dout, cache: ActivationCache):
    """:math:`dx = dout \\odot [x > 0]`, read from the output (:math:`\\text{out} > 0` exactly where
    :math:`x > 0`); the kink at 0 gets the derivative 0, as in torch."""
    return dout * (cache.out > 0)


class GELUCache(NamedTuple):
    x: Any     # the input
    tanh: Any  # tanh(u), shaped like x: the factor both terms of the derivative share


_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


def gelu_forward(x):
    """The GELU in its tanh approximation (Hendrycks & Gimpel; torch's ``GELU(approximate="tanh")``).

    .. math::
        u = \\sqrt{2/\\pi}\\,(x + 0.044715\\, x^3), \\qquad
        \\operatorname{gelu}(x) = \\tfrac12\\, x\\, (1 + \\tanh u)

    The exact GELU, :math:`x \\Phi(x)`, needs the error function, which NumPy lacks; the
    two differ by less than :math:`5 \\cdot 10^{-4}` everywhere.

    Args:
        x: any shape.

    Returns:
        ``out`` shaped like ``x`` and a :class:`GELUCache`.
    """
    check_float_array("x", x)
    xp = backend.get_array_module(x)
    t = xp.tanh(_GELU_C * (x + _GELU_A * x * x * x))
    out = 0.5 * x * (1 + t)
    return out, GELUCache(x, t)


def gelu_backward(dout, cache: GELUCache):
    """Backward of :func:`gelu_forward`, by the product rule and :math:`\\tanh' = 1 - \\tanh^2`:

    .. math::
        \\frac{d\\operatorname{gelu}}{dx} = \\tfrac12 (1 + \\tanh u)
            + \\tfrac12\\, x\\, (1 - \\tanh^2 u)\\, \\sqrt{2/\\pi}\\, (1 + 3 \\cdot 0.044715\\, x^2),
        \\qquad dx = dout \\odot \\frac{d\\operatorname{gelu}}{dx}
    """
    x, t = cache
    du_dx = _GELU_C * (1 + 3 * _GELU_A * x * x)
    return dout * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du_dx)


# ------------------------------------------------------------------- softmax
def softmax_forward(x):
    """Softmax over the last axis, stable for logits of any magnitude.

    .. math:: p_i = \\frac{e^{x_i - m}}{\\sum_j e^{x_j - m}}, \\qquad m = \\max_j x_j

    Args:
        x: ``(..., C)``.

    Returns:
        ``p`` ``(..., C)`` and an :class:`ActivationCache` holding ``p``.
    """
    check_float_array("x", x)
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
    check_float_array("x", x)
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
    weights: Any  # (N, Q, K) (any (..., K) from softmax_where), exactly 0 at masked keys
    mask: Any     # bool, True at the keys that count: k < valid_len, or the mask given to softmax_where


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
        scores: ``(N, Q, K)`` with ``K >= 1``.
        valid_lens: ``None`` (all keys valid), ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.

    Returns:
        ``weights`` ``(N, Q, K)`` and a :class:`MaskedSoftmaxCache`.
    """
    _check_masked_softmax(scores, valid_lens)
    return _masked_softmax(scores, valid_lens)


def _masked_softmax(scores, valid_lens):
    """:func:`masked_softmax` after its checks (attention, which checks its own inputs, calls this)."""
    xp = backend.get_array_module(scores)
    n, q, k = scores.shape
    mask = xp.ones(scores.shape, dtype=bool) if valid_lens is None else sequence_mask(valid_lens, k, q)
    return softmax_where(scores, mask)


def softmax_where(scores, mask):
    """Softmax over the last axis among the entries where ``mask`` is True; the others get exactly 0.

    The general form of :func:`masked_softmax`, for masks that are not a valid length
    (a causal mask, or its combination with key padding). No checks: its callers check
    their own inputs. A row with no True entry is all zeros (never NaN);
    :func:`masked_softmax_backward` is its backward.

    Args:
        scores: ``(..., K)`` with ``K >= 1``.
        mask: bool, broadcastable to ``scores.shape``.

    Returns:
        ``weights`` shaped like ``scores`` and a :class:`MaskedSoftmaxCache`.
    """
    xp = backend.get_array_module(scores)
    # Masked keys are set to -inf, so exp gives them exactly 0; the max runs over valid keys
    # only, and a row with none uses 0 (its total is then 0 and is divided by 1 instead),
    # so nothing overflows, underflows to an all-zero row, or turns NaN. One array, in place.
    weights = xp.where(mask, scores, -xp.inf)
    row_max = weights.max(axis=-1, keepdims=True)
    row_max[row_max == -xp.inf] = 0
    weights -= row_max
    xp.exp(weights, out=weights)
    total = weights.sum(axis=-1, keepdims=True)
    total[total == 0] = 1
    weights /= total
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


# ------------------------------------------------------------ argument checks
def _check_masked_softmax(scores, valid_lens):
    """Float ``scores`` ``(N, Q, K)`` with ``K >= 1``; ``valid_lens``, when given, ``(N,)`` or ``(N, Q)`` in
    ``[0, K]``."""
    check_float_array("scores", scores)
    check_ndim("scores", scores, 3, "(N, Q, K)")
    if scores.shape[2] == 0:  # a softmax over nothing has no value; the max would fail unnamed
        raise InvalidValueError("scores: expected at least one key (K >= 1) in (N, Q, K), got shape "
                                f"{tuple(scores.shape)}")
    if valid_lens is not None:
        n, q, k = scores.shape
        check_valid_lens("valid_lens", valid_lens, (n, q), k)
