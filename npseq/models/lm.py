"""``RNNLM``: a recurrent language model, embedding -> RNN/GRU/LSTM -> linear layer to the vocabulary."""
from __future__ import annotations

from .. import backend
from .._checks import MemoryEstimate, as_rng, check_count, check_index_range, check_ndim
from ..errors import InvalidValueError
from ..nn import CELLS, Dropout, Embedding, Linear, Module, cell_record, make_rnn, make_rnn_parameters

__all__ = ["RNNLM", "estimate_rnnlm_memory"]


class RNNLM(Module):
    """A language model: predict token :math:`x_{t+1}` from :math:`x_1 \\dots x_t`.

    .. math::
        e_t &= \\operatorname{drop}(E[x_t])                                  &\\quad& (N, E) \\\\
        (h^{(L)}_1 \\dots h^{(L)}_T),\\ s_T &= \\operatorname{RNN}(e_1 \\dots e_T;\\ s_0) && (N, H) \\text{ each} \\\\
        z_t &= \\operatorname{drop}(h^{(L)}_t)\\, W_o + b_o                   && (N, V) \\\\
        p(x_{t+1} = v \\mid x_{\\le t}) &= \\operatorname{softmax}(z_t)_v

    ``RNN`` is :class:`~npseq.nn.RNN`, :class:`~npseq.nn.GRU` (the reset-after
    variant) or :class:`~npseq.nn.LSTM` with ``num_layers`` layers; :math:`s` is its
    state, ``(L, N, H)`` (LSTM: a pair ``(h, c)``). ``drop`` is inverted dropout with
    probability ``dropout`` in training mode, the identity in eval mode; with the
    recurrent layer's own dropout between layers, every non-recurrent connection is
    dropped, as in Zaremba et al. (2014). :math:`E` ``(V, E)`` starts from
    :math:`\\mathcal{N}(0, 1)`, :math:`W_o` ``(H, V)`` and :math:`b_o` from
    :math:`U(-1/\\sqrt{H}, 1/\\sqrt{H})`.

    ``forward(X, state=None) -> (logits, state)``: ``X`` ``(N, T)`` token ids in
    ``[0, V)``; ``state`` ``None`` (zeros, as :meth:`begin_state`) or the state a
    previous call returned; ``logits`` ``(N, T, V)`` (:math:`z_t` at ``[:, t]``) and the
    final state :math:`s_T`. The returned state has no history: feeding it to the
    next call and calling ``backward`` per call is truncated backpropagation
    through time.

    ``backward(dlogits, dstate=None) -> dstate0``: ``dlogits`` ``(N, T, V)`` is
    :math:`\\partial \\ell / \\partial z`, ``dstate`` :math:`\\partial \\ell / \\partial s_T`
    (``None``: zero); returns :math:`\\partial \\ell / \\partial s_0` with the state's
    structure, and adds into every ``Parameter.grad``:

    .. math::
        dW_o = \\textstyle\\sum_{n,t} \\tilde h_{nt}^\\top dz_{nt}, \\quad db_o = \\sum_{n,t} dz_{nt}, \\quad
        d\\tilde h_t = dz_t W_o^\\top, \\quad
        dE[v] = \\textstyle\\sum_{(n,t): x_{nt} = v} de_{nt}

    with :math:`\\tilde h` the dropped-out top outputs and :math:`de` what the
    recurrent layer's backward returns (through the dropout masks).

    Args:
        vocab_size: :math:`V`.
        num_hiddens: :math:`H`.
        num_layers: :math:`L`.
        cell: ``"rnn"``, ``"gru"`` or ``"lstm"``.
        embed_size: :math:`E`; default :math:`H`.
        dropout: drop probability in ``[0, 1)``.
        rng: a ``numpy.random.Generator`` or int seed (weights and dropout masks).
        dtype: parameter dtype (default ``backend.default_dtype``).
    """

    def __init__(self, vocab_size: int, num_hiddens: int, num_layers: int = 1, cell: str = "gru",
                 embed_size=None, dropout: float = 0.0, *, rng=None, dtype=None):
        super().__init__()
        cell_record(cell)
        for name, value in (("vocab_size", vocab_size), ("num_hiddens", num_hiddens),
                            ("embed_size", num_hiddens if embed_size is None else embed_size)):
            if isinstance(value, bool) or not isinstance(value, (int, backend.numpy.integer)) or value < 1:
                raise InvalidValueError(f"{name}: expected a positive integer, got {value!r}")
        rng = as_rng(rng)
        self.vocab_size, self.num_hiddens, self.num_layers, self.cell = vocab_size, num_hiddens, num_layers, cell
        self.embed_size = num_hiddens if embed_size is None else embed_size
        self.embedding = Embedding(vocab_size, self.embed_size, rng=rng, dtype=dtype)
        self.embed_dropout = Dropout(dropout, rng=int(rng.integers(2**63)))
        self.rnn = make_rnn(cell, self.embed_size, num_hiddens, num_layers, dropout, False, rng, dtype)
        self.output_dropout = Dropout(dropout, rng=int(rng.integers(2**63)))
        self.dense = Linear(num_hiddens, vocab_size, rng=rng, dtype=dtype)

    def begin_state(self, batch_size: int):
        """The zero state for ``batch_size`` sequences: ``(L, N, H)`` zeros (LSTM: a pair of them)."""
        reference = self.dense.W.data
        xp = backend.get_array_module(reference)
        shape = (self.num_layers, batch_size, self.num_hiddens)
        return CELLS[self.cell].state_from_hidden(xp.zeros(shape, dtype=reference.dtype))

    def forward(self, X, state=None):
        check_ndim("X", X, 2, "(N, T)")
        check_index_range("X", X, self.vocab_size, what="token ids")
        embedded = self.embed_dropout(self.embedding(X))
        outputs, state = self.rnn(embedded, state)
        return self.dense(self.output_dropout(outputs)), state

    def backward(self, dlogits, dstate=None):
        doutputs = self.output_dropout.backward(self.dense.backward(dlogits))
        dembedded, dstate0 = self.rnn.backward(doutputs, dstate)
        self.embedding.backward(self.embed_dropout.backward(dembedded))
        return dstate0

    def extra_repr(self) -> str:
        return (f"vocab_size={self.vocab_size}, num_hiddens={self.num_hiddens}, num_layers={self.num_layers}, "
                f"cell={self.cell!r}")


def estimate_rnnlm_memory(vocab_size: int, num_hiddens: int, num_layers: int = 1, cell: str = "gru", *,
                          batch_size: int, num_steps: int, embed_size=None, dtype=None) -> MemoryEstimate:
    """The memory of training ``RNNLM(vocab_size, num_hiddens, num_layers, cell, embed_size)`` on batches of
    ``batch_size`` x ``num_steps`` tokens, estimated without building it.

    The parameter count is exact; their bytes count the parameters, their gradients and Adam's two moments.
    The activations are one step's recurrent caches (input projections, gates, states), the logits with their
    softmax and gradient, doubled for the backward pass, as
    :func:`~npseq.models.build.estimate_seq2seq_memory` counts them. Pass the result to
    :func:`npseq._checks.check_memory`.
    """
    gates = cell_record(cell).gates
    V, H, L = (check_count(name, value) for name, value in (("vocab_size", vocab_size), ("num_hiddens", num_hiddens),
                                                            ("num_layers", num_layers)))
    E = H if embed_size is None else check_count("embed_size", embed_size)
    N, T = check_count("batch_size", batch_size), check_count("num_steps", num_steps)
    parameters = V * E + make_rnn_parameters(cell, E, H, L) + H * V + V
    activations = 2 * (N * T * (2 * E + L * (gates * 2 * H + 3 * H) + 2 * H) + 3 * N * T * V)
    itemsize = backend.numpy.dtype(dtype or backend.default_dtype).itemsize
    return MemoryEstimate(parameters, 4 * parameters * itemsize, activations * itemsize)
