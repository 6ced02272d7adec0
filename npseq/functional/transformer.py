"""The Transformer's pieces (Vaswani et al., 2017), each a forward/backward pair.

* :func:`scaled_dot_product_attention_forward`: :math:`\\operatorname{softmax}(QK^\\top/\\sqrt d)\\,V`
  with key padding and a causal mask;
* :func:`multihead_attention_forward`: projections, :func:`split_heads`, attention per head,
  :func:`merge_heads`, output projection;
* :func:`positional_encoding` (sinusoidal) and :func:`add_positions_forward` (adds any position
  table to the input: the sinusoidal one, or a learned one);
* :func:`feed_forward_forward`: the position-wise two-layer network (ReLU or GELU);
* :func:`residual_norm_forward`: a residual connection around any sublayer with layer
  normalisation (:mod:`npseq.functional.normalization`), in post-norm or pre-norm order.

Row-vector convention, as in the rest of the package: a row ``x`` maps to ``x @ W + b``.
torch stores the transpose (``x @ W.T + b``), so its weights come over transposed.

Masks follow :mod:`npseq.functional.attention`: ``valid_lens`` is ``None``, ``(N,)`` or
``(N, T_q)``, key positions ``k >= valid_len`` get exactly zero weight, and a query that
sees no key at all gets all-zero weights and a zero output (torch gives NaN there).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .. import backend
from .._checks import (
    NORM_ORDERS,
    check_add_positions,
    check_feed_forward,
    check_multihead,
    check_positional_encoding,
    check_residual_norm,
    check_scaled_dot_product_attention,
    check_shape,
    check_split_heads,
    check_sublayer_output,
)
from .activations import MaskedSoftmaxCache, gelu_backward, gelu_forward, relu_backward, relu_forward
from .layers import DropoutCache, project, project_weight_grad
from .normalization import LayerNormCache, layer_norm_backward, layer_norm_forward
from .pooling import AttentionPoolingCache, attention_mask, masked_pooling_backward, masked_pooling_forward
from .scores import ScaledDotScoresCache, scaled_dot_scores_backward, scaled_dot_scores_forward

__all__ = [
    "ScaledDotProductAttentionCache", "MultiheadAttentionCache", "AddPositionsCache", "FeedForwardCache",
    "ResidualNormCache", "MULTIHEAD_PARAMS", "ACTIVATIONS", "NORM_ORDERS",
    "attention_mask", "scaled_dot_product_attention_forward", "scaled_dot_product_attention_backward",
    "split_heads", "merge_heads", "multihead_attention_forward", "multihead_attention_backward",
    "positional_encoding", "add_positions_forward", "add_positions_backward",
    "feed_forward_forward", "feed_forward_backward", "residual_norm_forward", "residual_norm_backward",
]


# ------------------------------------------------ scaled dot-product attention
class ScaledDotProductAttentionCache(NamedTuple):
    queries: Any                 # (N, [h,] T_q, d)
    keys: Any                    # (N, [h,] T_k, d)
    values: Any                  # (N, [h,] T_k, d_v)
    scale: Any                   # 1/sqrt(d), a scalar of the inputs' dtype
    softmax: MaskedSoftmaxCache  # the weights A and the mask
    dropout: DropoutCache        # mask on A; its .mask is None without dropout
    pooled: Any                  # the weights that multiplied V: A, or dropout(A)


def scaled_dot_product_attention_forward(queries, keys, values, valid_lens=None, causal: bool = False, *,
                                         dropout: float = 0.0, rng=None):
    """Scaled dot-product attention with key padding and an optional causal mask.

    .. math::
        S &= Q K^\\top / \\sqrt{d}                                  && (N, [h,] T_q, T_k) \\\\
        A &= \\operatorname{softmax}_k(S \\text{ where } m \\text{, else } {-\\infty})  \\\\
        \\tilde A &= \\operatorname{dropout}_p(A)                    \\\\
        O &= \\tilde A V                                           && (N, [h,] T_q, d_v)

    with the mask :math:`m` of :func:`~npseq.functional.pooling.attention_mask`: the scaled dot score
    (:func:`~npseq.functional.scores.scaled_dot_scores_forward`) followed by the masked pooling
    (:func:`~npseq.functional.pooling.masked_pooling_forward`). Masked weights are exactly 0.

    The optional head axis ``h`` (as :func:`split_heads` makes it) is a batch axis like
    ``N``; ``valid_lens`` is per example and so shared by every head.

    Args:
        queries: ``(N, T_q, d)`` or ``(N, h, T_q, d)``.
        keys: ``(N, T_k, d)`` or ``(N, h, T_k, d)`` (the same leading axes and ``d``), ``T_k >= 1``.
        values: ``(N, T_k, d_v)`` or ``(N, h, T_k, d_v)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, T_q)`` integers in ``[0, T_k]``.
        causal: query ``q`` sees only keys ``0..q``.
        dropout: probability of dropping each weight (inverted dropout); 0 = none.
        rng: a ``numpy.random.Generator`` that draws the mask (needed when ``dropout > 0``).

    Returns:
        ``out`` ``(N, [h,] T_q, d_v)``, ``weights`` :math:`A` ``(N, [h,] T_q, T_k)`` (before
        dropout) and a :class:`ScaledDotProductAttentionCache`.
    """
    check_scaled_dot_product_attention(queries, keys, values, valid_lens, dropout, rng)
    xp = backend.get_array_module(queries)
    scores, score_cache = scaled_dot_scores_forward(queries, keys)
    mask = attention_mask(queries.shape[-2], keys.shape[-2], valid_lens, causal, xp)
    head_mask = mask if queries.ndim == 3 else mask[:, None]  # one mask for every head
    out, weights, pooling = masked_pooling_forward(scores, values, head_mask, dropout=dropout, rng=rng)
    return out, weights, ScaledDotProductAttentionCache(queries, keys, values, score_cache.scale, pooling.softmax,
                                                        pooling.dropout, pooling.pooled)


def scaled_dot_product_attention_backward(dout, cache: ScaledDotProductAttentionCache, dweights=None):
    """Backward of :func:`scaled_dot_product_attention_forward`: the pooling's backward, then the score's.

    Walking the four equations back (transposes swap the last two axes; every leading
    axis is a batch axis):

    .. math::
        dV &= \\tilde A^\\top dO                                              && (N, [h,] T_k, d_v) \\\\
        d\\tilde A &= dO\\, V^\\top                                           && (N, [h,] T_q, T_k) \\\\
        dA &= d\\tilde A \\odot M_{\\text{drop}} + d\\text{weights}             \\\\
        dS_{qk} &= A_{qk} \\bigl(dA_{qk} - \\textstyle\\sum_j dA_{qj} A_{qj}\\bigr)
                                                                            && \\text{(0 where masked)} \\\\
        dQ &= dS\\, K / \\sqrt d                                              && (N, [h,] T_q, d) \\\\
        dK &= dS^\\top Q / \\sqrt d                                           && (N, [h,] T_k, d)

    Args:
        dout: ``(N, [h,] T_q, d_v)``.
        dweights: ``(N, [h,] T_q, T_k)``, an upstream gradient on the weights themselves,
            or ``None``.

    Returns:
        ``dqueries``, ``dkeys``, ``dvalues``, each shaped like its input.
    """
    queries, keys, values, scale, softmax, dropout_cache, pooled = cache
    pooling = AttentionPoolingCache(values, softmax, None, dropout_cache, pooled)
    dscores, dvalues, _ = masked_pooling_backward(dout, pooling, dweights)
    dqueries, dkeys = scaled_dot_scores_backward(dscores, ScaledDotScoresCache(queries, keys, scale))
    return dqueries, dkeys, dvalues


# ---------------------------------------------------------- multi-head attention
def split_heads(x, num_heads: int):
    """``(N, T, h d)`` -> ``(N, h, T, d)``: the features of each position cut into ``h`` blocks of ``d``.

    Head ``i`` gets feature columns ``i d .. (i+1) d - 1``, as torch does. The inverse is
    :func:`merge_heads`, so each is the other's backward.
    """
    check_split_heads(x, num_heads)
    n, t, features = x.shape
    return x.reshape(n, t, num_heads, features // num_heads).transpose(0, 2, 1, 3)


def merge_heads(x):
    """``(N, h, T, d)`` -> ``(N, T, h d)``: the heads' outputs side by side (the inverse of :func:`split_heads`)."""
    n, heads, t, dim = x.shape
    return x.transpose(0, 2, 1, 3).reshape(n, t, heads * dim)


MULTIHEAD_PARAMS = ("W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o")
"""The keys of the ``params`` of :func:`multihead_attention_forward`, in the order the checks list them."""


class MultiheadAttentionCache(NamedTuple):
    queries: Any                               # (N, T_q, D_q)
    keys: Any                                  # (N, T_k, D_k)
    values: Any                                # (N, T_k, D_v)
    params: dict                               # the weights, by the names of MULTIHEAD_PARAMS
    attention: ScaledDotProductAttentionCache  # per head, on (N, h, T, D/h)
    merged: Any                                # (N, T_q, D) the heads' outputs side by side, the input of W_o


def multihead_attention_forward(queries, keys, values, params: dict, num_heads: int, valid_lens=None,
                                causal: bool = False, *, dropout: float = 0.0, rng=None):
    """Multi-head attention: ``h`` scaled dot-product attentions on learned projections, side by side.

    .. math::
        \\hat Q &= Q W_q + b_q, \\quad \\hat K = K W_k + b_k, \\quad \\hat V = V W_v + b_v
                                                                  && (N, T, D) \\\\
        \\hat Q_i, \\hat K_i, \\hat V_i &= \\text{column block } i \\text{ of } \\hat Q, \\hat K, \\hat V
                                                                  && (N, T, D/h) \\\\
        O_i &= \\operatorname{attention}(\\hat Q_i, \\hat K_i, \\hat V_i)  && (N, T_q, D/h) \\\\
        Y &= [O_1, \\ldots, O_h]\\, W_o + b_o                        && (N, T_q, D_o)

    where attention is :func:`scaled_dot_product_attention_forward`, scaled by
    :math:`1/\\sqrt{D/h}`. All heads run as one batched product through :func:`split_heads`
    and :func:`merge_heads`. Self-attention passes the same array as queries, keys and
    values; its gradient is then the sum of the three returned by the backward.

    torch's ``nn.MultiheadAttention`` computes the same with ``in_proj_weight`` =
    :math:`[W_q^\\top; W_k^\\top; W_v^\\top]` (stacked rows), ``in_proj_bias`` =
    :math:`[b_q; b_k; b_v]`, ``out_proj.weight`` = :math:`W_o^\\top`, ``out_proj.bias`` = :math:`b_o`;
    ``valid_lens`` is its ``key_padding_mask`` (True past each length) and ``causal`` its
    upper-triangular ``attn_mask``.

    Args:
        queries: ``(N, T_q, D_q)``.
        keys: ``(N, T_k, D_k)``, ``T_k >= 1``.
        values: ``(N, T_k, D_v)``.
        params: a dict with ``W_q`` ``(D_q, D)``, ``W_k`` ``(D_k, D)``, ``W_v`` ``(D_v, D)``,
            ``b_q``, ``b_k``, ``b_v`` ``(D,)``, ``W_o`` ``(D, D_o)``, ``b_o`` ``(D_o,)``.
        num_heads: ``h``, a divisor of ``D``.
        valid_lens: ``None``, ``(N,)`` or ``(N, T_q)`` integers in ``[0, T_k]``.
        causal: query ``q`` sees only keys ``0..q``.
        dropout, rng: dropout on the attention weights, see :func:`scaled_dot_product_attention_forward`.

    Returns:
        ``out`` ``(N, T_q, D_o)``, the weights of every head ``(N, h, T_q, T_k)`` (before
        dropout) and a :class:`MultiheadAttentionCache`.
    """
    num_heads = check_multihead(queries, keys, values, params, num_heads, MULTIHEAD_PARAMS)
    p = params
    projected_queries = split_heads(project(queries, p["W_q"]) + p["b_q"], num_heads)
    projected_keys = split_heads(project(keys, p["W_k"]) + p["b_k"], num_heads)
    projected_values = split_heads(project(values, p["W_v"]) + p["b_v"], num_heads)
    heads, weights, attention = scaled_dot_product_attention_forward(
        projected_queries, projected_keys, projected_values, valid_lens, causal, dropout=dropout, rng=rng)
    merged = merge_heads(heads)
    out = project(merged, p["W_o"]) + p["b_o"]
    return out, weights, MultiheadAttentionCache(queries, keys, values, dict(params), attention, merged)


def _affine_grads(x, dy, W):
    """``dx``, ``dW``, ``db`` of ``y = x W + b`` for ``x`` ``(..., D)`` and ``dy`` ``(..., M)``."""
    return project(dy, W.T), project_weight_grad(x, dy), dy.reshape(-1, W.shape[1]).sum(axis=0)


def multihead_attention_backward(dout, cache: MultiheadAttentionCache, dweights=None):
    """Backward of :func:`multihead_attention_forward`.

    With :math:`C = [O_1, \\ldots, O_h]` (``merged``) and sums over every ``(n, t)`` row:

    .. math::
        dW_o &= \\textstyle\\sum C^\\top dY, \\quad db_o = \\textstyle\\sum dY, \\quad dC = dY\\, W_o^\\top \\\\
        d\\hat Q_i, d\\hat K_i, d\\hat V_i &= \\text{the attention backward of } dO_i
            \\text{ (column block } i \\text{ of } dC) \\\\
        dW_q &= \\textstyle\\sum Q^\\top d\\hat Q, \\quad db_q = \\textstyle\\sum d\\hat Q,
            \\quad dQ = d\\hat Q\\, W_q^\\top

    and the same for :math:`K` and :math:`V`. Splitting and merging only move numbers, so
    their backwards are each other.

    :math:`db_k` is zero up to rounding: adding :math:`b_k` to every key adds
    :math:`\\hat q \\cdot b_k` to all the scores of a query alike, and a softmax does not see a
    shift (in the equations, each row of :math:`dS` sums to 0, so :math:`\\sum_k d\\hat K_k = 0`).
    It is computed like the others, all the same.

    Args:
        dout: ``(N, T_q, D_o)``.
        dweights: ``(N, h, T_q, T_k)`` or ``None``.

    Returns:
        ``dqueries`` ``(N, T_q, D_q)``, ``dkeys`` ``(N, T_k, D_k)``, ``dvalues`` ``(N, T_k, D_v)``
        and a dict of the parameters' gradients, keyed as ``params``.
    """
    check_shape("dout", dout, cache.merged.shape[:2] + (cache.params["W_o"].shape[1],))
    queries, keys, values, p, attention, merged = cache
    grads = {}
    dmerged, grads["W_o"], grads["b_o"] = _affine_grads(merged, dout, p["W_o"])
    num_heads = attention.queries.shape[1]
    dq_heads, dk_heads, dv_heads = scaled_dot_product_attention_backward(
        split_heads(dmerged, num_heads), attention, dweights)
    dqueries, grads["W_q"], grads["b_q"] = _affine_grads(queries, merge_heads(dq_heads), p["W_q"])
    dkeys, grads["W_k"], grads["b_k"] = _affine_grads(keys, merge_heads(dk_heads), p["W_k"])
    dvalues, grads["W_v"], grads["b_v"] = _affine_grads(values, merge_heads(dv_heads), p["W_v"])
    return dqueries, dkeys, dvalues, {name: grads[name] for name in MULTIHEAD_PARAMS}


# -------------------------------------------------------------------- positions
def positional_encoding(num_steps: int, dim: int, dtype=None):
    """The sinusoidal position table of Vaswani et al.: a fixed sine and cosine per pair of features.

    .. math::
        P_{t, 2i} = \\sin\\bigl(t / 10000^{2i/d}\\bigr), \\qquad
        P_{t, 2i+1} = \\cos\\bigl(t / 10000^{2i/d}\\bigr)

    Each pair of columns turns at its own frequency, from one turn per :math:`2\\pi` steps
    down to one per :math:`10000 \\cdot 2\\pi`, and :math:`P_{t+\\delta}` is a fixed
    rotation of :math:`P_t` for every :math:`t`, which lets attention read relative
    positions. An odd ``dim`` drops the last cosine column. Add it to the input with
    :func:`add_positions_forward`.

    Args:
        num_steps: the number of positions ``T``, ``>= 1``.
        dim: the feature size ``d``, ``>= 1``.
        dtype: of the table; default the backend's default dtype.

    Returns:
        ``P`` ``(T, d)`` on the current backend.
    """
    num_steps, dim = check_positional_encoding(num_steps, dim)
    np = backend.numpy
    angles = np.arange(num_steps)[:, None] / np.power(10000.0, np.arange(0, dim, 2) / dim)
    table = np.empty((num_steps, dim))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles[:, : dim // 2])
    return backend.asarray(table, dtype=backend.default_dtype if dtype is None else np.dtype(dtype))


class AddPositionsCache(NamedTuple):
    num_positions: int  # T_max, the rows of the table
    num_steps: int      # T, the rows that were used


def add_positions_forward(x, positions):
    """Add a position table to the input: the sinusoidal one or a learned one.

    .. math:: y_{nt} = x_{nt} + P_t

    With the fixed table of :func:`positional_encoding` only :math:`dx` matters. With
    learned positions (BERT, GPT), ``P`` is a parameter, initialised e.g. as
    ``rng.normal(0, 0.02, (T_max, d))``, and trained with the :math:`dP` of the backward.

    Args:
        x: ``(N, T, d)``.
        positions: ``(T_max, d)`` with ``T_max >= T``; rows ``0..T-1`` are used.

    Returns:
        ``y`` ``(N, T, d)`` and an :class:`AddPositionsCache`.
    """
    check_add_positions(x, positions)
    num_steps = x.shape[1]
    return x + positions[:num_steps], AddPositionsCache(positions.shape[0], num_steps)


def add_positions_backward(dy, cache: AddPositionsCache):
    """Backward of :func:`add_positions_forward`.

    .. math:: dx = dy, \\qquad dP_t = \\textstyle\\sum_n dy_{nt}\\ (t < T), \\qquad dP_t = 0\\ (t \\ge T)

    Every example adds the same row :math:`P_t`, so its gradient sums over the batch.

    Args:
        dy: ``(N, T, d)``.

    Returns:
        ``dx`` ``(N, T, d)`` and ``dpositions`` ``(T_max, d)``.
    """
    check_shape("dy", dy, (None, cache.num_steps, None))
    num_positions, num_steps = cache
    xp = backend.get_array_module(dy)
    dpositions = xp.zeros((num_positions, dy.shape[2]), dtype=dy.dtype)
    dpositions[:num_steps] = dy.sum(axis=0)
    return dy, dpositions


# ------------------------------------------------------------------ feed-forward
ACTIVATIONS = {"relu": (relu_forward, relu_backward), "gelu": (gelu_forward, gelu_backward)}
"""The nonlinearities of :func:`feed_forward_forward`; ``"gelu"`` is the tanh approximation."""


class FeedForwardCache(NamedTuple):
    x: Any           # (..., D)
    W1: Any          # (D, F)
    W2: Any          # (F, D_o)
    activation: str  # a key of ACTIVATIONS
    act: Any         # the activation's cache
    hidden: Any      # (..., F) phi(x W1 + b1), the input of W2


def feed_forward_forward(x, W1, b1, W2, b2, activation: str = "relu"):
    """The position-wise feed-forward network: the same two-layer MLP at every position.

    .. math::
        a = x W_1 + b_1 \\quad (\\ldots, F), \\qquad
        z = \\varphi(a), \\qquad
        y = z W_2 + b_2 \\quad (\\ldots, D_o)

    with :math:`\\varphi` the ReLU (Vaswani et al.) or the GELU in its tanh approximation
    (torch's ``GELU(approximate="tanh")``, as in GPT-2); see
    :func:`~npseq.functional.activations.gelu_forward`.

    Args:
        x: ``(..., D)``, usually ``(N, T, D)``.
        W1: ``(D, F)``; b1: ``(F,)``; W2: ``(F, D_o)``; b2: ``(D_o,)``.
        activation: ``"relu"`` or ``"gelu"``.

    Returns:
        ``y`` ``(..., D_o)`` and a :class:`FeedForwardCache`.
    """
    check_feed_forward(x, W1, b1, W2, b2, activation, ACTIVATIONS)
    forward, _ = ACTIVATIONS[activation]
    hidden, act = forward(project(x, W1) + b1)
    y = project(hidden, W2) + b2
    return y, FeedForwardCache(x, W1, W2, activation, act, hidden)


def feed_forward_backward(dy, cache: FeedForwardCache):
    """Backward of :func:`feed_forward_forward`, sums over every row ``(n, t)``:

    .. math::
        dW_2 &= \\textstyle\\sum z^\\top dy, \\quad db_2 = \\textstyle\\sum dy, \\quad dz = dy\\, W_2^\\top \\\\
        da &= dz \\odot \\varphi'(a) \\\\
        dW_1 &= \\textstyle\\sum x^\\top da, \\quad db_1 = \\textstyle\\sum da, \\quad dx = da\\, W_1^\\top

    Args:
        dy: ``(..., D_o)``.

    Returns:
        ``dx`` ``(..., D)``, ``dW1`` ``(D, F)``, ``db1`` ``(F,)``, ``dW2`` ``(F, D_o)``, ``db2`` ``(D_o,)``.
    """
    check_shape("dy", dy, tuple(cache.hidden.shape[:-1]) + (cache.W2.shape[1],))
    x, W1, W2, activation, act, hidden = cache
    _, backward = ACTIVATIONS[activation]
    dhidden, dW2, db2 = _affine_grads(hidden, dy, W2)
    dx, dW1, db1 = _affine_grads(x, backward(dhidden, act), W1)
    return dx, dW1, db1, dW2, db2


# -------------------------------------------------------- residual + layer norm
class ResidualNormCache(NamedTuple):
    order: str            # "post" or "pre"
    sublayer: Any         # the sublayer's own cache
    norm: LayerNormCache


def residual_norm_forward(x, sublayer: Callable, gamma, beta, order: str = "post", eps: float = 1e-5):
    """A residual connection around a sublayer, with layer normalisation after or before it.

    .. math::
        \\text{post-norm (Vaswani et al.):} \\quad & y = \\operatorname{LN}\\bigl(x + F(x)\\bigr) \\\\
        \\text{pre-norm (GPT-2, most models since):} \\quad & y = x + F\\bigl(\\operatorname{LN}(x)\\bigr)

    Pre-norm leaves an identity path from the output back to the input, so gradients
    reach early layers undiminished, and it trains without the learning-rate warm-up that
    post-norm needs (Xiong et al., 2020); the price is a stream whose scale grows with
    depth, which a final layer norm reins in.

    Args:
        x: ``(..., D)``.
        sublayer: ``F``, a function ``x -> (F(x), cache)`` whose output has ``x``'s shape, e.g.
            ``lambda z: feed_forward_forward(z, W1, b1, W2, b2)``.
        gamma, beta: ``(D,)``, the layer norm's parameters (:func:`layer_norm_forward`).
        order: ``"post"`` or ``"pre"``.
        eps: the layer norm's :math:`\\epsilon`.

    Returns:
        ``y`` shaped like ``x`` and a :class:`ResidualNormCache`.
    """
    check_residual_norm(x, order)
    if order == "post":
        f, sub_cache = sublayer(x)
        check_sublayer_output(f, x)
        y, norm_cache = layer_norm_forward(x + f, gamma, beta, eps)
    else:
        z, norm_cache = layer_norm_forward(x, gamma, beta, eps)
        f, sub_cache = sublayer(z)
        check_sublayer_output(f, x)
        y = x + f
    return y, ResidualNormCache(order, sub_cache, norm_cache)


def residual_norm_backward(dy, cache: ResidualNormCache, sublayer_backward: Callable):
    """Backward of :func:`residual_norm_forward`.

    The sum sends :math:`dy` down both paths, the identity and the sublayer, and the
    input gradient adds what comes back from each:

    .. math::
        \\text{post:} \\quad & ds = \\operatorname{LN}^\\top(dy), \\quad dx = ds + F^\\top(ds) \\\\
        \\text{pre:} \\quad & dx = dy + \\operatorname{LN}^\\top\\bigl(F^\\top(dy)\\bigr)

    where :math:`\\operatorname{LN}^\\top` is :func:`layer_norm_backward` and :math:`F^\\top`
    the sublayer's backward.

    Args:
        dy: shaped like ``x``.
        sublayer_backward: ``(dF, sublayer cache) -> (dinput, sublayer_grads)``, where
            ``sublayer_grads`` is anything (the sublayer's parameter gradients), returned as is.

    Returns:
        ``dx``, ``dgamma`` ``(D,)``, ``dbeta`` ``(D,)``, ``sublayer_grads``.
    """
    check_shape("dy", dy, cache.norm.x_hat.shape)
    order, sub_cache, norm_cache = cache
    if order == "post":
        dsum, dgamma, dbeta = layer_norm_backward(dy, norm_cache)
        dsub, sub_grads = sublayer_backward(dsum, sub_cache)
        dx = dsum + dsub
    else:
        dz, sub_grads = sublayer_backward(dy, sub_cache)
        dnorm, dgamma, dbeta = layer_norm_backward(dz, norm_cache)
        dx = dy + dnorm
    return dx, dgamma, dbeta, sub_grads
