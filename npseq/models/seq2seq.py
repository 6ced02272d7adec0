"""Encoder–decoder models: the d2l encoder, plain and Bahdanau decoders, Luong's decoder.

Every model is a :class:`~npseq.nn.Module` with a hand-written ``backward``. A
decoder runs one step at a time (the step is what greedy and beam search call),
and its ``backward`` walks the steps in reverse, routing each step's gradient
into the recurrent state, the embedding, and the encoder's outputs and state.

Shapes: source tokens ``(N, S)``, target tokens ``(N, T)``, encoder outputs
``(N, S, H_enc)``, recurrent state ``(L, N, H)`` (LSTM: a pair ``(h, c)``),
logits ``(N, T, V)``, attention weights ``(N, T, S)``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import as_rng, check_ndim, check_same_backend, check_shape, check_token_ids, check_valid_lens
from ..errors import InvalidValueError
from ..functional import sequence_mask
from ..nn import AdditiveAttention, Embedding, Linear, LocalAttention, Module
from ..nn.attention import LOCAL_MODES, SCORES, score_layer
from ..nn.recurrent import make_rnn


# ----------------------------------------------------------- state helpers
def top_hidden(state):
    """The top layer's hidden state ``(N, H)`` of ``(L, N, H)`` or of an LSTM pair ``(h, c)``."""
    return (state[0] if isinstance(state, tuple) else state)[-1]


def add_to_top_hidden(dstate, dtop):
    """``dstate`` with ``dtop`` ``(N, H)`` added to its top layer's hidden part (a new array)."""
    dh = (dstate[0] if isinstance(dstate, tuple) else dstate).copy()
    dh[-1] += dtop
    return (dh, dstate[1]) if isinstance(dstate, tuple) else dh


def map_state(fn, state):
    """Apply ``fn`` to each array of a state (an array or an LSTM pair)."""
    return tuple(fn(part) for part in state) if isinstance(state, tuple) else fn(state)


def state_parts(state) -> tuple:
    """The arrays of a state: ``(h,)`` or an LSTM's ``(h, c)``."""
    return state if isinstance(state, tuple) else (state,)


class _BridgeCache(NamedTuple):
    bridged: Any  # tanh output (L, N, H)


class StateBridge(Module):
    """Maps a bidirectional encoder's final state to a unidirectional decoder's initial one.

    For each layer the forward and reverse final states are concatenated and
    projected, as Bahdanau et al. (2014) initialise the decoder from the encoder:

    .. math:: s_0^{(l)} = \\tanh\\big([\\overrightarrow{h}^{(l)}; \\overleftarrow{h}^{(l)}]\\, W_b + b_b\\big)

    An LSTM's cell state goes through the same map (a second call). Input
    ``(2L, N, H)`` in PyTorch's order (layer-major, forward before reverse);
    output ``(L, N, H)``.
    """

    def __init__(self, hidden_size: int, *, rng=None, dtype=None):
        super().__init__()
        self.linear = Linear(2 * hidden_size, hidden_size, rng=rng, dtype=dtype)

    def forward(self, state):
        two_l, n, h = state.shape
        pairs = state.reshape(two_l // 2, 2, n, h).transpose(0, 2, 1, 3).reshape(two_l // 2, n, 2 * h)
        bridged = backend.get_array_module(state).tanh(self.linear(pairs))
        self.save_for_backward(_BridgeCache(bridged))
        return bridged

    def backward(self, dbridged):
        (bridged,) = self.pop_cache()
        dpairs = self.linear.backward(dbridged * (1 - bridged * bridged))
        layers, n, h2 = dpairs.shape
        return dpairs.reshape(layers, n, 2, h2 // 2).transpose(0, 2, 1, 3).reshape(2 * layers, n, h2 // 2)


# ----------------------------------------------------------------- encoder
class Seq2SeqEncoder(Module):
    """Embedding followed by a (possibly stacked, possibly bidirectional) recurrent layer.

    .. math:: e_s = E[x_s], \\qquad (h_1 \\ldots h_S), s = \\operatorname{RNN}(e_1 \\ldots e_S)

    With ``valid_lens`` the padding never reaches the state: the final state is each
    sequence's own last step, so padding a source never changes the translation.
    A bidirectional encoder's outputs are ``(N, S, 2H)`` and its state goes through
    a :class:`StateBridge`, so the state it returns is always ``(L, N, H)``.

    ``forward(src, valid_lens=None) -> (outputs, state)``;
    ``backward(doutputs, dstate) -> None`` (token ids have no gradient).
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0, cell: str = "gru", bidirectional: bool = False, *, rng=None, dtype=None):
        super().__init__()
        rng = as_rng(rng)
        self.vocab_size, self.num_hiddens, self.num_layers = vocab_size, num_hiddens, num_layers
        self.cell, self.bidirectional = cell, bidirectional
        self.output_size = num_hiddens * (2 if bidirectional else 1)
        self.embedding = Embedding(vocab_size, embed_size, rng=rng, dtype=dtype)
        self.rnn = make_rnn(cell, embed_size, num_hiddens, num_layers, dropout, bidirectional, rng, dtype)
        self.bridge = StateBridge(num_hiddens, rng=rng, dtype=dtype) if bidirectional else None

    def forward(self, src, valid_lens=None):
        check_ndim("src", src, 2, "(N, S)")
        outputs, state = self.rnn(self.embedding(src), None, valid_lens)
        if self.bridge is not None:
            state = map_state(self.bridge, state)
        return outputs, state

    def backward(self, doutputs, dstate):
        if self.bridge is not None:
            if isinstance(dstate, tuple):
                dc = self.bridge.backward(dstate[1])  # the cell state was bridged last
                dstate = (self.bridge.backward(dstate[0]), dc)
            else:
                dstate = self.bridge.backward(dstate)
        dx, _ = self.rnn.backward(doutputs, dstate)
        self.embedding.backward(dx)


# ---------------------------------------------------------------- decoders
class DecoderState(NamedTuple):
    """Everything a decoder step reads; arrays have the batch on axis 0 (``hidden`` on axis 1).

    What a decoder precomputes from the encoder once per batch: ``context``, the plain
    decoder's fixed context ``(N, H_enc)`` (the encoder's top final state); ``projected_keys``,
    the keys of additive attention already multiplied by ``W_k`` ``(N, S, h)``. ``feed`` is
    Luong's previous attentional state ``(N, H)`` for input feeding. Each is ``None`` in the
    decoders that do not use it. ``step`` counts the decoder steps taken (local-m attention
    centres its window on it).
    """
    hidden: Any
    enc_outputs: Any = None
    enc_valid_lens: Any = None
    context: Any = None
    projected_keys: Any = None
    feed: Any = None
    step: int = 0

    def reorder(self, indices) -> DecoderState:
        """The state of the batch rows ``indices`` (the hidden state's batch is on axis 1)."""
        return self._mapped(lambda a: a.take(indices, axis=0), lambda h: h.take(indices, axis=1))

    def head(self, count: int) -> DecoderState:
        """The state of the first ``count`` batch rows, as views (a packed step runs a prefix of the rows)."""
        return self._mapped(lambda a: a[:count], lambda h: h[:, :count])

    def _mapped(self, rows, hidden_rows) -> DecoderState:
        keep = lambda a: None if a is None else rows(a)  # noqa: E731
        return DecoderState(map_state(hidden_rows, self.hidden), keep(self.enc_outputs), keep(self.enc_valid_lens),
                            keep(self.context), keep(self.projected_keys), keep(self.feed), self.step)


def reorder_state(state, indices):
    """The state of the batch rows ``indices`` (beam search keeps the best hypotheses this way).

    ``state`` is any decoder's state with a ``reorder(indices)`` method: a :class:`DecoderState`, or the
    Transformer's, whose per-block key and value caches move with their rows.
    """
    return state.reorder(indices)


class _StepGrads:
    """Gradients flowing backwards through the decoder steps, and those summed over steps.

    A packed step works on the first rows only: :meth:`head` gives it views of those rows, and
    :meth:`take_back` stores the gradients it replaced (the summed ones it adds into in place).
    """

    def __init__(self, dhidden, dfeed, denc_outputs, dcontext, dprojected_keys):
        self.dhidden, self.dfeed = dhidden, dfeed
        self.denc_outputs, self.dcontext, self.dprojected_keys = denc_outputs, dcontext, dprojected_keys

    @classmethod
    def zeros(cls, state: DecoderState) -> _StepGrads:
        xp = backend.get_array_module(state.enc_outputs)
        zeros = lambda a: None if a is None else xp.zeros_like(a)  # noqa: E731
        return cls(map_state(xp.zeros_like, state.hidden), zeros(state.feed), xp.zeros_like(state.enc_outputs),
                   zeros(state.context), zeros(state.projected_keys))

    def _mapped(self, rows, hidden_rows) -> _StepGrads:
        keep = lambda a: None if a is None else rows(a)  # noqa: E731
        return _StepGrads(map_state(hidden_rows, self.dhidden), keep(self.dfeed), rows(self.denc_outputs),
                          keep(self.dcontext), keep(self.dprojected_keys))

    def head(self, count: int) -> _StepGrads:
        """Views of the first ``count`` rows."""
        return self._mapped(lambda a: a[:count], lambda h: h[:, :count])

    def take_back(self, part: _StepGrads, count: int) -> None:
        """Store the state gradients that ``part`` (from ``head(count)``) holds now."""
        for mine, theirs in zip(state_parts(self.dhidden), state_parts(part.dhidden)):
            mine[:, :count] = theirs
        if self.dfeed is not None:
            self.dfeed[:count] = part.dfeed

    def reordered(self, indices) -> _StepGrads:
        """The gradients of the batch rows ``indices``."""
        return self._mapped(lambda a: a.take(indices, axis=0), lambda h: h.take(indices, axis=1))


class _RowPlan(NamedTuple):
    """Which batch rows each step of a whole-sequence ``forward`` runs.

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


def valid_positions(valid_lens, num_steps: int):
    """``(N, T)`` booleans, True where ``t < valid_lens[n]``: the positions inside each target."""
    return sequence_mask(valid_lens, num_steps, 1)[:, 0]


def check_target_lengths(name: str, valid_lens, tgt_in) -> None:
    """``valid_lens`` ``(N,)``: one length in ``[0, T]`` per row of ``tgt_in`` ``(N, T)``, on its backend."""
    check_same_backend(name, valid_lens, tgt_in)
    check_valid_lens(name, valid_lens, tgt_in.shape[:1], tgt_in.shape[1])


def zero_padded(values, valid):
    """``values`` ``(N, T, K)`` with zeros at the padded positions, where ``valid`` ``(N, T)`` is False
    (``values`` itself when ``valid`` is None)."""
    if valid is None:
        return values
    return backend.get_array_module(values).where(valid[:, :, None], values, 0)


def _carried(new: DecoderState, old: DecoderState, running) -> DecoderState:
    """``new`` in the rows where ``running`` ``(N,)`` is True, ``old`` in the others (the rows past
    their sentence keep the state of its last step)."""
    xp = backend.get_array_module(running)
    hidden = [xp.where(running[None, :, None], a, b) for a, b in zip(state_parts(new.hidden), state_parts(old.hidden))]
    feed = None if new.feed is None else xp.where(running[:, None], new.feed, old.feed)
    return new._replace(hidden=tuple(hidden) if isinstance(new.hidden, tuple) else hidden[0], feed=feed)


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


class _DecoderCall(NamedTuple):
    num_steps: int
    state: DecoderState  # the initial state, for the shapes of its gradients
    teacher_forced: bool  # embedding and output layer ran once over all steps (no scheduled sampling)
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


def _padded_to(weights, num_keys: int):
    """Weights ``(N, T, S')`` over the keys in view, padded with zeros to all ``num_keys`` keys."""
    if weights.shape[2] == num_keys:
        return weights
    padded = backend.get_array_module(weights).zeros(weights.shape[:2] + (num_keys,), dtype=weights.dtype)
    padded[:, :, :weights.shape[2]] = weights
    return padded


class Decoder(Module):
    """Shared machinery: embed a token, run one recurrent step, project to the vocabulary.

    Subclasses define ``init_state``, ``_step`` (one step from the embedded token
    to the features the output layer reads) and ``_step_backward``, plus
    ``_finish_backward`` for what was computed once per batch.

    ``forward(tgt_in, state, sampling_ratio=0.0, rng=None, valid_lens=None) -> (logits, state)``
    runs ``T`` steps with teacher forcing: step ``t`` reads ``tgt_in[:, t]``, except that
    with ``sampling_ratio > 0`` each example reads, with that probability, the
    model's own previous argmax instead (scheduled sampling, Bengio et al. 2015).
    With pure teacher forcing every input token is known before the first step, so
    the embedding looks up all ``T`` tokens at once and the output layer projects the
    features of all steps at once (one product each way instead of ``T``); only the
    recurrence and the attention go step by step. The numbers are those of ``T`` calls
    of ``step``.

    ``valid_lens`` ``(N,)`` (the target lengths) says that the positions ``t >= valid_lens[n]``
    are padding: their logits (and attention weights) are zero and nothing flows back from
    them, and each row's returned state is its state after its own last valid step. On the
    host the steps then run *packed*, as PyTorch's packed sequences do in an encoder: the rows
    are sorted longest first and step ``t`` runs only the rows still inside their sentence, a
    prefix of that order, so no work is spent on padding. On a device every row runs every
    step and the padding is masked (reading the lengths would stop the device); the numbers
    agree. ``packs_rows = False`` makes the host mask too.

    ``backward(dlogits) -> (denc_outputs, denc_state)``.
    ``step(tokens, state) -> (logits (N, V), state, weights (N, S) or None)`` is one step,
    for greedy and beam search (under ``no_grad``). ``state.step`` counts the steps taken.

    Two more shortcuts skip work whose result is exactly zero (a subclass opts in through
    ``_keys_in_view`` and ``discards_zero_steps``):

    * *keys nobody sees*: past every source sentence's end, ``max(enc_valid_lens)``, the
      masked softmax gives every weight exactly 0, so the whole-sequence ``forward``
      attends over the keys before it only and pads the weights with zeros;
    * *steps without gradient*: without ``valid_lens``, when ``dlogits`` is zero from step
      ``t`` on (a masked loss over padded targets), every gradient of those steps is zero
      too, so ``backward`` drops their caches and starts at step ``t - 1``.
    """

    packs_rows = True
    """Whether ``forward`` with ``valid_lens`` runs packed on the host (see the class docstring)."""

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int, dropout: float,
                 cell: str, rnn_input_size: int, output_features: int, *, rng, dtype):
        super().__init__()
        self.vocab_size, self.num_hiddens, self.num_layers, self.cell = vocab_size, num_hiddens, num_layers, cell
        self.embedding = Embedding(vocab_size, embed_size, rng=rng, dtype=dtype)
        self.rnn = make_rnn(cell, rnn_input_size, num_hiddens, num_layers, dropout, False, rng, dtype)
        self.dense = Linear(output_features, vocab_size, rng=rng, dtype=dtype)
        self.attention_weights = None

    # one step -------------------------------------------------------------
    def step(self, tokens, state: DecoderState):
        """One decoding step: ``tokens`` ``(N,)`` -> ``logits`` ``(N, V)``, the next state, weights ``(N, S)``."""
        features, state, weights = self._counted_step(self.embedding(tokens[:, None]), state)
        return self.dense(features)[:, 0], state, weights

    def _counted_step(self, embedded, state: DecoderState):
        features, state, weights = self._step(embedded, state)
        return features, state._replace(step=state.step + 1), weights

    def _step_backward_full(self, dlogits_t, grads: _StepGrads):
        dfeatures = self.dense.backward(dlogits_t[:, None])
        dembedded = self._step_backward(dfeatures, grads)
        self.embedding.backward(dembedded)

    # whole sequence -------------------------------------------------------
    def forward(self, tgt_in, state: DecoderState, sampling_ratio: float = 0.0, rng=None, valid_lens=None):
        check_ndim("tgt_in", tgt_in, 2, "(N, T)")
        check_token_ids("tgt_in", tgt_in, self.vocab_size)
        n, num_steps = tgt_in.shape
        check_shape("tgt_in", tgt_in, (top_hidden(state.hidden).shape[0], None))
        if not 0.0 <= sampling_ratio <= 1.0:
            raise InvalidValueError(f"sampling_ratio: expected a probability in [0, 1], got {sampling_ratio}")
        if sampling_ratio > 0 and rng is None:
            raise InvalidValueError("rng: scheduled sampling (sampling_ratio > 0) needs a numpy.random.Generator")
        if valid_lens is not None:
            check_target_lengths("valid_lens", valid_lens, tgt_in)
        xp = backend.get_array_module(tgt_in)
        plan = _row_plan(valid_lens, num_steps, n, self.packs_rows, xp)
        initial = state
        state = self._keys_in_view(state)
        teacher_forced = sampling_ratio == 0
        if teacher_forced:  # every step's tokens at once, in the order the steps run them
            embedded = self.embedding(tgt_in.reshape(-1)[plan.flat])
        if plan.order is not None:
            state = state.reorder(plan.order)
            if not teacher_forced:  # the steps read their tokens from tgt_in row by row
                tgt_in = tgt_in.take(plan.order, axis=0)
        finished = _FinishedRows(state) if plan.packed else None
        outputs, weights = [], []
        for t, (rows, start) in enumerate(zip(plan.running, plan.starts)):
            if finished is not None:
                finished.keep(state, rows, n if t == 0 else plan.running[t - 1])
                state = state.head(rows)
            before = state
            if teacher_forced:
                out_t, state, weights_t = self._counted_step(embedded[start:start + rows, None], state)
                out_t = out_t[:, 0]
            else:
                tokens = tgt_in[:rows, t]
                if t > 0:
                    own = rng.random(n) < sampling_ratio
                    own = own[plan.order] if plan.order is not None else own
                    tokens = xp.where(xp.asarray(own[:rows]), outputs[-1][:rows].argmax(axis=-1), tokens)
                out_t, state, weights_t = self.step(tokens, state)
            if plan.valid is not None:
                state = _carried(state, before, plan.valid[:, t])
            outputs.append(out_t)
            weights.append(weights_t)
        logits = self._logits(outputs, teacher_forced, plan, n, num_steps)
        self.attention_weights = self._weights(weights, plan, initial, n, num_steps)
        self.save_for_backward(_DecoderCall(num_steps, initial, teacher_forced, plan))
        if finished is not None:
            if plan.running:
                finished.keep(state, 0, plan.running[-1])
            state = finished.state(plan.restore)
        return logits, initial._replace(hidden=state.hidden, feed=state.feed, step=initial.step + num_steps)

    def _logits(self, outputs, teacher_forced: bool, plan: _RowPlan, n: int, num_steps: int):
        """The logits ``(N, T, V)`` from each step's output layer features (teacher forcing: one product
        for all steps) or logits."""
        xp = backend.get_array_module(plan.flat)
        if not outputs:
            return xp.zeros((n, num_steps, self.vocab_size), dtype=self.dense.W.data.dtype)
        run = xp.concatenate(outputs)
        if teacher_forced:
            run = self.dense(run)
        return zero_padded(_scattered(run, plan.flat, n, num_steps), plan.valid)

    def _weights(self, weights, plan: _RowPlan, initial: DecoderState, n: int, num_steps: int):
        """The attention weights ``(N, T, S)`` from each step's ``(rows, S')`` (None without attention)."""
        if not weights or weights[0] is None:
            return None
        xp = backend.get_array_module(weights[0])
        placed = zero_padded(_scattered(xp.concatenate(weights), plan.flat, n, num_steps), plan.valid)
        return _padded_to(placed, initial.enc_outputs.shape[1])

    def backward(self, dlogits):
        call = self.pop_cache()
        plan = call.plan
        n = call.state.enc_outputs.shape[0]
        check_shape("dlogits", dlogits, (n, call.num_steps, self.vocab_size))
        xp = backend.get_array_module(dlogits)
        drun = zero_padded(dlogits, plan.valid).reshape(-1, self.vocab_size)[plan.flat]
        grads = _StepGrads.zeros(call.state)
        steps = len(plan.running)
        if call.teacher_forced:
            dfeatures = self.dense.backward(drun) if steps else drun
            dembedded = xp.empty((dfeatures.shape[0], self.embedding.embedding_dim), dtype=dfeatures.dtype)
            if self.discards_zero_steps and not plan.packed:
                steps = _steps_with_gradient(drun, call.num_steps)
                for _ in range(steps, call.num_steps):
                    self._discard_step()
                dembedded[steps * n:] = 0
        # The recurrent layer ran once per step; its weight gradients are summed over all
        # steps in one product per weight when the loop ends.
        with self.rnn.deferred_weight_grads():
            for t in reversed(range(steps)):
                rows, start = plan.running[t], plan.starts[t]
                step_grads = grads if rows == n else grads.head(rows)
                if call.teacher_forced:
                    dembedded[start:start + rows] = self._step_backward(dfeatures[start:start + rows, None],
                                                                        step_grads)[:, 0]
                else:
                    self._step_backward_full(drun[start:start + rows], step_grads)
                if step_grads is not grads:
                    grads.take_back(step_grads, rows)
        if call.teacher_forced:
            self.embedding.backward(dembedded)
        if plan.order is not None:
            grads = grads.reordered(plan.restore)
        return self._finish_backward(grads)

    # subclass hooks ------------------------------------------------------------
    def init_state(self, enc_outputs, enc_state, enc_valid_lens=None) -> DecoderState:
        raise NotImplementedError

    def _keys_in_view(self, state: DecoderState) -> DecoderState:
        """The state the steps of ``forward`` read: by default ``state`` itself."""
        return state

    discards_zero_steps = False
    """Whether ``backward`` may drop the trailing steps without gradient (``_discard_step`` then pops
    the caches of one step); otherwise it walks every step."""

    def _discard_step(self) -> None:
        """Drop the caches of the latest step without its backward (its gradients are all zero)."""
        raise NotImplementedError

    def _step(self, embedded, state: DecoderState):
        raise NotImplementedError

    def _step_backward(self, dfeatures, grads: _StepGrads):
        raise NotImplementedError

    def _finish_backward(self, grads: _StepGrads):
        raise NotImplementedError


class Seq2SeqDecoder(Decoder):
    """The d2l decoder without attention: the encoder's top-layer final state is the context.

    .. math::
        c = h^{(L)}_{\\text{enc}}, \\qquad
        s_t = \\operatorname{RNN}([E[y_{t-1}]; c],\\ s_{t-1}), \\qquad
        o_t = s^{(L)}_t W_o + b_o

    The initial state :math:`s_0` is the encoder's final state (same layers and size).
    The encoder outputs are not read, so their gradient from ``backward`` is zero.
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0, cell: str = "gru", *, rng=None, dtype=None):
        rng = as_rng(rng)
        super().__init__(vocab_size, embed_size, num_hiddens, num_layers, dropout, cell,
                         embed_size + num_hiddens, num_hiddens, rng=rng, dtype=dtype)

    def init_state(self, enc_outputs, enc_state, enc_valid_lens=None) -> DecoderState:
        return DecoderState(enc_state, enc_outputs, enc_valid_lens, context=top_hidden(enc_state))

    def _step(self, embedded, state):
        xp = backend.get_array_module(embedded)
        x = xp.concatenate([embedded, state.context[:, None]], axis=-1)
        outputs, hidden = self.rnn(x, state.hidden)
        return outputs, state._replace(hidden=hidden), None

    def _step_backward(self, dfeatures, grads):
        dx, grads.dhidden = self.rnn.backward(dfeatures, grads.dhidden)
        embed_size = self.embedding.embedding_dim
        grads.dcontext += dx[:, 0, embed_size:]
        return dx[:, :, :embed_size]

    discards_zero_steps = True

    def _discard_step(self):
        self.rnn.pop_cache()

    def _finish_backward(self, grads):
        return grads.denc_outputs, add_to_top_hidden(grads.dhidden, grads.dcontext)


class Seq2SeqAttentionDecoder(Decoder):
    """The Bahdanau decoder of d2l: additive attention whose query is the previous top-layer state.

    .. math::
        c_t = \\sum_s \\alpha_{ts} h_s, \\quad
        \\alpha_{t} = \\operatorname{softmax}_s\\big(w_v^\\top \\tanh(s^{(L)}_{t-1} W_q + h_s W_k)\\big), \\\\
        s_t = \\operatorname{RNN}([c_t; E[y_{t-1}]],\\ s_{t-1}), \\qquad
        o_t = s^{(L)}_t W_o + b_o

    (context first in the concatenation, as in d2l). The keys and values are the
    encoder outputs :math:`h_s`, masked by the source lengths; the key projection
    :math:`h_s W_k` is computed once per batch in ``init_state``.
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0, cell: str = "gru", enc_output_size: int | None = None, *,
                 rng=None, dtype=None):
        rng = as_rng(rng)
        enc_output_size = enc_output_size or num_hiddens
        super().__init__(vocab_size, embed_size, num_hiddens, num_layers, dropout, cell,
                         embed_size + enc_output_size, num_hiddens, rng=rng, dtype=dtype)
        self.enc_output_size = enc_output_size
        self.attention = AdditiveAttention(enc_output_size, num_hiddens, num_hiddens, dropout, rng=rng, dtype=dtype)

    def init_state(self, enc_outputs, enc_state, enc_valid_lens=None) -> DecoderState:
        check_ndim("enc_outputs", enc_outputs, 3, "(N, S, H_enc)")
        check_shape("enc_outputs", enc_outputs, (None, None, self.enc_output_size))
        return DecoderState(enc_state, enc_outputs, enc_valid_lens,
                            projected_keys=self.attention.project_keys(enc_outputs))

    def _step(self, embedded, state):
        xp = backend.get_array_module(embedded)
        query = top_hidden(state.hidden)[:, None]
        context = self.attention.forward_projected(query, state.projected_keys, state.enc_outputs,
                                                   state.enc_valid_lens)
        outputs, hidden = self.rnn(xp.concatenate([context, embedded], axis=-1), state.hidden)
        return outputs, state._replace(hidden=hidden), self.attention.attention_weights[:, 0]

    def _keys_in_view(self, state):
        """``state`` with the keys and values cut to the first ``max(enc_valid_lens)`` positions
        (at least one), the only ones any weight can reach; unchanged on a device, where reading
        the lengths would stop it."""
        lens = state.enc_valid_lens
        if lens is None or backend.get_array_module(lens) is not backend.numpy or lens.size == 0:
            return state
        in_view = max(int(lens.max()), 1)
        if in_view == state.enc_outputs.shape[1]:
            return state
        return state._replace(enc_outputs=state.enc_outputs[:, :in_view],
                              projected_keys=state.projected_keys[:, :in_view])

    def _step_backward(self, dfeatures, grads):
        dx, dhidden = self.rnn.backward(dfeatures, grads.dhidden)
        dquery, dprojected, dvalues = self.attention.backward(dx[:, :, :self.enc_output_size])
        grads.dhidden = add_to_top_hidden(dhidden, dquery[:, 0])
        in_view = dvalues.shape[1]  # the keys this step attended over (see _keys_in_view)
        grads.dprojected_keys[:, :in_view] += dprojected
        grads.denc_outputs[:, :in_view] += dvalues
        return dx[:, :, self.enc_output_size:]

    discards_zero_steps = True

    def _discard_step(self):
        self.rnn.pop_cache()
        self.attention.pop_cache()

    def _finish_backward(self, grads):
        return grads.denc_outputs + self.attention.backward_keys(grads.dprojected_keys), grads.dhidden


class LuongAttentionDecoder(Decoder):
    """Luong et al. (2015) global attention, with optional input feeding.

    .. math::
        s_t = \\operatorname{RNN}([E[y_{t-1}]; \\tilde h_{t-1}],\\ s_{t-1}), \\qquad
        \\alpha_t = \\operatorname{softmax}_s \\operatorname{score}(s^{(L)}_t, h_s), \\qquad
        c_t = \\sum_s \\alpha_{ts} h_s, \\\\
        \\tilde h_t = \\tanh([c_t; s^{(L)}_t]\\, W_c), \\qquad o_t = \\tilde h_t W_o + b_o

    with :math:`\\operatorname{score}` one of ``"dot"`` (:math:`s^\\top h`, needs
    ``H_enc == H``), ``"general"`` (:math:`s^\\top W_a h`) or ``"concat"``
    (:math:`v_a^\\top \\tanh(s W_1 + h W_2)`, i.e. additive attention), or any other name of
    :data:`npseq.nn.SCORES` (:func:`npseq.nn.register_score`). Without input
    feeding the RNN reads only :math:`E[y_{t-1}]`; :math:`\\tilde h_0 = 0`. Unlike
    Bahdanau's, the query is the *current* state :math:`s_t`.

    ``attention``: ``"global"`` (every source position, above), or Luong's local attention on a
    window of :math:`2D + 1` positions, ``D = window``: ``"local-m"`` centres it on the step
    :math:`t`, ``"local-p"`` on a predicted :math:`p_t = S \\sigma(v_p^\\top \\tanh(W_p s_t))` with
    Gaussian weights (:class:`~npseq.nn.LocalAttention`).
    """

    ATTENTIONS = ("global",) + LOCAL_MODES

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0, cell: str = "gru", score: str = "general", input_feeding: bool = True,
                 enc_output_size: int | None = None, *, attention: str = "global", window: int = 2, rng=None,
                 dtype=None):
        if score not in SCORES:
            raise InvalidValueError(f"score: expected one of {tuple(SCORES)}, got {score!r}")
        if attention not in self.ATTENTIONS:
            raise InvalidValueError(f"attention: expected one of {self.ATTENTIONS}, got {attention!r}")
        enc_output_size = enc_output_size or num_hiddens
        if SCORES[score].equal_sizes and enc_output_size != num_hiddens:
            raise InvalidValueError(f"enc_output_size: the {score} score needs it equal to num_hiddens "
                                    f"({num_hiddens}), got {enc_output_size}")
        rng = as_rng(rng)
        super().__init__(vocab_size, embed_size, num_hiddens, num_layers, dropout, cell,
                         embed_size + (num_hiddens if input_feeding else 0), num_hiddens, rng=rng, dtype=dtype)
        self.score, self.input_feeding, self.enc_output_size = score, input_feeding, enc_output_size
        self.attention_kind, self.window = attention, window
        if attention != "global":
            self.attention = LocalAttention(num_hiddens, enc_output_size, mode=attention, score=score,
                                            half_width=window, num_hiddens=num_hiddens, rng=rng, dtype=dtype)
        else:
            self.attention = score_layer(score, num_hiddens, enc_output_size, num_hiddens, rng=rng, dtype=dtype)
        self.W_c = Linear(enc_output_size + num_hiddens, num_hiddens, bias=False, rng=rng, dtype=dtype)

    def init_state(self, enc_outputs, enc_state, enc_valid_lens=None) -> DecoderState:
        check_ndim("enc_outputs", enc_outputs, 3, "(N, S, H_enc)")
        check_shape("enc_outputs", enc_outputs, (None, None, self.enc_output_size))
        xp = backend.get_array_module(enc_outputs)
        projected_keys = self.attention.project_keys(enc_outputs) if self._projects_keys else None
        feed = xp.zeros((enc_outputs.shape[0], self.num_hiddens), enc_outputs.dtype) if self.input_feeding else None
        return DecoderState(enc_state, enc_outputs, enc_valid_lens, projected_keys=projected_keys, feed=feed)

    @property
    def _projects_keys(self) -> bool:
        """Global attention whose layer projects the keys once per batch (concat's); local attention scores
        in its window."""
        return self.attention_kind == "global" and SCORES[self.score].projects_keys

    def _attend(self, query, state):
        if self.attention_kind != "global":
            lens = state.enc_valid_lens
            if lens is None:  # no padding: every sentence is the whole source
                xp = backend.get_array_module(query)
                lens = xp.full(query.shape[0], state.enc_outputs.shape[1])
            return self.attention(query, state.enc_outputs, state.enc_outputs, lens, step=state.step)
        if self._projects_keys:
            return self.attention.forward_projected(query, state.projected_keys, state.enc_outputs,
                                                    state.enc_valid_lens)
        return self.attention(query, state.enc_outputs, state.enc_outputs, state.enc_valid_lens)

    def _step(self, embedded, state):
        xp = backend.get_array_module(embedded)
        x = xp.concatenate([embedded, state.feed[:, None]], axis=-1) if self.input_feeding else embedded
        outputs, hidden = self.rnn(x, state.hidden)
        context = self._attend(outputs, state)
        attentional = xp.tanh(self.W_c(xp.concatenate([context, outputs], axis=-1)))
        self.save_for_backward(attentional)
        feed = attentional[:, 0] if self.input_feeding else None
        return (attentional, state._replace(hidden=hidden, feed=feed), self.attention.attention_weights[:, 0])

    def _step_backward(self, dattentional, grads):
        attentional = self.pop_cache()
        if self.input_feeding:
            dattentional = dattentional + grads.dfeed[:, None]
        dcat = self.W_c.backward(dattentional * (1 - attentional * attentional))
        dcontext, doutputs = dcat[:, :, :self.enc_output_size], dcat[:, :, self.enc_output_size:]
        dquery, dkeys, dvalues = self.attention.backward(dcontext)
        grads.denc_outputs += dvalues
        if self._projects_keys:
            grads.dprojected_keys += dkeys
        else:
            grads.denc_outputs += dkeys
        dx, grads.dhidden = self.rnn.backward(doutputs + dquery, grads.dhidden)
        embed_size = self.embedding.embedding_dim
        if self.input_feeding:
            grads.dfeed = dx[:, 0, embed_size:]
        return dx[:, :, :embed_size]

    def _finish_backward(self, grads):
        denc_outputs = grads.denc_outputs
        if self._projects_keys:
            denc_outputs = denc_outputs + self.attention.backward_keys(grads.dprojected_keys)
        return denc_outputs, grads.dhidden


# ------------------------------------------------------------------- model
class EncoderDecoder(Module):
    """An encoder and a decoder trained together with teacher forcing.

    ``forward(src, tgt_in, src_valid_lens=None, sampling_ratio=0.0, rng=None, tgt_valid_lens=None)
    -> logits (N, T, V)``, where ``tgt_valid_lens`` marks the padded target positions, whose logits
    are then zero and cost nothing (see :class:`Decoder`);
    ``backward(dlogits)`` adds into every parameter's gradient and returns ``None``.
    ``attention_weights`` holds the last forward's weights ``(N, T, S)`` (``None``
    for the plain decoder). ``encode(src, src_valid_lens) -> DecoderState`` and
    ``decoder.step`` are what the search functions call.
    """

    def __init__(self, encoder: Seq2SeqEncoder, decoder: Decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def encode(self, src, src_valid_lens=None) -> DecoderState:
        reference = self.encoder.embedding.W.data
        check_same_backend("src", src, reference)
        if src_valid_lens is not None:
            check_same_backend("src_valid_lens", src_valid_lens, reference)
        enc_outputs, enc_state = self.encoder(src, src_valid_lens)
        return self.decoder.init_state(enc_outputs, enc_state, src_valid_lens)

    def forward(self, src, tgt_in, src_valid_lens=None, sampling_ratio: float = 0.0, rng=None, tgt_valid_lens=None):
        check_ndim("src", src, 2, "(N, S)")
        check_shape("tgt_in", tgt_in, (src.shape[0], None))
        check_same_backend("tgt_in", tgt_in, self.decoder.embedding.W.data)
        if tgt_valid_lens is not None:  # checked here too, so that an error names the caller's argument
            check_target_lengths("tgt_valid_lens", tgt_valid_lens, tgt_in)
        logits, _ = self.decoder(tgt_in, self.encode(src, src_valid_lens), sampling_ratio, rng,
                                 valid_lens=tgt_valid_lens)
        return logits

    def backward(self, dlogits):
        self.encoder.backward(*self.decoder.backward(dlogits))

    @property
    def attention_weights(self):
        return self.decoder.attention_weights
