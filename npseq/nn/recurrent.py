"""``RNN``, ``GRU`` and ``LSTM``: stacked, optionally bidirectional recurrent layers.

Each layer is a thin wrapper over the fast sequence functions of
:mod:`npseq.functional.fast_recurrent` (``rnn_sequence_forward``, ``*_backward_data``,
``*_backward_weights``, and likewise for the GRU and LSTM), which equal loops over the
reference cells of :mod:`npseq.functional.recurrent`; no cell maths is repeated here. Shapes are
batch first: ``x`` ``(N, T, D)``, outputs
``(N, T, num_directions * H)``, states ``(num_layers * num_directions, N, H)`` with the
row of layer ``l``, direction ``d`` at ``l * num_directions + d`` (PyTorch's order).

**Truncated BPTT.** The state returned by ``forward`` is a plain array with no
history: feeding it to the next chunk's ``forward`` and calling ``backward`` per chunk
stops every gradient at the chunk boundary (the gradient with respect to the
chunk's initial state is still returned, as ``dstate0``). :func:`detach` makes the
hand-over explicit.
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, NamedTuple

from .. import backend
from .._checks import (
    as_rng,
    check_array,
    check_count,
    check_float_array,
    check_ndim,
    check_probability,
    check_registration,
    check_same_backend,
    check_shape,
    check_valid_lens,
)
from ..errors import InvalidTypeError, InvalidValueError
from ..functional import fast_recurrent as S
from ..functional import recurrent as R
from ..functional.layers import dropout_backward, dropout_forward
from .init import uniform
from .module import Module, Parameter

__all__ = ["Cell", "CELLS", "register_cell", "unregister_cell", "cell_record", "RecurrentBase", "RNN", "GRU", "LSTM",
           "detach", "from_torch_state_dict", "make_rnn", "make_rnn_parameters", "to_torch_state_dict"]


class _LayerCache(NamedTuple):
    directions: list  # one functional sequence cache per direction ([forward, reverse])
    dropout: Any      # DropoutCache on this layer's output (None for the top layer)


class _RecurrentCache(NamedTuple):
    layers: list        # one _LayerCache per layer, bottom first
    reverse_index: Any  # (N, T) time index that reverses each sequence within its valid length; None = plain flip
    x_shape: tuple      # (N, T, D)


def detach(state):
    """A copy of a recurrent state with no link to the computation that produced it.

    ``state`` is an array (``RNN``, ``GRU``) or a tuple ``(h, c)`` (``LSTM``); ``None``
    gives ``None``. This is the hand-over of truncated backpropagation through time:
    npseq arrays carry no history, so each chunk's ``backward`` already stops at the
    chunk's initial state, and ``backward`` returns the gradient with respect to that
    state (``dstate0``), which is simply not propagated further. The copy makes the
    intent explicit and protects the carried state from in-place changes of the
    array that the previous chunk returned.
    """
    if state is None:
        return None
    if isinstance(state, (tuple, list)):
        return tuple(detach(part) for part in state)
    check_array("state", state)
    return state.copy()


class RecurrentBase(Module):
    """Shared machinery of :class:`RNN`, :class:`GRU` and :class:`LSTM`.

    ``forward(x, state=None, valid_lens=None) -> (outputs, state)``:

    * ``x`` ``(N, T, D)`` float, on the layer's backend and in its dtype;
    * ``state``: ``None`` (zeros) or the initial state, ``(L * num_directions, N, H)``
      (``LSTM``: a tuple ``(h, c)`` of two such arrays);
    * ``valid_lens`` ``(N,)`` integers in ``[0, T]``: padded steps leave the state
      unchanged and output zeros, and the reverse direction starts at each sequence's
      own last valid token (the sequence is reversed within its valid length by a
      gather, run forward, and gathered back), so results equal PyTorch's
      ``pack_padded_sequence`` (which needs lengths >= 1);
    * ``outputs`` ``(N, T, num_directions * H)``: the top layer's outputs, ``[forward, reverse]``
      concatenated on the last axis; the returned state holds each layer's and
      direction's final state (each sequence's last valid one).

    Layer ``l > 0`` reads the outputs of layer ``l - 1`` after inverted dropout with
    probability ``dropout`` (training mode only; drawn from a generator seeded from
    ``rng``).

    ``backward(doutputs, dstate=None) -> (dx, dstate0)``: ``dstate`` has the state's
    structure (``None`` = zeros; for ``LSTM`` either part of the tuple may be ``None``);
    ``dstate0`` is the gradient with respect to the initial state (zeros state when
    ``state`` was ``None``). Adds into every ``Parameter.grad``.

    Inside ``with layer.deferred_weight_grads():`` each ``backward`` keeps its
    pre-activation gradients and the weight gradients of all those calls are computed
    when the block ends, one product per weight (the same sums, in fewer and larger
    products: what a decoder that calls the layer once per step wants).

    Set ``record_step_norms = True`` to have each ``backward`` store
    ``step_grad_norms[(layer, direction)]``, a host NumPy array ``(T,)`` of
    :math:`\\|\\partial L / \\partial h_t\\|` over the batch at each step, in the order that
    direction processes the steps (for the reverse direction index ``s`` is its ``s``-th
    step, time ``T-1-s`` when there is no padding).

    Parameters are named per layer and direction like PyTorch's: ``Wx_l0``, ``Wh_l0``
    and the bias(es) ``..._l0``, then ``..._l0_reverse``, ``..._l1``, ...; all start from
    :math:`U(-1/\\sqrt{H}, 1/\\sqrt{H})`.
    """

    _gates = 1
    _bias_names = ("b",)
    _state_parts = 1

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bidirectional: bool = False, dropout: float = 0.0, *, rng=None, dtype=None):
        super().__init__()
        # a bool is an int to Python, but nn.GRU(3, True) is a mistake, not a hidden size of 1
        input_size, hidden_size = check_count("input_size", input_size), check_count("hidden_size", hidden_size)
        num_layers = check_count("num_layers", num_layers)
        check_probability("dropout", dropout)
        self.input_size, self.hidden_size = input_size, hidden_size
        self.num_layers, self.bidirectional = num_layers, bool(bidirectional)
        self.num_directions = 2 if bidirectional else 1
        self.dropout = float(dropout)
        self.record_step_norms = False
        self.step_grad_norms = {}
        self._deferred = None
        rng = as_rng(rng)
        bound = 1.0 / math.sqrt(hidden_size)
        width = self._gates * hidden_size
        self._param_names = {}
        for layer in range(self.num_layers):
            layer_input = input_size if layer == 0 else self.num_directions * hidden_size
            for direction in range(self.num_directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("Wx", (layer_input, width)), ("Wh", (hidden_size, width))]
                shapes += [(name, (width,)) for name in self._bias_names]
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(uniform(rng, shape, bound, dtype)))
                self._param_names[layer, direction] = [name + suffix for name, _ in shapes]
        self.dropout_rng = as_rng(int(rng.integers(2**63)))

    # --------------------------------------------------------- subclass hooks
    def _run_forward(self, x, initial, params, padding):
        """Functional sequence forward of one layer and direction (``padding``: a
        :class:`~npseq.functional.fast_recurrent.Padding` or ``None``): ``(outputs, cache, finals)``."""
        raise NotImplementedError

    def _run_backward_data(self, dh, cache, dfinals, record):
        """Functional backward data: ``(dx, dinitial, preact, step_norms or None)``."""
        raise NotImplementedError

    def _run_backward_weights(self, caches, preacts):
        """Functional backward weights of one or several calls: the gradients of ``[Wx, Wh, bias(es)]``."""
        raise NotImplementedError

    @contextlib.contextmanager
    def deferred_weight_grads(self):
        """Within the block, ``backward`` leaves the weight gradients for the block's end.

        They are then computed for all the block's calls at once, per layer and
        direction, and added into ``Parameter.grad``. If the block raises, the
        pending work is dropped with it.
        """
        if self._deferred is not None:
            raise RuntimeError(f"{type(self).__name__}.deferred_weight_grads: already inside such a block")
        self._deferred = {}
        try:
            yield self
            pending, self._deferred = self._deferred, None
            for (layer, direction), calls in pending.items():
                caches, preacts = zip(*calls)
                self._add_weight_grads(layer, direction, list(caches), list(preacts))
        finally:
            self._deferred = None

    def _add_weight_grads(self, layer, direction, caches, preacts):
        for param, grad in zip(self._params_of(layer, direction), self._run_backward_weights(caches, preacts)):
            param.grad += grad

    # ---------------------------------------------------------------- helpers
    def _params_of(self, layer: int, direction: int) -> list:
        """``[Wx, Wh, bias(es)]`` of one layer and direction, looked up by name at call time."""
        return [getattr(self, name) for name in self._param_names[layer, direction]]

    @property
    def _reference(self):
        return self.Wx_l0.data

    def _state_shape(self, n: int) -> tuple:
        return (self.num_layers * self.num_directions, n, self.hidden_size)

    def _state_parts_of(self, state, name: str, n: int, allow_none_parts: bool):
        """The state (or its gradient) as a tuple of arrays (or ``None``s), validated."""
        shape = self._state_shape(n)
        layout = f"of shape {shape}"
        if self._state_parts == 1:
            parts, names = (state,), (name,)
        else:
            if not isinstance(state, (tuple, list)) or len(state) != 2:
                raise InvalidTypeError(f"{name}: expected a tuple (h, c) of two arrays {layout}, "
                                       f"got {type(state).__name__}")
            parts, names = tuple(state), (f"{name}[0]", f"{name}[1]")
        for part, part_name in zip(parts, names):
            if part is None and allow_none_parts:
                continue
            check_float_array(part_name, part)
            check_shape(part_name, part, shape)
            check_same_backend(part_name, part, self._reference)
            if part.dtype != self._reference.dtype:
                raise InvalidTypeError(f"{part_name}: expected dtype {self._reference.dtype} (the layer's dtype), "
                                       f"got {part.dtype}")
        return parts

    def _public_state(self, parts):
        return parts[0] if self._state_parts == 1 else tuple(parts)

    @staticmethod
    def _reverse(a, index):
        """Reverse each sequence in time within its valid length (a permutation that is its own inverse)."""
        if index is None:
            return a[:, ::-1]
        xp = backend.get_array_module(a)
        return a[xp.arange(a.shape[0])[:, None], index]

    # ---------------------------------------------------------------- forward
    def forward(self, x, state=None, valid_lens=None):
        check_float_array("x", x)
        check_ndim("x", x, 3, "(N, T, D)")
        check_same_backend("x", x, self._reference)
        n, t_steps, d = x.shape
        if n == 0 or t_steps == 0:
            raise InvalidValueError(f"x: expected at least one sequence and one time step (N >= 1, T >= 1), "
                                    f"got shape {tuple(x.shape)}")
        if d != self.input_size:
            raise InvalidValueError(f"x: expected shape (N, T, {self.input_size}), got {tuple(x.shape)}")
        if x.dtype != self._reference.dtype:
            raise InvalidTypeError(f"x: expected dtype {self._reference.dtype} (the layer's dtype), got {x.dtype}")
        xp = backend.get_array_module(x)
        if state is None:
            parts = tuple(xp.zeros(self._state_shape(n), dtype=x.dtype) for _ in range(self._state_parts))
        else:
            parts = self._state_parts_of(state, "state", n, allow_none_parts=False)
        reverse_index = padding = None
        if valid_lens is not None:
            check_valid_lens("valid_lens", valid_lens, (n,), t_steps)
            check_same_backend("valid_lens", valid_lens, self._reference)
            # the reverse direction's padding too: it reverses within lengths
            padding = S.sequence_padding(valid_lens, t_steps, x)
            if self.bidirectional:
                steps = xp.arange(t_steps)[None, :]
                lens = valid_lens[:, None]
                reverse_index = xp.where(steps < lens, lens - 1 - steps, steps)

        layer_input, layer_caches = x, []
        finals = [[] for _ in parts]
        for layer in range(self.num_layers):
            outputs, caches = [], []
            for direction in range(self.num_directions):
                k = layer * self.num_directions + direction
                params = [p.data for p in self._params_of(layer, direction)]
                seq = layer_input if direction == 0 else self._reverse(layer_input, reverse_index)
                out, cache, last = self._run_forward(seq, [part[k] for part in parts], params, padding)
                outputs.append(out if direction == 0 else self._reverse(out, reverse_index))
                caches.append(cache)
                for collected, value in zip(finals, last):
                    collected.append(value)
            out = outputs[0] if len(outputs) == 1 else xp.concatenate(outputs, axis=-1)
            drop = None
            if layer < self.num_layers - 1:
                out, drop = dropout_forward(out, self.dropout, self.dropout_rng, train=self.training)
            layer_caches.append(_LayerCache(caches, drop))
            layer_input = out
        self.save_for_backward(_RecurrentCache(layer_caches, reverse_index, (n, t_steps, d)))
        return layer_input, self._public_state([xp.stack(collected) for collected in finals])

    # --------------------------------------------------------------- backward
    def backward(self, doutputs, dstate=None):
        cache = self.pop_cache()
        n, t_steps, _ = cache.x_shape
        hidden, dirs = self.hidden_size, self.num_directions
        check_shape("doutputs", doutputs, (n, t_steps, dirs * hidden))
        check_same_backend("doutputs", doutputs, self._reference)
        if dstate is None:
            dparts = (None,) * self._state_parts
        else:
            dparts = self._state_parts_of(dstate, "dstate", n, allow_none_parts=True)
        xp = backend.get_array_module(doutputs)
        dinitial = [xp.empty(self._state_shape(n), dtype=doutputs.dtype) for _ in dparts]
        norms = {}
        dout = doutputs
        for layer in reversed(range(self.num_layers)):
            layer_cache = cache.layers[layer]
            if layer_cache.dropout is not None:
                dout = dropout_backward(dout, layer_cache.dropout)
            dx = None
            for direction in range(dirs):
                k = layer * dirs + direction
                dh = dout[..., direction * hidden:(direction + 1) * hidden]
                if direction == 1:
                    dh = self._reverse(dh, cache.reverse_index)
                direction_cache = layer_cache.directions[direction]
                dfinals = [None if part is None else part[k] for part in dparts]
                dseq, dstart, preact, step_norms = self._run_backward_data(
                    dh, direction_cache, dfinals, self.record_step_norms)
                if direction == 1:
                    dseq = self._reverse(dseq, cache.reverse_index)
                dx = dseq if dx is None else dx + dseq
                if self._deferred is None:
                    self._add_weight_grads(layer, direction, [direction_cache], [preact])
                else:
                    self._deferred.setdefault((layer, direction), []).append((direction_cache, preact))
                for target, grad in zip(dinitial, dstart):
                    target[k] = grad
                if step_norms is not None:
                    norms[layer, direction] = backend.to_numpy(step_norms)
            dout = dx
        if self.record_step_norms:
            self.step_grad_norms = norms
        return dout, self._public_state(dinitial)

    def extra_repr(self) -> str:
        extras = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            extras += f", num_layers={self.num_layers}"
        if self.bidirectional:
            extras += ", bidirectional=True"
        if self.dropout:
            extras += f", dropout={self.dropout}"
        return extras


class RNN(RecurrentBase):
    """Multi-layer Elman RNN with tanh: the maths of :func:`~npseq.functional.recurrent.rnn_forward`, run
    by its fast twin :func:`~npseq.functional.fast_recurrent.rnn_sequence_forward`.

    Each layer and direction computes

    .. math::
        \\tilde h_t = \\tanh(x_t W_x + h_{t-1} W_h + b), \\qquad
        h_t = m_t \\tilde h_t + (1 - m_t) h_{t-1}, \\qquad y_t = m_t \\tilde h_t

    (:math:`m_t = [t < \\ell_n]`, all ones without ``valid_lens``). See :class:`RecurrentBase`
    for ``forward``/``backward``.

    Parameters per layer ``l`` (suffix ``_l{l}``, reverse direction ``_l{l}_reverse``):
    ``Wx`` ``(D_l, H)`` (``D_0 = input_size``, ``D_l = num_directions * H`` above), ``Wh``
    ``(H, H)``, ``b`` ``(H,)``.

    Mapping to and from ``torch.nn.RNN(nonlinearity="tanh", batch_first=True)``:
    ``Wx = weight_ih_l{l}.T``, ``Wh = weight_hh_l{l}.T``, ``b = bias_ih_l{l} + bias_hh_l{l}``;
    back: ``weight_ih = Wx.T``, ``weight_hh = Wh.T``, ``bias_ih = b``, ``bias_hh = 0``
    (see :func:`to_torch_state_dict` / :func:`from_torch_state_dict`).
    """

    def _run_forward(self, x, initial, params, padding):
        out, cache = S.rnn_sequence_forward(x, initial[0], *params, padding)
        return out, cache, (cache.h_last,)

    def _run_backward_data(self, dh, cache, dfinals, record):
        grads = S.rnn_sequence_backward_data(dh, cache, dfinals[0], record)
        return grads.dx, (grads.dh0,), grads.dA, grads.step_norms

    def _run_backward_weights(self, caches, preacts):
        return S.rnn_sequence_backward_weights(caches, preacts)


class GRU(RecurrentBase):
    """Multi-layer GRU: the maths of :func:`~npseq.functional.recurrent.gru_forward`, run by its fast
    twin :func:`~npseq.functional.fast_recurrent.gru_sequence_forward`.

    Each layer and direction computes, with gate order ``[r, z, n]`` in the ``3H`` columns,

    .. math::
        r_t &= \\sigma(x_t W_{xr} + b_{xr} + h_{t-1} W_{hr} + b_{hr}), \\quad
        z_t = \\sigma(x_t W_{xz} + b_{xz} + h_{t-1} W_{hz} + b_{hz}) \\\\
        n_t &= \\tanh(x_t W_{xn} + b_{xn} + (r_t \\odot h_{t-1}) W_{hn} + b_{hn})
            \\quad \\text{(reset_after=False, Cho et al. 2014 / d2l)} \\\\
        n_t &= \\tanh(x_t W_{xn} + b_{xn} + r_t \\odot (h_{t-1} W_{hn} + b_{hn}))
            \\quad \\text{(reset_after=True, cuDNN / PyTorch / Keras)} \\\\
        \\tilde h_t &= (1 - z_t) \\odot n_t + z_t \\odot h_{t-1}, \\qquad
        h_t = m_t \\tilde h_t + (1 - m_t) h_{t-1}, \\qquad y_t = m_t \\tilde h_t

    See :class:`RecurrentBase` for ``forward``/``backward``.

    Parameters per layer ``l`` (suffix ``_l{l}``, reverse ``_l{l}_reverse``): ``Wx``
    ``(D_l, 3H)``, ``Wh`` ``(H, 3H)``, ``bx`` ``(3H,)``, ``bh`` ``(3H,)``.

    Mapping to and from ``torch.nn.GRU(batch_first=True)``, which is the ``reset_after=True``
    variant (``reset_after=False`` has no PyTorch equivalent): torch keeps the gate blocks
    ``[r, z, n]`` as rows, so ``Wx = weight_ih_l{l}.T``, ``Wh = weight_hh_l{l}.T``,
    ``bx = bias_ih_l{l}``, ``bh = bias_hh_l{l}``, and back by the same transposes.
    """

    _gates = 3
    _bias_names = ("bx", "bh")

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bidirectional: bool = False, dropout: float = 0.0, reset_after: bool = False, *,
                 rng=None, dtype=None):
        super().__init__(input_size, hidden_size, num_layers, bidirectional, dropout, rng=rng, dtype=dtype)
        self.reset_after = bool(reset_after)

    def _run_forward(self, x, initial, params, padding):
        out, cache = S.gru_sequence_forward(x, initial[0], *params, self.reset_after, padding)
        return out, cache, (cache.h_last,)

    def _run_backward_data(self, dh, cache, dfinals, record):
        grads = S.gru_sequence_backward_data(dh, cache, dfinals[0], record)
        return grads.dx, (grads.dh0,), grads.preact, grads.step_norms

    def _run_backward_weights(self, caches, preacts):
        return S.gru_sequence_backward_weights(caches, preacts)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", reset_after={self.reset_after}"


class LSTM(RecurrentBase):
    """Multi-layer LSTM: the maths of :func:`~npseq.functional.recurrent.lstm_forward` (from any ``c0``),
    run by its fast twin :func:`~npseq.functional.fast_recurrent.lstm_sequence_forward`.

    Each layer and direction computes, with gate order ``[i, f, o, g]`` in the ``4H`` columns,

    .. math::
        [i_t, f_t, o_t] &= \\sigma([a_i, a_f, a_o]), \\quad g_t = \\tanh(a_g), \\qquad
        a = x_t W_x + h_{t-1} W_h + b \\\\
        \\tilde c_t &= f_t \\odot c_{t-1} + i_t \\odot g_t, \\qquad \\tilde h_t = o_t \\odot \\tanh(\\tilde c_t) \\\\
        c_t &= m_t \\tilde c_t + (1 - m_t) c_{t-1}, \\quad h_t = m_t \\tilde h_t + (1 - m_t) h_{t-1},
        \\quad y_t = m_t \\tilde h_t

    The state is a tuple ``(h, c)``, each ``(L * num_directions, N, H)``. See
    :class:`RecurrentBase` for ``forward``/``backward``.

    Parameters per layer ``l`` (suffix ``_l{l}``, reverse ``_l{l}_reverse``): ``Wx``
    ``(D_l, 4H)``, ``Wh`` ``(H, 4H)``, ``b`` ``(4H,)``.

    Mapping to and from ``torch.nn.LSTM(batch_first=True)``: torch keeps the gate blocks as
    rows in the order ``[i, f, g, o]``; with ``P`` the block permutation ``[0, 1, 3, 2]``
    (which swaps ``g`` and ``o`` and is its own inverse),
    ``Wx = weight_ih_l{l}[P].T``, ``Wh = weight_hh_l{l}[P].T``,
    ``b = (bias_ih_l{l} + bias_hh_l{l})[P]``; back: ``weight_ih = Wx.T[P]``,
    ``weight_hh = Wh.T[P]``, ``bias_ih = b[P]``, ``bias_hh = 0``.
    """

    _gates = 4
    _state_parts = 2

    def _run_forward(self, x, initial, params, padding):
        out, cache = S.lstm_sequence_forward(x, initial[0], initial[1], *params, padding)
        return out, cache, (cache.h_last, cache.c_last)

    def _run_backward_data(self, dh, cache, dfinals, record):
        grads = S.lstm_sequence_backward_data(dh, cache, dfinals[0], dfinals[1], record)
        return grads.dx, (grads.dh0, grads.dc0), grads.dA, grads.step_norms

    def _run_backward_weights(self, caches, preacts):
        return S.lstm_sequence_backward_weights(caches, preacts)


# ------------------------------------------------------------ PyTorch weights
def _torch_rows(module):
    """Row order taking our gate blocks to torch's (and back): LSTM swaps o and g."""
    np = backend.numpy
    hidden = module.hidden_size
    blocks = [0, 1, 3, 2] if isinstance(module, LSTM) else list(range(module._gates))
    return np.concatenate([np.arange(b * hidden, (b + 1) * hidden) for b in blocks])


def _suffixes(module):
    """The name suffix of every layer and direction (the same in npseq and torch), in torch's order."""
    for layer in range(module.num_layers):
        for direction in range(module.num_directions):
            yield f"_l{layer}" + ("_reverse" if direction else "")


def _check_torch_compatible(module):
    if not isinstance(module, RecurrentBase):
        raise InvalidTypeError(f"module: expected an npseq RNN, GRU or LSTM, got {type(module).__name__}")
    if isinstance(module, GRU) and not module.reset_after:
        raise InvalidValueError("module: expected GRU(reset_after=True), the variant torch.nn.GRU computes; "
                                "got reset_after=False")


def to_torch_state_dict(module) -> dict:
    """The parameters of an npseq ``RNN``/``GRU``/``LSTM`` under ``torch.nn.RNN/GRU/LSTM`` names.

    Returns ``{name: host NumPy array}`` with torch's names and layouts
    (``weight_ih_l0`` ``(kH, D)``, ``weight_hh_l0`` ``(kH, H)``, ``bias_ih_l0``, ``bias_hh_l0``,
    ..., ``_reverse``); load it with
    ``torch_module.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})``.
    A single npseq bias ``b`` goes to ``bias_ih`` and ``bias_hh`` is zero. GRU needs
    ``reset_after=True``. The class docstrings give the mapping.
    """
    _check_torch_compatible(module)
    np = backend.numpy
    rows = _torch_rows(module)
    params = {name: backend.to_numpy(p.data) for name, p in module.named_parameters()}
    out = {}
    for sfx in _suffixes(module):
        out["weight_ih" + sfx] = params["Wx" + sfx].T[rows].copy()
        out["weight_hh" + sfx] = params["Wh" + sfx].T[rows].copy()
        if isinstance(module, GRU):
            out["bias_ih" + sfx] = params["bx" + sfx].copy()
            out["bias_hh" + sfx] = params["bh" + sfx].copy()
        else:
            out["bias_ih" + sfx] = params["b" + sfx][rows].copy()
            out["bias_hh" + sfx] = np.zeros_like(params["b" + sfx])
    return out


def _host(value):
    """A host NumPy array from an array or a CPU tensor (anything with ``detach()``)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return backend.to_numpy(value)


def from_torch_state_dict(module, torch_sd) -> None:
    """Load the weights of a ``torch.nn.RNN/GRU/LSTM`` (its ``state_dict()``) into ``module``.

    ``torch_sd`` maps torch's names (``weight_ih_l0``, ..., ``bias_hh_l1_reverse``) to arrays
    or CPU tensors; the names must match exactly (same ``num_layers`` and ``bidirectional``;
    ``bias=True``). The two torch biases of ``RNN``/``LSTM`` are summed into ``b``. GRU needs
    ``reset_after=True``. The class docstrings give the mapping.
    """
    _check_torch_compatible(module)
    rows = _torch_rows(module)
    expected = [kind + sfx for sfx in _suffixes(module)
                for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    missing = [name for name in expected if name not in torch_sd]
    unexpected = [name for name in torch_sd if name not in expected]
    if missing or unexpected:
        raise KeyError(f"torch_sd: expected the parameter names of torch.nn.{type(module).__name__}"
                       f"(num_layers={module.num_layers}, bidirectional={module.bidirectional}); "
                       f"missing {missing}, unexpected {unexpected}")
    sd = {name: _host(torch_sd[name]) for name in expected}
    state = {}
    for sfx in _suffixes(module):
        state["Wx" + sfx] = sd["weight_ih" + sfx][rows].T
        state["Wh" + sfx] = sd["weight_hh" + sfx][rows].T
        if isinstance(module, GRU):
            state["bx" + sfx] = sd["bias_ih" + sfx]
            state["bh" + sfx] = sd["bias_hh" + sfx]
        else:
            state["b" + sfx] = (sd["bias_ih" + sfx] + sd["bias_hh" + sfx])[rows]
    module.load_state_dict(state)


class Cell(NamedTuple):
    """A recurrent cell as the models build it: one entry of :data:`CELLS`.

    ``layer(input_size, hidden_size, num_layers=, bidirectional=, dropout=, rng=, dtype=, **options)`` builds the
    stacked layer (a :class:`RecurrentBase`); ``options`` fix the variant the models use. ``forward`` and
    ``backward`` are the cell's readable pair over a sequence in :mod:`npseq.functional.recurrent`
    (``forward(x, h0, Wx, Wh, *biases, **options, valid_lens=None) -> (states, cache)``), the one the
    gradient checks hold to finite differences.
    """
    layer: type
    forward: Callable
    backward: Callable
    options: dict = {}

    @property
    def gates(self) -> int:
        """The gate blocks ``k`` of ``Wx (D, kH)``: 1, 3 (``r, z, n``) or 4 (``i, f, o, g``)."""
        return self.layer._gates

    @property
    def bias_names(self) -> tuple:
        return self.layer._bias_names

    @property
    def state_parts(self) -> int:
        """How many arrays the state holds: 1 (``h``), or 2 for the LSTM (``(h, c)``)."""
        return self.layer._state_parts

    def state_from_hidden(self, h):
        """The state whose hidden part is ``h`` and whose other parts (the LSTM's memory ``c``) are zero."""
        if self.state_parts == 1:
            return h
        return (h,) + tuple(backend.get_array_module(h).zeros_like(h) for _ in range(self.state_parts - 1))

    def hidden_of(self, state):
        """The hidden part ``h`` of a state (or of its gradient)."""
        return state if self.state_parts == 1 else state[0]


CELLS = {
    "rnn": Cell(RNN, R.rnn_forward, R.rnn_backward),
    # The reset-after GRU (cuDNN / PyTorch), the one d2l's PyTorch code trains, so that runs compare like for like.
    "gru": Cell(GRU, R.gru_forward, R.gru_backward, {"reset_after": True}),
    "lstm": Cell(LSTM, R.lstm_forward, R.lstm_backward),
}
"""The recurrent cells by name: what :func:`make_rnn`, the models, ``npseq train --cell``, ``npseq lm --cell`` and
the gradient checks read. A new cell is its functional pair, its layer and one :func:`register_cell` call."""


def register_cell(name: str, cell: Cell, *, replace: bool = False) -> None:
    """Make ``cell`` known as ``name`` to :data:`CELLS`, and so to :func:`make_rnn`, the models and the commands'
    ``--cell`` (in this process). ``replace=True`` replaces a cell of that name; :func:`unregister_cell` removes
    it again."""
    check_registration("CELLS", CELLS, name, "cell", cell, Cell, replace)
    CELLS[name] = cell


def unregister_cell(name: str) -> Cell:
    """Remove the cell ``name`` from :data:`CELLS` and return it."""
    cell_record(name)
    return CELLS.pop(name)


def cell_record(name: str) -> Cell:
    """The :data:`CELLS` entry ``name``, or an error naming the cells there are."""
    if not isinstance(name, str) or name not in CELLS:
        raise InvalidValueError(f"cell: expected one of {tuple(CELLS)}, got {name!r}")
    return CELLS[name]


def make_rnn(cell: str, input_size: int, hidden_size: int, num_layers: int, dropout: float,
             bidirectional: bool, rng, dtype):
    """The recurrent layer of the cell named ``cell`` in :data:`CELLS`, in the variant the models use."""
    record = cell_record(cell)
    return record.layer(input_size, hidden_size, num_layers=num_layers, bidirectional=bidirectional, dropout=dropout,
                        rng=rng, dtype=dtype, **record.options)


def make_rnn_parameters(cell: str, input_size: int, hidden_size: int, num_layers: int = 1,
                        bidirectional: bool = False) -> int:
    """The parameter count of the layer :func:`make_rnn` builds with these sizes, without building it: per layer
    and direction ``Wx (in, kH)``, ``Wh (H, kH)`` and the cell's bias vectors of ``kH`` (``k`` gates)."""
    record = cell_record(cell)
    directions = 2 if bidirectional else 1
    width = record.gates * hidden_size
    biases = len(record.bias_names)
    return sum(directions * width * ((input_size if index == 0 else directions * hidden_size) + hidden_size + biases)
               for index in range(num_layers))
