r"""Four recurrent cells of the variants set, one step each: a forward and its backward, kept with the course.

- the LSTM with peephole connections (Gers & Schmidhuber 2000): the gates also see the cell state;
- the coupled input–forget gate LSTM, CIFG (Greff et al. 2017): :math:`i = 1 - f`;
- the minimal gated unit, MGU (Zhou et al. 2016): one gate, which also resets the state;
- a layer-normalised tanh RNN (Ba, Kiros & Hinton 2016): the pre-activation normalised over its units.

Row-vector maths as in :mod:`npseq.functional.recurrent`: inputs ``x`` ``(N, D)`` and states ``h`` ``(N, H)``
give pre-activations :math:`x W_x + h W_h + b` with ``Wx`` ``(D, kH)``, ``Wh`` ``(H, kH)`` and ``b`` ``(kH,)``,
whose ``k`` blocks of ``H`` columns are the gates, side by side in the order each cell names. Each backward walks
its forward's equations back in reverse order; every cache is a record of what that walk needs.

These are the graded references of :mod:`npseq.course.sets.variants` and its hand-out's forwards; they are not
part of npseq's public API.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from ... import backend
from ..._checks import check_float_array, check_real, check_recurrent_inputs, check_shape
from ...functional.activations import sigmoid

__all__ = [
    "PeepholeLSTMStepCache", "CoupledLSTMStepCache", "MinimalGatedUnitStepCache", "LayerNormRNNStepCache",
    "peephole_lstm_step_forward", "peephole_lstm_step_backward", "coupled_lstm_step_forward",
    "coupled_lstm_step_backward", "minimal_gated_unit_step_forward", "minimal_gated_unit_step_backward",
    "layer_norm_rnn_step_forward", "layer_norm_rnn_step_backward",
]


def _check_cell(x, states: dict, Wx, Wh, biases: dict, gates: int, vectors: dict | None = None, eps=None) -> None:
    """The arguments of one cell's step: :func:`~npseq._checks.check_recurrent_inputs`, each of ``vectors`` an
    ``(H,)`` float array (peepholes, a gain, a shift) and, when given, ``eps`` a finite real ``>= 0``."""
    check_recurrent_inputs(x, states, Wx, Wh, biases, gates)
    hidden = next(iter(states.values())).shape[1]
    for name, vector in (vectors or {}).items():
        check_float_array(name, vector)
        check_shape(name, vector, (hidden,))
    if eps is not None:
        check_real("eps", eps, ">= 0 and finite", lambda e: 0.0 <= e < math.inf)


def _check_upstream(upstream: dict, state) -> None:
    """Each upstream gradient has the shape ``(N, H)`` of the step's state."""
    for name, gradient in upstream.items():
        check_shape(name, gradient, tuple(state.shape))


# ============================================================== peephole LSTM
class PeepholeLSTMStepCache(NamedTuple):
    x: Any       # (N, D)
    prev_h: Any  # (N, H)
    prev_c: Any  # (N, H) what the input and forget gates peek at
    Wx: Any      # (D, 4H)
    Wh: Any      # (H, 4H)
    p_i: Any     # (H,) input gate's peephole
    p_f: Any     # (H,) forget gate's peephole
    p_o: Any     # (H,) output gate's peephole
    i: Any       # (N, H) input gate
    f: Any       # (N, H) forget gate
    o: Any       # (N, H) output gate
    g: Any       # (N, H) candidate cell
    next_c: Any  # (N, H) what the output gate peeks at
    tanh_c: Any  # (N, H) tanh(next_c)


def peephole_lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b, p_i, p_f, p_o):
    r"""One step of an LSTM with peephole connections, gate order ``[i, f, o, g]`` in the ``4H`` columns.

    The input and forget gates peek at the previous cell state, the output gate at the new one:

    .. math::
        a &= x W_x + h_{prev} W_h + b = [a_i, a_f, a_o, a_g] \\
        i &= \sigma(a_i + p_i \odot c_{prev}), \qquad f = \sigma(a_f + p_f \odot c_{prev}), \qquad
            g = \tanh(a_g) \\
        c_{next} &= f \odot c_{prev} + i \odot g \\
        o &= \sigma(a_o + p_o \odot c_{next}) \\
        h_{next} &= o \odot \tanh(c_{next})

    Args:
        x: ``(N, D)``; prev_h, prev_c: ``(N, H)``; Wx: ``(D, 4H)``; Wh: ``(H, 4H)``; b: ``(4H,)``.
        p_i, p_f, p_o: ``(H,)``, the peephole weights (diagonal, so one number per unit).

    Returns:
        ``next_h`` ``(N, H)``, ``next_c`` ``(N, H)`` and a :class:`PeepholeLSTMStepCache`.
    """
    _check_cell(x, {"prev_h": prev_h, "prev_c": prev_c}, Wx, Wh, {"b": b}, 4, {"p_i": p_i, "p_f": p_f, "p_o": p_o})
    xp = backend.get_array_module(x)
    H = prev_h.shape[1]
    a = x @ Wx + prev_h @ Wh + b
    i = sigmoid(a[:, :H] + p_i * prev_c)
    f = sigmoid(a[:, H:2 * H] + p_f * prev_c)
    g = xp.tanh(a[:, 3 * H:])
    next_c = f * prev_c + i * g
    o = sigmoid(a[:, 2 * H:3 * H] + p_o * next_c)
    tanh_c = xp.tanh(next_c)
    next_h = o * tanh_c
    return next_h, next_c, PeepholeLSTMStepCache(x, prev_h, prev_c, Wx, Wh, p_i, p_f, p_o, i, f, o, g, next_c,
                                                 tanh_c)


def peephole_lstm_step_backward(dnext_h, dnext_c, cache: PeepholeLSTMStepCache):
    r"""Backward of :func:`peephole_lstm_step_forward`.

    The output gate is computed from :math:`c_{next}`, so its pre-activation comes first and hands a third
    term to :math:`dc`; the input and forget gates hand :math:`c_{prev}` a term each through their peepholes:

    .. math::
        da_o &= dh_{next} \odot \tanh(c_{next}) \odot o (1 - o) \\
        dc &= dc_{next} + dh_{next} \odot o \odot (1 - \tanh^2 c_{next}) + da_o \odot p_o \\
        da_i &= dc \odot g \odot i (1 - i), \qquad da_f = dc \odot c_{prev} \odot f (1 - f), \qquad
            da_g = dc \odot i \odot (1 - g^2) \\
        dc_{prev} &= dc \odot f + da_i \odot p_i + da_f \odot p_f \\
        dp_i &= \textstyle\sum_n da_i \odot c_{prev}, \qquad dp_f = \sum_n da_f \odot c_{prev}, \qquad
            dp_o = \sum_n da_o \odot c_{next} \\
        dx &= da\, W_x^\top,\quad dh_{prev} = da\, W_h^\top,\quad
        dW_x = x^\top da,\quad dW_h = h_{prev}^\top da,\quad db = \textstyle\sum_n da_n

    with :math:`da = [da_i, da_f, da_o, da_g]`.

    Args:
        dnext_h, dnext_c: ``(N, H)``.

    Returns:
        ``dx`` ``(N, D)``, ``dprev_h`` ``(N, H)``, ``dprev_c`` ``(N, H)``, ``dWx`` ``(D, 4H)``,
        ``dWh`` ``(H, 4H)``, ``db`` ``(4H,)``, ``dp_i``, ``dp_f``, ``dp_o`` ``(H,)``.
    """
    _check_upstream({"dnext_h": dnext_h, "dnext_c": dnext_c}, cache.prev_h)
    xp = backend.get_array_module(dnext_h)
    i, f, o, g, tanh_c, prev_c = cache.i, cache.f, cache.o, cache.g, cache.tanh_c, cache.prev_c
    dao = dnext_h * tanh_c * o * (1 - o)
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2) + dao * cache.p_o
    dai = dc * g * i * (1 - i)
    daf = dc * prev_c * f * (1 - f)
    dag = dc * i * (1 - g ** 2)
    dprev_c = dc * f + dai * cache.p_i + daf * cache.p_f
    dp_i = (dai * prev_c).sum(axis=0)
    dp_f = (daf * prev_c).sum(axis=0)
    dp_o = (dao * cache.next_c).sum(axis=0)
    da = xp.concatenate([dai, daf, dao, dag], axis=1)
    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWx = cache.x.T @ da
    dWh = cache.prev_h.T @ da
    db = da.sum(axis=0)
    return dx, dprev_h, dprev_c, dWx, dWh, db, dp_i, dp_f, dp_o


# ================================================ coupled input-forget gate LSTM
class CoupledLSTMStepCache(NamedTuple):
    x: Any       # (N, D)
    prev_h: Any  # (N, H)
    prev_c: Any  # (N, H)
    Wx: Any      # (D, 3H)
    Wh: Any      # (H, 3H)
    f: Any       # (N, H) forget gate; the input gate is 1 - f
    o: Any       # (N, H) output gate
    g: Any       # (N, H) candidate cell
    tanh_c: Any  # (N, H) tanh(next_c)


def coupled_lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    r"""One step of the coupled input–forget gate LSTM (CIFG), gate order ``[f, o, g]`` in the ``3H`` columns.

    The input gate is not learned: a unit takes in exactly as much as it forgets.

    .. math::
        a &= x W_x + h_{prev} W_h + b = [a_f, a_o, a_g] \\
        f &= \sigma(a_f), \qquad i = 1 - f, \qquad o = \sigma(a_o), \qquad g = \tanh(a_g) \\
        c_{next} &= f \odot c_{prev} + (1 - f) \odot g \\
        h_{next} &= o \odot \tanh(c_{next})

    Args:
        x: ``(N, D)``; prev_h, prev_c: ``(N, H)``; Wx: ``(D, 3H)``; Wh: ``(H, 3H)``; b: ``(3H,)``.

    Returns:
        ``next_h`` ``(N, H)``, ``next_c`` ``(N, H)`` and a :class:`CoupledLSTMStepCache`.
    """
    _check_cell(x, {"prev_h": prev_h, "prev_c": prev_c}, Wx, Wh, {"b": b}, 3)
    xp = backend.get_array_module(x)
    H = prev_h.shape[1]
    a = x @ Wx + prev_h @ Wh + b
    f = sigmoid(a[:, :H])
    o = sigmoid(a[:, H:2 * H])
    g = xp.tanh(a[:, 2 * H:])
    next_c = f * prev_c + (1 - f) * g
    tanh_c = xp.tanh(next_c)
    next_h = o * tanh_c
    return next_h, next_c, CoupledLSTMStepCache(x, prev_h, prev_c, Wx, Wh, f, o, g, tanh_c)


def coupled_lstm_step_backward(dnext_h, dnext_c, cache: CoupledLSTMStepCache):
    r"""Backward of :func:`coupled_lstm_step_forward`.

    The forget gate reaches :math:`c_{next}` twice, as :math:`f` and as :math:`1 - f`:

    .. math::
        dc &= dc_{next} + dh_{next} \odot o \odot (1 - \tanh^2 c_{next}) \\
        da_f &= dc \odot (c_{prev} - g) \odot f (1 - f) \\
        da_o &= dh_{next} \odot \tanh(c_{next}) \odot o (1 - o) \\
        da_g &= dc \odot (1 - f) \odot (1 - g^2) \\
        dc_{prev} &= dc \odot f \\
        dx &= da\, W_x^\top,\quad dh_{prev} = da\, W_h^\top,\quad
        dW_x = x^\top da,\quad dW_h = h_{prev}^\top da,\quad db = \textstyle\sum_n da_n

    with :math:`da = [da_f, da_o, da_g]`.

    Args:
        dnext_h, dnext_c: ``(N, H)``.

    Returns:
        ``dx`` ``(N, D)``, ``dprev_h`` ``(N, H)``, ``dprev_c`` ``(N, H)``, ``dWx`` ``(D, 3H)``,
        ``dWh`` ``(H, 3H)``, ``db`` ``(3H,)``.
    """
    _check_upstream({"dnext_h": dnext_h, "dnext_c": dnext_c}, cache.prev_h)
    xp = backend.get_array_module(dnext_h)
    f, o, g, tanh_c = cache.f, cache.o, cache.g, cache.tanh_c
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    daf = dc * (cache.prev_c - g) * f * (1 - f)
    dao = dnext_h * tanh_c * o * (1 - o)
    dag = dc * (1 - f) * (1 - g ** 2)
    dprev_c = dc * f
    da = xp.concatenate([daf, dao, dag], axis=1)
    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWx = cache.x.T @ da
    dWh = cache.prev_h.T @ da
    db = da.sum(axis=0)
    return dx, dprev_h, dprev_c, dWx, dWh, db


# ========================================================== minimal gated unit
class MinimalGatedUnitStepCache(NamedTuple):
    x: Any       # (N, D)
    prev_h: Any  # (N, H)
    Wx: Any      # (D, 2H)
    Wh: Any      # (H, 2H)
    f: Any       # (N, H) the forget gate, which also resets what W_hn sees
    n: Any       # (N, H) candidate state


def minimal_gated_unit_step_forward(x, prev_h, Wx, Wh, b):
    r"""One step of the minimal gated unit (MGU), gate order ``[f, n]`` in the ``2H`` columns.

    A GRU whose reset and update gates are one and the same gate :math:`f`:

    .. math::
        f &= \sigma(x W_{xf} + h W_{hf} + b_f) \\
        n &= \tanh(x W_{xn} + (f \odot h) W_{hn} + b_n) \\
        h' &= (1 - f) \odot h + f \odot n

    where :math:`h` is ``prev_h`` and :math:`W_{xf}, W_{xn}` are the two ``H``-column blocks of ``Wx``
    (likewise for ``Wh`` and ``b``).

    Args:
        x: ``(N, D)``; prev_h: ``(N, H)``; Wx: ``(D, 2H)``; Wh: ``(H, 2H)``; b: ``(2H,)``.

    Returns:
        ``next_h`` ``(N, H)`` and a :class:`MinimalGatedUnitStepCache`.
    """
    _check_cell(x, {"prev_h": prev_h}, Wx, Wh, {"b": b}, 2)
    xp = backend.get_array_module(x)
    H = prev_h.shape[1]
    f_, n_ = slice(0, H), slice(H, 2 * H)  # the gates' column blocks
    f = sigmoid(x @ Wx[:, f_] + prev_h @ Wh[:, f_] + b[f_])
    n = xp.tanh(x @ Wx[:, n_] + (f * prev_h) @ Wh[:, n_] + b[n_])
    next_h = (1 - f) * prev_h + f * n
    return next_h, MinimalGatedUnitStepCache(x, prev_h, Wx, Wh, f, n)


def minimal_gated_unit_step_backward(dnext_h, cache: MinimalGatedUnitStepCache):
    r"""Backward of :func:`minimal_gated_unit_step_forward`.

    With :math:`\rho = f \odot h`, what :math:`W_{hn}` multiplies, the gate :math:`f` is reached three ways
    (mixing weight, :math:`1 - f`, and reset), and :math:`h` three ways (directly, through :math:`\rho`, and
    through the gate):

    .. math::
        da_n &= dh' \odot f \odot (1 - n^2), \qquad d\rho = da_n W_{hn}^\top \\
        da_f &= \bigl(dh' \odot (n - h) + d\rho \odot h\bigr) \odot f (1 - f) \\
        dh &= dh' \odot (1 - f) + d\rho \odot f + da_f W_{hf}^\top \\
        dW_h &= [\,h^\top da_f,\ \rho^\top da_n\,] \\
        dx &= da\, W_x^\top, \qquad dW_x = x^\top da, \qquad db = \textstyle\sum_n da_n

    with :math:`da = [da_f, da_n]`.

    Args:
        dnext_h: ``(N, H)`` (the :math:`dh'` above).

    Returns:
        ``dx`` ``(N, D)``, ``dprev_h`` ``(N, H)``, ``dWx`` ``(D, 2H)``, ``dWh`` ``(H, 2H)``, ``db`` ``(2H,)``.
    """
    _check_upstream({"dnext_h": dnext_h}, cache.prev_h)
    xp = backend.get_array_module(dnext_h)
    h, f, n, Wh = cache.prev_h, cache.f, cache.n, cache.Wh
    H = h.shape[1]
    f_, n_ = slice(0, H), slice(H, 2 * H)
    rho = f * h
    dan = dnext_h * f * (1 - n ** 2)
    drho = dan @ Wh[:, n_].T
    daf = (dnext_h * (n - h) + drho * h) * f * (1 - f)
    dprev_h = dnext_h * (1 - f) + drho * f + daf @ Wh[:, f_].T
    dWh = xp.concatenate([h.T @ daf, rho.T @ dan], axis=1)
    da = xp.concatenate([daf, dan], axis=1)
    dx = da @ cache.Wx.T
    dWx = cache.x.T @ da
    db = da.sum(axis=0)
    return dx, dprev_h, dWx, dWh, db


# ===================================================== layer-normalised tanh RNN
class LayerNormRNNStepCache(NamedTuple):
    x: Any          # (N, D)
    prev_h: Any     # (N, H)
    Wx: Any         # (D, H)
    Wh: Any         # (H, H)
    gamma: Any      # (H,) gain
    a_hat: Any      # (N, H) the normalised pre-activation
    inv_sigma: Any  # (N, 1) 1 / sqrt(var + eps), one per row
    next_h: Any     # (N, H) tanh(gamma * a_hat + beta)


def layer_norm_rnn_step_forward(x, prev_h, Wx, Wh, gamma, beta, eps: float = 1e-5):
    r"""One step of a layer-normalised tanh RNN: the pre-activation normalised over its ``H`` units.

    The shift :math:`\beta` takes the place of the bias, which the normalisation would remove anyway:

    .. math::
        a &= x W_x + h_{prev} W_h \\
        \mu &= \tfrac1H \textstyle\sum_j a_j, \qquad \sigma^2 = \tfrac1H \sum_j (a_j - \mu)^2
            \qquad \text{(per row, biased)} \\
        \hat a &= (a - \mu) / \sqrt{\sigma^2 + \epsilon} \\
        h_{next} &= \tanh(\gamma \odot \hat a + \beta)

    Args:
        x: ``(N, D)``; prev_h: ``(N, H)``; Wx: ``(D, H)``; Wh: ``(H, H)``.
        gamma, beta: ``(H,)``, the gain and the shift.
        eps: added to the variance, ``>= 0``.

    Returns:
        ``next_h`` ``(N, H)`` and a :class:`LayerNormRNNStepCache`.
    """
    _check_cell(x, {"prev_h": prev_h}, Wx, Wh, {}, 1, {"gamma": gamma, "beta": beta}, eps)
    xp = backend.get_array_module(x)
    a = x @ Wx + prev_h @ Wh
    centred = a - a.mean(axis=1, keepdims=True)
    variance = (centred * centred).mean(axis=1, keepdims=True)
    inv_sigma = 1 / xp.sqrt(variance + eps)
    a_hat = centred * inv_sigma
    next_h = xp.tanh(gamma * a_hat + beta)
    return next_h, LayerNormRNNStepCache(x, prev_h, Wx, Wh, gamma, a_hat, inv_sigma, next_h)


def layer_norm_rnn_step_backward(dnext_h, cache: LayerNormRNNStepCache):
    r"""Backward of :func:`layer_norm_rnn_step_forward`.

    Through the tanh, then layer normalisation's backward (:func:`npseq.functional.layer_norm_backward`'s
    formula, with :math:`s = 1/\sqrt{\sigma^2 + \epsilon}` and the bars means over the ``H`` units of a row),
    then the two matrix products:

    .. math::
        dz &= dh_{next} \odot (1 - h_{next}^2) \\
        d\gamma &= \textstyle\sum_n dz \odot \hat a, \qquad d\beta = \sum_n dz, \qquad g = dz \odot \gamma \\
        da &= s \bigl(g - \overline{g} - \hat a\, \overline{g \odot \hat a}\bigr) \\
        dx &= da\, W_x^\top,\quad dh_{prev} = da\, W_h^\top,\quad dW_x = x^\top da,\quad dW_h = h_{prev}^\top da

    Args:
        dnext_h: ``(N, H)``.

    Returns:
        ``dx`` ``(N, D)``, ``dprev_h`` ``(N, H)``, ``dWx`` ``(D, H)``, ``dWh`` ``(H, H)``, ``dgamma`` ``(H,)``,
        ``dbeta`` ``(H,)``.
    """
    _check_upstream({"dnext_h": dnext_h}, cache.prev_h)
    a_hat = cache.a_hat
    dz = dnext_h * (1 - cache.next_h ** 2)
    dgamma = (dz * a_hat).sum(axis=0)
    dbeta = dz.sum(axis=0)
    g = dz * cache.gamma
    da = cache.inv_sigma * (g - g.mean(axis=1, keepdims=True) - a_hat * (g * a_hat).mean(axis=1, keepdims=True))
    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWx = cache.x.T @ da
    dWh = cache.prev_h.T @ da
    return dx, dprev_h, dWx, dWh, dgamma, dbeta
