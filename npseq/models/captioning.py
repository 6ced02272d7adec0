"""``CaptioningRNN``: a language model conditioned on a feature vector, at every step or at the first step."""
from __future__ import annotations

from .. import backend
from .._checks import as_rng, check_count, check_float_array, check_index_range, check_ndim, check_same_backend
from ..errors import InvalidValueError
from ..grad_mode import no_grad
from ..nn import CELLS, Embedding, Linear, Module, cell_record, make_rnn

__all__ = ["CaptioningRNN", "CONDITIONING_MODES"]

CONDITIONING_MODES = ("every_step", "first_step")


class CaptioningRNN(Module):
    """Caption a feature vector :math:`v` (an image's): predict word :math:`y_{t+1}` from :math:`v` and
    :math:`y_1 \\dots y_t`, with :math:`y_0` = ``<bos>``.

    ``mode="first_step"`` (CS231n's captioning RNN): :math:`v` sets the initial state only,

    .. math::
        h_0 = v W_{proj} + b_{proj}, \\qquad
        h_t = \\operatorname{cell}(E[y_{t-1}],\\ h_{t-1}), \\qquad z_t = h_t W_o + b_o

    (the LSTM's cell state starts at zero). ``mode="every_step"``: :math:`v` enters every step's
    pre-activations through its own rows :math:`W_v` of the recurrent layer's input weights,

    .. math::
        h_0 = 0, \\qquad h_t = \\operatorname{cell}([E[y_{t-1}], v],\\ h_{t-1}), \\qquad
        [E[y], v] \\begin{bmatrix} W_x \\\\ W_v \\end{bmatrix} = E[y] W_x + v W_v

    which is :func:`~npseq.functional.rnn_every_step_forward` (and its GRU and LSTM twins) run by the
    fast layers: the recurrent layer's ``Wx_l0`` is ``(E + F, kH)``, its last ``F`` rows :math:`W_v`.
    The gradient of :math:`v` is then a sum over the steps, :math:`dv = \\sum_t m_t\\, da_t W_v^\\top`,
    where first-step conditioning has only :math:`dv = dh_0 W_{proj}^\\top`.

    ``forward(features, captions_in, valid_lens=None) -> logits``: ``features`` ``(N, F)`` floats
    (cast to the model's dtype), ``captions_in`` ``(N, T)`` token ids (``<bos>`` first),
    ``valid_lens`` ``(N,)`` or ``None``; ``logits`` ``(N, T, V)``.
    ``backward(dlogits) -> dfeatures`` ``(N, F)``; adds into every ``Parameter.grad``.
    ``caption(features, *, bos_id, eos_id, max_len)`` decodes greedily.

    Args:
        feature_size: :math:`F`.
        vocab_size: :math:`V`.
        num_hiddens: :math:`H`.
        mode: ``"every_step"`` or ``"first_step"``.
        cell: ``"rnn"``, ``"gru"`` (reset-after) or ``"lstm"``.
        embed_size: :math:`E`; default :math:`H`.
        rng: a ``numpy.random.Generator`` or int seed; dtype: parameter dtype.
    """

    def __init__(self, feature_size: int, vocab_size: int, num_hiddens: int, mode: str = "first_step",
                 cell: str = "gru", embed_size=None, *, rng=None, dtype=None):
        super().__init__()
        if mode not in CONDITIONING_MODES:
            raise InvalidValueError(f"mode: expected one of {CONDITIONING_MODES}, got {mode!r}")
        cell_record(cell)
        self.feature_size = check_count("feature_size", feature_size, 1)
        self.vocab_size = check_count("vocab_size", vocab_size, 1)
        self.num_hiddens = check_count("num_hiddens", num_hiddens, 1)
        self.embed_size = self.num_hiddens if embed_size is None else check_count("embed_size", embed_size, 1)
        self.mode, self.cell = mode, cell
        rng = as_rng(rng)
        self.embedding = Embedding(vocab_size, self.embed_size, rng=rng, dtype=dtype)
        if mode == "first_step":
            self.feature_proj = Linear(feature_size, num_hiddens, rng=rng, dtype=dtype)
            rnn_input = self.embed_size
        else:
            rnn_input = self.embed_size + feature_size
        self.rnn = make_rnn(cell, rnn_input, num_hiddens, 1, 0.0, False, rng, dtype)
        self.dense = Linear(num_hiddens, vocab_size, rng=rng, dtype=dtype)

    def _features(self, features, n=None):
        check_float_array("features", features)
        check_ndim("features", features, 2, "(N, F)")
        if features.shape[1] != self.feature_size or (n is not None and features.shape[0] != n):
            rows = "N" if n is None else n
            raise InvalidValueError(f"features: expected shape ({rows}, {self.feature_size}), "
                                    f"got {tuple(features.shape)}")
        check_same_backend("features", features, self.dense.W.data)
        return features.astype(self.dense.W.data.dtype, copy=False)

    def _begin(self, v):
        """The recurrent layer's initial state (``None``: zeros) and the per-step extra input (or ``None``)."""
        if self.mode == "every_step":
            return None, v
        return CELLS[self.cell].state_from_hidden(self.feature_proj(v)[None]), None

    def _inputs(self, tokens, extra):
        embedded = self.embedding(tokens)
        if extra is None:
            return embedded
        xp = backend.get_array_module(embedded)
        repeated = xp.broadcast_to(extra[:, None, :], embedded.shape[:2] + (extra.shape[1],))
        return xp.concatenate([embedded, repeated], axis=2)

    def forward(self, features, captions_in, valid_lens=None):
        check_ndim("captions_in", captions_in, 2, "(N, T)")
        check_index_range("captions_in", captions_in, self.vocab_size, what="token ids")
        v = self._features(features, captions_in.shape[0])
        state, extra = self._begin(v)
        outputs, _ = self.rnn(self._inputs(captions_in, extra), state, valid_lens)
        return self.dense(outputs)

    def backward(self, dlogits):
        dinputs, dstate0 = self.rnn.backward(self.dense.backward(dlogits))
        if self.mode == "every_step":
            self.embedding.backward(dinputs[..., :self.embed_size])
            return dinputs[..., self.embed_size:].sum(axis=1)  # v feeds every step: its gradient sums over them
        self.embedding.backward(dinputs)
        return self.feature_proj.backward(CELLS[self.cell].hidden_of(dstate0)[0])

    def caption(self, features, *, bos_id: int, eos_id: int, max_len: int):
        """Greedy captions of ``features`` ``(N, F)``: at each step the most likely word, fed back in.

        Returns:
            ``N`` lists of token ids, each ending before its first ``eos_id`` (or after ``max_len`` ids).
        """
        max_len = check_count("max_len", max_len, 1)
        xp = backend.get_array_module(self.dense.W.data)
        with no_grad():
            v = self._features(features)
            state, extra = self._begin(v)
            tokens = xp.full((v.shape[0], 1), bos_id, dtype=xp.int64)
            chosen = []
            for _ in range(max_len):
                outputs, state = self.rnn(self._inputs(tokens, extra), state)
                tokens = self.dense(outputs).argmax(axis=2)
                chosen.append(backend.to_numpy(tokens[:, 0]))
        captions = []
        for row in backend.numpy.stack(chosen, axis=1).tolist():
            captions.append(row[:row.index(eos_id)] if eos_id in row else row)
        return captions

    def extra_repr(self) -> str:
        return (f"feature_size={self.feature_size}, vocab_size={self.vocab_size}, num_hiddens={self.num_hiddens}, "
                f"mode={self.mode!r}, cell={self.cell!r}")
