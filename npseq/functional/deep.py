r"""Deep (stacked) and bidirectional recurrent layers over whole sequences: the reference.

No cell is computed here. Each layer and direction is one call of a sequence pair of
:mod:`npseq.functional.recurrent` (``rnn_forward`` / ``rnn_backward``, ``gru_*``, ``lstm_*``), and
this module is the wiring between those calls, forward and backward, written out once. The layers of
:mod:`npseq.nn` (``RNN``, ``GRU``, ``LSTM`` with ``num_layers`` and ``bidirectional``) compute the same
numbers through the fast twins of :mod:`npseq.functional.fast_recurrent`; the tests hold the two
equal within 1e-12 in float64.

**Stacked.** Layer :math:`l` reads its own previous state and, at the same step, the output of
the layer below (after inverted dropout, the mask :math:`M^{(l-1)}`, between two layers only):

.. math::
    H_t^{(0)} = X_t, \qquad
    H_t^{(l)} = f_l\big(H_{t-1}^{(l)},\ M^{(l-1)}_t \odot H_t^{(l-1)}\big) \quad (l = 1, \ldots, L),
    \qquad Y_t = H_t^{(L)}

**Bidirectional.** Two layers read the same inputs, one from the first step to the last and one from
the last valid step back to the first; the outputs are concatenated on the last axis:

.. math::
    H_t^{\rightarrow} = f^{\rightarrow}\big(H_{t-1}^{\rightarrow}, X_t\big) \quad (t = 1, \ldots, T), \qquad
    H_t^{\leftarrow} = f^{\leftarrow}\big(H_{t+1}^{\leftarrow}, X_t\big) \quad (t = \ell, \ldots, 1), \qquad
    Y_t = [H_t^{\rightarrow};\ H_t^{\leftarrow}]

A stacked layer may be bidirectional: each of its layers is then a bidirectional layer and the one
above reads the ``2H`` concatenated outputs.

Shapes: ``x`` ``(N, T, D)``; ``K`` directions (1, or 2 when bidirectional) and ``L`` layers; states
``(L * K, N, H)`` with the row of layer ``l``, direction ``k`` at ``l * K + k`` (PyTorch's order,
as in :mod:`npseq.nn`); ``params`` one tuple ``(Wx, Wh, *biases)`` per such row, the arguments that
the cell's sequence function takes after ``h0``: ``Wx`` ``(D_l, gH)`` with ``D_0 = D`` and
``D_l = K H`` above, ``Wh`` ``(H, gH)``, biases ``(gH,)`` (``b`` for the RNN and the LSTM, ``bx, bh``
for the GRU), ``g`` the cell's gate blocks (1, 3, 4). The LSTM's memory ``c`` starts at zero in every
layer and direction, as in ``lstm_forward``.

Padding: with ``valid_lens`` ``(N,)`` every layer and direction keeps its state over a sequence's
padded steps and outputs zeros there (the cells' padding mix), so each final state is the sequence's
own, and the reverse direction starts at each sequence's last valid step (:func:`reverse_sequences`),
as PyTorch's packed sequences do.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .. import backend
from .._checks import (
    check_array,
    check_dropout,
    check_float_array,
    check_ndim,
    check_padding_lens,
    check_shape,
)
from ..errors import InvalidTypeError, InvalidValueError
from .layers import dropout_backward, dropout_forward
from .recurrent import gru_backward, gru_forward, lstm_backward, lstm_forward, rnn_backward, rnn_forward

__all__ = [
    "StackedCache", "StackedGrads", "BidirectionalCache", "BidirectionalGrads", "reverse_sequences",
    "stacked_forward", "stacked_backward", "bidirectional_forward", "bidirectional_backward",
]


class _Cell(NamedTuple):
    forward: Callable   # forward(x, h0, Wx, Wh, *biases, [reset_after=,] valid_lens=) -> (outputs, cache)
    backward: Callable  # backward(dh, cache, dh_last[, dc_last]) -> (dx, dh0, dWx, dWh, *dbiases)
    gates: int          # the blocks of H columns in Wx and Wh
    biases: tuple       # the names of the bias vectors, in argument order
    memory: bool        # whether the cell carries a second state c (the LSTM)


# The cells by name, as npseq.nn.CELLS names them; that registry holds the layers too, and nn builds on this package.
_CELLS = {
    "rnn": _Cell(rnn_forward, rnn_backward, 1, ("b",), False),
    "gru": _Cell(gru_forward, gru_backward, 3, ("bx", "bh"), False),
    "lstm": _Cell(lstm_forward, lstm_backward, 4, ("b",), True),
}


class BidirectionalCache(NamedTuple):
    cell: str         # "rnn", "gru" or "lstm"
    forward: Any      # the cell's sequence cache of the forward direction
    backward: Any     # the cell's sequence cache of the reverse direction, in its own (reversed) time order
    valid_lens: Any   # (N,) or None: where each sequence is reversed
    h_last: Any       # (2, N, H) final states: forward (each sequence's last valid step), then reverse (step 1)
    c_last: Any       # (2, N, H) the LSTM's final memories likewise; None for the other cells


class BidirectionalGrads(NamedTuple):
    dx: Any       # (N, T, D) the sum of what both directions send back to the inputs
    dh0: Any      # (2, N, H) initial states of the forward and the reverse direction
    dparams: Any  # (forward, reverse): each a tuple (dWx, dWh, *dbiases) in the order of params


class StackedCache(NamedTuple):
    cell: str            # "rnn", "gru" or "lstm"
    bidirectional: bool  # whether each layer is a BidirectionalCache
    layers: list         # per layer, bottom first: the cell's sequence cache, or a BidirectionalCache
    dropouts: list       # per layer but the top: the DropoutCache of its outputs (mask None without dropout)
    h_last: Any          # (L * K, N, H) every layer's and direction's final state
    c_last: Any          # (L * K, N, H) the LSTM's final memories likewise; None for the other cells


class StackedGrads(NamedTuple):
    dx: Any       # (N, T, D)
    dh0: Any      # (L * K, N, H)
    dparams: Any  # a list, one tuple (dWx, dWh, *dbiases) per tuple of params, in the same order


def reverse_sequences(a, valid_lens=None):
    r"""Each sequence of ``a`` reversed in time within its valid length; the padding stays where it is.

    .. math::
        \operatorname{rev}(a)_t = a_{\ell + 1 - t} \quad (t \le \ell), \qquad
        \operatorname{rev}(a)_t = a_t \quad (t > \ell)

    for a sequence of valid length :math:`\ell` (all :math:`T` steps without ``valid_lens``). It is its own
    inverse: :math:`\operatorname{rev}(\operatorname{rev}(a)) = a`.

    Args:
        a: ``(N, T, ...)``.
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.

    Returns:
        an array shaped like ``a``.
    """
    _check_reversal(a, valid_lens)
    xp = backend.get_array_module(a)
    if valid_lens is None:
        return a[:, ::-1]
    steps = xp.arange(a.shape[1])[None, :]
    lens = valid_lens[:, None]
    source = xp.where(steps < lens, lens - 1 - steps, steps)  # 0-based: step t reads step l - 1 - t
    return a[xp.arange(a.shape[0])[:, None], source]


def bidirectional_forward(x, h0, params, cell, valid_lens=None, *, reset_after=False):
    r"""A bidirectional recurrent layer: the cell over the sequence, and over the sequence reversed.

    .. math::
        Y^{\rightarrow}, \ldots &= F\big(X;\ h_0^{\rightarrow}, W^{\rightarrow}\big), \qquad
        Y^{\leftarrow} = \operatorname{rev}\Big(F\big(\operatorname{rev}(X);\ h_0^{\leftarrow},
            W^{\leftarrow}\big)\Big) \\
        Y_t &= [Y_t^{\rightarrow};\ Y_t^{\leftarrow}]

    where :math:`F` is the cell's sequence function (``rnn_forward``, ``gru_forward``, ``lstm_forward``)
    and :math:`\operatorname{rev}` reverses each sequence within its valid length
    (:func:`reverse_sequences`): the reverse direction computes
    :math:`H_t^{\leftarrow} = f(H_{t+1}^{\leftarrow}, X_t)` from the last valid step :math:`t = \ell` back
    to :math:`t = 1`, and its final state is :math:`H_1^{\leftarrow}`.

    Args:
        x: ``(N, T, D)``.
        h0: ``None`` (zeros) or ``(2, N, H)``: the forward direction's initial state, then the reverse one's.
        params: a pair ``(forward, reverse)``, each ``(Wx, Wh, *biases)``: ``Wx`` ``(D, gH)``, ``Wh``
            ``(H, gH)``, biases ``(gH,)``.
        cell: ``"rnn"``, ``"gru"`` or ``"lstm"``.
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.
        reset_after: the GRU's variant (see ``gru_step_forward``); ``False`` for the other cells.

    Returns:
        the outputs ``(N, T, 2H)`` and a :class:`BidirectionalCache` (``h_last`` ``(2, N, H)``).
    """
    _check_layers(x, h0, params, cell, valid_lens, reset_after, directions=2, num_layers=1)
    xp = backend.get_array_module(x)
    h0 = _zero_state(x, params, 2) if h0 is None else h0
    y_forward, forward = _run_forward(cell, x, h0[0], params[0], valid_lens, reset_after)
    y_reverse, reverse = _run_forward(cell, reverse_sequences(x, valid_lens), h0[1], params[1], valid_lens,
                                      reset_after)
    y = xp.concatenate([y_forward, reverse_sequences(y_reverse, valid_lens)], axis=-1)
    h_last, c_last = _final_states(cell, [forward, reverse])
    return y, BidirectionalCache(cell, forward, reverse, valid_lens, h_last, c_last)


def bidirectional_backward(dy, cache: BidirectionalCache, dh_last=None, dc_last=None) -> BidirectionalGrads:
    r"""Backward of :func:`bidirectional_forward`: the incoming gradient split between the two halves, each
    direction run backward in its own time order, and both input gradients added.

    .. math::
        [dY^{\rightarrow}_t;\ dY^{\leftarrow}_t] &= dY_t \qquad (H\text{ features each}) \\
        dX^{\rightarrow}, dh_0^{\rightarrow}, dW^{\rightarrow} &= F'\big(dY^{\rightarrow}\big), \qquad
        dX', dh_0^{\leftarrow}, dW^{\leftarrow} = F'\big(\operatorname{rev}(dY^{\leftarrow})\big) \\
        dX &= dX^{\rightarrow} + \operatorname{rev}(dX')

    where :math:`F'` is the cell's backward (``rnn_backward``, ...): the forward direction's runs from
    :math:`t = T` down to 1, the reverse direction's from :math:`t = 1` up to :math:`\ell`, its own last
    step first.

    Args:
        dy: ``(N, T, 2H)`` the gradient of the outputs.
        cache: from :func:`bidirectional_forward`.
        dh_last: ``None`` or ``(2, N, H)``, the gradient of ``cache.h_last``.
        dc_last: ``None`` or ``(2, N, H)``, the gradient of ``cache.c_last`` (LSTM only).

    Returns:
        a :class:`BidirectionalGrads` ``(dx (N, T, D), dh0 (2, N, H), dparams (forward, reverse))``.
    """
    _check_upstream(dy, cache, dh_last, dc_last, BidirectionalCache)
    xp = backend.get_array_module(dy)
    hidden = dy.shape[-1] // 2
    dy_forward, dy_reversed = dy[..., :hidden], reverse_sequences(dy[..., hidden:], cache.valid_lens)
    dx_forward, dh0_forward, dw_forward = _run_backward(
        cache.cell, dy_forward, cache.forward, _row(dh_last, 0), _row(dc_last, 0))
    dx_reversed, dh0_reverse, dw_reverse = _run_backward(
        cache.cell, dy_reversed, cache.backward, _row(dh_last, 1), _row(dc_last, 1))
    dx = dx_forward + reverse_sequences(dx_reversed, cache.valid_lens)
    return BidirectionalGrads(dx, xp.stack([dh0_forward, dh0_reverse]), (dw_forward, dw_reverse))


def stacked_forward(x, h0, params, cell, valid_lens=None, *, bidirectional=False, reset_after=False,
                    dropout=0.0, rng=None):
    r"""A stack of :math:`L` recurrent layers, each reading the outputs of the one below at the same step.

    .. math::
        H_t^{(0)} &= X_t, \qquad
        H_t^{(l)} = f_l\big(H_{t-1}^{(l)},\ M_t^{(l-1)} \odot H_t^{(l-1)}\big) \quad (l = 1, \ldots, L) \\
        Y_t &= H_t^{(L)}

    computed layer by layer: the whole sequence through layer 1, then through layer 2, ... (each layer is
    one call of the cell's sequence function, or of :func:`bidirectional_forward`). :math:`M^{(l)}` is the
    inverted-dropout mask on layer :math:`l`'s outputs, entries 0 with probability ``dropout`` and
    :math:`1/(1 - p)` otherwise (``dropout_forward``), for :math:`l < L` only; ``dropout=0`` (evaluation)
    makes every :math:`M = 1`.

    Args:
        x: ``(N, T, D)``.
        h0: ``None`` (zeros) or ``(L * K, N, H)``, ``K = 2`` if ``bidirectional`` else 1.
        params: ``L * K`` tuples ``(Wx, Wh, *biases)``, the one of layer ``l``, direction ``k`` at
            ``l * K + k``: ``Wx`` ``(D, gH)`` for ``l = 0`` and ``(K H, gH)`` above, ``Wh`` ``(H, gH)``,
            biases ``(gH,)``.
        cell: ``"rnn"``, ``"gru"`` or ``"lstm"``.
        valid_lens: ``None`` or ``(N,)`` integers in ``[0, T]``.
        bidirectional: each layer a bidirectional one (:func:`bidirectional_forward`).
        reset_after: the GRU's variant; ``False`` for the other cells.
        dropout: the drop probability between layers, in ``[0, 1)``.
        rng: a ``numpy.random.Generator`` that draws the masks, bottom layer first; needed when
            ``dropout > 0``.

    Returns:
        the top layer's outputs ``(N, T, K H)`` and a :class:`StackedCache` (``h_last`` ``(L * K, N, H)``).
    """
    _check_layers(x, h0, params, cell, valid_lens, reset_after, 2 if bidirectional else 1, None, dropout, rng)
    directions = 2 if bidirectional else 1
    num_layers = len(params) // directions
    h0 = _zero_state(x, params, len(params)) if h0 is None else h0
    layer_input, layers, dropouts = x, [], []
    for layer in range(num_layers):
        rows = slice(layer * directions, (layer + 1) * directions)
        if bidirectional:
            y, cache = bidirectional_forward(layer_input, h0[rows], params[rows], cell, valid_lens,
                                             reset_after=reset_after)
        else:
            y, cache = _run_forward(cell, layer_input, h0[layer], params[layer], valid_lens, reset_after)
        layers.append(cache)
        if layer < num_layers - 1:
            y, mask = dropout_forward(y, dropout, rng)
            dropouts.append(mask)
        layer_input = y
    runs = [run for cache in layers for run in ((cache.forward, cache.backward) if bidirectional else (cache,))]
    h_last, c_last = _final_states(cell, runs)
    return layer_input, StackedCache(cell, bidirectional, layers, dropouts, h_last, c_last)


def stacked_backward(dy, cache: StackedCache, dh_last=None, dc_last=None) -> StackedGrads:
    r"""Backward of :func:`stacked_forward`, the top layer first.

    With :math:`G_t^{(l)} = \partial L / \partial H_t^{(l)}`, the gradient reaching a state is the sum of
    what arrives from the layer above at the same step and from the next step of its own layer:

    .. math::
        G_t^{(l)} &= U_t^{(l)} + G_{t+1}^{(l)} \frac{\partial H_{t+1}^{(l)}}{\partial H_t^{(l)}}, \qquad
        G_{T+1}^{(l)} \frac{\partial H_{T+1}^{(l)}}{\partial H_T^{(l)}} := dh_{last}^{(l)} \\
        U_t^{(L)} &= dY_t, \qquad
        U_t^{(l)} = M_t^{(l)} \odot G_t^{(l+1)} \frac{\partial H_t^{(l+1)}}{\partial \tilde H_t^{(l)}}
        \quad (l < L)

    with :math:`\tilde H^{(l)} = M^{(l)} \odot H^{(l)}` what layer :math:`l + 1` reads. The second term is
    backpropagation through time inside layer :math:`l`, which its cell's backward does; the first is
    that backward's input gradient ``dx`` from the layer above, through the dropout mask. Since
    :math:`U^{(l)}` at every step is known once layer :math:`l + 1` is done, each layer runs its whole
    backward, :math:`t = T` down to 1, before the layer below starts. A weight's gradient sums over the
    steps of its own layer and direction only.

    Args:
        dy: ``(N, T, K H)`` the gradient of the top layer's outputs.
        cache: from :func:`stacked_forward`.
        dh_last: ``None`` or ``(L * K, N, H)``, the gradient of ``cache.h_last``.
        dc_last: ``None`` or ``(L * K, N, H)``, the gradient of ``cache.c_last`` (LSTM only).

    Returns:
        a :class:`StackedGrads` ``(dx (N, T, D), dh0 (L * K, N, H), dparams)``, ``dparams`` one tuple
        ``(dWx, dWh, *dbiases)`` per tuple of ``params``.
    """
    _check_upstream(dy, cache, dh_last, dc_last, StackedCache)
    directions = 2 if cache.bidirectional else 1
    xp = backend.get_array_module(dy)
    num_layers = len(cache.layers)
    dh0 = [None] * (num_layers * directions)
    dparams = [None] * (num_layers * directions)
    d_above = dy
    for layer in reversed(range(num_layers)):
        if layer < num_layers - 1:
            d_above = dropout_backward(d_above, cache.dropouts[layer])
        rows = slice(layer * directions, (layer + 1) * directions)
        if cache.bidirectional:
            grads = bidirectional_backward(d_above, cache.layers[layer], _rows(dh_last, rows), _rows(dc_last, rows))
            dx, dh0[rows], dparams[rows] = grads.dx, list(grads.dh0), list(grads.dparams)
        else:
            dx, dh0[layer], dparams[layer] = _run_backward(
                cache.cell, d_above, cache.layers[layer], _row(dh_last, layer), _row(dc_last, layer))
        d_above = dx
    return StackedGrads(d_above, xp.stack(dh0), dparams)


# ------------------------------------------------------------------ one direction
def _run_forward(cell, x, h0, weights, valid_lens, reset_after):
    """The cell's sequence forward over ``x`` ``(N, T, D_l)`` from ``h0`` ``(N, H)``: ``(outputs, cache)``."""
    options = {"reset_after": reset_after} if cell == "gru" else {}
    return _CELLS[cell].forward(x, h0, *weights, valid_lens=valid_lens, **options)


def _run_backward(cell, dh, cache, dh_last, dc_last):
    """The cell's sequence backward: ``(dx, dh0, (dWx, dWh, *dbiases))``."""
    finals = (dh_last, dc_last) if _CELLS[cell].memory else (dh_last,)
    dx, dh0, *dweights = _CELLS[cell].backward(dh, cache, *finals)
    return dx, dh0, tuple(dweights)


def _final_states(cell, caches):
    """The final states of the directions' caches, stacked: ``h`` ``(R, N, H)``, ``c`` likewise or ``None``."""
    xp = backend.get_array_module(caches[0].h_last)
    h_last = xp.stack([cache.h_last for cache in caches])
    return h_last, xp.stack([cache.c_last for cache in caches]) if _CELLS[cell].memory else None


def _zero_state(x, params, rows):
    xp = backend.get_array_module(x)
    hidden = params[0][1].shape[0]
    return xp.zeros((rows, x.shape[0], hidden), dtype=xp.result_type(x, params[0][1]))


def _row(grad, k):
    return None if grad is None else grad[k]


def _rows(grad, rows):
    return None if grad is None else grad[rows]


# ------------------------------------------------------------------ argument checks
def _check_reversal(a, valid_lens) -> None:
    check_array("a", a)
    if a.ndim < 2:
        raise InvalidValueError(f"a: expected an array (N, T, ...) with a time axis, got shape {tuple(a.shape)}")
    check_padding_lens(valid_lens, a)


def _check_layers(x, h0, params, cell, valid_lens, reset_after, directions, num_layers=None, dropout=0.0,
                  rng=None) -> None:
    """Every argument of a (stacked or bidirectional) forward, each error naming the argument: the cell, ``x``
    ``(N, T, D)`` with ``T >= 1``, ``params`` as ``rows`` tuples of the cell's weight shapes (``rows`` a
    multiple of ``directions``, or exactly ``directions * num_layers``), ``h0``, ``valid_lens`` and dropout."""
    if not isinstance(cell, str) or cell not in _CELLS:
        raise InvalidValueError(f"cell: expected one of {tuple(_CELLS)}, got {cell!r}")
    if not isinstance(reset_after, bool) or (reset_after and cell != "gru"):
        raise InvalidValueError(f"reset_after: expected a bool, True for the GRU only (its variant), "
                                f"got {reset_after!r} with cell={cell!r}")
    check_float_array("x", x)
    check_ndim("x", x, 3, "(N, T, D)")
    if x.shape[1] == 0:
        raise InvalidValueError(f"x: expected at least one time step, got shape {tuple(x.shape)}")
    spec = _CELLS[cell]
    names = ("Wx", "Wh") + spec.biases
    rows = directions if num_layers is None else directions * num_layers
    if not isinstance(params, (list, tuple)) or not params or len(params) % directions \
            or (num_layers is not None and len(params) != rows):
        what = (f"{rows} tuples" if num_layers is not None
                else f"a non-empty list of tuples, a multiple of {directions} (one per layer and direction)")
        got = f"{len(params)} entries" if isinstance(params, (list, tuple)) else type(params).__name__
        raise InvalidValueError(f"params: expected {what} {names}, got {got}")
    for k, weights in enumerate(params):
        if not isinstance(weights, (list, tuple)) or len(weights) != len(names):
            got = f"{len(weights)} arrays" if isinstance(weights, (list, tuple)) else type(weights).__name__
            raise InvalidValueError(f"params[{k}]: expected a tuple {names} for cell={cell!r}, got {got}")
        for name, array in zip(names, weights):
            check_float_array(f"params[{k}] {name}", array)
    check_ndim("params[0] Wh", params[0][1], 2, "(H, gH)")
    hidden = params[0][1].shape[0]
    width = spec.gates * hidden
    for k, weights in enumerate(params):
        inputs = x.shape[2] if k < directions else directions * hidden
        shapes = [(inputs, width), (hidden, width)] + [(width,)] * len(spec.biases)
        for name, array, shape in zip(names, weights, shapes):
            check_shape(f"params[{k}] {name} (layer {k // directions}"
                        + (", reverse)" if k % directions else ")"), array, shape)
    if h0 is not None:
        check_float_array("h0", h0)
        check_shape("h0", h0, (len(params), x.shape[0], hidden))
    check_padding_lens(valid_lens, x)
    check_dropout(dropout, rng)
    if dropout > 0.0 and not isinstance(rng, backend.numpy.random.Generator):
        raise InvalidTypeError(f"rng: expected a numpy.random.Generator to draw the dropout masks, "
                               f"got {type(rng).__name__}")


def _check_upstream(dy, cache, dh_last, dc_last, kind) -> None:
    """The upstream gradients of a backward: ``cache`` a ``kind`` record, ``dy`` shaped like the outputs,
    ``dh_last`` (and ``dc_last``, for the LSTM only) like the final states."""
    if not isinstance(cache, kind):
        raise InvalidTypeError(f"cache: expected a {kind.__name__} (from the matching forward), "
                               f"got {type(cache).__name__}")
    rows, n, hidden = cache.h_last.shape
    first = cache.layers[0] if kind is StackedCache else cache
    directions = 2 if isinstance(first, BidirectionalCache) else 1
    steps = (first.forward if directions == 2 else first).mask.shape[1]
    check_float_array("dy", dy)
    check_shape("dy", dy, (n, steps, directions * hidden))
    if dh_last is not None:
        check_shape("dh_last", dh_last, (rows, n, hidden))
    if dc_last is not None:
        if cache.c_last is None:
            raise InvalidValueError(f"dc_last: expected None: cell={cache.cell!r} has no memory state c, "
                                    f"got an array of shape {tuple(dc_last.shape)}")
        check_shape("dc_last", dc_last, (rows, n, hidden))
