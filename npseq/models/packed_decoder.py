"""The fast twin of a recurrent decoder's teacher-forced ``forward`` and ``backward``: packed target rows.

Reference: :meth:`~npseq.models.seq2seq.Decoder.forward` and :meth:`~npseq.models.seq2seq.Decoder.backward`
with ``sampling_ratio=0``, the plain loop over ``step`` and ``step_backward``.
:func:`packed_forward` and :func:`packed_backward` must equal them: within 1e-12 in float64, logits,
final states, attention weights and every gradient (``tests/test_decoder_parity.py``). They are what
:class:`~npseq.models.encoder_decoder.EncoderDecoder` runs to train. The same maths, arranged for speed:

* *teacher forcing*: every input token is known before the first step, so the embedding looks up
  all ``T`` tokens at once and the output layer projects the features of all steps at once (one
  product each way instead of ``T``); only the recurrence and the attention go step by step, through
  the decoder's ``_step`` and ``_step_backward``;
* *packed rows*: with ``valid_lens`` on the host, as PyTorch's packed sequences do in an encoder,
  the rows are sorted longest first and step ``t`` runs only the rows still inside their sentence,
  a prefix of that order, so no work is spent on padding. On a device every row runs every step and
  the padding is masked, as in the reference (reading the lengths would stop the device); so does
  the host when the decoder's ``packs_rows`` is False;
* *keys nobody sees* (a decoder's ``_keys_in_view``): past every source sentence's end,
  ``max(enc_valid_lens)``, the masked softmax gives every weight exactly 0, so the steps attend over
  the keys before it only and the weights are padded with zeros;
* *steps without gradient* (a decoder's ``discards_zero_steps``): when every row runs every step and
  ``dlogits`` is zero from step ``t`` on (a masked loss over padded targets), every gradient of those
  steps is zero too, so the backward drops their caches and starts at step ``t - 1``;
* the recurrent layer's weight gradients are summed over all steps in one product per weight
  (``deferred_weight_grads``).

Scheduled sampling is not here: a step then reads the previous step's own prediction, which is the
reference loop itself. Dropout draws one mask per step over the rows that step runs, so with dropout
on the twins draw the same masks (for the same seed) only where every row runs every step over every
key: without target lengths or with ``packs_rows`` False, and with the sources' longest length ``S``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_shape
from .seq2seq import DecoderGrads, DecoderState, carried, map_state, state_parts, valid_positions, zero_padded


class _RowPlan(NamedTuple):
    """Which batch rows each step runs.

    Step ``t`` runs the first ``running[t]`` rows of the batch taken in ``order``. Every row run
    is one position ``(n, t)``; ``flat`` lists them step by step, as indices ``n * T + t`` into the
    batch's ``(N * T)`` positions, so the tokens of all steps are gathered and their logits
    scattered in one call each.
    """
    order: Any      # (N,) row indices, longest sentence first; None: the batch's own order
    restore: Any    # (N,) the inverse permutation of ``order``; None with it
    running: tuple  # rows that step t runs, for each step that runs
    starts: tuple   # where step t's rows begin among all rows run (running's partial sums)
    flat: Any       # (sum(running),) integers: the positions run, step 0's rows first
    valid: Any      # (N, T) booleans t < valid_lens[n] when every position runs and the padding is masked
    #                 (a device, or packs_rows False); None when packed or without valid_lens
    packed: bool    # True: only the valid positions run


def _row_plan(valid_lens, num_steps: int, n: int, packs: bool, xp) -> _RowPlan:
    """Every row at every step, or with ``valid_lens`` on the host (and ``packs``), the rows
    still inside their sentence at each step, longest first."""
    steps = xp.arange(num_steps)
    if valid_lens is None or not packs or xp is not backend.numpy:
        flat = (steps[:, None] + num_steps * xp.arange(n)[None, :]).reshape(-1)
        valid = None if valid_lens is None else valid_positions(valid_lens, num_steps)
        return _RowPlan(None, None, (n,) * num_steps, tuple(range(0, n * num_steps, n)), flat, valid, False)
    np = backend.numpy
    order = np.argsort(-valid_lens.astype(np.int64), kind="stable")
    longest_first = valid_lens[order]
    running = tuple(int(rows) for rows in (longest_first[None, :] > steps[:int(longest_first[0]), None]).sum(axis=1))
    if not running:  # every target is empty: no step runs
        return _RowPlan(None, None, (), (), np.zeros(0, dtype=np.int64), None, True)
    flat = np.concatenate([order[:rows] * num_steps + t for t, rows in enumerate(running)])
    starts = tuple(np.cumsum((0,) + running[:-1]).tolist())
    if (order == np.arange(n)).all():
        return _RowPlan(None, None, running, starts, flat, None, True)
    return _RowPlan(order, np.argsort(order), running, starts, flat, None, True)


def _scattered(values, flat, n: int, num_steps: int):
    """``values`` ``(M, K)`` of the positions ``flat`` placed in zeros ``(N, T, K)``."""
    xp = backend.get_array_module(values)
    out = xp.zeros((n * num_steps, values.shape[1]), dtype=values.dtype)
    out[flat] = values
    return out.reshape(n, num_steps, values.shape[1])


def _padded_keys(values, axis: int, num_keys: int):
    """``values`` over the keys in view (``S'`` on ``axis``), padded with zeros to all ``num_keys`` keys
    (``values`` itself when nothing is missing, or None)."""
    if values is None or values.shape[axis] == num_keys:
        return values
    padded = backend.get_array_module(values).zeros(values.shape[:axis] + (num_keys,) + values.shape[axis + 1:],
                                                    dtype=values.dtype)
    padded[(slice(None),) * axis + (slice(0, values.shape[axis]),)] = values
    return padded


def _head(rows_of, count: int):
    """The first ``count`` batch rows of a :class:`DecoderState` or :class:`DecoderGrads`, as views
    (a packed step runs a prefix of the rows)."""
    return rows_of.mapped_rows(lambda a: a[:count], lambda h: h[:, :count])


def _take_back(grads: DecoderGrads, part: DecoderGrads, count: int) -> None:
    """Store in ``grads`` the recurrent gradients that ``part`` (from ``_head(grads, count)``) holds now
    (the per-batch sums were added into in place)."""
    for mine, theirs in zip(state_parts(grads.dhidden), state_parts(part.dhidden)):
        mine[:, :count] = theirs
    if grads.dfeed is not None:
        grads.dfeed[:count] = part.dfeed


class _FinishedRows:
    """Each row's state after its own last step, filled in as the rows of a packed forward finish."""

    def __init__(self, state: DecoderState):
        self.hidden = map_state(lambda h: h.copy(), state.hidden)
        self.feed = None if state.feed is None else state.feed.copy()

    def keep(self, state: DecoderState, start: int, stop: int) -> None:
        """Rows ``start:stop`` of ``state`` have taken their last step."""
        for mine, theirs in zip(state_parts(self.hidden), state_parts(state.hidden)):
            mine[:, start:stop] = theirs[:, start:stop]
        if self.feed is not None:
            self.feed[start:stop] = state.feed[start:stop]

    def state(self, restore) -> DecoderState:
        """The hidden state and feed of every row, in the batch's order (``restore``: None if kept)."""
        if restore is None:
            return DecoderState(self.hidden, feed=self.feed)
        return DecoderState(map_state(lambda h: h.take(restore, axis=1), self.hidden),
                            feed=None if self.feed is None else self.feed.take(restore, axis=0))


class _PackedCall(NamedTuple):
    num_steps: int
    state: DecoderState  # the initial state, for the shapes of its gradients
    plan: _RowPlan


def _steps_with_gradient(drun, num_steps: int) -> int:
    """How many leading steps of ``drun`` (every row of every step, step by step) the backward
    must walk: one past the last step with a nonzero entry (0 if there is none). On a device
    every step counts, since finding the last one would stop the device to read it."""
    xp = backend.get_array_module(drun)
    if xp is not backend.numpy:
        return num_steps
    nonzero = (drun.reshape(num_steps, -1) != 0).any(axis=1)
    return int(nonzero.nonzero()[0][-1]) + 1 if nonzero.any() else 0


def packed_forward(decoder, tgt_in, state: DecoderState, valid_lens=None):
    """``decoder.forward(tgt_in, state, valid_lens=valid_lens)`` (teacher forcing), fast.

    ``decoder``: a :class:`~npseq.models.seq2seq.Decoder`; ``tgt_in`` ``(N, T)``, ``valid_lens``
    ``(N,)`` or None. Returns ``(logits (N, T, V), state)`` and sets ``decoder.attention_weights``
    ``(N, T, S)`` as the reference does; :func:`packed_backward` is its backward.
    """
    decoder.check_targets(tgt_in, state, valid_lens)
    xp = backend.get_array_module(tgt_in)
    n, num_steps = tgt_in.shape
    plan = _row_plan(valid_lens, num_steps, n, decoder.packs_rows, xp)
    initial = state
    state = decoder._keys_in_view(state)
    embedded = decoder.embedding(tgt_in.reshape(-1)[plan.flat])  # every step's tokens, in the order they run
    if plan.order is not None:
        state = state.reorder(plan.order)
    finished = _FinishedRows(state) if plan.packed else None
    features, weights = [], []
    for t, (rows, start) in enumerate(zip(plan.running, plan.starts)):
        if finished is not None:
            finished.keep(state, rows, n if t == 0 else plan.running[t - 1])
            state = _head(state, rows)
        features_t, stepped, weights_t = decoder._step(embedded[start:start + rows, None], state)
        stepped = stepped._replace(step=stepped.step + 1)
        state = stepped if plan.valid is None else carried(stepped, state, plan.valid[:, t])
        features.append(features_t[:, 0])
        weights.append(weights_t)
    logits = _logits(decoder, features, plan, n, num_steps)
    decoder.attention_weights = _weights(decoder, weights, plan, initial, num_steps)
    decoder.save_for_backward(_PackedCall(num_steps, initial, plan))
    if finished is not None:
        if plan.running:
            finished.keep(state, 0, plan.running[-1])
        state = finished.state(plan.restore)
    return logits, initial._replace(hidden=state.hidden, feed=state.feed, step=initial.step + num_steps)


def _logits(decoder, features, plan: _RowPlan, n: int, num_steps: int):
    """The logits ``(N, T, V)`` from each step's output layer features, in one product for all steps."""
    xp = backend.get_array_module(plan.flat)
    if not features:
        return xp.zeros((n, num_steps, decoder.vocab_size), dtype=decoder.dense.W.data.dtype)
    run = decoder.dense(xp.concatenate(features))
    return zero_padded(_scattered(run, plan.flat, n, num_steps), plan.valid)


def _weights(decoder, weights, plan: _RowPlan, initial: DecoderState, num_steps: int):
    """The attention weights ``(N, T, S)`` from each step's ``(rows, S')`` (None without attention)."""
    enc_outputs = initial.enc_outputs
    n, num_keys = enc_outputs.shape[:2]
    xp = backend.get_array_module(enc_outputs)
    if not weights:  # every target is empty: no step ran, and a decoder with attention gives zero weights
        return xp.zeros((n, num_steps, num_keys), enc_outputs.dtype) if hasattr(decoder, "attention") else None
    if weights[0] is None:
        return None
    placed = zero_padded(_scattered(xp.concatenate(weights), plan.flat, n, num_steps), plan.valid)
    return _padded_keys(placed, 2, num_keys)


def packed_backward(decoder, dlogits):
    """``decoder.backward(dlogits)`` after :func:`packed_forward`, fast: ``dlogits`` ``(N, T, V)`` ->
    ``(denc_outputs, denc_state)``; adds into every parameter's gradient."""
    call = decoder.pop_cache()
    plan = call.plan
    n = call.state.enc_outputs.shape[0]
    check_shape("dlogits", dlogits, (n, call.num_steps, decoder.vocab_size))
    xp = backend.get_array_module(dlogits)
    drun = zero_padded(dlogits, plan.valid).reshape(-1, decoder.vocab_size)[plan.flat]
    grads = DecoderGrads.zeros(decoder._keys_in_view(call.state))  # the steps saw the keys in view only
    steps = len(plan.running)
    dfeatures = decoder.dense.backward(drun) if steps else drun
    dembedded = xp.empty((dfeatures.shape[0], decoder.embedding.embedding_dim), dtype=dfeatures.dtype)
    if decoder.discards_zero_steps and not plan.packed:
        steps = _steps_with_gradient(drun, call.num_steps)
        for _ in range(steps, call.num_steps):
            decoder._discard_step()
        dembedded[steps * n:] = 0
    # The recurrent layer ran once per step; its weight gradients are summed over all
    # steps in one product per weight when the loop ends.
    with decoder.rnn.deferred_weight_grads():
        for t in reversed(range(steps)):
            rows, start = plan.running[t], plan.starts[t]
            step_grads = grads if rows == n else _head(grads, rows)
            dembedded[start:start + rows] = decoder._step_backward(dfeatures[start:start + rows, None],
                                                                   step_grads)[:, 0]
            if step_grads is not grads:
                _take_back(grads, step_grads, rows)
    decoder.embedding.backward(dembedded)
    if plan.order is not None:
        grads = grads.mapped_rows(lambda a: a.take(plan.restore, axis=0), lambda h: h.take(plan.restore, axis=1))
    num_keys = call.state.enc_outputs.shape[1]
    grads.denc_outputs = _padded_keys(grads.denc_outputs, 1, num_keys)
    grads.dprojected_keys = _padded_keys(grads.dprojected_keys, 1, num_keys)
    return decoder._finish_backward(grads)
