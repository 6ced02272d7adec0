"""``Linear``, ``ReLU``, ``Embedding`` and ``Dropout``: modules over the functional pairs."""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from .. import functional as F
from .._checks import as_rng, check_array, check_float_array, check_probability, check_same_backend, check_shape
from ..errors import InvalidValueError
from .init import normal, uniform
from .module import Module, Parameter


class _LinearCache(NamedTuple):
    affine: F.AffineCache
    input_shape: tuple


class Linear(Module):
    """Affine map on the last axis: :math:`y = x W + b`.

    ``W`` has shape ``(in_features, out_features)`` (row-vector convention; the
    transpose of ``torch.nn.Linear.weight``). Both ``W`` and ``b`` start from
    :math:`U(-1/\\sqrt{D}, 1/\\sqrt{D})`, as in PyTorch.

    ``forward(x)``: ``x`` ``(..., D)`` -> ``y`` ``(..., M)``.
    ``backward(dy)`` -> ``dx`` ``(..., D)``; adds into ``W.grad`` and ``b.grad``.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, rng=None, dtype=None):
        super().__init__()
        rng = as_rng(rng)
        bound = 1.0 / math.sqrt(in_features)
        self.in_features, self.out_features = in_features, out_features
        self.W = Parameter(uniform(rng, (in_features, out_features), bound, dtype))
        self.b = Parameter(uniform(rng, (out_features,), bound, dtype)) if bias else None

    def forward(self, x):
        check_float_array("x", x)
        check_same_backend("x", x, self.W.data)
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise InvalidValueError(f"x: expected shape (..., {self.in_features}), got {tuple(x.shape)}")
        b = None if self.b is None else self.b.data
        y, cache = F.affine_forward(x.reshape(-1, self.in_features), self.W.data, b)
        self.save_for_backward(_LinearCache(cache, tuple(x.shape)))
        return y.reshape(*x.shape[:-1], self.out_features)

    def backward(self, dy):
        cache = self.pop_cache()
        check_shape("dy", dy, cache.input_shape[:-1] + (self.out_features,))
        dx, dW, db = F.affine_backward(dy.reshape(-1, self.out_features), cache.affine)
        self.W.grad += dW
        if self.b is not None:
            self.b.grad += db
        return dx.reshape(cache.input_shape)

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, bias={self.b is not None}"


class _ReLUCache(NamedTuple):
    relu: F.ActivationCache


class ReLU(Module):
    """Elementwise :math:`y = \\max(x, 0)`, no parameters (the hidden nonlinearity of an MLP).

    ``forward(x)``: any shape -> the same shape. ``backward(dy)`` -> ``dx = dy * [x > 0]``.
    """

    def forward(self, x):
        y, cache = F.relu_forward(x)
        self.save_for_backward(_ReLUCache(cache))
        return y

    def backward(self, dy):
        cache = self.pop_cache()
        check_shape("dy", dy, tuple(cache.relu.out.shape))
        return F.relu_backward(dy, cache.relu)


class _EmbeddingCache(NamedTuple):
    lookup: F.WordEmbeddingCache


class Embedding(Module):
    """Token ids to vectors: :math:`\\text{out}_{\\ldots} = W_{x_{\\ldots}}`, ``W`` from :math:`\\mathcal{N}(0, 1)`.

    ``forward(x)``: integer ``x`` of any shape ``S`` -> ``(*S, embedding_dim)``.
    ``backward(dout)`` -> ``None`` (ids have no gradient); adds into ``W.grad``.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, *, rng=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.W = Parameter(normal(as_rng(rng), (num_embeddings, embedding_dim), 1.0, dtype))

    def forward(self, x):
        check_array("x", x)
        check_same_backend("x", x, self.W.data)
        out, cache = F.word_embedding_forward(x.reshape(1, -1), self.W.data)
        self.save_for_backward(_EmbeddingCache(cache))
        return out.reshape(*x.shape, self.embedding_dim)

    def backward(self, dout):
        cache = self.pop_cache()
        ids = cache.lookup.x
        check_shape("dout", dout, (None,) * (dout.ndim - 1) + (self.embedding_dim,))
        if dout.size != ids.size * self.embedding_dim:
            raise InvalidValueError(f"dout: expected one {self.embedding_dim}-vector per token id "
                                    f"({ids.size} ids), got shape {tuple(dout.shape)}")
        self.W.grad += F.word_embedding_backward(dout.reshape(1, -1, self.embedding_dim), cache.lookup)
        return None

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class _DropoutCache(NamedTuple):
    dropout: Any


class Dropout(Module):
    """Inverted dropout with probability ``p`` in training mode; the identity in eval mode.

    ``rng`` (a Generator or seed) draws the masks. ``forward(x) -> y``, ``backward(dy) -> dx``.
    """

    def __init__(self, p: float = 0.5, *, rng=None):
        super().__init__()
        check_probability("p", p)
        self.p = p
        self.rng = as_rng(rng)

    def forward(self, x):
        y, cache = F.dropout_forward(x, self.p, self.rng, train=self.training)
        self.save_for_backward(_DropoutCache(cache))
        return y

    def backward(self, dy):
        return F.dropout_backward(dy, self.pop_cache().dropout)

    def extra_repr(self) -> str:
        return f"p={self.p}"
