"""The deep set's forwards and backwards: npseq's stacked and bidirectional layers with every weight named.

:func:`npseq.functional.stacked_forward` and :func:`npseq.functional.bidirectional_forward` take their weights as
a list of tuples, one per layer and direction, and their backwards return the weights' gradients so. An exercise
is graded on named arrays (finite differences move one input at a time; a report names one gradient at a
time), so the course calls them through these wrappers, for a tanh RNN cell: two layers, or two directions, each
with its own ``Wx``, ``Wh``, ``b``. Nothing is computed here but the wiring; the maths is npseq's.

These are the graded references of :mod:`npseq.course.sets.deep` and its hand-out's forwards; they are not part
of npseq's public API.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import functional as F

__all__ = ["StackedRNNGrads", "BidirectionalRNNGrads", "stacked_rnn_forward", "stacked_rnn_backward",
           "bidirectional_rnn_forward", "bidirectional_rnn_backward"]


class StackedRNNGrads(NamedTuple):
    dx: Any    # (N, T, D)
    dh0: Any   # (2, N, H): layer 1's initial state, then layer 2's
    dWx1: Any  # (D, H)
    dWh1: Any  # (H, H)
    db1: Any   # (H,)
    dWx2: Any  # (H, H): layer 2 reads layer 1's outputs
    dWh2: Any  # (H, H)
    db2: Any   # (H,)


class BidirectionalRNNGrads(NamedTuple):
    dx: Any     # (N, T, D): what both directions send back to the inputs
    dh0: Any    # (2, N, H): the forward direction's initial state, then the backward direction's
    dWx_f: Any  # (D, H)
    dWh_f: Any  # (H, H)
    db_f: Any   # (H,)
    dWx_b: Any  # (D, H)
    dWh_b: Any  # (H, H)
    db_b: Any   # (H,)


def stacked_rnn_forward(x, h0, Wx1, Wh1, b1, Wx2, Wh2, b2, valid_lens=None):
    """Two tanh RNN layers, the second reading the first's outputs: :func:`npseq.functional.stacked_forward`.

    Args:
        x: ``(N, T, D)``; h0: ``(2, N, H)``, layer 1's initial state then layer 2's.
        Wx1: ``(D, H)``; Wh1: ``(H, H)``; b1: ``(H,)``: layer 1. Wx2: ``(H, H)``; Wh2: ``(H, H)``; b2: ``(H,)``:
            layer 2.
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.

    Returns:
        layer 2's outputs ``(N, T, H)`` and a :class:`~npseq.functional.StackedCache`.
    """
    return F.stacked_forward(x, h0, [(Wx1, Wh1, b1), (Wx2, Wh2, b2)], "rnn", valid_lens)


def stacked_rnn_backward(dy, cache) -> StackedRNNGrads:
    """Backward of :func:`stacked_rnn_forward`: :func:`npseq.functional.stacked_backward`, each weight named."""
    grads = F.stacked_backward(dy, cache)
    (dWx1, dWh1, db1), (dWx2, dWh2, db2) = grads.dparams
    return StackedRNNGrads(grads.dx, grads.dh0, dWx1, dWh1, db1, dWx2, dWh2, db2)


def bidirectional_rnn_forward(x, h0, Wx_f, Wh_f, b_f, Wx_b, Wh_b, b_b, valid_lens=None):
    """A bidirectional tanh RNN layer: :func:`npseq.functional.bidirectional_forward`.

    Args:
        x: ``(N, T, D)``; h0: ``(2, N, H)``, the forward direction's initial state then the backward one's.
        Wx_f: ``(D, H)``; Wh_f: ``(H, H)``; b_f: ``(H,)``: the forward direction. Wx_b, Wh_b, b_b: the backward
            direction, the same shapes.
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.

    Returns:
        the outputs ``(N, T, 2H)`` and a :class:`~npseq.functional.BidirectionalCache`.
    """
    return F.bidirectional_forward(x, h0, [(Wx_f, Wh_f, b_f), (Wx_b, Wh_b, b_b)], "rnn", valid_lens)


def bidirectional_rnn_backward(dy, cache) -> BidirectionalRNNGrads:
    """Backward of :func:`bidirectional_rnn_forward`: :func:`npseq.functional.bidirectional_backward`, each weight
    named."""
    grads = F.bidirectional_backward(dy, cache)
    (dWx_f, dWh_f, db_f), (dWx_b, dWh_b, db_b) = grads.dparams
    return BidirectionalRNNGrads(grads.dx, grads.dh0, dWx_f, dWh_f, db_f, dWx_b, dWh_b, db_b)
