"""The recurrent encoder and decoders: the d2l encoder, plain and Bahdanau decoders, Luong's decoder.

Every model is a :class:`~npseq.nn.Module` with a hand-written ``backward``. A
decoder runs one step at a time (the step is what greedy and beam search call);
its ``forward`` is the plain loop over ``step`` and its ``backward`` the loop over
``step_backward`` in reverse, routing each step's gradient into the recurrent
state, the embedding, and the encoder's outputs and state. That loop is the
reference; :mod:`npseq.models.packed_decoder` is its fast twin, and
:mod:`npseq.models.encoder_decoder` puts an encoder and a decoder together.

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
        return self.mapped_rows(lambda a: a.take(indices, axis=0), lambda h: h.take(indices, axis=1))

    def mapped_rows(self, rows, hidden_rows) -> DecoderState:
        """The state with ``rows`` applied to each batch-first array and ``hidden_rows`` to each hidden array."""
        keep = lambda a: None if a is None else rows(a)  # noqa: E731
        return DecoderState(map_state(hidden_rows, self.hidden), keep(self.enc_outputs), keep(self.enc_valid_lens),
                            keep(self.context), keep(self.projected_keys), keep(self.feed), self.step)


def reorder_state(state, indices):
    """The state of the batch rows ``indices`` (beam search keeps the best hypotheses this way).

    ``state`` is any decoder's state with a ``reorder(indices)`` method: a :class:`DecoderState`, or the
    Transformer's, whose per-block key and value caches move with their rows.
    """
    return state.reorder(indices)


class DecoderGrads:
    """The gradient of a :class:`DecoderState`, which ``step_backward`` carries back one step.

    ``dhidden`` (like ``hidden``) and ``dfeed`` ``(N, H)`` or ``None``, the recurrent part: the
    gradient of the state a step returned when its backward starts, of the state it read when it
    ends. ``denc_outputs`` ``(N, S, H_enc)``, ``dcontext`` ``(N, H_enc)`` and ``dprojected_keys``
    ``(N, S, h)`` (``None`` where the state has none), the part ``init_state`` computed once per
    batch: every step reads it, so each step's backward adds its share in place and they hold the
    sum over the steps walked back so far.
    """

    def __init__(self, dhidden, dfeed, denc_outputs, dcontext, dprojected_keys):
        self.dhidden, self.dfeed = dhidden, dfeed
        self.denc_outputs, self.dcontext, self.dprojected_keys = denc_outputs, dcontext, dprojected_keys

    @classmethod
    def zeros(cls, state: DecoderState) -> DecoderGrads:
        """Zero gradients shaped like ``state``."""
        xp = backend.get_array_module(state.enc_outputs)
        zeros = lambda a: None if a is None else xp.zeros_like(a)  # noqa: E731
        return cls(map_state(xp.zeros_like, state.hidden), zeros(state.feed), xp.zeros_like(state.enc_outputs),
                   zeros(state.context), zeros(state.projected_keys))

    def masked(self, keep) -> DecoderGrads:
        """The recurrent part in the rows where ``keep`` ``(N,)`` is True and zero in the others; the
        per-batch sums shared (the same arrays)."""
        xp = backend.get_array_module(keep)
        dhidden = map_state(lambda d: xp.where(keep[None, :, None], d, 0), self.dhidden)
        dfeed = None if self.dfeed is None else xp.where(keep[:, None], self.dfeed, 0)
        return DecoderGrads(dhidden, dfeed, self.denc_outputs, self.dcontext, self.dprojected_keys)

    def plus(self, other: DecoderGrads) -> DecoderGrads:
        """The recurrent parts of both summed; the per-batch sums shared."""
        summed = tuple(mine + theirs for mine, theirs in zip(state_parts(self.dhidden), state_parts(other.dhidden)))
        dhidden = summed if isinstance(self.dhidden, tuple) else summed[0]
        dfeed = None if self.dfeed is None else self.dfeed + other.dfeed
        return DecoderGrads(dhidden, dfeed, self.denc_outputs, self.dcontext, self.dprojected_keys)

    def mapped_rows(self, rows, hidden_rows) -> DecoderGrads:
        """The gradients with ``rows`` applied to each batch-first array and ``hidden_rows`` to each hidden one."""
        keep = lambda a: None if a is None else rows(a)  # noqa: E731
        return DecoderGrads(map_state(hidden_rows, self.dhidden), keep(self.dfeed), rows(self.denc_outputs),
                            keep(self.dcontext), keep(self.dprojected_keys))


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


def carried(new: DecoderState, old: DecoderState, running) -> DecoderState:
    """The state after a step: ``new`` in the rows where ``running`` ``(N,)`` is True, ``old`` in the
    others (a row past its target's end keeps the state of its own last step).

    .. math:: s_t = m_t\\, \\tilde s_t + (1 - m_t)\\, s_{t-1}, \\qquad m_t = [t < \\ell_n]

    for the hidden state and the fed attentional state; the rest is ``new``'s.
    """
    xp = backend.get_array_module(running)
    hidden = [xp.where(running[None, :, None], a, b) for a, b in zip(state_parts(new.hidden), state_parts(old.hidden))]
    feed = None if new.feed is None else xp.where(running[:, None], new.feed, old.feed)
    return new._replace(hidden=tuple(hidden) if isinstance(new.hidden, tuple) else hidden[0], feed=feed)


class _DecoderLoop(NamedTuple):
    state: DecoderState  # the state forward started from (the shapes of the gradients)
    valid: Any           # (N, T) booleans t < valid_lens[n]; all True without valid_lens


class Decoder(Module):
    """Shared machinery: embed a token, run one recurrent step, project to the vocabulary.

    .. math::
        o_t,\\ s_t = \\operatorname{step}(E[y_{t-1}],\\ s_{t-1}), \\qquad
        \\text{logits}_t = o_t W_o + b_o

    Subclasses define ``init_state``, ``_step`` (one step from the embedded token to the
    features the output layer reads, the next state and the attention weights) and
    ``_step_backward``, plus ``_finish_backward``, the backward of what ``init_state``
    computed once per batch.

    ``step(tokens, state) -> (logits (N, V), state, weights (N, S) or None)`` is one step, what
    greedy and beam search call (under ``no_grad``); ``state.step`` counts the steps taken.
    ``step_backward(dlogits (N, V), grads)`` is its backward, on a :class:`DecoderGrads`.

    ``forward(tgt_in, state, sampling_ratio=0.0, rng=None, valid_lens=None) -> (logits (N, T, V), state)``
    is the loop over ``step``, ``T`` times. Step ``t`` reads ``tgt_in[:, t]`` (teacher forcing),
    except that with ``sampling_ratio > 0`` each row reads, with that probability, the model's own
    previous argmax instead (scheduled sampling, Bengio et al. 2015). ``valid_lens`` ``(N,)`` (the
    target lengths) says that the positions ``t >= valid_lens[n]`` are padding: their logits and
    attention weights are zero, nothing flows back from them, and a row past its end keeps its
    state (:func:`carried`), so the state returned is each row's state after its own last valid
    step. ``attention_weights`` holds the weights ``(N, T, S)`` (``None`` without attention).
    ``backward(dlogits) -> (denc_outputs, denc_state)`` is the loop over ``step_backward``, last
    step first.

    This loop is the reference. Teacher-forced training runs its fast twin,
    :mod:`npseq.models.packed_decoder` (:class:`~npseq.models.encoder_decoder.EncoderDecoder` picks
    it), which gives the same numbers with the embedding and the output layer run once over all
    steps and the target rows packed. What the fast twin may skip, a subclass declares:
    ``packs_rows``, ``_keys_in_view``, and ``discards_zero_steps`` with ``_discard_step``.
    """

    packs_rows = True
    """Whether the fast twin runs the target rows packed on the host (see :mod:`~npseq.models.packed_decoder`)."""

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
        features, state, weights = self._step(self.embedding(tokens[:, None]), state)
        return self.dense(features)[:, 0], state._replace(step=state.step + 1), weights

    def step_backward(self, dlogits, grads: DecoderGrads) -> None:
        """The backward of one ``step``: ``dlogits`` ``(N, V)``; ``grads`` holds the gradient of the state
        ``step`` returned and is left holding that of the state it read (the per-batch sums grown by
        this step's share). Adds into every parameter's gradient."""
        dfeatures = self.dense.backward(dlogits[:, None])
        dembedded = self._step_backward(dfeatures, grads)
        self.embedding.backward(dembedded)

    # whole sequence -------------------------------------------------------
    def check_targets(self, tgt_in, state: DecoderState, valid_lens=None, sampling_ratio: float = 0.0,
                      rng=None) -> None:
        """The arguments of ``forward`` (and of its fast twin), each error naming its argument."""
        check_ndim("tgt_in", tgt_in, 2, "(N, T)")
        check_token_ids("tgt_in", tgt_in, self.vocab_size)
        check_shape("tgt_in", tgt_in, (top_hidden(state.hidden).shape[0], None))
        if tgt_in.shape[1] == 0:
            raise InvalidValueError(f"tgt_in: expected at least one step, (N, T) with T >= 1, got {tgt_in.shape}")
        if not 0.0 <= sampling_ratio <= 1.0:
            raise InvalidValueError(f"sampling_ratio: expected a probability in [0, 1], got {sampling_ratio}")
        if sampling_ratio > 0 and rng is None:
            raise InvalidValueError("rng: scheduled sampling (sampling_ratio > 0) needs a numpy.random.Generator")
        if valid_lens is not None:
            check_target_lengths("valid_lens", valid_lens, tgt_in)

    def forward(self, tgt_in, state: DecoderState, sampling_ratio: float = 0.0, rng=None, valid_lens=None):
        """The loop over ``step``: ``tgt_in`` ``(N, T)`` -> ``(logits (N, T, V), state)``.

        .. math::
            \\text{logits}_t,\\ \\tilde s_t = \\operatorname{step}(x_t,\\ s_{t-1}), \\qquad
            s_t = m_t\\, \\tilde s_t + (1 - m_t)\\, s_{t-1}, \\qquad m_t = [t < \\ell_n]

        with :math:`x_t` the token ``tgt_in[:, t]`` (teacher forcing) or, for ``t > 0`` and with
        probability ``sampling_ratio``, :math:`\\arg\\max \\text{logits}_{t-1}`; logits and weights are
        zero where :math:`m_t = 0`. See the class docstring.
        """
        self.check_targets(tgt_in, state, valid_lens, sampling_ratio, rng)
        xp = backend.get_array_module(tgt_in)
        n, num_steps = tgt_in.shape
        valid = xp.ones((n, num_steps), dtype=bool) if valid_lens is None else valid_positions(valid_lens, num_steps)
        initial, logits, weights = state, [], []
        for t in range(num_steps):
            tokens = tgt_in[:, t]
            if t > 0 and sampling_ratio > 0:  # scheduled sampling: some rows read their own previous guess
                tokens = xp.where(xp.asarray(rng.random(n) < sampling_ratio), logits[-1].argmax(axis=-1), tokens)
            logits_t, stepped, weights_t = self.step(tokens, state)
            state = carried(stepped, state, valid[:, t])
            logits.append(logits_t)
            weights.append(weights_t)
        self.attention_weights = None if weights[0] is None else zero_padded(xp.stack(weights, axis=1), valid)
        self.save_for_backward(_DecoderLoop(initial, valid))
        return zero_padded(xp.stack(logits, axis=1), valid), state

    def backward(self, dlogits):
        """The loop over ``step_backward``, last step first: ``dlogits`` ``(N, T, V)`` ->
        ``(denc_outputs, denc_state)``; adds into every parameter's gradient.

        .. math::
            \\bar s_{t-1} = \\operatorname{step\\_backward}\\big(m_t \\bar{\\text{logits}}_t,\\ m_t \\bar s_t\\big)
                + (1 - m_t)\\, \\bar s_t

        (the bars are gradients; the per-batch parts of the state sum over the steps).
        """
        loop = self.pop_cache()
        check_shape("dlogits", dlogits, loop.valid.shape + (self.vocab_size,))
        dlogits = zero_padded(dlogits, loop.valid)
        grads = DecoderGrads.zeros(loop.state)
        for t in reversed(range(loop.valid.shape[1])):
            running = loop.valid[:, t]  # s_t = m_t step(s_{t-1}) + (1 - m_t) s_{t-1}
            through_step, past_the_end = grads.masked(running), grads.masked(~running)
            self.step_backward(dlogits[:, t], through_step)
            grads = through_step.plus(past_the_end)
        return self._finish_backward(grads)

    # subclass hooks ------------------------------------------------------------
    def init_state(self, enc_outputs, enc_state, enc_valid_lens=None) -> DecoderState:
        raise NotImplementedError

    def _step(self, embedded, state: DecoderState):
        raise NotImplementedError

    def _step_backward(self, dfeatures, grads: DecoderGrads):
        raise NotImplementedError

    def _finish_backward(self, grads: DecoderGrads):
        raise NotImplementedError

    # what the fast twin may skip ------------------------------------------------
    def _keys_in_view(self, state: DecoderState) -> DecoderState:
        """The state the fast twin's steps read: by default ``state`` itself."""
        return state

    discards_zero_steps = False
    """Whether the fast twin may drop the trailing steps without gradient (``_discard_step`` then pops
    the caches of one step); otherwise it walks every step."""

    def _discard_step(self) -> None:
        """Drop the caches of the latest step without its backward (its gradients are all zero)."""
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
        grads.dprojected_keys += dprojected
        grads.denc_outputs += dvalues
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
        s_t &= \\operatorname{RNN}([E[y_{t-1}]; \\tilde h_{t-1}],\\ s_{t-1}), \\\\
        \\alpha_t &= \\operatorname{softmax}_s \\operatorname{score}(s^{(L)}_t, h_s), \\qquad
        c_t = \\sum_s \\alpha_{ts} h_s, \\\\
        \\tilde h_t &= \\tanh([c_t; s^{(L)}_t]\\, W_c), \\qquad o_t = \\tilde h_t W_o + b_o

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
