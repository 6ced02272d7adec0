"""Affine maps, word embeddings and inverted dropout: forward/backward pairs.

Row-vector convention throughout: an input row ``x`` maps to ``x @ w + b``. :func:`project` and
:func:`project_weight_grad` are the product of every row of an array ``(..., D)`` with a weight and that
weight's gradient, each as one 2-d product over all the rows: what the attention functions and the
Transformer's projections use.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_float_array, check_ndim, check_probability, check_shape, check_token_ids
from ..errors import InvalidValueError


# --------------------------------------------------------------------- affine
class AffineCache(NamedTuple):
    x: Any  # (N, d_1, ..., d_k), the input as given
    w: Any  # (D, M)
    has_bias: bool


def affine_forward(x, w, b):
    """Fully connected layer on flattened rows.

    .. math:: \\text{out} = \\operatorname{flat}(x)\\, w + b

    Args:
        x: ``(N, d_1, ..., d_k)``; each example is flattened to ``D = d_1 \\cdots d_k`` features.
        w: ``(D, M)``.
        b: ``(M,)``, or ``None`` for a map without bias.

    Returns:
        ``out`` ``(N, M)`` and an :class:`AffineCache`.
    """
    _check_affine(x, w, b)
    out = x.reshape(x.shape[0], -1) @ w
    if b is not None:
        out += b
    return out, AffineCache(x, w, b is not None)


def affine_backward(dout, cache: AffineCache):
    """Backward of :func:`affine_forward`.

    .. math:: dx = dout\\, w^\\top,\\quad dw = \\operatorname{flat}(x)^\\top dout,\\quad db = \\textstyle\\sum_n dout_n

    Args:
        dout: ``(N, M)``.

    Returns:
        ``dx`` shaped like ``x``, ``dw`` ``(D, M)``, ``db`` ``(M,)`` (``None`` without bias).
    """
    x, w, has_bias = cache
    dx = (dout @ w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T @ dout
    db = dout.sum(axis=0) if has_bias else None
    return dx, dw, db


# ----------------------------------------------------------- rows of any array
def project(x, w):
    """Every row of ``x`` times ``w``: :math:`y = x\\, w` over all leading axes, as one 2-d product.

    Args:
        x: ``(..., D)``.
        w: ``(D, M)``.

    Returns:
        ``y`` ``(..., M)``.
    """
    return (x.reshape(-1, x.shape[-1]) @ w).reshape(x.shape[:-1] + (w.shape[-1],))


def project_weight_grad(x, dy):
    """The gradient of the weight of :func:`project`: :math:`dw = \\sum_r x_r^\\top dy_r`, summed over every
    row ``r`` of every leading axis, as one 2-d product.

    Args:
        x: ``(..., D)``, the rows that were projected.
        dy: ``(..., M)``, the gradient of their projections.

    Returns:
        ``dw`` ``(D, M)``.
    """
    return x.reshape(-1, x.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])


# ----------------------------------------------------------- temporal affine
class TemporalAffineCache(NamedTuple):
    x: Any  # (N, T, D)
    w: Any  # (D, M)


def temporal_affine_forward(x, w, b):
    """The same affine map applied at every time step.

    .. math:: \\text{out}_{t} = x_t\\, w + b

    Args:
        x: ``(N, T, D)``.
        w: ``(D, M)``.
        b: ``(M,)``.

    Returns:
        ``out`` ``(N, T, M)`` and a :class:`TemporalAffineCache`.
    """
    _check_temporal_affine(x, w, b)
    out = x @ w + b
    return out, TemporalAffineCache(x, w)


def temporal_affine_backward(dout, cache: TemporalAffineCache):
    """Backward of :func:`temporal_affine_forward`.

    .. math:: dx_t = dout_t\\, w^\\top,\\quad dw = \\textstyle\\sum_{n,t} x_{nt}^\\top dout_{nt},
              \\quad db = \\textstyle\\sum_{n,t} dout_{nt}

    Args:
        dout: ``(N, T, M)``.

    Returns:
        ``dx`` ``(N, T, D)``, ``dw`` ``(D, M)``, ``db`` ``(M,)``.
    """
    x, w = cache
    n, t, d = x.shape
    dx = dout @ w.T
    dw = x.reshape(n * t, d).T @ dout.reshape(n * t, -1)
    db = dout.sum(axis=(0, 1))
    return dx, dw, db


# ------------------------------------------------------------ word embedding
class WordEmbeddingCache(NamedTuple):
    x: Any  # integer token ids, any shape: (N, T) for sequences
    W: Any  # (V, D)


def word_embedding_forward(x, W):
    r"""Look up one row of ``W`` per token id.

    .. math:: \text{out}_{\ldots, :} = W_{x_{\ldots}}

    Args:
        x: integer ids in ``[0, V)`` of any shape: ``(N, T)`` for sequences, ``(N,)`` for one
            step (as CS231n's ``sample()`` passes them).
        W: ``(V, D)``.

    Returns:
        ``out`` of shape ``x.shape + (D,)`` (``(N, T, D)`` for ``(N, T)`` ids) and a
        :class:`WordEmbeddingCache`.
    """
    _check_embedding(x, W)
    return W[x], WordEmbeddingCache(x, W)


def word_embedding_backward(dout, cache: WordEmbeddingCache):
    """Backward of :func:`word_embedding_forward`: scatter-add each token's gradient into its row.

    .. math:: dW_v = \\textstyle\\sum_{n,t:\\, x_{nt} = v} dout_{nt}

    Args:
        dout: ``x.shape + (D,)`` (``(N, T, D)`` for ``(N, T)`` ids).

    Returns:
        ``dW`` ``(V, D)``.
    """
    check_shape("dout", dout, tuple(cache.x.shape) + (cache.W.shape[1],))
    x, W = cache
    dW = backend.get_array_module(W).zeros_like(W)
    backend.scatter_add(dW, x.reshape(-1), dout.reshape(-1, W.shape[1]))
    return dW


# ------------------------------------------------------------------- dropout
class DropoutCache(NamedTuple):
    mask: Any  # same shape as x: 0 for dropped units, 1/(1-p) for kept ones; None outside training


def dropout_forward(x, p: float, rng, train: bool = True):
    """Inverted dropout: drop each unit with probability ``p`` and rescale the rest.

    .. math:: m_i \\sim \\text{Bernoulli}(1-p) / (1-p), \\qquad \\text{out} = x \\odot m

    so that :math:`E[\\text{out}] = x` and evaluation needs no rescaling.

    Args:
        x: any shape.
        p: drop probability in ``[0, 1)``.
        rng: a ``numpy.random.Generator`` (or CuPy's) that draws the mask.
        train: ``False`` makes the layer the identity.

    Returns:
        ``out`` shaped like ``x`` and a :class:`DropoutCache` holding the mask.
    """
    _check_dropout(x, p)
    if not train or p == 0.0:
        return x, DropoutCache(None)
    xp = backend.get_array_module(x)
    # float32 uniforms: half the random bits of float64 and plenty of resolution for a threshold
    keep = xp.asarray(rng.random(x.shape, dtype=backend.numpy.float32) >= p)
    mask = keep.astype(x.dtype)
    mask /= x.dtype.type(1.0 - p)
    return x * mask, DropoutCache(mask)


def dropout_backward(dout, cache: DropoutCache):
    """Backward of :func:`dropout_forward`: :math:`dx = dout \\odot m` (identity outside training)."""
    return dout if cache.mask is None else dout * cache.mask


# ------------------------------------------------------------ argument checks
def _check_affine(x, w, b):
    """``w`` is a float ``(D, M)`` with ``D`` the features of an example of ``x``; ``b``, when given, ``(M,)``."""
    check_float_array("w", w)
    check_ndim("w", w, 2, "(D, M)")
    features = 1
    for size in x.shape[1:]:
        features *= size
    if features != w.shape[0]:
        raise InvalidValueError(f"x: expected {w.shape[0]} features per example (rows of w), "
                                f"got shape {tuple(x.shape)} with {features}")
    if b is not None:
        check_shape("b", b, (w.shape[1],))


def _check_temporal_affine(x, w, b):
    """``x`` ``(N, T, D)``, ``w`` ``(D, M)``, ``b`` ``(M,)``."""
    check_ndim("x", x, 3, "(N, T, D)")
    check_ndim("w", w, 2, "(D, M)")
    check_shape("x", x, (None, None, w.shape[0]))
    check_shape("b", b, (w.shape[1],))


def _check_embedding(x, W):
    """``W`` ``(V, D)`` and integer ids ``x`` in ``[0, V)``."""
    check_ndim("W", W, 2, "(V, D)")
    check_token_ids("x", x, W.shape[0])


def _check_dropout(x, p):
    """``p`` a drop probability in ``[0, 1)`` and ``x`` a float array."""
    check_probability("p", p)
    check_float_array("x", x)
