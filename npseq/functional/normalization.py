"""Layer normalisation (Ba, Kiros & Hinton): a forward/backward pair.

Each feature vector is standardised on its own, over its last axis, then scaled and
shifted by learned per-feature parameters. Nothing is shared across the batch or the
time steps, so the layer behaves the same in training and evaluation and at any
sequence length, which is why the Transformer uses it in place of batch norm.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from .. import backend
from .._checks import check_float_array, check_real, check_same_backend, check_shape
from ..errors import InvalidTypeError, InvalidValueError

__all__ = ["LayerNormCache", "layer_norm_forward", "layer_norm_backward"]


class LayerNormCache(NamedTuple):
    x_hat: Any      # (..., D) the standardised input (x - mu) / sigma
    inv_sigma: Any  # (..., 1) 1 / sqrt(var + eps), one per feature vector
    gamma: Any      # (D,)


def layer_norm_forward(x, gamma, beta, eps: float = 1e-5):
    """Normalise each feature vector over its last axis, then scale and shift it.

    For one vector :math:`x \\in \\mathbb{R}^D` (every leading index is treated alike):

    .. math::
        \\mu &= \\tfrac1D \\textstyle\\sum_i x_i                       \\\\
        \\sigma^2 &= \\tfrac1D \\textstyle\\sum_i (x_i - \\mu)^2       && \\text{(biased, as torch)} \\\\
        \\hat x_i &= (x_i - \\mu) / \\sqrt{\\sigma^2 + \\epsilon}      \\\\
        y_i &= \\gamma_i\\, \\hat x_i + \\beta_i

    Args:
        x: ``(..., D)`` with ``D >= 1``.
        gamma: ``(D,)``, the scale (ones at initialisation).
        beta: ``(D,)``, the shift (zeros at initialisation).
        eps: added to the variance, ``>= 0``; torch's default ``1e-5``.

    Returns:
        ``y`` ``(..., D)`` and a :class:`LayerNormCache`.
    """
    _check_layer_norm(x, gamma, beta, eps)
    xp = backend.get_array_module(x)
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    inv_sigma = 1 / xp.sqrt(variance + x.dtype.type(eps))
    x_hat = centred * inv_sigma
    y = gamma * x_hat + beta
    return y, LayerNormCache(x_hat, inv_sigma, gamma)


def layer_norm_backward(dy, cache: LayerNormCache):
    """Backward of :func:`layer_norm_forward`.

    The parameters act elementwise, so their gradients sum over every leading index:

    .. math::
        d\\gamma = \\textstyle\\sum_{\\ldots} dy \\odot \\hat x, \\qquad
        d\\beta = \\textstyle\\sum_{\\ldots} dy, \\qquad
        g = d\\hat x = dy \\odot \\gamma

    For the input, write :math:`s = 1/\\sqrt{\\sigma^2 + \\epsilon}`. From
    :math:`\\partial \\mu / \\partial x_j = 1/D` and
    :math:`\\partial \\sigma^2 / \\partial x_j = \\tfrac2D (x_j - \\mu)` (the terms with
    :math:`\\sum_i (x_i - \\mu) = 0` drop out),
    :math:`\\partial s / \\partial x_j = -\\tfrac12 s^3 \\cdot \\tfrac2D (x_j - \\mu) = -\\tfrac1D s\\, \\hat x_j`,
    so

    .. math::
        \\frac{\\partial \\hat x_i}{\\partial x_j}
            = s \\Bigl(\\delta_{ij} - \\tfrac1D\\Bigr) + (x_i - \\mu) \\frac{\\partial s}{\\partial x_j}
            = \\frac{s}{D} \\bigl(D\\, \\delta_{ij} - 1 - \\hat x_i \\hat x_j\\bigr).

    Contracting with :math:`g` (the Jacobian is symmetric):

    .. math::
        dx_j = \\textstyle\\sum_i g_i \\dfrac{\\partial \\hat x_i}{\\partial x_j}
             = s \\Bigl(g_j - \\overline{g} - \\hat x_j\\, \\overline{g \\odot \\hat x}\\Bigr),

    where the bars are means over the last axis: one line of code, and no :math:`D \\times D`
    Jacobian is ever formed.

    Args:
        dy: ``(..., D)``.

    Returns:
        ``dx`` ``(..., D)``, ``dgamma`` ``(D,)``, ``dbeta`` ``(D,)``.
    """
    check_shape("dy", dy, cache.x_hat.shape)
    x_hat, inv_sigma, gamma = cache
    dim = x_hat.shape[-1]
    rows = dy.reshape(-1, dim)
    dgamma = (rows * x_hat.reshape(-1, dim)).sum(axis=0)
    dbeta = rows.sum(axis=0)
    g = dy * gamma
    dx = inv_sigma * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return dx, dgamma, dbeta


# ---------------------------------------------------------------- argument checks
def _check_layer_norm(x, gamma, beta, eps):
    """Float ``x`` ``(..., D)`` with ``D >= 1``; ``gamma`` and ``beta`` ``(D,)`` of its dtype and backend;
    ``eps`` a finite real ``>= 0``."""
    check_float_array("x", x)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise InvalidValueError(f"x: expected an array (..., D) with D >= 1, got shape {tuple(x.shape)}")
    for name, param in (("gamma", gamma), ("beta", beta)):
        check_float_array(name, param)
        check_same_backend(name, param, x)
        check_shape(name, param, (x.shape[-1],))
        if param.dtype != x.dtype:
            raise InvalidTypeError(f"{name}: expected dtype {x.dtype} (the dtype of x), got {param.dtype}")
    check_real("eps", eps, ">= 0 and finite", lambda e: 0.0 <= e < math.inf)
