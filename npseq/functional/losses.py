"""Losses: CS231n-style cross-entropy ``(loss, dx)`` functions, a cross-entropy pair for padded sequences,
and the squared loss pair for regression."""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_float_array, check_index_range, check_ndim, check_same_backend, check_shape
from ..errors import InvalidValueError
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
    _check_scores(x, y)
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
    _check_step_scores(x, y, mask)
    xp = backend.get_array_module(x)
    n, t, _ = x.shape
    weight = mask.astype(x.dtype)
    log_p, _ = log_softmax_forward(x)
    picked = xp.take_along_axis(log_p, y[:, :, None], axis=-1)[:, :, 0]
    loss = -(weight * picked).sum() / n
    dx = xp.exp(log_p)
    dx[xp.arange(n)[:, None], xp.arange(t)[None, :], y] -= 1
    dx *= weight[:, :, None] / n
    return float(loss), dx


class MaskedSoftmaxCECache(NamedTuple):
    probs: Any     # (N, T, V) softmax of the logits
    labels: Any    # (N, T) integer targets
    weight: Any    # (N, T) d loss / d nll_{nt}: the mask times the reduction's scale
    reduction: str
    nll_sum: Any   # 0-d: the summed negative log-likelihood of the valid tokens, whatever the reduction


REDUCTIONS = ("mean", "sum", "none", "d2l")


def masked_softmax_ce_forward(logits, labels, valid_lens, reduction: str = "mean"):
    r"""Cross-entropy over the valid steps of padded sequences, with a choice of reduction.

    With :math:`\ell_{nt} = -\log \operatorname{softmax}(z_{nt})_{y_{nt}}` and the
    mask :math:`m_{nt} = [t < \text{valid\_lens}_n]`:

    ==========  ======================================================  ==============================
    reduction   loss                                                    gradient scale per valid token
    ==========  ======================================================  ==============================
    ``"mean"``  :math:`\sum_{n,t} m_{nt}\ell_{nt} / \sum_{n,t} m_{nt}`  :math:`1 / \#\text{tokens}`
    ``"sum"``   :math:`\sum_{n,t} m_{nt}\ell_{nt}`                      :math:`1`
    ``"none"``  :math:`L_n = \sum_t m_{nt}\ell_{nt}`, shape ``(N,)``    the upstream :math:`dL_n`
    ``"d2l"``   :math:`\sum_n \frac{1}{T}\sum_t m_{nt}\ell_{nt}`        :math:`1 / T`
    ==========  ======================================================  ==============================

    ``"d2l"`` is the objective of *Dive into Deep Learning*: per sequence the mean
    over all ``T`` positions (padding counting as zero), summed over the batch.
    The scale matters with gradient clipping: ``"sum"`` and ``"d2l"`` grow with
    the batch (and ``"sum"`` with the length), so a fixed clipping threshold clips
    them far more often than the per-token ``"mean"``; reproducing a published
    run therefore needs its exact reduction, not just its learning rate.

    The gradient with respect to the logits is
    :math:`\partial L / \partial z_{ntv} = w_{nt} (p_{ntv} - [v = y_{nt}])`, with
    :math:`w_{nt}` the mask times the scale above.

    Args:
        logits: ``(N, T, V)``.
        labels: ``(N, T)`` integers in ``[0, V)``.
        valid_lens: ``(N,)`` integers in ``[0, T]``.
        reduction: one of ``"mean"``, ``"sum"``, ``"none"``, ``"d2l"``.

    Returns:
        ``loss`` (a 0-d array, or ``(N,)`` for ``"none"``) and a :class:`MaskedSoftmaxCECache`.
    """
    _check_masked_ce(logits, labels, valid_lens, reduction)
    xp = backend.get_array_module(logits)
    t = logits.shape[1]
    mask = (xp.arange(t)[None, :] < valid_lens[:, None]).astype(logits.dtype)
    # log p = s - log sum_v e^{s_v} with s = z - max_v z (stable); the shifted logits are
    # turned into the probabilities in place, so the (N, T, V) work is one array.
    shifted = logits - logits.max(axis=-1, keepdims=True)
    picked = xp.take_along_axis(shifted, labels[:, :, None], axis=-1)[:, :, 0]
    probs = xp.exp(shifted, out=shifted)
    total = probs.sum(axis=-1, keepdims=True)
    nll = xp.log(total[:, :, 0]) - picked
    probs /= total
    masked_nll = nll * mask
    nll_sum = masked_nll.sum()
    if reduction == "none":
        loss, weight = masked_nll.sum(axis=1), mask
    elif reduction == "sum":
        loss, weight = nll_sum, mask
    elif reduction == "d2l":
        loss, weight = nll_sum / t, mask / t
    else:
        num_tokens = xp.maximum(valid_lens.sum(), 1).astype(logits.dtype)  # stays on the device
        loss, weight = nll_sum / num_tokens, mask / num_tokens
    return loss, MaskedSoftmaxCECache(probs, labels, weight, reduction, nll_sum)


def masked_softmax_ce_backward(dloss, cache: MaskedSoftmaxCECache):
    """Backward of :func:`masked_softmax_ce_forward`.

    .. math:: dz_{ntv} = dL \\cdot w_{nt} (p_{ntv} - [v = y_{nt}])

    Args:
        dloss: the upstream gradient: a scalar, or ``(N,)`` for ``reduction="none"``.

    Returns:
        ``dlogits`` ``(N, T, V)``.
    """
    _check_dloss(dloss, cache)
    xp = backend.get_array_module(cache.probs)
    n, t, _ = cache.probs.shape
    dloss = xp.asarray(dloss, dtype=cache.probs.dtype)
    weight = cache.weight * (dloss[:, None] if cache.reduction == "none" else dloss)
    dlogits = cache.probs.copy()
    dlogits[xp.arange(n)[:, None], xp.arange(t)[None, :], cache.labels] -= 1
    dlogits *= weight[:, :, None]
    return dlogits


class MSECache(NamedTuple):
    diff: Any  # (*) the prediction minus the target, which is all the gradient needs


def mse_loss_forward(pred, target):
    """Squared loss averaged over every element (``torch.nn.MSELoss()``), for regression.

    .. math::
        L = \\frac{1}{M} \\sum_i (\\hat y_i - y_i)^2, \\qquad
        \\frac{\\partial L}{\\partial \\hat y_i} = \\frac{2 (\\hat y_i - y_i)}{M}

    with :math:`M` the number of elements. No factor :math:`\\tfrac12`, so the value
    is the mean squared error itself.

    Args:
        pred: ``(*)`` float predictions :math:`\\hat y`.
        target: ``(*)`` float targets :math:`y`, the shape of ``pred``.

    Returns:
        ``loss`` (a 0-d array) and an :class:`MSECache`.
    """
    _check_regression(pred, target)
    diff = pred - target
    return (diff * diff).mean(), MSECache(diff)


def mse_loss_backward(dloss, cache: MSECache):
    """Backward of :func:`mse_loss_forward`: :math:`d\\hat y_i = dL \\cdot 2 (\\hat y_i - y_i) / M`.

    Args:
        dloss: the upstream gradient, a scalar.

    Returns:
        ``dpred`` ``(*)``, the shape of the prediction.
    """
    _check_dloss(dloss, cache)
    xp = backend.get_array_module(cache.diff)
    dloss = xp.asarray(dloss, dtype=cache.diff.dtype)
    return cache.diff * (2.0 * dloss / cache.diff.size)


# ------------------------------------------------------------ argument checks
def _check_scores(x, y):
    """Float scores ``x`` ``(N, C)`` and labels ``y`` ``(N,)`` in ``[0, C)``."""
    check_float_array("x", x)
    check_ndim("x", x, 2, "(N, C)")
    check_shape("y", y, (x.shape[0],))
    check_index_range("y", y, x.shape[1], what="class labels")


def _check_step_scores(x, y, mask):
    """Float scores ``x`` ``(N, T, V)``, labels ``y`` ``(N, T)`` in ``[0, V)`` and a ``mask`` ``(N, T)``."""
    check_float_array("x", x)
    check_ndim("x", x, 3, "(N, T, V)")
    n, t, v = x.shape
    check_shape("y", y, (n, t))
    check_index_range("y", y, v, what="class labels")
    check_shape("mask", mask, (n, t))


def _check_masked_ce(logits, labels, valid_lens, reduction):
    """A known ``reduction``; float ``logits`` ``(N, T, V)``; ``labels`` ``(N, T)`` in ``[0, V)`` and
    ``valid_lens`` ``(N,)`` in ``[0, T]``, both on the logits' backend."""
    if reduction not in REDUCTIONS:
        raise InvalidValueError(f"reduction: expected one of {REDUCTIONS}, got {reduction!r}")
    check_float_array("logits", logits)
    check_ndim("logits", logits, 3, "(N, T, V)")
    n, t, v = logits.shape
    check_shape("labels", labels, (n, t))
    check_same_backend("labels", labels, logits)
    check_index_range("labels", labels, v, what="token ids")
    check_shape("valid_lens", valid_lens, (n,))
    check_same_backend("valid_lens", valid_lens, logits)
    check_index_range("valid_lens", valid_lens, t + 1, what="lengths")


def _check_regression(pred, target):
    """Float ``pred`` with at least one element and a float ``target`` of its shape and backend."""
    check_float_array("pred", pred)
    check_float_array("target", target)
    check_same_backend("target", target, pred)
    check_shape("target", target, tuple(pred.shape))
    if pred.size == 0:
        raise InvalidValueError(f"pred: expected at least one element, got shape {tuple(pred.shape)}")


def _check_dloss(dloss, cache):
    """The upstream gradient of a loss, a number or an array: a scalar, or ``(N,)`` for ``reduction="none"``."""
    like = cache.diff if isinstance(cache, MSECache) else cache.probs
    shape = tuple(like.shape[:1]) if getattr(cache, "reduction", None) == "none" else ()
    check_shape("dloss", backend.get_array_module(like).asarray(dloss, dtype=like.dtype), shape)
