r"""Recurrent cells conditioned on an outside vector :math:`v` (an image's features, in captioning).

Two ways to let a per-sequence vector ``v`` ``(N, F)`` steer an RNN, GRU or LSTM:

**Every step** (the conditioning term enters every step's pre-activations):

.. math:: a_t = x_t W_x + v W_v + h_{t-1} W_h + b

with ``Wv`` ``(F, kH)`` holding a block of ``H`` columns per gate, like ``Wx``. For the GRU the term
joins the input side, :math:`x_t W_x + b_x + v W_v`, in both variants. Because
:math:`x_t W_x + v W_v = [x_t, v] \, [W_x; W_v]`, the every-step cell *is* the plain cell run on the
joint input :math:`[x_t, v]` with the stacked weights :math:`[W_x; W_v]`
(:func:`join_conditioning`), and its backward splits the joint gradients back
(:func:`split_conditioning`). Since :math:`v` is the same at every step, its gradient sums over the
steps,

.. math::
    dv = \sum_t m_t\, da_t W_v^\top = \Big(\sum_t m_t\, da_t\Big) W_v^\top, \qquad
    dW_v = v^\top \Big(\sum_t m_t\, da_t\Big),

where :math:`da_t` is the gradient of step :math:`t`'s pre-activations and a padded step
(:math:`m_t = 0`) contributes nothing. ``dv_steps[:, t]`` :math:`= m_t\, da_t W_v^\top` is step
:math:`t`'s share.

**First step** (CS231n's captioning model, ``h0 = features @ W_proj + b_proj``): ``v`` only sets the
initial state through an affine map, and the cells run unchanged (the LSTM's cell state starts at zero):

.. math:: h_0 = v W_v + b_v, \qquad dv = dh_0 W_v^\top, \quad dW_v = v^\top dh_0, \quad
          db_v = \textstyle\sum_n dh_{0,n}

with ``Wv`` ``(F, H)`` and ``bv`` ``(H,)``. All of :math:`v`'s gradient then has to travel back
through every step to :math:`h_0`.

Shapes: ``x`` ``(N, T, D)``, ``v`` ``(N, F)``, ``h0`` ``(N, H)``, the cells' weights as in
:mod:`npseq.functional.recurrent`, ``valid_lens`` ``None`` or ``(N,)``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_float_array, check_ndim, check_shape
from ..errors import InvalidValueError
from .recurrent import gru_backward, gru_forward, lstm_backward, lstm_forward, rnn_backward, rnn_forward

__all__ = [
    "EveryStepCache", "FirstStepCache", "JointGrads", "ConditionedRNNGrads", "ConditionedGRUGrads",
    "FirstStepRNNGrads", "FirstStepGRUGrads",
    "join_conditioning", "split_conditioning", "initial_state_from",
    "rnn_every_step_forward", "rnn_every_step_backward", "gru_every_step_forward", "gru_every_step_backward",
    "lstm_every_step_forward", "lstm_every_step_backward",
    "rnn_first_step_forward", "rnn_first_step_backward", "gru_first_step_forward", "gru_first_step_backward",
    "lstm_first_step_forward", "lstm_first_step_backward",
]


class EveryStepCache(NamedTuple):
    inner: Any       # the plain cell's cache (RNNCache, GRUCache or LSTMCache) on the joint input [x_t, v]
    input_size: int  # D: the joint input's first D features are x_t, the rest v


class FirstStepCache(NamedTuple):
    inner: Any  # the plain cell's cache, run from h0 = v Wv + bv
    v: Any      # (N, F) the conditioning vector
    Wv: Any     # (F, H)


class JointGrads(NamedTuple):
    dx: Any        # (N, T, D)
    dv: Any        # (N, F) summed over the steps
    dv_steps: Any  # (N, T, F) each step's share of dv (zero at padded steps)
    dWx: Any       # (D, kH)
    dWv: Any       # (F, kH)


# Each backward returns its gradients in its forward's argument order, as one of the records below. Their shapes,
# stated once (k: the cell's gate blocks, 1, 3 or 4); W_v maps v to every step's gates, or to h_0 alone:
_GRAD_SHAPES = {"dx": "(N, T, D)", "dv": "(N, F)", "dh0": "(N, H)", "dWx": "(D, kH)", "dWh": "(H, kH)",
                "dbv": "(H,)", "db": "(kH,)", "dbx": "(3H,)", "dbh": "(3H,)"}
_EVERY_STEP_SHAPES = dict(_GRAD_SHAPES, dWv="(F, kH)")
_FIRST_STEP_SHAPES = dict(_GRAD_SHAPES, dWv="(F, H)")


def _gradient_record(name: str, fields: str, shapes: dict, *functions: str) -> type:
    """A record of the gradients ``fields`` of ``functions``, in that order, with their shapes as its doc."""
    names = fields.split()
    record = NamedTuple(name, [(field, Any) for field in names])
    record.__doc__ = (f"Gradients of {' and '.join(f':func:`{f}`' for f in functions)}, in the argument order: "
                      + ", ".join(f"``{field}`` {shapes[field]}" for field in names) + ".")
    return record


ConditionedRNNGrads = _gradient_record("ConditionedRNNGrads", "dx dv dh0 dWx dWh dWv db", _EVERY_STEP_SHAPES,
                                       "rnn_every_step_forward", "lstm_every_step_forward")
ConditionedGRUGrads = _gradient_record("ConditionedGRUGrads", "dx dv dh0 dWx dWh dWv dbx dbh", _EVERY_STEP_SHAPES,
                                       "gru_every_step_forward")
FirstStepRNNGrads = _gradient_record("FirstStepRNNGrads", "dx dv dWv dbv dWx dWh db", _FIRST_STEP_SHAPES,
                                     "rnn_first_step_forward", "lstm_first_step_forward")
FirstStepGRUGrads = _gradient_record("FirstStepGRUGrads", "dx dv dWv dbv dWx dWh dbx dbh", _FIRST_STEP_SHAPES,
                                     "gru_first_step_forward")


# ============================================================ every step
def join_conditioning(x, v, Wx, Wv):
    r"""The joint input and weights of the every-step cells: :math:`[x_t, v]` and :math:`[W_x; W_v]`.

    .. math:: [x_t, v] \, [W_x; W_v] = x_t W_x + v W_v

    Args:
        x: ``(N, T, D)``; v: ``(N, F)``; Wx: ``(D, kH)``; Wv: ``(F, kH)``.

    Returns:
        ``xv`` ``(N, T, D + F)`` (``v`` repeated at every step) and ``Wxv`` ``(D + F, kH)``.
    """
    _check_joint(x, v, Wx, Wv)
    xp = backend.get_array_module(x)
    repeated = xp.broadcast_to(v[:, None, :], (x.shape[0], x.shape[1], v.shape[1]))
    return xp.concatenate([x, repeated], axis=2), xp.concatenate([Wx, Wv], axis=0)


def split_conditioning(dxv, dWxv, input_size: int) -> JointGrads:
    r"""The joint gradients split back: :math:`dx_t`, :math:`dv = \sum_t dv_t` and :math:`dW_x`, :math:`dW_v`.

    Args:
        dxv: ``(N, T, D + F)`` the gradient of the joint input; its last ``F`` features at step ``t``
            are :math:`m_t\, da_t W_v^\top`, step ``t``'s share of :math:`dv`.
        dWxv: ``(D + F, kH)`` the gradient of the stacked weights.
        input_size: ``D``.

    Returns:
        a :class:`JointGrads`.
    """
    dv_steps = dxv[:, :, input_size:]
    return JointGrads(dxv[:, :, :input_size], dv_steps.sum(axis=1), dv_steps, dWxv[:input_size], dWxv[input_size:])


def rnn_every_step_forward(x, v, h0, Wx, Wh, Wv, b, valid_lens=None):
    r"""A vanilla RNN conditioned on ``v`` at every step.

    .. math::
        \tilde h_t &= \tanh(x_t W_x + v W_v + h_{t-1} W_h + b), \\
        h_t &= m_t \tilde h_t + (1 - m_t) h_{t-1}, \qquad y_t = m_t \tilde h_t

    Args:
        x: ``(N, T, D)``; v: ``(N, F)``; h0: ``(N, H)``; Wx: ``(D, H)``; Wh: ``(H, H)``; Wv: ``(F, H)``;
        b: ``(H,)``; valid_lens: ``None`` or ``(N,)``.

    Returns:
        the outputs ``(N, T, H)`` and an :class:`EveryStepCache` (``cache.inner.h_last`` is the final state).
    """
    xv, Wxv = join_conditioning(x, v, Wx, Wv)
    h, inner = rnn_forward(xv, h0, Wxv, Wh, b, valid_lens)
    return h, EveryStepCache(inner, x.shape[2])


def rnn_every_step_backward(dh, cache: EveryStepCache, dh_last=None) -> ConditionedRNNGrads:
    r"""Backward of :func:`rnn_every_step_forward`: :func:`~npseq.functional.recurrent.rnn_backward` on the
    joint input, then :math:`dv = \sum_t m_t\, da_t W_v^\top`, :math:`dW_v = v^\top \sum_t m_t\, da_t`.

    Args:
        dh: ``(N, T, H)``; cache: from the forward; dh_last: ``(N, H)`` or ``None``.

    Returns:
        a :class:`ConditionedRNNGrads` ``(dx, dv, dh0, dWx, dWh, dWv, db)``.
    """
    dxv, dh0, dWxv, dWh, db = rnn_backward(dh, cache.inner, dh_last)
    joint = split_conditioning(dxv, dWxv, cache.input_size)
    return ConditionedRNNGrads(joint.dx, joint.dv, dh0, joint.dWx, dWh, joint.dWv, db)


def gru_every_step_forward(x, v, h0, Wx, Wh, Wv, bx, bh, reset_after=False, valid_lens=None):
    r"""A GRU conditioned on ``v`` at every step: the term joins the input side of all three gates,

    .. math::
        r_t &= \sigma(x_t W_{xr} + v W_{vr} + b_{xr} + h_{t-1} W_{hr} + b_{hr}), \quad z_t \text{ likewise} \\
        n_t &= \tanh(x_t W_{xn} + v W_{vn} + b_{xn} + (r_t \odot h_{t-1}) W_{hn} + b_{hn})
            \quad \text{(reset after: } r_t \odot (h_{t-1} W_{hn} + b_{hn})\text{)} \\
        \tilde h_t &= (1 - z_t) \odot n_t + z_t \odot h_{t-1}

    with the padding mix of :func:`~npseq.functional.recurrent.gru_forward`.

    Args:
        x: ``(N, T, D)``; v: ``(N, F)``; h0: ``(N, H)``; Wx: ``(D, 3H)``; Wh: ``(H, 3H)``; Wv: ``(F, 3H)``;
        bx, bh: ``(3H,)``; reset_after: the variant; valid_lens: ``None`` or ``(N,)``.

    Returns:
        the outputs ``(N, T, H)`` and an :class:`EveryStepCache`.
    """
    xv, Wxv = join_conditioning(x, v, Wx, Wv)
    h, inner = gru_forward(xv, h0, Wxv, Wh, bx, bh, reset_after, valid_lens)
    return h, EveryStepCache(inner, x.shape[2])


def gru_every_step_backward(dh, cache: EveryStepCache, dh_last=None) -> ConditionedGRUGrads:
    r"""Backward of :func:`gru_every_step_forward`, with :math:`da_t = [da_r, da_z, da_n]`, the input-side
    pre-activation gradients of :func:`~npseq.functional.recurrent.gru_step_backward`:
    :math:`dv = \sum_t m_t\, da_t W_v^\top`, :math:`dW_v = v^\top \sum_t m_t\, da_t`.

    Returns:
        a :class:`ConditionedGRUGrads` ``(dx, dv, dh0, dWx, dWh, dWv, dbx, dbh)``.
    """
    dxv, dh0, dWxv, dWh, dbx, dbh = gru_backward(dh, cache.inner, dh_last)
    joint = split_conditioning(dxv, dWxv, cache.input_size)
    return ConditionedGRUGrads(joint.dx, joint.dv, dh0, joint.dWx, dWh, joint.dWv, dbx, dbh)


def lstm_every_step_forward(x, v, h0, Wx, Wh, Wv, b, valid_lens=None):
    r"""An LSTM conditioned on ``v`` at every step (the cell state starts at zero):

    .. math::
        a_t = x_t W_x + v W_v + h_{t-1} W_h + b = [a_i, a_f, a_o, a_g], \quad
        \tilde c_t = f_t \odot c_{t-1} + i_t \odot g_t, \quad \tilde h_t = o_t \odot \tanh(\tilde c_t)

    with the padding mix of :func:`~npseq.functional.recurrent.lstm_forward`.

    Args:
        x: ``(N, T, D)``; v: ``(N, F)``; h0: ``(N, H)``; Wx: ``(D, 4H)``; Wh: ``(H, 4H)``; Wv: ``(F, 4H)``;
        b: ``(4H,)``; valid_lens: ``None`` or ``(N,)``.

    Returns:
        the outputs ``(N, T, H)`` and an :class:`EveryStepCache`.
    """
    xv, Wxv = join_conditioning(x, v, Wx, Wv)
    h, inner = lstm_forward(xv, h0, Wxv, Wh, b, valid_lens)
    return h, EveryStepCache(inner, x.shape[2])


def lstm_every_step_backward(dh, cache: EveryStepCache, dh_last=None, dc_last=None) -> ConditionedRNNGrads:
    r"""Backward of :func:`lstm_every_step_forward`: :math:`dv = \sum_t m_t\, da_t W_v^\top`,
    :math:`dW_v = v^\top \sum_t m_t\, da_t` with :math:`da_t = [da_i, da_f, da_o, da_g]`.

    Returns:
        a :class:`ConditionedRNNGrads` ``(dx, dv, dh0, dWx, dWh, dWv, db)``.
    """
    dxv, dh0, dWxv, dWh, db = lstm_backward(dh, cache.inner, dh_last, dc_last)
    joint = split_conditioning(dxv, dWxv, cache.input_size)
    return ConditionedRNNGrads(joint.dx, joint.dv, dh0, joint.dWx, dWh, joint.dWv, db)


# ============================================================ first step
def initial_state_from(v, Wv, bv):
    r"""CS231n's projection of the features to the initial state, :math:`h_0 = v W_v + b_v`.

    Args:
        v: ``(N, F)``; Wv: ``(F, H)``; bv: ``(H,)``.

    Returns:
        ``h0`` ``(N, H)``.
    """
    _check_projection(v, Wv, bv)
    return v @ Wv + bv


def rnn_first_step_forward(x, v, Wv, bv, Wx, Wh, b, valid_lens=None):
    r"""A vanilla RNN that sees ``v`` only through its initial state, :math:`h_0 = v W_v + b_v`, then
    :math:`\tilde h_t = \tanh(x_t W_x + h_{t-1} W_h + b)` with the padding mix.

    Args:
        x: ``(N, T, D)``; v: ``(N, F)``; Wv: ``(F, H)``; bv: ``(H,)``; Wx: ``(D, H)``; Wh: ``(H, H)``;
        b: ``(H,)``; valid_lens: ``None`` or ``(N,)``.

    Returns:
        the outputs ``(N, T, H)`` and a :class:`FirstStepCache`.
    """
    h, inner = rnn_forward(x, initial_state_from(v, Wv, bv), Wx, Wh, b, valid_lens)
    return h, FirstStepCache(inner, v, Wv)


def rnn_first_step_backward(dh, cache: FirstStepCache, dh_last=None) -> FirstStepRNNGrads:
    r"""Backward of :func:`rnn_first_step_forward`: BPTT down to :math:`dh_0`, then
    :math:`dv = dh_0 W_v^\top`, :math:`dW_v = v^\top dh_0`, :math:`db_v = \sum_n dh_{0,n}`.

    Returns:
        a :class:`FirstStepRNNGrads` ``(dx, dv, dWv, dbv, dWx, dWh, db)``.
    """
    dx, dh0, dWx, dWh, db = rnn_backward(dh, cache.inner, dh_last)
    return FirstStepRNNGrads(dx, dh0 @ cache.Wv.T, cache.v.T @ dh0, dh0.sum(axis=0), dWx, dWh, db)


def gru_first_step_forward(x, v, Wv, bv, Wx, Wh, bx, bh, reset_after=False, valid_lens=None):
    r"""A GRU that sees ``v`` only through :math:`h_0 = v W_v + b_v` (see
    :func:`~npseq.functional.recurrent.gru_forward` for the cell).

    Args:
        x: ``(N, T, D)``; v: ``(N, F)``; Wv: ``(F, H)``; bv: ``(H,)``; Wx: ``(D, 3H)``; Wh: ``(H, 3H)``;
        bx, bh: ``(3H,)``; reset_after: the variant; valid_lens: ``None`` or ``(N,)``.

    Returns:
        the outputs ``(N, T, H)`` and a :class:`FirstStepCache`.
    """
    h, inner = gru_forward(x, initial_state_from(v, Wv, bv), Wx, Wh, bx, bh, reset_after, valid_lens)
    return h, FirstStepCache(inner, v, Wv)


def gru_first_step_backward(dh, cache: FirstStepCache, dh_last=None) -> FirstStepGRUGrads:
    r"""Backward of :func:`gru_first_step_forward`: :math:`dv = dh_0 W_v^\top`, :math:`dW_v = v^\top dh_0`,
    :math:`db_v = \sum_n dh_{0,n}`.

    Returns:
        a :class:`FirstStepGRUGrads` ``(dx, dv, dWv, dbv, dWx, dWh, dbx, dbh)``.
    """
    dx, dh0, dWx, dWh, dbx, dbh = gru_backward(dh, cache.inner, dh_last)
    return FirstStepGRUGrads(dx, dh0 @ cache.Wv.T, cache.v.T @ dh0, dh0.sum(axis=0), dWx, dWh, dbx, dbh)


def lstm_first_step_forward(x, v, Wv, bv, Wx, Wh, b, valid_lens=None):
    r"""An LSTM that sees ``v`` only through :math:`h_0 = v W_v + b_v`, with :math:`c_0 = 0` (CS231n).

    Args:
        x: ``(N, T, D)``; v: ``(N, F)``; Wv: ``(F, H)``; bv: ``(H,)``; Wx: ``(D, 4H)``; Wh: ``(H, 4H)``;
        b: ``(4H,)``; valid_lens: ``None`` or ``(N,)``.

    Returns:
        the outputs ``(N, T, H)`` and a :class:`FirstStepCache`.
    """
    h, inner = lstm_forward(x, initial_state_from(v, Wv, bv), Wx, Wh, b, valid_lens)
    return h, FirstStepCache(inner, v, Wv)


def lstm_first_step_backward(dh, cache: FirstStepCache, dh_last=None, dc_last=None) -> FirstStepRNNGrads:
    r"""Backward of :func:`lstm_first_step_forward`: :math:`dv = dh_0 W_v^\top`, :math:`dW_v = v^\top dh_0`,
    :math:`db_v = \sum_n dh_{0,n}`.

    Returns:
        a :class:`FirstStepRNNGrads` ``(dx, dv, dWv, dbv, dWx, dWh, db)``.
    """
    dx, dh0, dWx, dWh, db = lstm_backward(dh, cache.inner, dh_last, dc_last)
    return FirstStepRNNGrads(dx, dh0 @ cache.Wv.T, cache.v.T @ dh0, dh0.sum(axis=0), dWx, dWh, db)


# ======================================================== argument checks
def _check_joint(x, v, Wx, Wv):
    """Float ``x`` ``(N, T, D)``, ``v`` ``(N, F)`` and ``Wv`` ``(F, kH)``, with ``kH`` the columns of ``Wx``."""
    check_float_array("x", x)
    check_ndim("x", x, 3, "(N, T, D)")
    check_float_array("v", v)
    check_ndim("v", v, 2, "(N, F)")
    check_shape("v", v, (x.shape[0], v.shape[1]))
    check_float_array("Wv", Wv)
    check_shape("Wv", Wv, (v.shape[1], Wx.shape[1]))


def _check_projection(v, Wv, bv):
    """Float ``v`` ``(N, F)``, ``Wv`` ``(F, H)`` and ``bv`` ``(H,)``."""
    check_float_array("v", v)
    check_ndim("v", v, 2, "(N, F)")
    check_float_array("Wv", Wv)
    check_ndim("Wv", Wv, 2, "(F, H)")
    if Wv.shape[0] != v.shape[1]:
        raise InvalidValueError(f"Wv: expected shape ({v.shape[1]}, H) to fit v {tuple(v.shape)}, "
                                f"got {tuple(Wv.shape)}")
    check_float_array("bv", bv)
    check_shape("bv", bv, (Wv.shape[1],))
