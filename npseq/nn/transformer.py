"""The Transformer's layers: thin modules over :mod:`npseq.functional.transformer`.

* :class:`MultiHeadAttention`: :func:`~npseq.functional.transformer.multihead_attention_forward`
  with its eight parameters, plus the two halves incremental decoding needs
  (:meth:`~MultiHeadAttention.project_keys_values` once per key, :meth:`~MultiHeadAttention.attend`
  once per query);
* :class:`PositionWiseFFN`: :func:`~npseq.functional.transformer.feed_forward_forward`;
* :class:`ResidualNorm`: :func:`~npseq.functional.transformer.residual_norm_forward` around a
  sublayer that is given per call (the sublayer's own modules keep their caches);
* :class:`TransformerEncoderBlock` and :class:`TransformerDecoderBlock`: Vaswani et al.'s blocks.

As everywhere in :mod:`npseq.nn`, each forward pushes a cache and each ``backward`` pops the
latest one. A block's backward calls its sublayers' backwards in the reverse order of the forward,
so the stacks of the modules inside stay in step.

Shapes: ``D`` the model size (``num_hiddens``), ``h`` heads, ``F`` the feed-forward size,
``T`` the block's own steps, ``S`` the source steps of cross-attention.
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

from .. import backend
from .._checks import as_rng, check_count, check_ndim, check_probability, check_shape
from ..errors import InvalidValueError
from ..functional import transformer as T
from .init import resolve_dtype, uniform
from .layers import Dropout
from .module import Module, Parameter

__all__ = ["MultiHeadAttention", "PositionWiseFFN", "ResidualNorm", "TransformerEncoderBlock",
           "TransformerDecoderBlock", "KeyValueCache"]


class KeyValueCache(NamedTuple):
    """Keys and values already projected and split into heads, each ``(N, h, T_k, D/h)``."""
    keys: Any
    values: Any

    def extended(self, new: KeyValueCache) -> KeyValueCache:
        """This cache with ``new``'s positions appended along the key axis (one decoder step's)."""
        xp = backend.get_array_module(new.keys)
        return KeyValueCache(xp.concatenate([self.keys, new.keys], axis=2),
                             xp.concatenate([self.values, new.values], axis=2))

    def take(self, indices) -> KeyValueCache:
        """The batch rows ``indices`` (beam search's surviving hypotheses)."""
        return KeyValueCache(self.keys.take(indices, axis=0), self.values.take(indices, axis=0))


class MultiHeadAttention(Module):
    """Multi-head attention: ``h`` scaled dot-product attentions on learned projections.

    .. math::
        O_i = \\operatorname{softmax}\\Bigl(\\frac{(Q W_q + b_q)_i (K W_k + b_k)_i^\\top}{\\sqrt{D/h}}\\Bigr)
              (V W_v + b_v)_i, \\qquad Y = [O_1, \\ldots, O_h] W_o + b_o

    where :math:`(\\cdot)_i` is column block ``i`` (of ``D/h`` columns); see
    :func:`~npseq.functional.transformer.multihead_attention_forward`. Every weight and bias
    starts from :math:`U(-1/\\sqrt{\\text{fan\\_in}}, 1/\\sqrt{\\text{fan\\_in}})`, as a ``Linear``
    does. (d2l's layer has no biases; torch's ``nn.MultiheadAttention`` and Vaswani et al.'s have.)

    ``forward(queries (N, T_q, query_size), keys (N, T_k, key_size), values (N, T_k, value_size),
    valid_lens=None, causal=False)`` -> ``(N, T_q, num_hiddens)``; ``backward(dout)`` ->
    ``(dqueries, dkeys, dvalues)`` and adds into the eight parameters' ``.grad``.
    ``.attention_weights`` keeps the last call's weights ``(N, h, T_q, T_k)``.
    """

    def __init__(self, query_size: int, key_size: int, value_size: int, num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, *, rng=None, dtype=None):
        super().__init__()
        check_count("num_heads", num_heads)
        if num_hiddens % num_heads:
            raise InvalidValueError(f"num_heads: expected a divisor of num_hiddens = {num_hiddens}, got {num_heads}")
        check_probability("dropout", dropout)
        generator, dtype = as_rng(rng), resolve_dtype(dtype)
        self.query_size, self.key_size, self.value_size = query_size, key_size, value_size
        self.num_hiddens, self.num_heads, self.dropout = num_hiddens, num_heads, dropout
        for name, rows in (("q", query_size), ("k", key_size), ("v", value_size), ("o", num_hiddens)):
            bound = 1.0 / math.sqrt(rows)
            setattr(self, f"W_{name}", Parameter(uniform(generator, (rows, num_hiddens), bound, dtype)))
            setattr(self, f"b_{name}", Parameter(uniform(generator, (num_hiddens,), bound, dtype)))
        self.rng = generator
        self.attention_weights = None

    def _params(self) -> dict:
        return {name: getattr(self, name).data for name in T.MULTIHEAD_PARAMS}

    def forward(self, queries, keys, values, valid_lens=None, causal: bool = False):
        out, weights, cache = T.multihead_attention_forward(
            queries, keys, values, self._params(), self.num_heads, valid_lens, causal,
            dropout=self.dropout if self.training else 0.0, rng=self.rng)
        self.attention_weights = weights
        self.save_for_backward(cache)
        return out

    def backward(self, dout):
        dqueries, dkeys, dvalues, grads = T.multihead_attention_backward(dout, self.pop_cache())
        for name, grad in grads.items():
            getattr(self, name).grad += grad
        return dqueries, dkeys, dvalues

    # ------------------------------------------------- incremental decoding
    def project_keys_values(self, keys, values) -> KeyValueCache:
        """:math:`(K W_k + b_k)` and :math:`(V W_v + b_v)` split into heads: the part of :meth:`forward`
        that depends on the keys alone. For search (no backward): nothing is stored."""
        check_ndim("keys", keys, 3, "(N, T_k, key_size)")
        check_shape("keys", keys, (None, None, self.key_size))
        check_shape("values", values, keys.shape[:2] + (self.value_size,))
        return KeyValueCache(T.split_heads(keys @ self.W_k.data + self.b_k.data, self.num_heads),
                             T.split_heads(values @ self.W_v.data + self.b_v.data, self.num_heads))

    def attend(self, queries, cache: KeyValueCache, valid_lens=None):
        """:meth:`forward` with keys and values already projected by :meth:`project_keys_values`.

        ``queries`` ``(N, T_q, query_size)`` -> ``(N, T_q, num_hiddens)``, equal to
        ``forward(queries, keys, values, valid_lens)`` (a causal mask is the caller's: a decoder
        step's cache holds only the past). For search (no backward): nothing is stored, no dropout.
        """
        check_ndim("queries", queries, 3, "(N, T_q, query_size)")
        check_shape("queries", queries, (cache.keys.shape[0], None, self.query_size))
        projected = T.split_heads(queries @ self.W_q.data + self.b_q.data, self.num_heads)
        heads, weights, _ = T.scaled_dot_product_attention_forward(projected, cache.keys, cache.values, valid_lens)
        self.attention_weights = weights
        return T.merge_heads(heads) @ self.W_o.data + self.b_o.data

    def extra_repr(self) -> str:
        return (f"query_size={self.query_size}, key_size={self.key_size}, value_size={self.value_size}, "
                f"num_hiddens={self.num_hiddens}, num_heads={self.num_heads}, dropout={self.dropout}")


class PositionWiseFFN(Module):
    """The same two-layer network at every position: :math:`y = \\varphi(x W_1 + b_1) W_2 + b_2`.

    ``W_1`` ``(num_inputs, num_hiddens)``, ``W_2`` ``(num_hiddens, num_outputs)``, initialised as
    ``Linear`` layers; ``activation`` ``"relu"`` or ``"gelu"``. See
    :func:`~npseq.functional.transformer.feed_forward_forward`.
    ``forward(x (..., num_inputs))`` -> ``(..., num_outputs)``; ``backward(dy)`` -> ``dx``.
    """

    def __init__(self, num_inputs: int, num_hiddens: int, num_outputs: int, activation: str = "relu", *,
                 rng=None, dtype=None):
        super().__init__()
        if activation not in T.ACTIVATIONS:
            raise InvalidValueError(f"activation: expected one of {list(T.ACTIVATIONS)}, got {activation!r}")
        generator, dtype = as_rng(rng), resolve_dtype(dtype)
        self.activation = activation
        self.W1 = Parameter(uniform(generator, (num_inputs, num_hiddens), 1.0 / math.sqrt(num_inputs), dtype))
        self.b1 = Parameter(uniform(generator, (num_hiddens,), 1.0 / math.sqrt(num_inputs), dtype))
        self.W2 = Parameter(uniform(generator, (num_hiddens, num_outputs), 1.0 / math.sqrt(num_hiddens), dtype))
        self.b2 = Parameter(uniform(generator, (num_outputs,), 1.0 / math.sqrt(num_hiddens), dtype))

    def forward(self, x):
        y, cache = T.feed_forward_forward(x, self.W1.data, self.b1.data, self.W2.data, self.b2.data,
                                          self.activation)
        self.save_for_backward(cache)
        return y

    def backward(self, dy):
        dx, dW1, db1, dW2, db2 = T.feed_forward_backward(dy, self.pop_cache())
        for param, grad in ((self.W1, dW1), (self.b1, db1), (self.W2, dW2), (self.b2, db2)):
            param.grad += grad
        return dx

    def extra_repr(self) -> str:
        return f"{self.W1.shape[0]}, {self.W1.shape[1]}, {self.W2.shape[1]}, activation={self.activation!r}"


class ResidualNorm(Module):
    """A residual connection with layer normalisation around a sublayer given per call.

    .. math::
        \\text{post:}\\ y = \\operatorname{LN}(x + F(x)), \\qquad \\text{pre:}\\ y = x + F(\\operatorname{LN}(x))

    with :math:`\\operatorname{LN}`'s ``gamma`` (ones) and ``beta`` (zeros) of size ``dim``.
    ``forward(x, sublayer)``: ``sublayer`` maps ``z -> F(z)`` (usually by calling modules, which
    keep their own caches). ``backward(dy, sublayer_backward)``: ``sublayer_backward`` maps
    ``dF -> (dz, extra)`` by calling those modules' backwards; returns ``(dx, extra)``, where
    ``extra`` is whatever the sublayer's backward passed along (e.g. the encoder outputs' gradient
    of cross-attention). See :func:`~npseq.functional.transformer.residual_norm_forward`.
    """

    def __init__(self, dim: int, order: str = "post", eps: float = 1e-5, *, dtype=None):
        super().__init__()
        if order not in T.NORM_ORDERS:
            raise InvalidValueError(f"order: expected one of {list(T.NORM_ORDERS)}, got {order!r}")
        dtype = resolve_dtype(dtype)
        self.order, self.eps = order, eps
        self.gamma = Parameter(backend.xp.ones(dim, dtype=dtype))
        self.beta = Parameter(backend.xp.zeros(dim, dtype=dtype))

    def forward(self, x, sublayer: Callable):
        y, cache = T.residual_norm_forward(x, lambda z: (sublayer(z), None), self.gamma.data, self.beta.data,
                                           self.order, self.eps)
        self.save_for_backward(cache)
        return y

    def backward(self, dy, sublayer_backward: Callable):
        dx, dgamma, dbeta, extra = T.residual_norm_backward(dy, self.pop_cache(),
                                                            lambda d, _: sublayer_backward(d))
        self.gamma.grad += dgamma
        self.beta.grad += dbeta
        return dx, extra

    def extra_repr(self) -> str:
        return f"{self.gamma.shape[0]}, order={self.order!r}, eps={self.eps}"


def _check_model_input(name: str, x, dim: int) -> None:
    check_ndim(name, x, 3, f"(N, T, {dim})")
    check_shape(name, x, (None, None, dim))


class TransformerEncoderBlock(Module):
    """One encoder block: self-attention, then the feed-forward network, each in a residual with layer norm.

    .. math::
        Y &= \\operatorname{AddNorm}\\bigl(X, \\operatorname{dropout}(\\operatorname{MHA}(X, X, X))\\bigr) \\\\
        Z &= \\operatorname{AddNorm}\\bigl(Y, \\operatorname{dropout}(\\operatorname{FFN}(Y))\\bigr)

    with :math:`\\operatorname{AddNorm}(x, f) = \\operatorname{LN}(x + f)` in post-norm order (Vaswani
    et al., d2l) or :math:`x + f(\\operatorname{LN}(x))` in pre-norm order. Dropout ``p`` drops the
    attention weights and each sublayer's output (as d2l). ``valid_lens`` masks padded source keys.

    ``forward(x (N, S, D), valid_lens=None)`` -> ``(N, S, D)``; ``backward(dy)`` -> ``dx``.
    ``self_attention.attention_weights`` ``(N, h, S, S)`` after a call.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int, dropout: float = 0.0,
                 norm: str = "post", activation: str = "relu", *, rng=None, dtype=None):
        super().__init__()
        rng = as_rng(rng)
        self.num_hiddens = num_hiddens
        self.self_attention = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads,
                                                 dropout, rng=rng, dtype=dtype)
        self.dropout1 = Dropout(dropout, rng=rng)
        self.norm1 = ResidualNorm(num_hiddens, norm, dtype=dtype)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, num_hiddens, activation, rng=rng, dtype=dtype)
        self.dropout2 = Dropout(dropout, rng=rng)
        self.norm2 = ResidualNorm(num_hiddens, norm, dtype=dtype)

    def forward(self, x, valid_lens=None):
        _check_model_input("x", x, self.num_hiddens)
        y = self.norm1(x, lambda z: self.dropout1(self.self_attention(z, z, z, valid_lens)))
        return self.norm2(y, lambda z: self.dropout2(self.ffn(z)))

    def backward(self, dout):
        dy, _ = self.norm2.backward(dout, lambda d: (self.ffn.backward(self.dropout2.backward(d)), None))
        dx, _ = self.norm1.backward(dy, lambda d: (_self_attention_backward(self.self_attention,
                                                                            self.dropout1.backward(d)), None))
        return dx


def _self_attention_backward(attention: MultiHeadAttention, dout):
    """Self-attention reads one array as queries, keys and values: its gradient is the sum of the three."""
    dqueries, dkeys, dvalues = attention.backward(dout)
    return dqueries + dkeys + dvalues


class DecoderBlockCache(NamedTuple):
    """What one decoder block keeps between search steps: its self-attention's keys and values of every
    step so far, and its cross-attention's of the encoder outputs (computed at the first step)."""
    self_attention: KeyValueCache | None
    cross_attention: KeyValueCache | None

    def take(self, indices) -> DecoderBlockCache:
        return DecoderBlockCache(*(None if part is None else part.take(indices) for part in self))


class TransformerDecoderBlock(Module):
    """One decoder block: masked self-attention, cross-attention to the encoder, the feed-forward network.

    .. math::
        Y &= \\operatorname{AddNorm}\\bigl(X,
             \\operatorname{dropout}(\\operatorname{MHA}_{\\text{causal}}(X, X, X))\\bigr) \\\\
        Z &= \\operatorname{AddNorm}\\bigl(Y, \\operatorname{dropout}(\\operatorname{MHA}(Y, H, H))\\bigr) \\\\
        O &= \\operatorname{AddNorm}\\bigl(Z, \\operatorname{dropout}(\\operatorname{FFN}(Z))\\bigr)

    where :math:`H` ``(N, S, D)`` are the encoder outputs, masked by ``enc_valid_lens``, and the causal
    mask lets target position ``t`` see positions ``0..t`` only, so that training on a whole target
    equals decoding it one token at a time.

    ``forward(x (N, T, D), enc_outputs (N, S, D), enc_valid_lens=None)`` -> ``(N, T, D)``;
    ``backward(dout)`` -> ``(dx, denc_outputs)``. ``step(x (N, 1, D), enc_outputs, enc_valid_lens, cache)``
    -> ``(out (N, 1, D), cache)`` is one search step on the cached keys and values (no backward).
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int, dropout: float = 0.0,
                 norm: str = "post", activation: str = "relu", *, rng=None, dtype=None):
        super().__init__()
        rng = as_rng(rng)
        self.num_hiddens = num_hiddens
        h = num_hiddens
        self.self_attention = MultiHeadAttention(h, h, h, h, num_heads, dropout, rng=rng, dtype=dtype)
        self.dropout1 = Dropout(dropout, rng=rng)
        self.norm1 = ResidualNorm(h, norm, dtype=dtype)
        self.cross_attention = MultiHeadAttention(h, h, h, h, num_heads, dropout, rng=rng, dtype=dtype)
        self.dropout2 = Dropout(dropout, rng=rng)
        self.norm2 = ResidualNorm(h, norm, dtype=dtype)
        self.ffn = PositionWiseFFN(h, ffn_num_hiddens, h, activation, rng=rng, dtype=dtype)
        self.dropout3 = Dropout(dropout, rng=rng)
        self.norm3 = ResidualNorm(h, norm, dtype=dtype)

    def forward(self, x, enc_outputs, enc_valid_lens=None):
        _check_model_input("x", x, self.num_hiddens)
        _check_model_input("enc_outputs", enc_outputs, self.num_hiddens)
        y = self.norm1(x, lambda z: self.dropout1(self.self_attention(z, z, z, causal=True)))
        z = self.norm2(y, lambda q: self.dropout2(self.cross_attention(q, enc_outputs, enc_outputs, enc_valid_lens)))
        return self.norm3(z, lambda u: self.dropout3(self.ffn(u)))

    def backward(self, dout):
        dz, _ = self.norm3.backward(dout, lambda d: (self.ffn.backward(self.dropout3.backward(d)), None))

        def cross_backward(d):
            dqueries, dkeys, dvalues = self.cross_attention.backward(self.dropout2.backward(d))
            return dqueries, dkeys + dvalues

        dy, denc_outputs = self.norm2.backward(dz, cross_backward)
        dx, _ = self.norm1.backward(dy, lambda d: (_self_attention_backward(self.self_attention,
                                                                            self.dropout1.backward(d)), None))
        return dx, denc_outputs

    def step(self, x, enc_outputs, enc_valid_lens, cache: DecoderBlockCache):
        """One search step: ``x`` ``(N, 1, D)``, the block input at the new position.

        The new position's keys and values join the self-attention cache, and the query attends to
        them all (the cache holds only the past and the present, so no causal mask is needed); the
        cross-attention keys and values of ``enc_outputs`` are projected on the first step and kept.
        Equal to the last row of :meth:`forward` on the whole prefix. Call it under ``no_grad``
        (the norms and the feed-forward network are modules that would otherwise keep caches).
        """
        _check_model_input("x", x, self.num_hiddens)
        caches = {}

        def self_attend(z):
            # The keys are the sublayer's input: x itself in post-norm order, LN(x) in pre-norm order.
            new = self.self_attention.project_keys_values(z, z)
            caches["self"] = new if cache.self_attention is None else cache.self_attention.extended(new)
            return self.self_attention.attend(z, caches["self"])

        cross_cache = cache.cross_attention or self.cross_attention.project_keys_values(enc_outputs, enc_outputs)
        y = self.norm1(x, self_attend)
        z = self.norm2(y, lambda q: self.cross_attention.attend(q, cross_cache, enc_valid_lens))
        out = self.norm3(z, self.ffn)
        return out, DecoderBlockCache(caches["self"], cross_cache)

