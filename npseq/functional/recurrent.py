r"""Recurrent cells, the reference: the vanilla RNN, the GRU (both variants) and the LSTM.

This is the module to read. Each step function computes the equations of its docstring
one line each, with named temporaries, and its backward walks them back in reverse
order; each sequence function is a loop over its step. The names and signatures are
those of the CS231n RNN assignment (``rnn_step_forward``, ``rnn_forward``, ...).

Row-vector maths: inputs ``x`` ``(N, D)`` and states ``h`` ``(N, H)`` give the
pre-activations ``x Wx + h Wh + b`` with ``Wx`` ``(D, kH)`` and ``Wh`` ``(H, kH)``, whose ``k``
blocks of ``H`` columns are the gates, in the order GRU ``[r, z, n]`` and LSTM
``[i, f, o, g]``. Arrays of different float dtypes follow NumPy's promotion.

Padding: the sequence functions take ``valid_lens`` ``(N,)``. With
:math:`m_t = [t < \ell_n]`, a padded step keeps the state and outputs zero,
:math:`h_t = m_t \tilde h_t + (1 - m_t) h_{t-1}` and :math:`y_t = m_t \tilde h_t`, where
:math:`\tilde h_t` is what the cell computes, so the final state is each sequence's own
last valid state.

The layers of :mod:`npseq.nn` run the same maths through :mod:`npseq.functional.fast_recurrent`,
arranged for speed; the tests hold it equal to the loops here within 1e-12.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import (
    check_padding_lens,
    check_recurrent_inputs,
    check_sequence_grads,
    check_shape,
    check_state_grads,
)
from .activations import sigmoid

__all__ = [
    "RNNStepCache", "GRUStepCache", "GRUResetAfterStepCache", "LSTMStepCache", "RNNCache", "GRUCache", "LSTMCache",
    "rnn_step_forward", "rnn_step_backward", "gru_step_forward", "gru_step_backward",
    "lstm_step_forward", "lstm_step_backward", "padding_mask",
    "rnn_forward", "rnn_backward", "gru_forward", "gru_backward", "lstm_forward", "lstm_backward",
]


# =================================================================== vanilla RNN
class RNNStepCache(NamedTuple):
    x: Any       # (N, D) input of this step
    prev_h: Any  # (N, H) previous state
    Wx: Any      # (D, H)
    Wh: Any      # (H, H)
    next_h: Any  # (N, H) tanh(a), which is all that tanh'(a) = 1 - next_h^2 needs


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    r"""One step of a vanilla (tanh) RNN.

    .. math:: a = x W_x + h_{prev} W_h + b, \qquad h_{next} = \tanh(a)

    Args:
        x: ``(N, D)``; prev_h: ``(N, H)``; Wx: ``(D, H)``; Wh: ``(H, H)``; b: ``(H,)``.

    Returns:
        ``next_h`` ``(N, H)`` and an :class:`RNNStepCache`.
    """
    check_recurrent_inputs(x, {"prev_h": prev_h}, Wx, Wh, {"b": b}, gates=1)
    xp = backend.get_array_module(x)
    a = x @ Wx + prev_h @ Wh + b
    next_h = xp.tanh(a)
    return next_h, RNNStepCache(x, prev_h, Wx, Wh, next_h)


def rnn_step_backward(dnext_h, cache: RNNStepCache):
    r"""Backward of :func:`rnn_step_forward`.

    .. math::
        da &= dh_{next} \odot (1 - h_{next}^2) \\
        dx &= da\, W_x^\top, \qquad dh_{prev} = da\, W_h^\top \\
        dW_x &= x^\top da, \qquad dW_h = h_{prev}^\top da, \qquad db = \textstyle\sum_n da_n

    Args:
        dnext_h: ``(N, H)``.

    Returns:
        ``dx`` ``(N, D)``, ``dprev_h`` ``(N, H)``, ``dWx`` ``(D, H)``, ``dWh`` ``(H, H)``, ``db`` ``(H,)``.
    """
    check_shape("dnext_h", dnext_h, tuple(cache.next_h.shape))
    da = dnext_h * (1 - cache.next_h ** 2)
    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWx = cache.x.T @ da
    dWh = cache.prev_h.T @ da
    db = da.sum(axis=0)
    return dx, dprev_h, dWx, dWh, db


# ========================================================================== GRU
class GRUStepCache(NamedTuple):
    x: Any       # (N, D)
    prev_h: Any  # (N, H)
    Wx: Any      # (D, 3H)
    Wh: Any      # (H, 3H)
    r: Any       # (N, H) reset gate
    z: Any       # (N, H) update gate
    n: Any       # (N, H) candidate state
    reset_after = False  # the variant (a class constant, not a field)


class GRUResetAfterStepCache(NamedTuple):
    x: Any       # (N, D)
    prev_h: Any  # (N, H)
    Wx: Any      # (D, 3H)
    Wh: Any      # (H, 3H)
    r: Any       # (N, H) reset gate
    z: Any       # (N, H) update gate
    n: Any       # (N, H) candidate state
    hn: Any      # (N, H) prev_h W_hn + b_hn, the term that r scales
    reset_after = True


def gru_step_forward(x, prev_h, Wx, Wh, bx, bh, reset_after=False):
    r"""One GRU step, in either published variant.

    .. math::
        r &= \sigma(x W_{xr} + b_{xr} + h W_{hr} + b_{hr}) \\
        z &= \sigma(x W_{xz} + b_{xz} + h W_{hz} + b_{hz}) \\
        n &= \tanh(x W_{xn} + b_{xn} + (r \odot h) W_{hn} + b_{hn})
            \quad \text{(reset before: Cho et al. 2014, d2l)} \\
        n &= \tanh(x W_{xn} + b_{xn} + r \odot (h W_{hn} + b_{hn}))
            \quad \text{(reset after: cuDNN, PyTorch, Keras)} \\
        h' &= (1 - z) \odot n + z \odot h

    where :math:`h` is ``prev_h`` and :math:`W_{xr}, W_{xz}, W_{xn}` are the three
    ``H``-column blocks of ``Wx`` (likewise for ``Wh``, ``bx``, ``bh``).

    Args:
        x: ``(N, D)``; prev_h: ``(N, H)``; Wx: ``(D, 3H)``; Wh: ``(H, 3H)``; bx, bh: ``(3H,)``.
        reset_after: ``False`` for reset before, ``True`` for reset after (``torch.nn.GRU``).

    Returns:
        ``next_h`` ``(N, H)`` and a :class:`GRUStepCache` (reset before) or a
        :class:`GRUResetAfterStepCache` (reset after).
    """
    check_recurrent_inputs(x, {"prev_h": prev_h}, Wx, Wh, {"bx": bx, "bh": bh}, gates=3)
    xp = backend.get_array_module(x)
    H = prev_h.shape[1]
    r_, z_, n_ = slice(0, H), slice(H, 2 * H), slice(2 * H, 3 * H)  # the gates' column blocks
    r = sigmoid(x @ Wx[:, r_] + bx[r_] + prev_h @ Wh[:, r_] + bh[r_])
    z = sigmoid(x @ Wx[:, z_] + bx[z_] + prev_h @ Wh[:, z_] + bh[z_])
    if reset_after:
        hn = prev_h @ Wh[:, n_] + bh[n_]
        n = xp.tanh(x @ Wx[:, n_] + bx[n_] + r * hn)
    else:
        n = xp.tanh(x @ Wx[:, n_] + bx[n_] + (r * prev_h) @ Wh[:, n_] + bh[n_])
    next_h = (1 - z) * n + z * prev_h
    if reset_after:
        return next_h, GRUResetAfterStepCache(x, prev_h, Wx, Wh, r, z, n, hn)
    return next_h, GRUStepCache(x, prev_h, Wx, Wh, r, z, n)


def gru_step_backward(dnext_h, cache):
    r"""Backward of :func:`gru_step_forward`.

    .. math::
        dn &= dh' \odot (1 - z), \qquad da_n = dn \odot (1 - n^2) \\
        dz &= dh' \odot (h - n), \qquad da_z = dz \odot z (1 - z)

    Reset before, with :math:`\rho = r \odot h`:

    .. math::
        d\rho &= da_n W_{hn}^\top, \qquad da_r = d\rho \odot h \odot r (1 - r) \\
        dh &= dh' \odot z + d\rho \odot r + da_r W_{hr}^\top + da_z W_{hz}^\top \\
        dW_h &= [\,h^\top da_r,\ h^\top da_z,\ \rho^\top da_n\,], \qquad db_h = db_x

    Reset after, with :math:`\eta = h W_{hn} + b_{hn}` (``cache.hn``):

    .. math::
        da_r &= da_n \odot \eta \odot r (1 - r), \qquad da^h = [da_r, da_z, da_n \odot r] \\
        dh &= dh' \odot z + da^h W_h^\top, \qquad dW_h = h^\top da^h, \qquad db_h = \textstyle\sum_n da^h_n

    and in both, with :math:`da^x = [da_r, da_z, da_n]`:

    .. math:: dx = da^x W_x^\top, \qquad dW_x = x^\top da^x, \qquad db_x = \textstyle\sum_n da^x_n

    Args:
        dnext_h: ``(N, H)`` (the :math:`dh'` above).
        cache: from :func:`gru_step_forward`.

    Returns:
        ``dx`` ``(N, D)``, ``dprev_h`` ``(N, H)``, ``dWx`` ``(D, 3H)``, ``dWh`` ``(H, 3H)``,
        ``dbx`` ``(3H,)``, ``dbh`` ``(3H,)``.
    """
    check_shape("dnext_h", dnext_h, tuple(cache.prev_h.shape))
    xp = backend.get_array_module(dnext_h)
    h, r, z, n, Wh = cache.prev_h, cache.r, cache.z, cache.n, cache.Wh
    H = h.shape[1]
    r_, z_, n_ = slice(0, H), slice(H, 2 * H), slice(2 * H, 3 * H)
    dn = dnext_h * (1 - z)
    dan = dn * (1 - n ** 2)
    dz = dnext_h * (h - n)
    daz = dz * z * (1 - z)
    dh = dnext_h * z
    if cache.reset_after:
        dar = dan * cache.hn * r * (1 - r)
        dah = xp.concatenate([dar, daz, dan * r], axis=1)
        dh = dh + dah @ Wh.T
        dWh = h.T @ dah
        dbh = dah.sum(axis=0)
    else:
        rho = r * h
        drho = dan @ Wh[:, n_].T
        dar = drho * h * r * (1 - r)
        dh = dh + drho * r + dar @ Wh[:, r_].T + daz @ Wh[:, z_].T
        dWh = xp.concatenate([h.T @ dar, h.T @ daz, rho.T @ dan], axis=1)
        dbh = xp.concatenate([dar, daz, dan], axis=1).sum(axis=0)
    dax = xp.concatenate([dar, daz, dan], axis=1)
    dx = dax @ cache.Wx.T
    dWx = cache.x.T @ dax
    dbx = dax.sum(axis=0)
    return dx, dh, dWx, dWh, dbx, dbh


# ========================================================================= LSTM
class LSTMStepCache(NamedTuple):
    x: Any       # (N, D)
    prev_h: Any  # (N, H)
    prev_c: Any  # (N, H)
    Wx: Any      # (D, 4H)
    Wh: Any      # (H, 4H)
    i: Any       # (N, H) input gate
    f: Any       # (N, H) forget gate
    o: Any       # (N, H) output gate
    g: Any       # (N, H) candidate cell
    tanh_c: Any  # (N, H) tanh(next_c)


def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    r"""One LSTM step, gate order ``[i, f, o, g]`` in the ``4H`` columns.

    .. math::
        a &= x W_x + h_{prev} W_h + b = [a_i, a_f, a_o, a_g] \\
        i &= \sigma(a_i),\quad f = \sigma(a_f),\quad o = \sigma(a_o),\quad g = \tanh(a_g) \\
        c_{next} &= f \odot c_{prev} + i \odot g \\
        h_{next} &= o \odot \tanh(c_{next})

    Args:
        x: ``(N, D)``; prev_h, prev_c: ``(N, H)``; Wx: ``(D, 4H)``; Wh: ``(H, 4H)``; b: ``(4H,)``.

    Returns:
        ``next_h`` ``(N, H)``, ``next_c`` ``(N, H)`` and an :class:`LSTMStepCache`.
    """
    check_recurrent_inputs(x, {"prev_h": prev_h, "prev_c": prev_c}, Wx, Wh, {"b": b}, gates=4)
    xp = backend.get_array_module(x)
    H = prev_h.shape[1]
    a = x @ Wx + prev_h @ Wh + b
    i = sigmoid(a[:, :H])
    f = sigmoid(a[:, H:2 * H])
    o = sigmoid(a[:, 2 * H:3 * H])
    g = xp.tanh(a[:, 3 * H:])
    next_c = f * prev_c + i * g
    tanh_c = xp.tanh(next_c)
    next_h = o * tanh_c
    return next_h, next_c, LSTMStepCache(x, prev_h, prev_c, Wx, Wh, i, f, o, g, tanh_c)


def lstm_step_backward(dnext_h, dnext_c, cache: LSTMStepCache):
    r"""Backward of :func:`lstm_step_forward`.

    .. math::
        dc &= dc_{next} + dh_{next} \odot o \odot (1 - \tanh^2 c_{next}) \\
        da_i &= dc \odot g \odot i (1 - i) \\
        da_f &= dc \odot c_{prev} \odot f (1 - f) \\
        da_o &= dh_{next} \odot \tanh(c_{next}) \odot o (1 - o) \\
        da_g &= dc \odot i \odot (1 - g^2) \\
        dc_{prev} &= dc \odot f \\
        dx &= da\, W_x^\top,\quad dh_{prev} = da\, W_h^\top \\
        dW_x &= x^\top da,\quad dW_h = h_{prev}^\top da,\quad db = \textstyle\sum_n da_n

    with :math:`da = [da_i, da_f, da_o, da_g]`.

    Args:
        dnext_h, dnext_c: ``(N, H)``.

    Returns:
        ``dx`` ``(N, D)``, ``dprev_h`` ``(N, H)``, ``dprev_c`` ``(N, H)``, ``dWx`` ``(D, 4H)``,
        ``dWh`` ``(H, 4H)``, ``db`` ``(4H,)``.
    """
    check_state_grads(cache.prev_h, dnext_h=dnext_h, dnext_c=dnext_c)
    xp = backend.get_array_module(dnext_h)
    i, f, o, g, tanh_c = cache.i, cache.f, cache.o, cache.g, cache.tanh_c
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    dai = dc * g * i * (1 - i)
    daf = dc * cache.prev_c * f * (1 - f)
    dao = dnext_h * tanh_c * o * (1 - o)
    dag = dc * i * (1 - g ** 2)
    dprev_c = dc * f
    da = xp.concatenate([dai, daf, dao, dag], axis=1)
    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWx = cache.x.T @ da
    dWh = cache.prev_h.T @ da
    db = da.sum(axis=0)
    return dx, dprev_h, dprev_c, dWx, dWh, db


# ===================================================================== sequences
def padding_mask(valid_lens, x):
    r"""The mask :math:`m_{nt} = [t < \ell_n]` ``(N, T)`` in ``x``'s dtype; all ones without ``valid_lens``.

    Args:
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.
        x: the inputs ``(N, T, D)``.
    """
    check_padding_lens(valid_lens, x)
    xp = backend.get_array_module(x)
    n, t_steps = x.shape[:2]
    if valid_lens is None:
        return xp.ones((n, t_steps), dtype=x.dtype)
    return (xp.arange(t_steps) < valid_lens[:, None]).astype(x.dtype)


class RNNCache(NamedTuple):
    steps: list  # one RNNStepCache per time step
    mask: Any    # (N, T) 1 at valid steps, 0 at padding
    h_last: Any  # (N, H) the final state: each sequence's last valid state


def rnn_forward(x, h0, Wx, Wh, b, valid_lens=None):
    r"""A vanilla RNN over a sequence: :func:`rnn_step_forward` at each step, with the padding mix.

    .. math::
        \tilde h_t = \tanh(x_t W_x + h_{t-1} W_h + b), \qquad
        h_t = m_t \tilde h_t + (1 - m_t) h_{t-1}, \qquad y_t = m_t \tilde h_t

    Args:
        x: ``(N, T, D)``; h0: ``(N, H)``; Wx: ``(D, H)``; Wh: ``(H, H)``; b: ``(H,)``.
        valid_lens: ``None`` (every step valid) or ``(N,)`` integers in ``[0, T]``.

    Returns:
        the outputs :math:`y` ``(N, T, H)`` and an :class:`RNNCache`.
    """
    check_recurrent_inputs(x, {"h0": h0}, Wx, Wh, {"b": b}, gates=1)
    xp = backend.get_array_module(x)
    mask = padding_mask(valid_lens, x)
    h, ys, steps = h0, [], []
    for t in range(x.shape[1]):
        m = mask[:, t, None]
        h_tilde, step = rnn_step_forward(x[:, t], h, Wx, Wh, b)
        h = m * h_tilde + (1 - m) * h
        ys.append(m * h_tilde)
        steps.append(step)
    return xp.stack(ys, axis=1), RNNCache(steps, mask, h)


def rnn_backward(dh, cache: RNNCache, dh_last=None):
    r"""Backward of :func:`rnn_forward` (backpropagation through time).

    From :math:`\delta_{T-1} = dh_{last}` (zeros if ``None``), the gradient reaching
    :math:`h_{T-1}` from beyond the sequence, for :math:`t = T-1, \ldots, 0`:

    .. math::
        g_t &= \delta_t + m_t\, dh_t \qquad (\partial L / \partial h_t) \\
        dx_t,\ dh_{prev},\ dW_{x,t},\ dW_{h,t},\ db_t &= \text{rnn\_step\_backward}(m_t\, g_t) \\
        \delta_{t-1} &= dh_{prev} + (1 - m_t)\, g_t

    then :math:`dh_0 = \delta_{-1}` and each weight's gradient is the sum of its steps'.

    Args:
        dh: ``(N, T, H)`` upstream gradient of the outputs.
        cache: from :func:`rnn_forward`.
        dh_last: ``(N, H)`` upstream gradient of the final state ``cache.h_last``, or ``None``.

    Returns:
        ``dx`` ``(N, T, D)``, ``dh0`` ``(N, H)``, ``dWx`` ``(D, H)``, ``dWh`` ``(H, H)``, ``db`` ``(H,)``.
    """
    check_sequence_grads(dh, cache, dh_last=dh_last)
    xp = backend.get_array_module(dh)
    delta = xp.zeros_like(cache.h_last) if dh_last is None else dh_last
    dxs, dWx, dWh, db = [], 0, 0, 0
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta + m * dh[:, t]
        dx_t, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m * g, cache.steps[t])
        delta = dprev_h + (1 - m) * g
        dxs.insert(0, dx_t)
        dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
    return xp.stack(dxs, axis=1), delta, dWx, dWh, db


class GRUCache(NamedTuple):
    steps: list  # one GRUStepCache (or GRUResetAfterStepCache) per time step
    mask: Any    # (N, T) 1 at valid steps, 0 at padding
    h_last: Any  # (N, H) the final state: each sequence's last valid state


def gru_forward(x, h0, Wx, Wh, bx, bh, reset_after=False, valid_lens=None):
    r"""A GRU over a sequence: :func:`gru_step_forward` at each step, with the padding mix
    :math:`h_t = m_t \tilde h_t + (1 - m_t) h_{t-1}`, :math:`y_t = m_t \tilde h_t`.

    Args:
        x: ``(N, T, D)``; h0: ``(N, H)``; Wx: ``(D, 3H)``; Wh: ``(H, 3H)``; bx, bh: ``(3H,)``.
        reset_after: the variant (see :func:`gru_step_forward`).
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.

    Returns:
        the outputs :math:`y` ``(N, T, H)`` and a :class:`GRUCache`.
    """
    check_recurrent_inputs(x, {"h0": h0}, Wx, Wh, {"bx": bx, "bh": bh}, gates=3)
    xp = backend.get_array_module(x)
    mask = padding_mask(valid_lens, x)
    h, ys, steps = h0, [], []
    for t in range(x.shape[1]):
        m = mask[:, t, None]
        h_tilde, step = gru_step_forward(x[:, t], h, Wx, Wh, bx, bh, reset_after)
        h = m * h_tilde + (1 - m) * h
        ys.append(m * h_tilde)
        steps.append(step)
    return xp.stack(ys, axis=1), GRUCache(steps, mask, h)


def gru_backward(dh, cache: GRUCache, dh_last=None):
    r"""Backward of :func:`gru_forward`: the recurrence of :func:`rnn_backward` with
    :func:`gru_step_backward` as the step,

    .. math::
        g_t = \delta_t + m_t\, dh_t, \qquad
        dx_t, dh_{prev}, \ldots = \text{gru\_step\_backward}(m_t\, g_t), \qquad
        \delta_{t-1} = dh_{prev} + (1 - m_t)\, g_t

    Args:
        dh: ``(N, T, H)``; cache: from :func:`gru_forward`; dh_last: ``(N, H)`` or ``None``.

    Returns:
        ``dx`` ``(N, T, D)``, ``dh0`` ``(N, H)``, ``dWx`` ``(D, 3H)``, ``dWh`` ``(H, 3H)``,
        ``dbx``, ``dbh`` ``(3H,)``.
    """
    check_sequence_grads(dh, cache, dh_last=dh_last)
    xp = backend.get_array_module(dh)
    delta = xp.zeros_like(cache.h_last) if dh_last is None else dh_last
    dxs, dWx, dWh, dbx, dbh = [], 0, 0, 0, 0
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta + m * dh[:, t]
        dx_t, dprev_h, dWx_t, dWh_t, dbx_t, dbh_t = gru_step_backward(m * g, cache.steps[t])
        delta = dprev_h + (1 - m) * g
        dxs.insert(0, dx_t)
        dWx, dWh, dbx, dbh = dWx + dWx_t, dWh + dWh_t, dbx + dbx_t, dbh + dbh_t
    return xp.stack(dxs, axis=1), delta, dWx, dWh, dbx, dbh


class LSTMCache(NamedTuple):
    steps: list  # one LSTMStepCache per time step
    mask: Any    # (N, T) 1 at valid steps, 0 at padding
    h_last: Any  # (N, H) final hidden state: each sequence's last valid one
    c_last: Any  # (N, H) final cell state, likewise


def lstm_forward(x, h0, Wx, Wh, b, valid_lens=None):
    r"""An LSTM over a sequence with the cell state starting at zero (as in CS231n):
    :func:`lstm_step_forward` at each step, with the padding mix of both states,

    .. math:: c_t = m_t \tilde c_t + (1 - m_t) c_{t-1}, \qquad h_t = m_t \tilde h_t + (1 - m_t) h_{t-1},
              \qquad y_t = m_t \tilde h_t

    Args:
        x: ``(N, T, D)``; h0: ``(N, H)``; Wx: ``(D, 4H)``; Wh: ``(H, 4H)``; b: ``(4H,)``.
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.

    Returns:
        the outputs :math:`y` ``(N, T, H)`` and an :class:`LSTMCache`.
    """
    check_recurrent_inputs(x, {"h0": h0}, Wx, Wh, {"b": b}, gates=4)
    xp = backend.get_array_module(x)
    mask = padding_mask(valid_lens, x)
    h, c, ys, steps = h0, xp.zeros_like(h0), [], []
    for t in range(x.shape[1]):
        m = mask[:, t, None]
        h_tilde, c_tilde, step = lstm_step_forward(x[:, t], h, c, Wx, Wh, b)
        h = m * h_tilde + (1 - m) * h
        c = m * c_tilde + (1 - m) * c
        ys.append(m * h_tilde)
        steps.append(step)
    return xp.stack(ys, axis=1), LSTMCache(steps, mask, h, c)


def lstm_backward(dh, cache: LSTMCache, dh_last=None, dc_last=None):
    r"""Backward of :func:`lstm_forward`. From :math:`\delta^h_{T-1} = dh_{last}`,
    :math:`\delta^c_{T-1} = dc_{last}` (zeros if ``None``), for :math:`t = T-1, \ldots, 0`:

    .. math::
        g_t &= \delta^h_t + m_t\, dh_t \\
        dx_t,\ dh_{prev},\ dc_{prev}, \ldots &= \text{lstm\_step\_backward}(m_t\, g_t,\ m_t\, \delta^c_t) \\
        \delta^h_{t-1} &= dh_{prev} + (1 - m_t)\, g_t, \qquad \delta^c_{t-1} = dc_{prev} + (1 - m_t)\, \delta^c_t

    and each weight's gradient is the sum of its steps'.

    Args:
        dh: ``(N, T, H)``; cache: from :func:`lstm_forward`;
        dh_last, dc_last: ``(N, H)`` upstream gradients of ``cache.h_last``, ``cache.c_last``, or ``None``.

    Returns:
        ``dx`` ``(N, T, D)``, ``dh0`` ``(N, H)``, ``dWx`` ``(D, 4H)``, ``dWh`` ``(H, 4H)``, ``db`` ``(4H,)``.
    """
    check_sequence_grads(dh, cache, dh_last=dh_last, dc_last=dc_last)
    xp = backend.get_array_module(dh)
    delta_h = xp.zeros_like(cache.h_last) if dh_last is None else dh_last
    delta_c = xp.zeros_like(cache.c_last) if dc_last is None else dc_last
    dxs, dWx, dWh, db = [], 0, 0, 0
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta_h + m * dh[:, t]
        dx_t, dprev_h, dprev_c, dWx_t, dWh_t, db_t = lstm_step_backward(m * g, m * delta_c, cache.steps[t])
        delta_h = dprev_h + (1 - m) * g
        delta_c = dprev_c + (1 - m) * delta_c
        dxs.insert(0, dx_t)
        dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
    return xp.stack(dxs, axis=1), delta_h, dWx, dWh, db

