"""Cross-entropy losses that return the loss and its gradient together (CS231n style)."""
from __future__ import annotations

from .. import backend
from .._checks import check_float, check_index_range, check_ndim, check_shape
from .activations import log_softmax_forward


def softmax_loss(x, y):
    """Softmax cross-entropy, averaged over the batch.

    .. math::
        L = -\\frac{1}{N} \\sum_n \\log p_{n, y_n}, \\qquad p_n = \\operatorname{softmax}(x_n),
        \\qquad \\frac{\\partial L}{\\partial x_{nc}} = \\frac{p_{nc} - [c = y_n]}{N}

    Args:
        x: ``(N, C)`` logits.
        y: ``(N,)`` integer labels in ``[0, C)``.

    Returns:
        ``loss`` (a float) and ``dx`` ``(N, C)``.
    """
    check_float("x", x)
    check_ndim("x", x, 2, "(N, C)")
    check_shape("y", y, (x.shape[0],))
    check_index_range("y", y, x.shape[1], what="class labels")
    xp = backend.get_array_module(x)
    n = x.shape[0]
    log_p, _ = log_softmax_forward(x)
    rows = xp.arange(n)
    loss = -log_p[rows, y].sum() / n
    dx = xp.exp(log_p)
    dx[rows, y] -= 1
    dx /= n
    return float(loss), dx


def temporal_softmax_loss(x, y, mask, verbose=False):
    """Softmax cross-entropy at every time step, summed over valid steps, averaged over N.

    .. math::
        L = -\\frac{1}{N} \\sum_{n,t} m_{nt} \\log p_{nt, y_{nt}}, \\qquad
        \\frac{\\partial L}{\\partial x_{ntv}} = \\frac{m_{nt} (p_{ntv} - [v = y_{nt}])}{N}

    The CS231n signature (``verbose`` is accepted and ignored).

    Args:
        x: ``(N, T, V)`` scores.
        y: ``(N, T)`` integer targets in ``[0, V)``.
        mask: ``(N, T)``; truthy where the step counts (booleans or 0/1).

    Returns:
        ``loss`` (a float) and ``dx`` ``(N, T, V)``.
    """
    check_float("x", x)
    check_ndim("x", x, 3, "(N, T, V)")
    n, t, v = x.shape
    check_shape("y", y, (n, t))
    check_index_range("y", y, v, what="class labels")
    check_shape("mask", mask, (n, t))
    xp = backend.get_array_module(x)
    weight = mask.astype(x.dtype)
    log_p, _ = log_softmax_forward(x)
    picked = xp.take_along_axis(log_p, y[:, :, None], axis=-1)[:, :, 0]
    loss = -(weight * picked).sum() / n
    dx = xp.exp(log_p)
    dx[xp.arange(n)[:, None], xp.arange(t)[None, :], y] -= 1
    dx *= weight[:, :, None] / n
    return float(loss), dx
