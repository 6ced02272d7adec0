r"""The fast path of the recurrent cells: whole sequences, time-major, preallocated.

Every function here computes exactly what a loop over the reference steps of
:mod:`npseq.functional.recurrent` computes (``rnn_step_forward``, ``gru_step_forward``,
``lstm_step_forward`` and their backwards, with the padding mix of ``rnn_forward``), and
``tests/test_fast_recurrent_parity.py`` holds them to it within 1e-12 in float64: outputs,
states and every gradient. Read the reference first; this module is how the same maths
is arranged for speed, and it is what the layers of :mod:`npseq.nn` run.
:mod:`npseq.functional.fused` is its GPU twin: the same cells as CUDA kernels.

**Padding.** A :class:`Padding` record, built once per layer call by
:func:`sequence_padding` from ``valid_lens``, carries the mask :math:`m_t = [t < \ell_n]`,
where the state carries over, and how many steps to run. A padded step keeps the state
and outputs zero:

.. math:: h_t = m_t\, \tilde h_t + (1 - m_t)\, h_{t-1}, \qquad y_t = m_t\, \tilde h_t

and the backward is the chain rule through that mix, with :math:`\delta_t` the gradient
reaching :math:`h_t` from step :math:`t+1` and :math:`g_t = \partial L/\partial h_t`:

.. math:: g_t = \delta_t + m_t\, dy_t,\qquad d\tilde h_t = m_t\, g_t,\qquad
          \delta_{t-1} = (1 - m_t)\, g_t + \frac{\partial \tilde h_t}{\partial h_{t-1}}^{\!\top} d\tilde h_t

**Speed.** The same maths, in fewer and larger operations:

* the input projection of all ``T`` steps is one product ``X Wx`` (``(T*N, D) @ (D, kH)``)
  before the loop, and the input gradients ``dX = dA Wx^T``, ``dWx = X^T dA`` are one
  product each after it, where ``dA`` holds every step's pre-activation gradient;
* ``dWh = sum_t h_{t-1}^T dA_t`` is one product ``H_prev^T dA`` after the loop;
* every per-step quantity lives in a preallocated *time-major* array ``(T, N, ...)``
  (so step ``t`` is one contiguous block); inputs and outputs stay batch first;
* the cells write each result straight into its slice of those arrays, with in-place
  operations instead of temporaries (each cell's docstring names the rearrangement,
  e.g. :math:`(1 - z) n + z h` evaluated as :math:`n + z (h - n)`);
* the padding mix is a selection (``copyto`` where :math:`m_t = 0`), exact like the
  product by 0 and 1;
* the steps after ``max(valid_lens)``, where every sequence is padding, are not run at
  all (as with PyTorch's packed sequences): the state carries over, the outputs and
  every gradient there are zero, the cache's per-step gates there are 0, and the
  products above cover only the steps that ran. On a GPU, reading ``max(valid_lens)``
  would stop the device, so there every step runs and the mask keeps the results.

**Data and weights.** Each backward comes in two halves, as in cuDNN:
``*_backward_data`` walks the steps and returns the input and initial-state gradients
plus the pre-activation gradients of every step, and ``*_backward_weights`` turns the
inputs and pre-activation gradients of one *or several* calls into the weight
gradients, one product per weight. A decoder that runs a layer one step at a time
passes all its steps at once, so its weight gradients still cost one large product
each instead of ``T`` small ones.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_float_array, check_ndim, check_shape, check_valid_lens
from ..errors import InvalidTypeError, InvalidValueError
from . import fused
from .activations import sigmoid

__all__ = [
    "Padding", "sequence_padding",
    "RNNSequenceCache", "RNNDataGrads", "rnn_sequence_forward", "rnn_sequence_backward_data",
    "rnn_sequence_backward_weights",
    "GRUSequenceCache", "GRUPreactGrads", "GRUDataGrads", "gru_sequence_forward", "gru_sequence_backward_data",
    "gru_sequence_backward_weights",
    "LSTMSequenceCache", "LSTMDataGrads", "lstm_sequence_forward", "lstm_sequence_backward_data",
    "lstm_sequence_backward_weights",
]


# ------------------------------------------------------------------ padding
class Padding(NamedTuple):
    lengths: Any  # (N,) integers in [0, T]: each sequence's valid length
    mask: Any     # (T, N, 1) in the inputs' dtype: 1 where t < lengths[n], else 0
    padded: Any   # (T, N, 1) booleans: mask == 0, where the state carries over
    steps: int    # how many leading steps to run: max(lengths) on the host, T on a device


def sequence_padding(valid_lens, num_steps: int, like) -> Padding | None:
    """The :class:`Padding` of a batch, built once and shared by every layer and direction.

    Args:
        valid_lens: ``None`` (no padding) or ``(N,)`` integers in ``[0, num_steps]``, on
            ``like``'s backend.
        num_steps: ``T``.
        like: an array whose backend and dtype the mask takes (the inputs ``x``).

    Returns:
        ``None`` without ``valid_lens``, else a :class:`Padding`. On the host ``steps`` is
        ``max(valid_lens)``; on a device it is ``T``, since reading the lengths back would
        stop the device at every call.
    """
    if valid_lens is None:
        return None
    check_valid_lens("valid_lens", valid_lens, (valid_lens.shape[0],), num_steps)
    xp = backend.get_array_module(like)
    mask = (xp.arange(num_steps)[:, None] < valid_lens[None, :]).astype(like.dtype)[:, :, None]
    on_host = xp is backend.numpy
    steps = (int(valid_lens.max()) if valid_lens.size else 0) if on_host else num_steps
    return Padding(valid_lens, mask, mask == 0, steps)


def _steps_of(padding, num_steps: int) -> int:
    return num_steps if padding is None else padding.steps


def _mask_at(padding, t: int):
    return None if padding is None else padding.mask[t]


# ------------------------------------------------------------------ helpers
def _check_sequence_inputs(x, h, gates: int, Wx, Wh, biases: dict, padding, c=None):
    """Shapes and dtypes of a sequence call (all arrays in ``x``'s dtype: the buffers take it).

    A decoder calls these functions at every step, so the common case is one comparison of
    shapes and dtypes; the checks that word an error run only when it fails.
    """
    if _inputs_fit(x, h, gates, Wx, Wh, biases, padding, c):
        return
    check_float_array("x", x)
    check_ndim("x", x, 3, "(N, T, D)")
    n, t_steps, d = x.shape
    check_ndim("h0", h, 2, "(N, H)")
    hidden = h.shape[1]
    named = {"h0": (h, (n, hidden)), "Wx": (Wx, (d, gates * hidden)), "Wh": (Wh, (hidden, gates * hidden))}
    if c is not None:
        named["c0"] = (c, (n, hidden))
    named.update({name: (b, (gates * hidden,)) for name, b in biases.items()})
    for name, (array, shape) in named.items():
        check_shape(name, array, shape)
        if array.dtype != x.dtype:
            raise InvalidTypeError(f"{name}: expected dtype {x.dtype} (the dtype of x), got {array.dtype}")
    if padding is not None and tuple(padding.mask.shape) != (t_steps, n, 1):
        raise InvalidValueError(f"padding: expected a mask of shape ({t_steps}, {n}, 1) (from sequence_padding with "
                                f"this batch), got {tuple(padding.mask.shape)}")


def _inputs_fit(x, h, gates, Wx, Wh, biases, padding, c) -> bool:
    """Whether the arguments of a sequence call have the expected shapes and one float dtype."""
    try:
        n, t_steps, d = x.shape
        hidden = h.shape[1]
    except (AttributeError, ValueError, IndexError):
        return False
    width = gates * hidden
    arrays = [h, Wx, Wh, *biases.values()] + ([] if c is None else [c])
    return (x.dtype.kind == "f" and h.shape == (n, hidden) and Wx.shape == (d, width)
            and Wh.shape == (hidden, width) and all(b.shape == (width,) for b in biases.values())
            and (c is None or c.shape == (n, hidden)) and all(a.dtype == x.dtype for a in arrays)
            and (padding is None or padding.mask.shape == (t_steps, n, 1)))


def _input_projection(x, Wx, bias, steps):
    """Time-major input ``X`` ``(T, N, D)`` and the input pre-activations ``X Wx + bias`` of the first
    ``steps`` steps ``(steps, N, kH)``.

    The transpose is free when ``x`` is already time-major in memory (a layer's own
    outputs are), and the bias is added in place into the product.
    """
    n, t, d = x.shape
    x_tm = x.transpose(1, 0, 2).reshape(t * n, d).reshape(t, n, d)  # one copy at most, kept contiguous
    projected = _flat(x_tm[:steps]) @ Wx
    projected += bias
    return x_tm, projected.reshape(steps, n, Wx.shape[1])


def _input_grad(dA, Wx, steps):
    """``dx`` ``(N, T, D)`` from the time-major pre-activation gradients ``dA`` ``(T, N, kH)``,
    of which only the first ``steps`` can be nonzero."""
    t, n, _ = dA.shape
    xp = backend.get_array_module(dA)
    if steps == t:
        return (_flat(dA) @ Wx.T).reshape(t, n, -1).transpose(1, 0, 2)
    dx = xp.zeros((t, n, Wx.shape[0]), dtype=dA.dtype)
    xp.matmul(_flat(dA[:steps]), Wx.T, out=_flat(dx[:steps]))
    return dx.transpose(1, 0, 2)


def _ran_rows(caches, arrays):
    """Each call's per-step array ``(T_i, N, K)`` cut to the steps that ran, stacked
    ``(sum of steps * N, K)``: the padded tail adds nothing to a weight gradient."""
    parts = [a[:c.steps] for c, a in zip(caches, arrays)]
    if len(parts) == 1:
        return _flat(parts[0])
    return backend.get_array_module(parts[0]).concatenate([_flat(a) for a in parts])


def _check_calls(caches, grads):
    if len(caches) != len(grads) or not caches:
        raise InvalidValueError(f"dAs: expected one pre-activation gradient per cache ({len(caches)} caches), "
                                f"got {len(grads)}")


def _flat(a):
    """``(T, N, K)`` -> ``(T*N, K)``."""
    return a.reshape(-1, a.shape[-1])


def _batch_first_outputs(states, padding):
    """Outputs ``(N, T, H)`` from the time-major states ``(T, N, H)``: zero at padded steps,
    and never a view of the cache (so editing them in place cannot corrupt the backward)."""
    out = states.copy() if padding is None else states * padding.mask
    return out.transpose(1, 0, 2)


def _initial_grad(name, value, like):
    """An upstream gradient for a final state in a new array that the step loop may
    overwrite: a copy of the given array (shape-checked), or zeros."""
    if value is None:
        return backend.get_array_module(like).zeros_like(like)
    if getattr(value, "shape", None) != like.shape:
        check_shape(name, value, tuple(like.shape))
    return value.copy()


def _carry_over(state, prev, padding, t):
    r"""The padding mix :math:`h_t = m_t \tilde h_t + (1 - m_t) h_{t-1}` applied in place to
    ``state`` (which holds :math:`\tilde h_t`) as a selection, exact like the product by 0/1."""
    if padding is not None:
        backend.get_array_module(state).copyto(state, prev, where=padding.padded[t])


def _total_grad(delta, dh_t, mask_t, out):
    r""":math:`g_t = \delta_t + m_t\, dh_t` into ``out``."""
    xp = backend.get_array_module(delta)
    if mask_t is None:
        return xp.add(delta, dh_t, out=out)
    xp.multiply(mask_t, dh_t, out=out)
    out += delta
    return out


def _add_carried_grad(delta, g, mask_t, scratch):
    r""":math:`\delta_{t-1} \mathrel{+}= (1 - m_t)\, g_t` in place (nothing without a mask)."""
    if mask_t is not None:
        xp = backend.get_array_module(delta)
        xp.multiply(1 - mask_t, g, out=scratch)
        delta += scratch


def _check_dh(dh, states):
    """The upstream gradient ``dh`` ``(N, T, H)`` checked against the states ``(T+1, N, H)``, time-major."""
    t, n, hidden = states.shape
    if getattr(dh, "shape", None) != (n, t - 1, hidden):
        check_shape("dh", dh, (n, t - 1, hidden))
    return dh.transpose(1, 0, 2)


def _tail_norms(t_steps: int, steps: int, delta):
    """The ``(T,)`` array of step norms with the all-padding tail filled in: there :math:`g_t`
    is the gradient from the end, unchanged (the loop fills the first ``steps``)."""
    norms = backend.get_array_module(delta).empty(t_steps, dtype=delta.dtype)
    norms[steps:] = _norm(delta)
    return norms


def _norm(g):
    xp = backend.get_array_module(g)
    return xp.sqrt((g * g).sum())


# =================================================================== vanilla RNN
class RNNSequenceCache(NamedTuple):
    x: Any        # (T, N, D) the input, time-major
    h: Any        # (T+1, N, H) states, time-major: h[0] = h0, h[t+1] after step t
    padding: Any  # Padding, or None
    steps: int    # how many leading steps ran (the rest are all padding)
    Wx: Any       # (D, H)
    Wh: Any       # (H, H)
    h_last: Any   # (N, H) final state h[T]: each sequence's last valid state


class RNNDataGrads(NamedTuple):
    dx: Any          # (N, T, D)
    dh0: Any         # (N, H)
    dA: Any          # (T, N, H) pre-activation gradients da_t, time-major (zero past the steps that ran)
    step_norms: Any  # (T,) ||g_t|| over the batch when asked for, else None


def rnn_sequence_forward(x, h0, Wx, Wh, b, padding=None):
    """The vanilla RNN over a sequence: a loop over :func:`~npseq.functional.recurrent.rnn_step_forward`
    with the padding mix, equal to :func:`~npseq.functional.recurrent.rnn_forward`.

    Args:
        x: ``(N, T, D)``; h0: ``(N, H)``; Wx: ``(D, H)``; Wh: ``(H, H)``; b: ``(H,)``, all of one dtype.
        padding: ``None`` or the batch's :class:`Padding`.

    Returns:
        the outputs ``(N, T, H)`` (zero at padded steps) and an :class:`RNNSequenceCache`.
    """
    _check_sequence_inputs(x, h0, 1, Wx, Wh, {"b": b}, padding)
    xp = backend.get_array_module(x)
    n, t_steps, _ = x.shape
    steps = _steps_of(padding, t_steps)
    x_tm, xw = _input_projection(x, Wx, b, steps)
    hs = xp.empty((t_steps + 1, n, Wh.shape[0]), dtype=x.dtype)
    hs[0] = h0
    for t in range(steps):
        xp.matmul(hs[t], Wh, out=hs[t + 1])  # the new state is computed in its own slot
        hs[t + 1] += xw[t]
        xp.tanh(hs[t + 1], out=hs[t + 1])
        _carry_over(hs[t + 1], hs[t], padding, t)
    hs[steps + 1:] = hs[steps]
    out = _batch_first_outputs(hs[1:], padding)
    return out, RNNSequenceCache(x_tm, hs, padding, steps, Wx, Wh, hs[t_steps])


def rnn_sequence_backward_data(dh, cache: RNNSequenceCache, dh_last=None, record_norms=False) -> RNNDataGrads:
    """The step loop of the RNN's backward (:func:`~npseq.functional.recurrent.rnn_backward` without the
    weight sums, which :func:`rnn_sequence_backward_weights` does).

    Args:
        dh: ``(N, T, H)`` upstream gradient of the outputs.
        cache: from :func:`rnn_sequence_forward`.
        dh_last: ``(N, H)`` upstream gradient of the final state, or ``None``.
        record_norms: also return :math:`\\|g_t\\|` over the batch at each step.

    Returns:
        an :class:`RNNDataGrads`.
    """
    dh_tm = _check_dh(dh, cache.h)
    delta = _initial_grad("dh_last", dh_last, cache.h_last)
    hs, padding, steps, Wh = cache.h, cache.padding, cache.steps, cache.Wh
    xp = backend.get_array_module(hs)
    t_steps = hs.shape[0] - 1
    dA = xp.empty((t_steps,) + hs.shape[1:], dtype=hs.dtype)
    dA[steps:] = 0
    norms = _tail_norms(t_steps, steps, delta) if record_norms else None
    g, scratch = xp.empty_like(delta), xp.empty_like(delta)
    for t in reversed(range(steps)):
        m = _mask_at(padding, t)
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
    return RNNDataGrads(_input_grad(dA, cache.Wx, steps), delta, dA, norms)


def rnn_sequence_backward_weights(caches, dAs):
    r"""Weight gradients of one or several :func:`rnn_sequence_forward` calls with the same weights.

    .. math:: dW_x = \textstyle\sum_t x_t^\top da_t,\quad dW_h = \sum_t h_{t-1}^\top da_t,\quad
              db = \sum_{t,n} da_{t,n}

    summed over every step of every call, one product per weight.

    Args:
        caches: list of :class:`RNNSequenceCache` (or :class:`LSTMSequenceCache`).
        dAs: the matching ``dA`` arrays of :func:`rnn_sequence_backward_data`.

    Returns:
        ``dWx`` ``(D, kH)``, ``dWh`` ``(H, kH)``, ``db`` ``(kH,)``.
    """
    _check_calls(caches, dAs)
    dA = _ran_rows(caches, dAs)
    dWx = _ran_rows(caches, [c.x for c in caches]).T @ dA
    dWh = _ran_rows(caches, [c.h[:-1] for c in caches]).T @ dA
    return dWx, dWh, dA.sum(axis=0)


# ========================================================================== GRU
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


def _gru_cell(ax, h, Wh, bhn, reset_after: bool, gates, hidden_n, out, hh, scratch):
    r"""GRU cell from input pre-activations ``ax`` ``(N, 3H)`` (biases folded in, see
    :func:`_gru_fold_biases`): writes ``gates`` ``[r, z, n]`` (a contiguous ``(N, 3H)`` block),
    ``hidden_n`` (``r*h`` or ``h Whn + bhn``, see :class:`GRUSequenceCache`) and the new state
    ``out`` ``(N, H)``. ``hh`` ``(N, 3H)`` holds ``h Wh`` and ``scratch`` ``(3, N, H)`` the gates
    while they are computed.

    The equations of :func:`~npseq.functional.recurrent.gru_step_forward`, evaluated
    without temporaries. Each gate is computed in its own contiguous ``(N, H)`` block of
    ``scratch`` (elementwise work on the strided column blocks of ``gates`` costs up to
    three times as much) and the three are copied into ``gates`` at once;
    :math:`h' = (1 - z) \odot n + z \odot h` is evaluated as :math:`n + z \odot (h - n)`
    (three passes, not five).
    """
    xp = backend.get_array_module(ax)
    if fused.enabled(xp):
        return fused.gru_cell(ax, h, Wh, bhn, reset_after, gates, hidden_n, out, hh, scratch)
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
        xp.add(hh[:, h2:], bhn, out=hidden_n)
        xp.multiply(r, hidden_n, out=n)
    else:
        xp.multiply(r, h, out=hidden_n)
        xp.matmul(hidden_n, Wh[:, h2:], out=n)
    n += ax[:, h2:]
    xp.tanh(n, out=n)
    _gate_blocks(gates)[...] = scratch.transpose(1, 0, 2)
    xp.subtract(h, n, out=out)
    out *= z
    out += n
    return out


def _gru_cell_backward(dnext_h, h, gates, hidden_n, Wh, reset_after: bool, dax, dah, dprev_h, scratch):
    r"""Writes the input-side pre-activation gradient into ``dax`` ``(N, 3H)``, for
    ``reset_after`` the hidden-side one into ``dah`` (both contiguous), and ``dprev_h``
    ``(N, H)``; ``scratch`` is an ``(8, N, H)`` buffer.

    The equations of :func:`~npseq.functional.recurrent.gru_step_backward`, evaluated
    without temporaries on contiguous ``(N, H)`` blocks of ``scratch`` (the gates are
    copied there once, and each gradient block is built there and copied out at once),
    with two shared factors: :math:`dh' \odot z` (the direct path to :math:`h`) and
    :math:`dh' \odot (1 - z) = dh' - dh' \odot z`.
    """
    xp = backend.get_array_module(gates)
    if fused.enabled(xp):
        return fused.gru_cell_backward(dnext_h, h, gates, hidden_n, Wh, reset_after, dax, dah, dprev_h, scratch)
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
        dar *= hidden_n
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


class GRUSequenceCache(NamedTuple):
    x: Any            # (T, N, D) the input, time-major
    h: Any            # (T+1, N, H) states, time-major: h[0] = h0, h[t+1] after step t
    gates: Any        # (T, N, 3H) activations [r, z, n] of every step
    hidden_n: Any     # (T, N, H) the hidden side of the candidate n that the backward needs:
    #                   r_t * h_{t-1}, the input of Whn (reset before), or h_{t-1} Whn + bhn, what r_t scales
    #                   (reset after)
    padding: Any      # Padding, or None
    steps: int        # how many leading steps ran (the rest are all padding)
    Wx: Any           # (D, 3H)
    Wh: Any           # (H, 3H)
    reset_after: bool
    h_last: Any       # (N, H) final state h[T]


class GRUPreactGrads(NamedTuple):
    dax: Any  # (T, N, 3H) gradient of the input-side pre-activations [a_r, a_z, a_n]
    dah: Any  # (T, N, 3H) gradient of the hidden-side terms [h Whr, h Whz, the hidden side of n]:
    #           reset after [da_r, da_z, r * da_n]; reset before the same array as dax


class GRUDataGrads(NamedTuple):
    dx: Any              # (N, T, D)
    dh0: Any             # (N, H)
    preact: GRUPreactGrads
    step_norms: Any      # (T,) ||g_t|| over the batch when asked for, else None


def gru_sequence_forward(x, h0, Wx, Wh, bx, bh, reset_after=False, padding=None):
    """The GRU over a sequence: a loop over :func:`~npseq.functional.recurrent.gru_step_forward`
    with the padding mix, equal to :func:`~npseq.functional.recurrent.gru_forward`.

    The input terms ``x W_x + b_x`` (and the ``b_h`` blocks that add linearly: all three
    without ``reset_after``, ``b_hr, b_hz`` with it) are one product for all steps.

    Args:
        x: ``(N, T, D)``; h0: ``(N, H)``; Wx: ``(D, 3H)``; Wh: ``(H, 3H)``; bx, bh: ``(3H,)``, one dtype.
        reset_after: the GRU variant.
        padding: ``None`` or the batch's :class:`Padding`.

    Returns:
        the outputs ``(N, T, H)`` and a :class:`GRUSequenceCache`.
    """
    _check_sequence_inputs(x, h0, 3, Wx, Wh, {"bx": bx, "bh": bh}, padding)
    xp = backend.get_array_module(x)
    n, t_steps, _ = x.shape
    hidden = Wh.shape[0]
    steps = _steps_of(padding, t_steps)
    x_tm, ax = _input_projection(x, Wx, _gru_fold_biases(bx, bh, reset_after), steps)
    hs = xp.empty((t_steps + 1, n, hidden), dtype=x.dtype)
    gates = xp.empty((t_steps, n, 3 * hidden), dtype=x.dtype)
    hidden_n = xp.empty((t_steps, n, hidden), dtype=x.dtype)
    hh = xp.empty((n, 3 * hidden), dtype=x.dtype)
    scratch = xp.empty((3, n, hidden), dtype=x.dtype)
    hs[0] = h0
    bhn = bh[2 * hidden:]
    for t in range(steps):
        _gru_cell(ax[t], hs[t], Wh, bhn, reset_after, gates[t], hidden_n[t], hs[t + 1], hh, scratch)
        _carry_over(hs[t + 1], hs[t], padding, t)
    hs[steps + 1:] = hs[steps]
    gates[steps:], hidden_n[steps:] = 0, 0
    out = _batch_first_outputs(hs[1:], padding)
    cache = GRUSequenceCache(x_tm, hs, gates, hidden_n, padding, steps, Wx, Wh, bool(reset_after), hs[t_steps])
    return out, cache


def gru_sequence_backward_data(dh, cache: GRUSequenceCache, dh_last=None, record_norms=False) -> GRUDataGrads:
    """The step loop of the GRU's backward (:func:`~npseq.functional.recurrent.gru_backward` without
    the weight sums, which :func:`gru_sequence_backward_weights` does).

    Args:
        dh: ``(N, T, H)``; cache: from :func:`gru_sequence_forward`;
        dh_last: ``(N, H)`` or ``None``; record_norms: also return :math:`\\|g_t\\|` per step.

    Returns:
        a :class:`GRUDataGrads`.
    """
    dh_tm = _check_dh(dh, cache.h)
    delta = _initial_grad("dh_last", dh_last, cache.h_last)
    hs, gates, hidden_n, padding, steps = cache.h, cache.gates, cache.hidden_n, cache.padding, cache.steps
    reset_after = cache.reset_after
    xp = backend.get_array_module(hs)
    t_steps = gates.shape[0]
    dax = xp.empty_like(gates)
    dah = xp.empty_like(gates) if reset_after else dax
    dax[steps:] = 0
    dah[steps:] = 0
    norms = _tail_norms(t_steps, steps, delta) if record_norms else None
    g, gm = xp.empty_like(delta), xp.empty_like(delta)
    scratch = xp.empty((8,) + delta.shape, dtype=delta.dtype)
    for t in reversed(range(steps)):
        m = _mask_at(padding, t)
        _total_grad(delta, dh_tm[t], m, g)
        if norms is not None:
            norms[t] = _norm(g)
        # delta_{t-1} = dh + (1 - m_t) g_t; delta_t is spent, so its buffer takes dh
        _gru_cell_backward(g if m is None else xp.multiply(m, g, out=gm), hs[t], gates[t], hidden_n[t],
                           cache.Wh, reset_after, dax[t], dah[t] if reset_after else None, delta, scratch)
        _add_carried_grad(delta, g, m, gm)
    return GRUDataGrads(_input_grad(dax, cache.Wx, steps), delta, GRUPreactGrads(dax, dah), norms)


def gru_sequence_backward_weights(caches, preacts):
    r"""Weight gradients of one or several :func:`gru_sequence_forward` calls with the same weights.

    The formulas of :func:`~npseq.functional.recurrent.gru_step_backward` summed over every
    step of every call, one product per weight:

    .. math:: dW_x = \textstyle\sum_t x_t^\top da^x_t,\quad db_x = \sum_{t,n} da^x_{t,n},\quad
              dW_h = \sum_t [\,h_{t-1}^\top da^h_{t,rz},\ u_t^\top da^h_{t,n}\,],\quad
              db_h = \sum_{t,n} da^h_{t,n}

    with :math:`u_t = h_{t-1}` (reset after) or :math:`r_t \odot h_{t-1}` (reset before).

    Args:
        caches: list of :class:`GRUSequenceCache` (one variant).
        preacts: the matching :class:`GRUPreactGrads` of :func:`gru_sequence_backward_data`.

    Returns:
        ``dWx`` ``(D, 3H)``, ``dWh`` ``(H, 3H)``, ``dbx``, ``dbh`` ``(3H,)``.
    """
    _check_calls(caches, preacts)
    dax = _ran_rows(caches, [p.dax for p in preacts])
    h_prev = _ran_rows(caches, [c.h[:-1] for c in caches])
    dWx = _ran_rows(caches, [c.x for c in caches]).T @ dax
    if caches[0].reset_after:
        dah = _ran_rows(caches, [p.dah for p in preacts])
        return dWx, h_prev.T @ dah, dax.sum(axis=0), dah.sum(axis=0)
    h2 = 2 * h_prev.shape[1]
    rh = _ran_rows(caches, [c.hidden_n for c in caches])
    dWh = backend.get_array_module(dax).concatenate([h_prev.T @ dax[:, :h2], rh.T @ dax[:, h2:]], axis=1)
    dbx = dax.sum(axis=0)
    return dWx, dWh, dbx, dbx.copy()


# ========================================================================= LSTM
def _lstm_cell(gates, prev_c, tanh_c, next_c, next_h):
    r"""LSTM cell in place: ``gates`` ``(N, 4H)`` holds the pre-activations ``a`` on entry and
    the activations ``[i, f, o, g]`` on return; writes ``tanh_c``, ``next_c`` and ``next_h``.

    The equations of :func:`~npseq.functional.recurrent.lstm_step_forward`, with no
    temporaries (``next_h`` holds :math:`i \odot g` until it is overwritten by
    :math:`o \odot \tanh c_{next}`).
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
    r"""Writes :math:`\partial L/\partial a` into ``da`` ``(N, 4H)`` and the cell path's
    ``dprev_c`` ``(N, H)`` (which may be ``dnext_c`` itself: that is read first).

    The equations of :func:`~npseq.functional.recurrent.lstm_step_backward`, each gate's
    gradient built inside its slice of ``da``; :math:`dc` is kept in the ``o`` slice until
    that slice's own turn.
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


class LSTMSequenceCache(NamedTuple):
    x: Any        # (T, N, D) the input, time-major
    h: Any        # (T+1, N, H) hidden states, time-major: h[0] = h0, h[t+1] after step t
    c: Any        # (T+1, N, H) cell states, likewise
    gates: Any    # (T, N, 4H) activations [i, f, o, g] of every step
    tanh_c: Any   # (T, N, H) tanh of each step's new cell (before the padding mix)
    padding: Any  # Padding, or None
    steps: int    # how many leading steps ran (the rest are all padding)
    Wx: Any       # (D, 4H)
    Wh: Any       # (H, 4H)
    h_last: Any   # (N, H) final hidden state h[T]
    c_last: Any   # (N, H) final cell state c[T]


class LSTMDataGrads(NamedTuple):
    dx: Any          # (N, T, D)
    dh0: Any         # (N, H)
    dc0: Any         # (N, H)
    dA: Any          # (T, N, 4H) pre-activation gradients, time-major
    step_norms: Any  # (T,) ||g_t|| over the batch when asked for, else None


def lstm_sequence_forward(x, h0, c0, Wx, Wh, b, padding=None):
    """The LSTM over a sequence from ``(h0, c0)``: a loop over
    :func:`~npseq.functional.recurrent.lstm_step_forward` with the padding mix of both states
    (:func:`~npseq.functional.recurrent.lstm_forward` is the case ``c0 = 0``).

    Args:
        x: ``(N, T, D)``; h0, c0: ``(N, H)``; Wx: ``(D, 4H)``; Wh: ``(H, 4H)``; b: ``(4H,)``, one dtype.
        padding: ``None`` or the batch's :class:`Padding`.

    Returns:
        the outputs ``(N, T, H)`` and an :class:`LSTMSequenceCache`.
    """
    _check_sequence_inputs(x, h0, 4, Wx, Wh, {"b": b}, padding, c=c0)
    xp = backend.get_array_module(x)
    n, t_steps, _ = x.shape
    hidden = Wh.shape[0]
    steps = _steps_of(padding, t_steps)
    x_tm, xw = _input_projection(x, Wx, b, steps)
    hs = xp.empty((t_steps + 1, n, hidden), dtype=x.dtype)
    cs = xp.empty_like(hs)
    gates = xp.empty((t_steps, n, 4 * hidden), dtype=x.dtype)
    tanh_c = xp.empty((t_steps, n, hidden), dtype=x.dtype)
    hs[0], cs[0] = h0, c0
    for t in range(steps):
        xp.matmul(hs[t], Wh, out=gates[t])
        gates[t] += xw[t]
        _lstm_cell(gates[t], cs[t], tanh_c[t], cs[t + 1], hs[t + 1])
        _carry_over(cs[t + 1], cs[t], padding, t)
        _carry_over(hs[t + 1], hs[t], padding, t)
    hs[steps + 1:], cs[steps + 1:] = hs[steps], cs[steps]
    gates[steps:], tanh_c[steps:] = 0, 0
    out = _batch_first_outputs(hs[1:], padding)
    return out, LSTMSequenceCache(x_tm, hs, cs, gates, tanh_c, padding, steps, Wx, Wh, hs[t_steps], cs[t_steps])


def lstm_sequence_backward_data(dh, cache: LSTMSequenceCache, dh_last=None, dc_last=None,
                                record_norms=False) -> LSTMDataGrads:
    r"""The step loop of the LSTM's backward (:func:`~npseq.functional.recurrent.lstm_backward` without
    the weight sums, which :func:`lstm_sequence_backward_weights` does).

    At a padded step the cell's upstream gradients are masked, :math:`dh' = m_t g_t` and
    :math:`dc' = m_t \delta^c_t`, and what the mix carried over flows on unchanged:
    :math:`\delta^c_{t-1} = dc' \odot f_t + (1 - m_t) \delta^c_t`,
    :math:`\delta^h_{t-1} = da_t W_h^\top + (1 - m_t) g_t`.

    Args:
        dh: ``(N, T, H)``; cache: from :func:`lstm_sequence_forward`;
        dh_last, dc_last: ``(N, H)`` or ``None``; record_norms: also return :math:`\|g_t\|` per step.

    Returns:
        an :class:`LSTMDataGrads`.
    """
    dh_tm = _check_dh(dh, cache.h)
    delta_h = _initial_grad("dh_last", dh_last, cache.h_last)
    delta_c = _initial_grad("dc_last", dc_last, cache.c_last)
    cs, gates, tanh_c, padding, steps = cache.c, cache.gates, cache.tanh_c, cache.padding, cache.steps
    xp = backend.get_array_module(gates)
    t_steps = gates.shape[0]
    dA = xp.empty_like(gates)
    dA[steps:] = 0
    norms = _tail_norms(t_steps, steps, delta_h) if record_norms else None
    g, gm, cm = xp.empty_like(delta_h), xp.empty_like(delta_h), xp.empty_like(delta_c)
    for t in reversed(range(steps)):
        m = _mask_at(padding, t)
        _total_grad(delta_h, dh_tm[t], m, g)
        if norms is not None:
            norms[t] = _norm(g)
        if m is None:
            _lstm_cell_backward(g, delta_c, gates[t], cs[t], tanh_c[t], dA[t], delta_c)
        else:
            xp.multiply(m, delta_c, out=cm)
            _lstm_cell_backward(xp.multiply(m, g, out=gm), cm, gates[t], cs[t], tanh_c[t], dA[t], cm)
            delta_c *= 1 - m
            delta_c += cm
        xp.matmul(dA[t], cache.Wh.T, out=delta_h)
        _add_carried_grad(delta_h, g, m, gm)
    return LSTMDataGrads(_input_grad(dA, cache.Wx, steps), delta_h, delta_c, dA, norms)


def lstm_sequence_backward_weights(caches, dAs):
    """Weight gradients of one or several :func:`lstm_sequence_forward` calls with the same weights:
    the sums of :func:`rnn_sequence_backward_weights` over the ``4H`` gate columns.

    Returns:
        ``dWx`` ``(D, 4H)``, ``dWh`` ``(H, 4H)``, ``db`` ``(4H,)``.
    """
    return rnn_sequence_backward_weights(caches, dAs)
