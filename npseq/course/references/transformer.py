r"""The residual-norm sub-layer of the transformer set as one forward and its backward, kept with the course: the
feed-forward block inside a post-norm residual connection (Vaswani et al. 2017, section 3.1),

.. math::
    y = \operatorname{LN}\bigl(x + \operatorname{FFN}(x)\bigr).

npseq's :func:`~npseq.functional.residual_norm_backward` takes the sub-layer's backward as an argument; this one
fixes it to the feed-forward block's, so that the engine has the one signature the learner's backward has,
``(dy, cache)``, and returns the parameters' gradients side by side.

This is the graded reference of :mod:`npseq.course.sets.transformer`'s ``residual_norm_backward``; it is not part
of npseq's public API.
"""
from __future__ import annotations

from ... import functional as F

__all__ = ["feed_forward_sublayer_forward", "feed_forward_sublayer_backward"]


def feed_forward_sublayer_forward(x, W1, b1, W2, b2, gamma, beta, eps: float = 1e-5):
    r"""One post-norm residual sub-layer around the ReLU feed-forward block (Vaswani et al., section 3.1):

    .. math::
        y = \operatorname{LN}\bigl(x + \operatorname{FFN}(x)\bigr), \qquad
        \operatorname{FFN}(x) = \operatorname{relu}(x W_1 + b_1) W_2 + b_2,

    npseq's :func:`~npseq.functional.residual_norm_forward` (``order="post"``) with
    :func:`~npseq.functional.feed_forward_forward` as the sub-layer.

    Args:
        x: ``(..., D)``; W1 ``(D, F)``, b1 ``(F,)``, W2 ``(F, D)``, b2 ``(D,)``; gamma, beta ``(D,)``.
        eps: the layer norm's :math:`\epsilon`.

    Returns:
        ``y`` shaped like ``x`` and npseq's ``ResidualNormCache`` (``.sublayer`` the ``FeedForwardCache``,
        ``.norm`` the ``LayerNormCache``).
    """
    return F.residual_norm_forward(x, lambda z: F.feed_forward_forward(z, W1, b1, W2, b2), gamma, beta, "post", eps)


def _feed_forward_as_sublayer(dfx, cache):
    dx, *parameters = F.feed_forward_backward(dfx, cache)
    return dx, tuple(parameters)


def feed_forward_sublayer_backward(dy, cache):
    r"""Backward of :func:`feed_forward_sublayer_forward` (the engine of the residual-norm exercise): npseq's
    :func:`~npseq.functional.residual_norm_backward` with :func:`~npseq.functional.feed_forward_backward` as the
    sub-layer's backward,

    .. math::
        ds = \operatorname{LN}^\top(dy), \qquad dx = ds + \operatorname{FFN}^\top(ds).

    Args:
        dy: shaped like ``x``.

    Returns:
        ``dx`` shaped like ``x``, ``dW1`` ``(D, F)``, ``db1`` ``(F,)``, ``dW2`` ``(F, D)``, ``db2`` ``(D,)``,
        ``dgamma`` ``(D,)``, ``dbeta`` ``(D,)``.
    """
    dx, dgamma, dbeta, (dW1, db1, dW2, db2) = F.residual_norm_backward(dy, cache, _feed_forward_as_sublayer)
    return dx, dW1, db1, dW2, db2, dgamma, dbeta
