"""Recurrent cells and whole sequences: vanilla RNN (tanh), LSTM and GRU, forward and backward by hand.

Names and signatures of the RNN and LSTM functions are those of the CS231n
assignments (``rnn_step_forward``, ``rnn_forward``, ``lstm_step_forward``, ...).
Row-vector maths throughout: a batch of inputs ``x`` ``(N, D)`` and states ``h``
``(N, H)`` give pre-activations ``x @ Wx + h @ Wh + b`` with ``Wx`` ``(D, kH)`` and
``Wh`` ``(H, kH)``; the ``k`` gate blocks of ``H`` columns are in the order
LSTM ``[i, f, o, g]`` and GRU ``[r, z, n]``.

**Padding.** The sequence functions take ``valid_lens`` ``(N,)`` (integers in
``[0, T]``). With :math:`m_t = [t < \\ell_n] \\in \\{0, 1\\}` a padded step keeps the
state and outputs zero:

.. math:: h_t = m_t\\, \\tilde h_t + (1 - m_t)\\, h_{t-1}, \\qquad y_t = m_t\\, \\tilde h_t

where :math:`\\tilde h_t` is what the cell computes from :math:`h_{t-1}`. So the
final state ``h_last`` is each sequence's own last valid state (``h0`` when
:math:`\\ell_n = 0`). Because :math:`m_t` is exactly 0 or 1 the mix is exact in
floating point, and the backward is the plain chain rule through it:

.. math:: g_t = \\delta_t + m_t\\, dy_t,\\quad d\\tilde h_t = m_t\\, g_t,\\quad
          \\delta_{t-1} = (1 - m_t)\\, g_t + \\frac{\\partial \\tilde h_t}{\\partial h_{t-1}}^{\\!\\top} d\\tilde h_t

where :math:`\\delta_t` is the gradient arriving at :math:`h_t` from step
:math:`t+1` (``dh_last`` at :math:`t = T-1`) and :math:`g_t = \\partial L/\\partial h_t`
is the total gradient reaching the state, whose batch norms
``return_step_norms=True`` reports (vanishing / exploding gradients).

**Speed.** The sequence functions do the same maths as a loop over the step
functions, arranged for fewer and larger operations:

* the input projection of all ``T`` steps is one product ``X Wx`` (``(T*N, D) @ (D, kH)``)
  before the loop, and the input gradients ``dX = dA Wx^T``, ``dWx = X^T dA`` are one
  product each after it, where ``dA`` holds every step's pre-activation gradient;
* ``dWh = sum_t h_{t-1}^T dA_t`` is one product ``H_prev^T dA`` after the loop;
* every per-step quantity lives in a preallocated *time-major* array ``(T, N, ...)``
  (so step ``t`` is one contiguous block); the public inputs and outputs stay batch first;
* the cells write each result straight into its slice of those arrays, with in-place
  operations instead of temporaries (each cell's docstring names the rearrangement,
  e.g. :math:`(1 - z) n + z h` evaluated as :math:`n + z (h - n)`);
* the padding mix is a selection (``copyto`` where :math:`m_t = 0`), exact like the
  product by 0 and 1;
* the steps after ``max(valid_lens)``, where every sequence is padding, are not run at
  all (as with PyTorch's packed sequences): the state carries over, the outputs and
  every gradient there are zero, the cache's per-step gates there are left at 0, and
  the products above cover only the steps that ran.

**Data and weights.** Each sequence backward is the composition of two halves, as
in cuDNN: ``*_backward_data`` walks the steps and returns the input and initial-state
gradients plus the pre-activation gradients ``dA`` of every step, and
``*_backward_weights`` turns the inputs and ``dA`` of one *or several* calls into the
weight gradients, one product per weight. A decoder that runs a layer one step at
a time passes all its steps at once, so the weight gradients of a whole sequence
still cost one large product each instead of ``T`` small ones.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_float, check_ndim, check_shape, check_valid_lens
from . import fused
from .activations import sigmoid

__all__ = [
    "RNNStepCache", "RNNCache", "LSTMStepCache", "LSTMCache", "GRUStepCache", "GRUCache",
    "rnn_step_forward", "rnn_step_backward", "rnn_forward", "rnn_backward",
    "lstm_step_forward", "lstm_step_backward", "lstm_forward", "lstm_backward",
    "lstm_seq_forward", "lstm_seq_backward",
    "gru_step_forward", "gru_step_backward", "gru_forward", "gru_backward",
    "GRUPreactGrads", "rnn_backward_data", "rnn_backward_weights", "lstm_seq_backward_data",
    "lstm_backward_weights", "gru_backward_data", "gru_backward_weights",
]


# ------------------------------------------------------------------ helpers
def _check_inputs(x, h, gates: int, Wx, Wh, biases: dict, *, sequence: bool, h_name: str,
                  c=None, c_name: str = ""):
    """Validate shapes and dtypes of a cell's arguments; return ``(N, D, H)``."""
    check_float("x", x)
    check_ndim("x", x, 3 if sequence else 2, "(N, T, D)" if sequence else "(N, D)")
    n, d = x.shape[0], x.shape[-1]
    check_float(h_name, h)
    check_ndim(h_name, h, 2, "(N, H)")
    hidden = h.shape[1]
    check_shape(h_name, h, (n, hidden))
    named = {h_name: h, "Wx": Wx, "Wh": Wh, **biases}
    if c is not None:
        check_shape(c_name, c, (n, hidden))
        named[c_name] = c
    check_shape("Wx", Wx, (d, gates * hidden))
    check_shape("Wh", Wh, (hidden, gates * hidden))
    for name, b in biases.items():
        check_shape(name, b, (gates * hidden,))
    for name, array in named.items():
        if array.dtype != x.dtype:
            raise TypeError(f"{name}: expected dtype {x.dtype} (the dtype of x), got {array.dtype}")
    return n, d, hidden


def _time_mask(valid_lens, n: int, t: int, like):
    """``(T, N, 1)`` array of ``like``'s dtype: 1 where ``t < valid_lens[n]``, else 0 (``None`` if no lengths)."""
    if valid_lens is None:
        return None
    check_valid_lens("valid_lens", valid_lens, (n,), t)
    return _mask_of(valid_lens, t, like)


def _mask_of(valid_lens, t: int, like):
    """:func:`_time_mask` for lengths already checked."""
    if valid_lens is None:
        return None
    xp = backend.get_array_module(like)
    lens = xp.asarray(valid_lens)
    return (xp.arange(t)[:, None] < lens[None, :]).astype(like.dtype)[:, :, None]


def _active_steps(mask, t_steps: int) -> int:
    """How many leading steps hold a valid token of some sequence: ``max(valid_lens)`` (``T`` without a mask).

    At the later steps every sequence is padding: the state only carries over and every
    gradient there is zero, so the sequence functions skip them (as a packed sequence
    does), leaving zeros in the cache's per-step arrays and in ``dA``. On a GPU, reading
    ``max(valid_lens)`` would stop the device at every call, so there all ``T`` steps run:
    the mask keeps the padded steps' states and gradients exactly as they are.
    """
    if mask is None or backend.get_array_module(mask) is not backend.numpy:
        return t_steps
    return int(mask.reshape(t_steps, -1).any(axis=1).sum())


def _input_projection(x, Wx, bias, steps=None):
    """Time-major input ``X`` ``(T, N, D)`` and the input pre-activations ``X Wx + bias`` of the first
    ``steps`` steps (all by default) ``(steps, N, kH)``.

    The transpose is free when ``x`` is already time-major in memory (a layer's own
    outputs are), and the bias is added in place into the product.
    """
    n, t, d = x.shape
    x_tm = x.transpose(1, 0, 2).reshape(t * n, d).reshape(t, n, d)  # one copy at most, kept contiguous
    projected = _flat(x_tm[:steps]) @ Wx
    projected += bias
    return x_tm, projected.reshape(x_tm[:steps].shape[0], n, Wx.shape[1])


def _input_grad(dA, Wx, steps=None):
    """``dx`` ``(N, T, D)`` from the time-major pre-activation gradients ``dA`` ``(T, N, kH)``,
    of which only the first ``steps`` (all by default) can be nonzero."""
    t, n, _ = dA.shape
    if steps is None or steps == t:
        return (_flat(dA) @ Wx.T).reshape(t, n, -1).transpose(1, 0, 2)
    dx = backend.get_array_module(dA).zeros((t, n, Wx.shape[0]), dtype=dA.dtype)
    backend.get_array_module(dA).matmul(_flat(dA[:steps]), Wx.T, out=_flat(dx[:steps]))
    return dx.transpose(1, 0, 2)


def _active_rows(caches, arrays):
    """Each call's per-step array ``(T_i, N, K)`` cut to its active steps (:func:`_active_steps`), stacked
    ``(sum of active steps * N, K)``: the padded tail adds nothing to a weight gradient."""
    return _stacked([a[:_active_steps(c.mask, a.shape[0])] for c, a in zip(caches, arrays)])


def _stacked(arrays):
    """Time-major arrays of several calls ``(T_i, N, K)`` as one ``(sum T_i * N, K)`` block."""
    if len(arrays) == 1:
        return _flat(arrays[0])
    return backend.get_array_module(arrays[0]).concatenate([_flat(a) for a in arrays])


def _check_calls(caches, dAs):
    if len(caches) != len(dAs) or not caches:
        raise ValueError(f"dAs: expected one pre-activation gradient per cache ({len(caches)} caches), "
                         f"got {len(dAs)}")


def _flat(a):
    """``(T, N, K)`` -> ``(T*N, K)``."""
    return a.reshape(-1, a.shape[-1])


def _batch_first_outputs(states, mask):
    """Outputs ``(N, T, H)`` from the time-major states ``(T, N, H)``: zero at padded steps,
    and never a view of the cache (so editing them in place cannot corrupt the backward)."""
    out = states.copy() if mask is None else states * mask
    return out.transpose(1, 0, 2)


def _initial_grad(name, value, like):
    """An upstream gradient for a final state in a new array that the step loop may
    overwrite: a copy of the given array (shape-checked), or zeros."""
    if value is None:
        return backend.get_array_module(like).zeros_like(like)
    check_shape(name, value, tuple(like.shape))
    return value.copy()


def _padded(mask):
    """``(T, N, 1)`` booleans, True at padded steps (where the state is carried over); ``None`` without a mask."""
    return None if mask is None else mask == 0


def _carry_over(state, prev, padded_t):
    """The padding mix :math:`h_t = m_t \\tilde h_t + (1 - m_t) h_{t-1}` applied in place to
    ``state`` (which holds :math:`\\tilde h_t`) as a selection, exact like the product by 0/1."""
    if padded_t is not None:
        backend.get_array_module(state).copyto(state, prev, where=padded_t)


def _total_grad(delta, dh_t, mask_t, out):
    """:math:`g_t = \\delta_t + m_t\\, dh_t` into ``out``."""
    xp = backend.get_array_module(delta)
    if mask_t is None:
        return xp.add(delta, dh_t, out=out)
    xp.multiply(mask_t, dh_t, out=out)
    out += delta
    return out


def _add_carried_grad(delta, g, mask_t, scratch):
    """:math:`\\delta_{t-1} \\mathrel{+}= (1 - m_t)\\, g_t` in place (nothing without a mask)."""
    if mask_t is not None:
        xp = backend.get_array_module(delta)
        xp.multiply(1 - mask_t, g, out=scratch)
        delta += scratch


def _check_dh(dh, states):
    t, n, hidden = states.shape
    check_shape("dh", dh, (n, t - 1, hidden))
    return dh.transpose(1, 0, 2)


def _tail_norms(t_steps: int, active: int, delta):
    """The ``(T,)`` array of step norms with the all-padding tail filled in: there :math:`g_t`
    is the gradient from the end, unchanged (the loop fills the first ``active``)."""
    norms = backend.get_array_module(delta).empty(t_steps, dtype=delta.dtype)
    norms[active:] = _norm(delta)
    return norms


def _norm(g):
    xp = backend.get_array_module(g)
    return xp.sqrt((g * g).sum())


# =================================================================== vanilla RNN
class RNNStepCache(NamedTuple):
    x: Any       # (N, D) input of this step
    prev_h: Any  # (N, H) previous state
    Wx: Any      # (D, H)
    Wh: Any      # (H, H)
    next_h: Any  # (N, H) = tanh(a), which is all tanh'(a) = 1 - next_h**2 needs


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    """One step of a vanilla (tanh) RNN.

    .. math:: a = x W_x + h_{prev} W_h + b, \\qquad h_{next} = \\tanh(a)

    Args:
        x: ``(N, D)``.
        prev_h: ``(N, H)``.
        Wx: ``(D, H)``.
        Wh: ``(H, H)``.
        b: ``(H,)``.

    Returns:
        ``next_h`` ``(N, H)`` and an :class:`RNNStepCache`.
    """
    _check_inputs(x, prev_h, 1, Wx, Wh, {"b": b}, sequence=False, h_name="prev_h")
    xp = backend.get_array_module(x)
    next_h = xp.tanh(x @ Wx + prev_h @ Wh + b)
    return next_h, RNNStepCache(x, prev_h, Wx, Wh, next_h)


def rnn_step_backward(dnext_h, cache: RNNStepCache):
    """Backward of :func:`rnn_step_forward`.

    .. math::
        da &= dh_{next} \\odot (1 - h_{next}^2) \\\\
        dx &= da\\, W_x^\\top, \\qquad dh_{prev} = da\\, W_h^\\top \\\\
        dW_x &= x^\\top da, \\qquad dW_h = h_{prev}^\\top da, \\qquad db = \\textstyle\\sum_n da_n

    Args:
        dnext_h: ``(N, H)``.

    Returns:
        ``dx`` ``(N, D)``, ``dprev_h`` ``(N, H)``, ``dWx`` ``(D, H)``, ``dWh`` ``(H, H)``, ``db`` ``(H,)``.
    """
    x, prev_h, Wx, Wh, next_h = cache
    check_shape("dnext_h", dnext_h, tuple(next_h.shape))
    da = dnext_h * (1 - next_h * next_h)
    return da @ Wx.T, da @ Wh.T, x.T @ da, prev_h.T @ da, da.sum(axis=0)


class RNNCache(NamedTuple):
    x: Any       # (T, N, D) the input, time-major
    h: Any       # (T+1, N, H) states, time-major: h[0] = h0, h[t+1] after step t
    mask: Any    # (T, N, 1) 1 where t < valid_lens[n], else 0; None without valid_lens
    Wx: Any      # (D, H)
    Wh: Any      # (H, H)
    h_last: Any  # (N, H) final state h[T]: each sequence's last valid state


def rnn_forward(x, h0, Wx, Wh, b, valid_lens=None):
    """A vanilla (tanh) RNN over a whole sequence.

    .. math::
        \\tilde h_t = \\tanh(x_t W_x + h_{t-1} W_h + b), \\qquad
        h_t = m_t \\tilde h_t + (1 - m_t) h_{t-1}, \\qquad y_t = m_t \\tilde h_t

    with :math:`m_t = [t < \\ell_n]` (all ones without ``valid_lens``). ``x W_x + b`` is
    computed for all steps in one product before the loop (see the module docstring).

    Args:
        x: ``(N, T, D)``.
        h0: ``(N, H)``.
        Wx: ``(D, H)``.
        Wh: ``(H, H)``.
        b: ``(H,)``.
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.

    Returns:
        ``h`` ``(N, T, H)`` (the outputs :math:`y_t`, zero at padded steps) and an
        :class:`RNNCache` whose ``h_last`` ``(N, H)`` is the final state.
    """
    n, _, _ = _check_inputs(x, h0, 1, Wx, Wh, {"b": b}, sequence=True, h_name="h0")
    return _rnn_run(x, h0, Wx, Wh, b, _time_mask(valid_lens, n, x.shape[1], x))


def _rnn_run(x, h0, Wx, Wh, b, mask):
    """:func:`rnn_forward` after its checks, with ``mask`` ``(T, N, 1)`` built (the layers call this)."""
    xp = backend.get_array_module(x)
    n, t_steps, _ = x.shape
    active = _active_steps(mask, t_steps)
    x_tm, xw = _input_projection(x, Wx, b, active)
    padded = _padded(mask)
    hs = xp.empty((t_steps + 1, n, Wh.shape[0]), dtype=x.dtype)
    hs[0] = h0
    for t in range(active):
        xp.matmul(hs[t], Wh, out=hs[t + 1])  # the new state is computed in its own slot
        hs[t + 1] += xw[t]
        xp.tanh(hs[t + 1], out=hs[t + 1])
        _carry_over(hs[t + 1], hs[t], None if padded is None else padded[t])
    if active < t_steps:
        hs[active + 1:] = hs[active]
    out = _batch_first_outputs(hs[1:], mask)
    return out, RNNCache(x_tm, hs, mask, Wx, Wh, hs[t_steps])


def rnn_backward(dh, cache: RNNCache, dh_last=None, return_step_norms=False):
    """Backward of :func:`rnn_forward` (backpropagation through time): :func:`rnn_backward_data`
    followed by :func:`rnn_backward_weights`.

    From :math:`\\delta_{T-1} = dh_{last}` (zeros if ``None``), for :math:`t = T-1, \\ldots, 0`:

    .. math::
        g_t &= \\delta_t + m_t\\, dh_t \\qquad (\\partial L / \\partial h_t) \\\\
        da_t &= m_t\\, g_t \\odot (1 - h_t^2) \\\\
        \\delta_{t-1} &= (1 - m_t)\\, g_t + da_t W_h^\\top

    (at a padded step :math:`da_t = 0`, so using the stored state :math:`h_t` in place of
    :math:`\\tilde h_t` is exact), then :math:`dh_0 = \\delta_{-1}` and, summed over steps,

    .. math:: dx_t = da_t W_x^\\top,\\quad dW_x = \\textstyle\\sum_t x_t^\\top da_t,\\quad
              dW_h = \\textstyle\\sum_t h_{t-1}^\\top da_t,\\quad db = \\textstyle\\sum_{t,n} da_{t,n}

    (each sum is one matrix product over all steps after the loop).

    Args:
        dh: ``(N, T, H)`` upstream gradient of the outputs.
        cache: from :func:`rnn_forward`.
        dh_last: ``(N, H)`` upstream gradient of the final state ``cache.h_last``, or ``None``.
        return_step_norms: also return ``step_norms`` ``(T,)``: :math:`\\|g_t\\|_F` over the batch.

    Returns:
        ``dx`` ``(N, T, D)``, ``dh0`` ``(N, H)``, ``dWx`` ``(D, H)``, ``dWh`` ``(H, H)``,
        ``db`` ``(H,)`` [, ``step_norms`` ``(T,)``].
    """
    dx, dh0, dA, *norms = rnn_backward_data(dh, cache, dh_last, return_step_norms)
    return (dx, dh0) + rnn_backward_weights([cache], [dA]) + tuple(norms)


def rnn_backward_data(dh, cache: RNNCache, dh_last=None, return_step_norms=False):
    """The step loop of :func:`rnn_backward`: input, initial-state and pre-activation gradients.

    Returns:
        ``dx`` ``(N, T, D)``, ``dh0`` ``(N, H)``, ``dA`` ``(T, N, H)`` (:math:`da_t`, time-major)
        [, ``step_norms`` ``(T,)``].
    """
    dh_tm = _check_dh(dh, cache.h)
    return _rnn_backward_run(dh_tm, cache, _initial_grad("dh_last", dh_last, cache.h_last), return_step_norms)


def _rnn_backward_run(dh_tm, cache: RNNCache, delta, return_step_norms):
    """:func:`rnn_backward_data` after its checks: ``dh_tm`` ``(T, N, H)`` is time-major, ``delta``
    the gradient of the final state in a writable array."""
    x_tm, hs, mask, Wx, Wh, h_last = cache
    xp = backend.get_array_module(hs)
    t_steps = hs.shape[0] - 1
    dA = xp.empty((t_steps,) + hs.shape[1:], dtype=hs.dtype)
    active = _active_steps(mask, t_steps)
    dA[active:] = 0
    norms = _tail_norms(t_steps, active, delta) if return_step_norms else None
    g, scratch = xp.empty_like(delta), xp.empty_like(delta)
    for t in reversed(range(active)):
        m = None if mask is None else mask[t]
        _total_grad(delta, dh_tm[t], m, g)
        if norms is not None:
            norms[t] = _norm(g)
        da = dA[t]
        xp.multiply(hs[t + 1], hs[t + 1], out=da)
        xp.subtract(1, da, out=da)
        da *= g
        if m is not None:
            da *= m
        xp.matmul(da, Wh.T, out=delta)
        _add_carried_grad(delta, g, m, scratch)
    grads = (_input_grad(dA, Wx, active), delta, dA)
    return grads + (norms,) if return_step_norms else grads


def rnn_backward_weights(caches, dAs):
    """Weight gradients of one or several :func:`rnn_forward` calls with the same weights.

    .. math:: dW_x = \\textstyle\\sum_t x_t^\\top da_t,\\quad dW_h = \\sum_t h_{t-1}^\\top da_t,\\quad
              db = \\sum_{t,n} da_{t,n}

    summed over every step of every call, one product per weight.

    Args:
        caches: list of :class:`RNNCache`.
        dAs: the matching ``dA`` arrays from :func:`rnn_backward_data`.

    Returns:
        ``dWx`` ``(D, H)``, ``dWh`` ``(H, H)``, ``db`` ``(H,)``.
    """
    _check_calls(caches, dAs)
    dA = _active_rows(caches, dAs)
    dWx = _active_rows(caches, [c.x for c in caches]).T @ dA
    dWh = _active_rows(caches, [c.h[:-1] for c in caches]).T @ dA
    return dWx, dWh, dA.sum(axis=0)


# ========================================================================= LSTM
class LSTMStepCache(NamedTuple):
    x: Any       # (N, D)
    prev_h: Any  # (N, H)
    prev_c: Any  # (N, H)
    Wx: Any      # (D, 4H)
    Wh: Any      # (H, 4H)
    gates: Any   # (N, 4H) activations [i, f, o, g] = [sigma(a_i), sigma(a_f), sigma(a_o), tanh(a_g)]
    tanh_c: Any  # (N, H) tanh(next_c)


def _lstm_cell(gates, prev_c, tanh_c, next_c, next_h):
    """LSTM cell in place: ``gates`` ``(N, 4H)`` holds the pre-activations ``a`` on entry and
    the activations ``[i, f, o, g]`` on return; writes ``tanh_c``, ``next_c`` and ``next_h``.

    The equations of :func:`lstm_step_forward`, with no temporaries (``next_h``
    holds :math:`i \\odot g` until it is overwritten by :math:`o \\odot \\tanh c_{next}`).
    """
    xp = backend.get_array_module(gates)
    if fused.enabled(xp):
        return fused.lstm_cell(gates, prev_c, tanh_c, next_c, next_h)
    hidden = prev_c.shape[1]
    sigmoid(gates[:, :3 * hidden], out=gates[:, :3 * hidden])
    xp.tanh(gates[:, 3 * hidden:], out=gates[:, 3 * hidden:])
    i, f, o, g = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
    xp.multiply(f, prev_c, out=next_c)
    next_c += xp.multiply(i, g, out=next_h)
    xp.tanh(next_c, out=tanh_c)
    return xp.multiply(o, tanh_c, out=next_h)


def _lstm_cell_backward(dnext_h, dnext_c, gates, prev_c, tanh_c, da, dprev_c):
    """Writes :math:`\\partial L/\\partial a` into ``da`` ``(N, 4H)`` and the cell path's
    ``dprev_c`` ``(N, H)`` (which may be ``dnext_c`` itself: that is read first).

    The equations of :func:`lstm_step_backward`, each gate's gradient built inside its
    slice of ``da``; :math:`dc` is kept in the ``g`` slice until that slice's own turn.
    """
    xp = backend.get_array_module(gates)
    if fused.enabled(xp):
        return fused.lstm_cell_backward(dnext_h, dnext_c, gates, prev_c, tanh_c, da, dprev_c)
    hidden = prev_c.shape[1]
    i, f, o, g = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
    dai, daf, dao, dag = (da[:, k * hidden:(k + 1) * hidden] for k in range(4))
    dc = dao
    xp.multiply(tanh_c, tanh_c, out=dc)
    xp.subtract(1, dc, out=dc)
    dc *= o
    dc *= dnext_h
    dc += dnext_c                      # dc = dc_next + dh_next o (1 - tanh^2 c_next)
    xp.subtract(1, i, out=dai)
    dai *= i
    dai *= g
    dai *= dc
    xp.subtract(1, f, out=daf)
    daf *= f
    daf *= prev_c
    daf *= dc
    xp.multiply(g, g, out=dag)
    xp.subtract(1, dag, out=dag)
    dag *= i
    dag *= dc
    xp.multiply(dc, f, out=dprev_c)
    xp.subtract(1, o, out=dao)         # dc is spent: its slice now takes da_o
    dao *= o
    dao *= tanh_c
    dao *= dnext_h
    return dprev_c


def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    """One LSTM step, gate order ``[i, f, o, g]`` in the ``4H`` columns.

    .. math::
        a &= x W_x + h_{prev} W_h + b = [a_i, a_f, a_o, a_g] \\\\
        i &= \\sigma(a_i),\\quad f = \\sigma(a_f),\\quad o = \\sigma(a_o),\\quad g = \\tanh(a_g) \\\\
        c_{next} &= f \\odot c_{prev} + i \\odot g \\\\
        h_{next} &= o \\odot \\tanh(c_{next})

    Args:
        x: ``(N, D)``.
        prev_h, prev_c: ``(N, H)``.
        Wx: ``(D, 4H)``.
        Wh: ``(H, 4H)``.
        b: ``(4H,)``.

    Returns:
        ``next_h`` ``(N, H)``, ``next_c`` ``(N, H)`` and an :class:`LSTMStepCache`.
    """
    _check_inputs(x, prev_h, 4, Wx, Wh, {"b": b}, sequence=False, h_name="prev_h",
                  c=prev_c, c_name="prev_c")
    xp = backend.get_array_module(x)
    gates = x @ Wx
    gates += prev_h @ Wh
    gates += b
    tanh_c = xp.empty_like(prev_c)
    next_c, next_h = xp.empty_like(prev_c), xp.empty_like(prev_h)
    _lstm_cell(gates, prev_c, tanh_c, next_c, next_h)
    return next_h, next_c, LSTMStepCache(x, prev_h, prev_c, Wx, Wh, gates, tanh_c)


def lstm_step_backward(dnext_h, dnext_c, cache: LSTMStepCache):
    """Backward of :func:`lstm_step_forward`.

    .. math::
        dc &= dc_{next} + dh_{next} \\odot o \\odot (1 - \\tanh^2 c_{next}) \\\\
        da_i &= dc \\odot g \\odot i (1 - i) \\\\
        da_f &= dc \\odot c_{prev} \\odot f (1 - f) \\\\
        da_o &= dh_{next} \\odot \\tanh(c_{next}) \\odot o (1 - o) \\\\
        da_g &= dc \\odot i \\odot (1 - g^2) \\\\
        dc_{prev} &= dc \\odot f \\\\
        dx &= da\\, W_x^\\top,\\quad dh_{prev} = da\\, W_h^\\top,\\quad
        dW_x = x^\\top da,\\quad dW_h = h_{prev}^\\top da,\\quad db = \\textstyle\\sum_n da_n

    with :math:`da = [da_i, da_f, da_o, da_g]`.

    Args:
        dnext_h, dnext_c: ``(N, H)``.

    Returns:
        ``dx`` ``(N, D)``, ``dprev_h`` ``(N, H)``, ``dprev_c`` ``(N, H)``, ``dWx`` ``(D, 4H)``,
        ``dWh`` ``(H, 4H)``, ``db`` ``(4H,)``.
    """
    x, prev_h, prev_c, Wx, Wh, gates, tanh_c = cache
    check_shape("dnext_h", dnext_h, tuple(prev_h.shape))
    check_shape("dnext_c", dnext_c, tuple(prev_c.shape))
    xp = backend.get_array_module(gates)
    da = xp.empty_like(gates)
    dprev_c = _lstm_cell_backward(dnext_h, dnext_c, gates, prev_c, tanh_c, da, xp.empty_like(prev_c))
    return da @ Wx.T, da @ Wh.T, dprev_c, x.T @ da, prev_h.T @ da, da.sum(axis=0)


class LSTMCache(NamedTuple):
    x: Any       # (T, N, D) the input, time-major
    h: Any       # (T+1, N, H) hidden states, time-major: h[0] = h0, h[t+1] after step t
    c: Any       # (T+1, N, H) cell states, likewise
    gates: Any   # (T, N, 4H) activations [i, f, o, g] of every step
    tanh_c: Any  # (T, N, H) tanh of each step's new cell (before the padding mix)
    mask: Any    # (T, N, 1) 1 where t < valid_lens[n], else 0; None without valid_lens
    Wx: Any      # (D, 4H)
    Wh: Any      # (H, 4H)
    h_last: Any  # (N, H) final hidden state h[T]
    c_last: Any  # (N, H) final cell state c[T]


def lstm_seq_forward(x, h0, c0, Wx, Wh, b, valid_lens=None):
    """An LSTM over a whole sequence from a given ``(h0, c0)``.

    .. math::
        a_t &= x_t W_x + h_{t-1} W_h + b,\\quad i_t, f_t, o_t = \\sigma(a_{t,i}), \\sigma(a_{t,f}), \\sigma(a_{t,o}),
        \\quad g_t = \\tanh(a_{t,g}) \\\\
        \\tilde c_t &= f_t \\odot c_{t-1} + i_t \\odot g_t, \\qquad \\tilde h_t = o_t \\odot \\tanh(\\tilde c_t) \\\\
        c_t &= m_t \\tilde c_t + (1 - m_t) c_{t-1}, \\quad h_t = m_t \\tilde h_t + (1 - m_t) h_{t-1},
        \\quad y_t = m_t \\tilde h_t

    with :math:`m_t = [t < \\ell_n]`. ``x W_x + b`` is one product for all steps.

    Args:
        x: ``(N, T, D)``.
        h0, c0: ``(N, H)``.
        Wx: ``(D, 4H)``; Wh: ``(H, 4H)``; b: ``(4H,)``.
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.

    Returns:
        ``h`` ``(N, T, H)`` (the outputs :math:`y_t`) and an :class:`LSTMCache` whose
        ``h_last``, ``c_last`` ``(N, H)`` are the final states.
    """
    n, _, _ = _check_inputs(x, h0, 4, Wx, Wh, {"b": b}, sequence=True, h_name="h0", c=c0, c_name="c0")
    return _lstm_run(x, h0, c0, Wx, Wh, b, _time_mask(valid_lens, n, x.shape[1], x))


def _lstm_run(x, h0, c0, Wx, Wh, b, mask):
    """:func:`lstm_seq_forward` after its checks, with ``mask`` ``(T, N, 1)`` built (the layers call this)."""
    xp = backend.get_array_module(x)
    n, t_steps, _ = x.shape
    hidden = Wh.shape[0]
    active = _active_steps(mask, t_steps)
    x_tm, xw = _input_projection(x, Wx, b, active)
    hs = xp.empty((t_steps + 1, n, hidden), dtype=x.dtype)
    cs = xp.empty_like(hs)
    gates = xp.empty((t_steps, n, 4 * hidden), dtype=x.dtype)
    tanh_c = xp.empty((t_steps, n, hidden), dtype=x.dtype)
    padded = _padded(mask)
    hs[0], cs[0] = h0, c0
    for t in range(active):
        xp.matmul(hs[t], Wh, out=gates[t])
        gates[t] += xw[t]
        _lstm_cell(gates[t], cs[t], tanh_c[t], cs[t + 1], hs[t + 1])
        pad = None if padded is None else padded[t]
        _carry_over(cs[t + 1], cs[t], pad)
        _carry_over(hs[t + 1], hs[t], pad)
    if active < t_steps:
        hs[active + 1:], cs[active + 1:] = hs[active], cs[active]
        gates[active:], tanh_c[active:] = 0, 0
    out = _batch_first_outputs(hs[1:], mask)
    return out, LSTMCache(x_tm, hs, cs, gates, tanh_c, mask, Wx, Wh, hs[t_steps], cs[t_steps])


def lstm_seq_backward(dh, cache: LSTMCache, dh_last=None, dc_last=None, return_step_norms=False):
    """Backward of :func:`lstm_seq_forward`: :func:`lstm_seq_backward_data` followed by
    :func:`lstm_backward_weights`.

    From :math:`\\delta^h_{T-1} = dh_{last}`, :math:`\\delta^c_{T-1} = dc_{last}` (zeros if ``None``),
    for :math:`t = T-1, \\ldots, 0`:

    .. math::
        g_t &= \\delta^h_t + m_t\\, dh_t \\quad (\\partial L/\\partial h_t), \\qquad
        d\\tilde h_t = m_t g_t, \\qquad d\\tilde c_t^{\\,in} = m_t \\delta^c_t \\\\
        dc &= d\\tilde c_t^{\\,in} + d\\tilde h_t \\odot o_t \\odot (1 - \\tanh^2 \\tilde c_t) \\\\
        da_{t} &= [\\,dc \\odot g_t \\odot i_t(1-i_t),\\ dc \\odot c_{t-1} \\odot f_t(1-f_t),\\
                  d\\tilde h_t \\odot \\tanh(\\tilde c_t) \\odot o_t(1-o_t),\\ dc \\odot i_t \\odot (1-g_t^2)\\,] \\\\
        \\delta^c_{t-1} &= dc \\odot f_t + (1 - m_t)\\, \\delta^c_t, \\qquad
        \\delta^h_{t-1} = da_t W_h^\\top + (1 - m_t)\\, g_t

    then :math:`dh_0 = \\delta^h_{-1}`, :math:`dc_0 = \\delta^c_{-1}`, :math:`dx_t = da_t W_x^\\top`,
    :math:`dW_x = \\sum_t x_t^\\top da_t`, :math:`dW_h = \\sum_t h_{t-1}^\\top da_t`,
    :math:`db = \\sum_{t,n} da_{t,n}` (each sum one product after the loop).

    Args:
        dh: ``(N, T, H)``.
        cache: from :func:`lstm_seq_forward`.
        dh_last, dc_last: ``(N, H)`` upstream gradients of ``cache.h_last`` / ``cache.c_last``, or ``None``.
        return_step_norms: also return ``step_norms`` ``(T,)``: :math:`\\|g_t\\|_F` over the batch.

    Returns:
        ``dx`` ``(N, T, D)``, ``dh0``, ``dc0`` ``(N, H)``, ``dWx`` ``(D, 4H)``, ``dWh`` ``(H, 4H)``,
        ``db`` ``(4H,)`` [, ``step_norms`` ``(T,)``].
    """
    dx, dh0, dc0, dA, *norms = lstm_seq_backward_data(dh, cache, dh_last, dc_last, return_step_norms)
    return (dx, dh0, dc0) + lstm_backward_weights([cache], [dA]) + tuple(norms)


def lstm_seq_backward_data(dh, cache: LSTMCache, dh_last=None, dc_last=None, return_step_norms=False):
    """The step loop of :func:`lstm_seq_backward`: input, initial-state and pre-activation gradients.

    Returns:
        ``dx`` ``(N, T, D)``, ``dh0``, ``dc0`` ``(N, H)``, ``dA`` ``(T, N, 4H)`` (:math:`da_t`,
        time-major) [, ``step_norms`` ``(T,)``].
    """
    dh_tm = _check_dh(dh, cache.h)
    delta_h = _initial_grad("dh_last", dh_last, cache.h_last)
    delta_c = _initial_grad("dc_last", dc_last, cache.c_last)
    return _lstm_backward_run(dh_tm, cache, delta_h, delta_c, return_step_norms)


def _lstm_backward_run(dh_tm, cache: LSTMCache, delta_h, delta_c, return_step_norms):
    """:func:`lstm_seq_backward_data` after its checks: ``dh_tm`` ``(T, N, H)`` is time-major,
    ``delta_h``, ``delta_c`` the final states' gradients in writable arrays."""
    x_tm, hs, cs, gates, tanh_c, mask, Wx, Wh, h_last, c_last = cache
    xp = backend.get_array_module(hs)
    t_steps = gates.shape[0]
    dA = xp.empty_like(gates)
    active = _active_steps(mask, t_steps)
    dA[active:] = 0
    norms = _tail_norms(t_steps, active, delta_h) if return_step_norms else None
    g, gm, cm = xp.empty_like(delta_h), xp.empty_like(delta_h), xp.empty_like(delta_c)
    for t in reversed(range(active)):
        m = None if mask is None else mask[t]
        _total_grad(delta_h, dh_tm[t], m, g)
        if norms is not None:
            norms[t] = _norm(g)
        if m is None:
            _lstm_cell_backward(g, delta_c, gates[t], cs[t], tanh_c[t], dA[t], delta_c)
        else:
            xp.multiply(m, delta_c, out=cm)
            _lstm_cell_backward(xp.multiply(m, g, out=gm), cm, gates[t], cs[t], tanh_c[t], dA[t], cm)
            delta_c *= 1 - m               # delta^c_{t-1} = dc f + (1 - m) delta^c_t
            delta_c += cm
        xp.matmul(dA[t], Wh.T, out=delta_h)
        _add_carried_grad(delta_h, g, m, gm)
    grads = (_input_grad(dA, Wx, active), delta_h, delta_c, dA)
    return grads + (norms,) if return_step_norms else grads


def lstm_backward_weights(caches, dAs):
    """Weight gradients of one or several :func:`lstm_seq_forward` calls with the same weights.

    .. math:: dW_x = \\textstyle\\sum_t x_t^\\top da_t,\\quad dW_h = \\sum_t h_{t-1}^\\top da_t,\\quad
              db = \\sum_{t,n} da_{t,n}

    summed over every step of every call, one product per weight.

    The same sums as :func:`rnn_backward_weights`, over ``4H`` gate columns.

    Returns:
        ``dWx`` ``(D, 4H)``, ``dWh`` ``(H, 4H)``, ``db`` ``(4H,)``.
    """
    return rnn_backward_weights(caches, dAs)


def lstm_forward(x, h0, Wx, Wh, b):
    """An LSTM over a whole sequence with the cell state starting at zero (CS231n).

    :func:`lstm_seq_forward` with :math:`c_0 = 0` and no padding; see there for the equations.

    Args:
        x: ``(N, T, D)``; h0: ``(N, H)``; Wx: ``(D, 4H)``; Wh: ``(H, 4H)``; b: ``(4H,)``.

    Returns:
        ``h`` ``(N, T, H)`` and an :class:`LSTMCache`.
    """
    check_ndim("h0", h0, 2, "(N, H)")
    return lstm_seq_forward(x, h0, backend.get_array_module(h0).zeros_like(h0), Wx, Wh, b)


def lstm_backward(dh, cache: LSTMCache):
    """Backward of :func:`lstm_forward` (:func:`lstm_seq_backward` without the ``dc0`` output).

    Args:
        dh: ``(N, T, H)``.

    Returns:
        ``dx`` ``(N, T, D)``, ``dh0`` ``(N, H)``, ``dWx`` ``(D, 4H)``, ``dWh`` ``(H, 4H)``, ``db`` ``(4H,)``.
    """
    dx, dh0, _, dWx, dWh, db = lstm_seq_backward(dh, cache)
    return dx, dh0, dWx, dWh, db


# ========================================================================== GRU
class GRUStepCache(NamedTuple):
    x: Any            # (N, D)
    prev_h: Any       # (N, H)
    Wx: Any           # (D, 3H)
    Wh: Any           # (H, 3H)
    gates: Any        # (N, 3H) activations [r, z, n]
    rh: Any           # (N, H) r * prev_h, the input of Whn (reset_after=False; else None)
    hn: Any           # (N, H) prev_h Whn + bhn, the term r scales (reset_after=True; else None)
    reset_after: bool


def _gru_fold_biases(bx, bh, reset_after: bool):
    """The bias added to ``x Wx``: ``bx + bh`` except ``bhn`` when it sits inside ``r * (.)``."""
    if not reset_after:
        return bx + bh
    folded = bx.copy()
    hidden = bx.shape[0] // 3
    folded[:2 * hidden] += bh[:2 * hidden]
    return folded


def _gate_blocks(a):
    """A contiguous ``(N, 3H)`` row block seen as ``(N, 3, H)``: ``[:, k]`` is gate ``k`` (a view)."""
    return a.reshape(a.shape[0], 3, -1)


def _gru_cell(ax, h, Wh, bhn, reset_after: bool, gates, aux, out, hh, scratch):
    """GRU cell from input pre-activations ``ax`` ``(N, 3H)`` (biases folded in, see
    :func:`_gru_fold_biases`): writes ``gates`` ``[r, z, n]`` (a contiguous ``(N, 3H)`` block),
    ``aux`` (``r*h`` or ``h Whn + bhn``) and the new state ``out`` ``(N, H)``. ``hh``
    ``(N, 3H)`` holds ``h Wh`` and ``scratch`` ``(3, N, H)`` the gates while they are computed.

    The equations of :func:`gru_step_forward`, evaluated without temporaries. Each gate
    is computed in its own contiguous ``(N, H)`` block of ``scratch`` (elementwise work on
    the strided column blocks of ``gates`` costs up to three times as much) and the three
    are copied into ``gates`` at once; :math:`h' = (1 - z) \\odot n + z \\odot h` is evaluated
    as :math:`n + z \\odot (h - n)` (three passes, not five).
    """
    xp = backend.get_array_module(ax)
    if fused.enabled(xp):
        return fused.gru_cell(ax, h, Wh, bhn, reset_after, gates, aux, out, hh, scratch)
    hidden = h.shape[1]
    h2 = 2 * hidden
    r, z, n = scratch
    if reset_after:
        xp.matmul(h, Wh, out=hh)
    else:
        xp.matmul(h, Wh[:, :h2], out=hh[:, :h2])
    xp.add(ax[:, :hidden], hh[:, :hidden], out=r)
    xp.add(ax[:, hidden:h2], hh[:, hidden:h2], out=z)
    sigmoid(scratch[:2], out=scratch[:2])
    if reset_after:
        xp.add(hh[:, h2:], bhn, out=aux)
        xp.multiply(r, aux, out=n)
    else:
        xp.multiply(r, h, out=aux)
        xp.matmul(aux, Wh[:, h2:], out=n)
    n += ax[:, h2:]
    xp.tanh(n, out=n)
    _gate_blocks(gates)[...] = scratch.transpose(1, 0, 2)
    xp.subtract(h, n, out=out)
    out *= z
    out += n
    return out


def _gru_cell_backward(dnext_h, h, gates, aux, Wh, reset_after: bool, dax, dah, dprev_h, scratch):
    """Writes the input-side pre-activation gradient into ``dax`` ``(N, 3H)``, for
    ``reset_after`` the hidden-side one into ``dah`` (both contiguous), and ``dprev_h``
    ``(N, H)``; ``scratch`` is an ``(8, N, H)`` buffer.

    The equations of :func:`gru_step_backward`, evaluated without temporaries on
    contiguous ``(N, H)`` blocks of ``scratch`` (the gates are copied there once, and each
    gradient block is built there and copied out at once), with two shared factors:
    :math:`dh' \\odot z` (the direct path to :math:`h`) and :math:`dh' \\odot (1 - z) = dh' - dh' \\odot z`.
    """
    xp = backend.get_array_module(gates)
    if fused.enabled(xp):
        return fused.gru_cell_backward(dnext_h, h, gates, aux, Wh, reset_after, dax, dah, dprev_h, scratch)
    hidden = h.shape[1]
    h2 = 2 * hidden
    r, z, n, dar, daz, dan, direct, gated = scratch
    scratch[:3] = _gate_blocks(gates).transpose(1, 0, 2)
    xp.multiply(dnext_h, z, out=direct)
    xp.subtract(dnext_h, direct, out=gated)
    xp.multiply(n, n, out=dan)
    xp.subtract(1, dan, out=dan)
    dan *= gated                       # dh' (1 - z) (1 - n^2)
    xp.subtract(h, n, out=daz)
    daz *= z
    daz *= gated                       # dh' (h - n) z (1 - z)
    xp.subtract(1, r, out=dar)
    dar *= r                           # r (1 - r)
    if reset_after:
        dar *= aux
        dar *= dan                     # da_n eta r (1 - r)
        _gate_blocks(dax)[...] = scratch[3:6].transpose(1, 0, 2)
        dan *= r                       # the hidden side: [da_r, da_z, da_n r]
        _gate_blocks(dah)[...] = scratch[3:6].transpose(1, 0, 2)
        xp.matmul(dah, Wh.T, out=dprev_h)
    else:
        drh = xp.matmul(dan, Wh[:, h2:].T, out=gated)
        dar *= h
        dar *= drh                     # drho h r (1 - r)
        _gate_blocks(dax)[...] = scratch[3:6].transpose(1, 0, 2)
        xp.matmul(dax[:, :h2], Wh[:, :h2].T, out=dprev_h)
        drh *= r
        dprev_h += drh
    dprev_h += direct
    return dprev_h


def _gru_weight_grads(h_prev, aux, dax, dah, reset_after: bool):
    """``dWh`` and ``dbh`` from the stacked (over steps) states and pre-activation gradients."""
    if reset_after:
        return h_prev.T @ dah, dah.sum(axis=0)
    hidden = h_prev.shape[1]
    xp = backend.get_array_module(dax)
    dWh = xp.concatenate([h_prev.T @ dax[:, :2 * hidden], aux.T @ dax[:, 2 * hidden:]], axis=1)
    return dWh, dax.sum(axis=0)



def gru_step_forward(x, prev_h, Wx, Wh, bx, bh, reset_after=False):
    """One GRU step, in either published variant.

    .. math::
        r &= \\sigma(x W_{xr} + b_{xr} + h W_{hr} + b_{hr}) \\\\
        z &= \\sigma(x W_{xz} + b_{xz} + h W_{hz} + b_{hz}) \\\\
        n &= \\tanh(x W_{xn} + b_{xn} + (r \\odot h) W_{hn} + b_{hn})
            \\quad \\text{(reset_after=False: Cho et al. 2014, d2l)} \\\\
        n &= \\tanh(x W_{xn} + b_{xn} + r \\odot (h W_{hn} + b_{hn}))
            \\quad \\text{(reset_after=True: cuDNN, PyTorch, Keras)} \\\\
        h' &= (1 - z) \\odot n + z \\odot h

    where :math:`W_{xr}, W_{xz}, W_{xn}` are the three ``H``-column blocks of ``Wx`` (and so
    on for ``Wh``, ``bx``, ``bh``), gate order ``[r, z, n]``.

    Args:
        x: ``(N, D)``.
        prev_h: ``(N, H)`` (the :math:`h` above).
        Wx: ``(D, 3H)``; Wh: ``(H, 3H)``; bx, bh: ``(3H,)``.
        reset_after: where the reset gate applies (see above); only ``True`` matches ``torch.nn.GRU``.

    Returns:
        ``next_h`` ``(N, H)`` (:math:`h'`) and a :class:`GRUStepCache`.
    """
    _check_inputs(x, prev_h, 3, Wx, Wh, {"bx": bx, "bh": bh}, sequence=False, h_name="prev_h")
    xp = backend.get_array_module(x)
    hidden = prev_h.shape[1]
    ax = x @ Wx
    ax += _gru_fold_biases(bx, bh, reset_after)
    gates = xp.empty_like(ax)
    aux = xp.empty_like(prev_h)
    next_h = _gru_cell(ax, prev_h, Wh, bh[2 * hidden:], reset_after, gates, aux, xp.empty_like(prev_h),
                       xp.empty_like(ax), xp.empty((3,) + prev_h.shape, dtype=prev_h.dtype))
    cache = GRUStepCache(x, prev_h, Wx, Wh, gates, None if reset_after else aux,
                         aux if reset_after else None, bool(reset_after))
    return next_h, cache


def gru_step_backward(dnext_h, cache: GRUStepCache):
    """Backward of :func:`gru_step_forward`.

    .. math::
        dn &= dh' \\odot (1 - z), \\qquad da_n = dn \\odot (1 - n^2) \\\\
        da_z &= dh' \\odot (h - n) \\odot z (1 - z)

    reset_after=False, with :math:`\\rho = r \\odot h`:

    .. math::
        d\\rho &= da_n W_{hn}^\\top, \\qquad da_r = d\\rho \\odot h \\odot r (1 - r) \\\\
        dh &= dh' \\odot z + d\\rho \\odot r + [da_r, da_z] [W_{hr}, W_{hz}]^\\top \\\\
        dW_h &= [\\,h^\\top [da_r, da_z],\\ \\rho^\\top da_n\\,], \\qquad db_h = db_x

    reset_after=True, with :math:`\\eta = h W_{hn} + b_{hn}`:

    .. math::
        da_r &= da_n \\odot \\eta \\odot r (1 - r), \\qquad
        da^h = [da_r, da_z, da_n \\odot r] \\\\
        dh &= dh' \\odot z + da^h W_h^\\top, \\qquad dW_h = h^\\top da^h, \\qquad db_h = \\textstyle\\sum da^h

    and in both, with :math:`da^x = [da_r, da_z, da_n]`:

    .. math:: dx = da^x W_x^\\top, \\qquad dW_x = x^\\top da^x, \\qquad db_x = \\textstyle\\sum da^x

    Args:
        dnext_h: ``(N, H)``.

    Returns:
        ``dx`` ``(N, D)``, ``dprev_h`` ``(N, H)``, ``dWx`` ``(D, 3H)``, ``dWh`` ``(H, 3H)``,
        ``dbx`` ``(3H,)``, ``dbh`` ``(3H,)``.
    """
    x, prev_h, Wx, Wh, gates, rh, hn, reset_after = cache
    check_shape("dnext_h", dnext_h, tuple(prev_h.shape))
    xp = backend.get_array_module(gates)
    aux = hn if reset_after else rh
    dax = xp.empty_like(gates)
    dah = xp.empty_like(gates) if reset_after else None
    dprev_h = _gru_cell_backward(dnext_h, prev_h, gates, aux, Wh, reset_after, dax, dah,
                                 xp.empty_like(prev_h), xp.empty((8,) + prev_h.shape, dtype=prev_h.dtype))
    dWh, dbh = _gru_weight_grads(prev_h, aux, dax, dah, reset_after)
    return dax @ Wx.T, dprev_h, x.T @ dax, dWh, dax.sum(axis=0), dbh


class GRUCache(NamedTuple):
    x: Any            # (T, N, D) the input, time-major
    h: Any            # (T+1, N, H) states, time-major: h[0] = h0, h[t+1] after step t
    gates: Any        # (T, N, 3H) activations [r, z, n] of every step
    rh: Any           # (T, N, H) r_t * h_{t-1}, the input of Whn (reset_after=False; else None)
    hn: Any           # (T, N, H) h_{t-1} Whn + bhn, the term r_t scales (reset_after=True; else None)
    mask: Any         # (T, N, 1) 1 where t < valid_lens[n], else 0; None without valid_lens
    Wx: Any           # (D, 3H)
    Wh: Any           # (H, 3H)
    reset_after: bool
    h_last: Any       # (N, H) final state h[T]


def gru_forward(x, h0, Wx, Wh, bx, bh, reset_after=False, valid_lens=None):
    """A GRU over a whole sequence.

    Each step applies the cell of :func:`gru_step_forward` to :math:`x_t, h_{t-1}`, giving
    :math:`\\tilde h_t`, then :math:`h_t = m_t \\tilde h_t + (1 - m_t) h_{t-1}` and the output
    :math:`y_t = m_t \\tilde h_t` with :math:`m_t = [t < \\ell_n]`. The input terms
    ``x W_x + b_x`` (and the ``b_h`` blocks that add linearly: all three without
    ``reset_after``, ``b_hr, b_hz`` with it) are one product for all steps before the loop.

    Args:
        x: ``(N, T, D)``; h0: ``(N, H)``; Wx: ``(D, 3H)``; Wh: ``(H, 3H)``; bx, bh: ``(3H,)``.
        reset_after: the GRU variant (see :func:`gru_step_forward`).
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.

    Returns:
        ``h`` ``(N, T, H)`` (the outputs :math:`y_t`) and a :class:`GRUCache` whose ``h_last``
        ``(N, H)`` is the final state.
    """
    n, _, _ = _check_inputs(x, h0, 3, Wx, Wh, {"bx": bx, "bh": bh}, sequence=True, h_name="h0")
    return _gru_run(x, h0, Wx, Wh, bx, bh, reset_after, _time_mask(valid_lens, n, x.shape[1], x))


def _gru_run(x, h0, Wx, Wh, bx, bh, reset_after, mask):
    """:func:`gru_forward` after its checks, with ``mask`` ``(T, N, 1)`` built (the layers call this)."""
    xp = backend.get_array_module(x)
    n, t_steps, _ = x.shape
    hidden = Wh.shape[0]
    active = _active_steps(mask, t_steps)
    x_tm, ax = _input_projection(x, Wx, _gru_fold_biases(bx, bh, reset_after), active)
    padded = _padded(mask)
    hs = xp.empty((t_steps + 1, n, hidden), dtype=x.dtype)
    gates = xp.empty((t_steps, n, 3 * hidden), dtype=x.dtype)
    aux = xp.empty((t_steps, n, hidden), dtype=x.dtype)
    hh = xp.empty((n, 3 * hidden), dtype=x.dtype)
    scratch = xp.empty((3, n, hidden), dtype=x.dtype)
    hs[0] = h0
    bhn = bh[2 * hidden:]
    for t in range(active):
        _gru_cell(ax[t], hs[t], Wh, bhn, reset_after, gates[t], aux[t], hs[t + 1], hh, scratch)
        _carry_over(hs[t + 1], hs[t], None if padded is None else padded[t])
    if active < t_steps:
        hs[active + 1:] = hs[active]
        gates[active:], aux[active:] = 0, 0
    out = _batch_first_outputs(hs[1:], mask)
    cache = GRUCache(x_tm, hs, gates, None if reset_after else aux, aux if reset_after else None,
                     mask, Wx, Wh, bool(reset_after), hs[t_steps])
    return out, cache


class GRUPreactGrads(NamedTuple):
    dax: Any  # (T, N, 3H) gradient of the input-side pre-activations [a_r, a_z, a_n]
    dah: Any  # (T, N, 3H) gradient of the hidden-side ones h W_h + b_h (reset_after=True; else None)


def gru_backward(dh, cache: GRUCache, dh_last=None, return_step_norms=False):
    """Backward of :func:`gru_forward`: :func:`gru_backward_data` followed by :func:`gru_backward_weights`.

    From :math:`\\delta_{T-1} = dh_{last}` (zeros if ``None``), for :math:`t = T-1, \\ldots, 0`:
    :math:`g_t = \\delta_t + m_t\\, dh_t` (:math:`\\partial L/\\partial h_t`), the cell backward of
    :func:`gru_step_backward` with :math:`dh' = m_t g_t` gives :math:`da^x_t` (and
    :math:`da^h_t`) and the cell's :math:`dh`, and :math:`\\delta_{t-1} = dh + (1 - m_t) g_t`.
    Then :math:`dh_0 = \\delta_{-1}`, and the weight gradients are the step formulas summed
    over :math:`t` (each one product after the loop):
    :math:`dW_x = \\sum_t x_t^\\top da^x_t`, :math:`db_x = \\sum_{t,n} da^x_{t,n}`, and
    :math:`dW_h, db_h` from :math:`h_{t-1}` (and :math:`\\rho_t = r_t \\odot h_{t-1}`) as in
    :func:`gru_step_backward`.

    Args:
        dh: ``(N, T, H)``.
        cache: from :func:`gru_forward`.
        dh_last: ``(N, H)`` upstream gradient of ``cache.h_last``, or ``None``.
        return_step_norms: also return ``step_norms`` ``(T,)``: :math:`\\|g_t\\|_F` over the batch.

    Returns:
        ``dx`` ``(N, T, D)``, ``dh0`` ``(N, H)``, ``dWx`` ``(D, 3H)``, ``dWh`` ``(H, 3H)``,
        ``dbx``, ``dbh`` ``(3H,)`` [, ``step_norms`` ``(T,)``].
    """
    dx, dh0, preact, *norms = gru_backward_data(dh, cache, dh_last, return_step_norms)
    return (dx, dh0) + gru_backward_weights([cache], [preact]) + tuple(norms)


def gru_backward_data(dh, cache: GRUCache, dh_last=None, return_step_norms=False):
    """The step loop of :func:`gru_backward`: input, initial-state and pre-activation gradients.

    Returns:
        ``dx`` ``(N, T, D)``, ``dh0`` ``(N, H)``, a :class:`GRUPreactGrads`
        [, ``step_norms`` ``(T,)``].
    """
    dh_tm = _check_dh(dh, cache.h)
    return _gru_backward_run(dh_tm, cache, _initial_grad("dh_last", dh_last, cache.h_last), return_step_norms)


def _gru_backward_run(dh_tm, cache: GRUCache, delta, return_step_norms):
    """:func:`gru_backward_data` after its checks: ``dh_tm`` ``(T, N, H)`` is time-major, ``delta``
    the gradient of the final state in a writable array."""
    x_tm, hs, gates, rh, hn, mask, Wx, Wh, reset_after, h_last = cache
    xp = backend.get_array_module(hs)
    aux = hn if reset_after else rh
    t_steps = gates.shape[0]
    dax = xp.empty_like(gates)
    dah = xp.empty_like(gates) if reset_after else None
    active = _active_steps(mask, t_steps)
    if active < t_steps:
        dax[active:] = 0
        if dah is not None:
            dah[active:] = 0
    norms = _tail_norms(t_steps, active, delta) if return_step_norms else None
    g, gm = xp.empty_like(delta), xp.empty_like(delta)
    scratch = xp.empty((8,) + delta.shape, dtype=delta.dtype)
    for t in reversed(range(active)):
        m = None if mask is None else mask[t]
        _total_grad(delta, dh_tm[t], m, g)
        if norms is not None:
            norms[t] = _norm(g)
        # delta_{t-1} = dh + (1 - m_t) g_t; delta_t is spent, so its buffer takes dh
        _gru_cell_backward(g if m is None else xp.multiply(m, g, out=gm), hs[t], gates[t], aux[t], Wh,
                           reset_after, dax[t], None if dah is None else dah[t], delta, scratch)
        _add_carried_grad(delta, g, m, gm)
    grads = (_input_grad(dax, Wx, active), delta, GRUPreactGrads(dax, dah))
    return grads + (norms,) if return_step_norms else grads


def gru_backward_weights(caches, preacts):
    """Weight gradients of one or several :func:`gru_forward` calls with the same weights.

    The formulas of :func:`gru_step_backward` summed over every step of every call:
    :math:`dW_x = \\sum_t x_t^\\top da^x_t`, :math:`db_x = \\sum_{t,n} da^x_{t,n}`, and
    :math:`dW_h, db_h` from :math:`h_{t-1}` (or :math:`\\rho_t = r_t \\odot h_{t-1}`), one
    product per weight.

    Args:
        caches: list of :class:`GRUCache` (one variant).
        preacts: the matching :class:`GRUPreactGrads` from :func:`gru_backward_data`.

    Returns:
        ``dWx`` ``(D, 3H)``, ``dWh`` ``(H, 3H)``, ``dbx``, ``dbh`` ``(3H,)``.
    """
    _check_calls(caches, preacts)
    reset_after = caches[0].reset_after
    dax = _active_rows(caches, [p.dax for p in preacts])
    dah = _active_rows(caches, [p.dah for p in preacts]) if reset_after else None
    aux = _active_rows(caches, [c.hn if reset_after else c.rh for c in caches])
    dWh, dbh = _gru_weight_grads(_active_rows(caches, [c.h[:-1] for c in caches]), aux, dax, dah, reset_after)
    return _active_rows(caches, [c.x for c in caches]).T @ dax, dWh, dax.sum(axis=0), dbh

