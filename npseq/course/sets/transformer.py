"""The transformer set: every backward of a Transformer block by hand, easiest first.

Scaled dot-product attention, layer normalisation, the position-wise feed-forward block, multi-head
attention (split, attend with the learner's own scaled dot-product attention, merge, project) and one
post-norm residual sub-layer around the feed-forward block (the learner's feed-forward and layer-norm
backwards composed; its reference is the course's own, :mod:`npseq.course.references.transformer`). Scaled
dot-product attention builds on the classic set's masked softmax.
"""
from ... import backend
from ... import functional as F
from ..cases import transformer as transformer_cases
from ..exercise import declare, exercise_table
from ..references import transformer as R
from ..terms import layer_norm_terms, residual_norm_terms
from .classic import masked_softmax_backward

np = backend.numpy


@declare(title="scaled dot-product attention",
         summary="softmax(Q K^T / sqrt(d)) V under padding and causal masks, with or without a head axis",
         practises="the attention that every Transformer head computes; batched matrix products, masks, the scale",
         grads=("dqueries", "dkeys", "dvalues"),
         engine=F.scaled_dot_product_attention_backward,
         cases=transformer_cases.scaled_dot_product_attention_cases(),
         forwards=("scaled_dot_product_attention_forward", "attention_mask"))
def scaled_dot_product_attention_backward(dout, cache, dweights=None):
    """Backward of scaled dot-product attention (Vaswani et al.).

    Forward (``scaled_dot_product_attention_forward(queries, keys, values, valid_lens, causal)``), with Q, K, V
    the queries, keys and values and d their feature size; any leading axes ((N,) or (N, h)) are batch axes:
        S = Q @ K^T / sqrt(d)                                      (..., T_q, T_k)
        A = softmax over the last axis of S, masked keys exactly 0 (those past a row's valid length, and
            with causal=True those after the query's position; a row with no key left is all zeros)
        O = A @ V                                                  (..., T_q, d_v)

    Args:
        dout: (..., T_q, d_v) gradient with respect to O.
        cache: npseq's ``ScaledDotProductAttentionCache``:
            cache.queries  (..., T_q, d)    Q
            cache.keys     (..., T_k, d)    K
            cache.values   (..., T_k, d_v)  V
            cache.scale    1 / sqrt(d)
            cache.softmax  the ``MaskedSoftmaxCache`` of A: .weights (..., T_q, T_k) and .mask
            cache.pooled   (..., T_q, T_k)  the weights that multiplied V (A itself: the exercise has no dropout)
            (cache.dropout: unused here, for the same reason.)
        dweights: (..., T_q, T_k) gradient with respect to the returned weights A, or None.

    Returns:
        dqueries (..., T_q, d), dkeys (..., T_k, d), dvalues (..., T_k, d_v).

    Structure:
        Undo the forward from O back. O pools V with the weights A (cache.pooled), so dO goes to V and to A,
        to which dweights adds when given. Then through your masked_softmax_backward (the classic set, on
        cache.softmax) to the scores, undoing the scale (cache.scale) on the way, and through the product of Q
        and K to each of them; a query receives from every key it saw, a key from every query that saw it. Any
        leading axes, heads included, are batch axes, never summed over; masked entries receive no gradient.
    Hints:
        X^T here swaps the last two axes only: X.swapaxes(-1, -2); @ multiplies the last two axes and
        broadcasts over the others.
            dV = A^T @ dO                 dA = dO @ V^T  (+ dweights if given)
            dS = your masked_softmax_backward(dA, cache.softmax) * scale     (masked entries get 0)
            dQ = dS @ K                   dK = dS^T @ Q
        Your masked softmax backward must sum over axis=-1: with a head axis the weights are 4-d.
    """
    dA = dout @ cache.values.swapaxes(-1, -2)
    if dweights is not None:
        dA = dA + dweights
    dS = masked_softmax_backward(dA, cache.softmax) * cache.scale
    return dS @ cache.keys, dS.swapaxes(-1, -2) @ cache.queries, cache.pooled.swapaxes(-1, -2) @ dout


@declare(title="layer normalisation",
         summary="layer normalisation, every input reaching every output of its row",
         practises="a Jacobian that couples a whole row, reduced to means; parameters shared over every row",
         grads=("dx", "dgamma", "dbeta"),
         engine=F.layer_norm_backward,
         terms=layer_norm_terms,
         cases=transformer_cases.layer_norm_cases(),
         forwards=("layer_norm_forward",))
def layer_norm_backward(dy, cache):
    """Backward of layer normalisation over the last axis.

    Forward (``layer_norm_forward(x, gamma, beta, eps)``), for each row x of D features:
        mu    = mean(x)                        sigma^2 = mean((x - mu)^2)    (biased, as torch)
        s     = 1 / sqrt(sigma^2 + eps)        one number per row
        x_hat = (x - mu) * s                   (..., D)
        y     = gamma * x_hat + beta           (..., D)

    Args:
        dy: (..., D) gradient with respect to y; (N, T, D) or (N, D) in the graded cases.
        cache: npseq's ``LayerNormCache``:
            cache.x_hat      (..., D)  the normalised input
            cache.inv_sigma  (..., 1)  s, kept with a last axis of 1 so that it broadcasts
            cache.gamma      (D,)

    Returns:
        dx (..., D), dgamma (D,), dbeta (D,).

    Structure:
        y is a gain and shift of x_hat, with gamma and beta shared by every row, so their gradients sum over
        all leading axes, and x_hat receives its gradient through gamma. Then go through the normalisation to
        x, where mu and s depend on the whole row, so every feature of x reaches every feature of x_hat in its
        row, and each input's gradient is a sum over its row. That sum reduces to row means, so no D by D
        matrix is needed; the cached x_hat and inv_sigma give all it needs, and rows stay independent of one
        another.
    Hints:
        gamma and beta are shared by every row, so their gradients sum over all leading axes:
            dgamma = sum over rows of dy * x_hat        dbeta = sum over rows of dy
        (flatten first: dy.reshape(-1, D)). For x, let g = dy * gamma (the gradient of x_hat).
        mu and s depend on the whole row, so each x_j reaches every x_hat_i. Working out
        d x_hat_i / d x_j = (s / D) (D [i = j] - 1 - x_hat_i x_hat_j) and summing over i gives
            dx = s * (g - mean(g) - x_hat * mean(g * x_hat))     (means over the last axis, keepdims=True)
        No D x D matrix is needed.
    """
    x_hat, s, gamma = cache.x_hat, cache.inv_sigma, cache.gamma
    rows, hats = dy.reshape(-1, dy.shape[-1]), x_hat.reshape(-1, x_hat.shape[-1])
    g = dy * gamma
    dx = s * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return dx, (rows * hats).sum(axis=0), rows.sum(axis=0)


@declare(title="the feed-forward block",
         summary="the position-wise two-layer MLP (ReLU or GELU inside), the same weights at every position",
         practises="weights shared by every position: gradients summed over N and T; ReLU's and GELU's derivatives",
         grads=("dx", "dW1", "db1", "dW2", "db2"),
         engine=F.feed_forward_backward,
         cases=transformer_cases.feed_forward_cases(),
         forwards=("feed_forward_forward",))
def feed_forward_backward(dy, cache):
    """Backward of the position-wise feed-forward block.

    Forward (``feed_forward_forward(x, W1, b1, W2, b2, activation)``), the same at every position (n, t):
        a = x @ W1 + b1          (..., F)
        z = phi(a)               (..., F)
        y = z @ W2 + b2          (..., D_o)
    with phi the ReLU (activation="relu", Vaswani et al.) or the GELU in its tanh form ("gelu", GPT-2):
        relu(a) = max(a, 0)
        gelu(a) = a / 2 * (1 + t),   t = tanh(u),   u = sqrt(2 / pi) * (a + 0.044715 a^3)

    Args:
        dy: (..., D_o) gradient with respect to y; (N, T, D_o) in the graded cases.
        cache: npseq's ``FeedForwardCache``:
            cache.x           (..., D)
            cache.W1          (D, F)
            cache.W2          (F, D_o)
            cache.hidden      (..., F)   z = phi(a)
            cache.activation  "relu" or "gelu"
            cache.act         the activation's own cache; for "gelu" it holds cache.act.x (..., F), that is a,
                              and cache.act.tanh (..., F), that is t (for "relu" it is not needed)

    Returns:
        dx (..., D), dW1 (D, F), db1 (F,), dW2 (F, D_o), db2 (D_o,).

    Structure:
        Walk the three lines back: through the output affine map to W2, b2 and the hidden z, then through the
        activation to its input a, then through the first affine map to W1, b1 and x. Every position uses the
        same weights, so their gradients sum over the batch and the positions. The activation's derivative
        needs no recomputation of the forward; for the ReLU it can be read off the cached hidden z, and for
        the GELU off the cached a and t in cache.act.
    Hints:
        Flatten the positions into rows first (x.reshape(-1, D), ...): every row uses the same weights,
        so their gradients sum over all rows.
            dW2 = z^T @ dy      db2 = sum of dy over rows      dz = dy @ W2^T
            da  = dz * phi'(a)
            dW1 = x^T @ da      db1 = sum of da over rows      dx = da @ W1^T  (back to x's shape)
        relu'(a) = [a > 0], which is [z > 0]: no need for a.
        gelu'(a) = (1 + t) / 2 + a / 2 * (1 - t^2) * sqrt(2 / pi) * (1 + 3 * 0.044715 a^2)
                   (the product rule on a * (1 + t) / 2, with tanh' = 1 - tanh^2).
        Do the ReLU first: the grader scores each case on its own.
    """
    rows_x, rows_z = cache.x.reshape(-1, cache.x.shape[-1]), cache.hidden.reshape(-1, cache.hidden.shape[-1])
    rows_dy = dy.reshape(-1, dy.shape[-1])
    if cache.activation == "gelu":
        a, t = cache.act.x.reshape(rows_z.shape), cache.act.tanh.reshape(rows_z.shape)
        dphi = (1 + t) / 2 + a / 2 * (1 - t ** 2) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * a ** 2)
    else:
        dphi = rows_z > 0
    da = (rows_dy @ cache.W2.T) * dphi
    dx = (da @ cache.W1.T).reshape(cache.x.shape)
    return dx, rows_x.T @ da, da.sum(axis=0), rows_z.T @ rows_dy, rows_dy.sum(axis=0)


# helpers of the multi-head solution
def _split(x, heads):
    n, t, features = x.shape
    return x.reshape(n, t, heads, features // heads).transpose(0, 2, 1, 3)


def _merge(x):
    n, heads, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(n, t, heads * d)


def _affine(x, dy, W):
    """dx, dW, db of y = x @ W + b on (N, T, *) arrays."""
    rows_x, rows_dy = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return dy @ W.T, rows_x.T @ rows_dy, rows_dy.sum(axis=0)


@declare(title="multi-head attention",
         summary="the Transformer's attention: heads, masks, four projections",
         practises=("split/merge heads, four projections around your scaled dot-product attention, masks on 4-d "
                    "weights; `b_k`'s gradient, 0 in exact arithmetic, is not graded"),
         grads=("dqueries", "dkeys", "dvalues") + tuple(f"d{name}" for name in transformer_cases.MULTIHEAD_GRADED),
         engine=F.multihead_attention_backward,
         cases=transformer_cases.multihead_attention_cases(),
         headed=(("dW_q", -1), ("db_q", -1), ("dW_k", -1), ("dW_v", -1), ("db_v", -1), ("dW_o", 0)),
         forwards=("multihead_attention_forward", "split_heads", "merge_heads"))
def multihead_attention_backward(dout, cache, dweights=None):
    """Backward of multi-head attention (Vaswani et al.): h scaled dot-product attentions side by side.

    Forward (``multihead_attention_forward(queries, keys, values, params, num_heads, valid_lens, causal)``),
    with D the projected size and d = D / h each head's share:
        Qp = queries @ W_q + b_q    Kp = keys @ W_k + b_k    Vp = values @ W_v + b_v       (N, T, D)
        Qh, Kh, Vh = split_heads(Qp), split_heads(Kp), split_heads(Vp)                    (N, h, T, d)
        S  = Qh @ Kh^T / sqrt(d)                                                          (N, h, T_q, T_k)
        A  = softmax over the last axis of S, masked keys (padding, the future if causal) exactly 0
        O  = A @ Vh                                                                       (N, h, T_q, d)
        C  = merge_heads(O)                                                               (N, T_q, D)
        out = C @ W_o + b_o                                                               (N, T_q, D_o)
    split_heads turns (N, T, D) into (N, h, T, d) (head i takes columns i*d .. (i+1)*d - 1) and
    merge_heads undoes it: x.reshape(N, T, h, d).transpose(0, 2, 1, 3) and its inverse.

    Args:
        dout: (N, T_q, D_o) gradient with respect to out.
        cache: npseq's ``MultiheadAttentionCache``:
            cache.queries            (N, T_q, D_q)
            cache.keys               (N, T_k, D_k)
            cache.values             (N, T_k, D_v)
            cache.params             the dict of the forward: W_q (D_q, D), W_k (D_k, D), W_v (D_v, D),
                                     b_q, b_k, b_v (D,), W_o (D, D_o), b_o (D_o,)
            cache.merged             (N, T_q, D)  C
            cache.attention          the heads' ``ScaledDotProductAttentionCache``, the cache your
                                     scaled_dot_product_attention_backward takes:
            cache.attention.queries  (N, h, T_q, d)  Qh
            cache.attention.keys     (N, h, T_k, d)  Kh
            cache.attention.values   (N, h, T_k, d)  Vh
            cache.attention.scale    1 / sqrt(d)
            cache.attention.softmax  the ``MaskedSoftmaxCache`` of A: .weights (N, h, T_q, T_k) and .mask
            cache.attention.pooled   (N, h, T_q, T_k)  the weights that multiplied Vh
            (cache.attention.dropout: unused here, the exercise has no dropout, so pooled is A.)
        dweights: (N, h, T_q, T_k) gradient with respect to the returned weights A, or None.

    Returns:
        dqueries (N, T_q, D_q), dkeys (N, T_k, D_k), dvalues (N, T_k, D_v), and a dict of the
        parameters' gradients with the keys of cache.params ("dW_q" is grads["W_q"], and so on).

    Structure:
        Walk the forward back, the output projection first (W_o, b_o and C's gradient), then the merge, whose
        backward is a split into heads. Your scaled_dot_product_attention_backward
        then handles every head at once, on cache.attention, the head axis being one more batch axis to it.
        Merge each of its three gradients back (a split's backward is a merge) and go through the three input
        projections. Each weight and bias is shared by every example and position, so its gradient sums over
        both; b_k's gradient comes out as zero up to rounding, but return it all the same.
    Hints:
        Walk the forward back. For every affine map y = x @ W + b on (N, T, *) arrays, flatten
        the rows: dW = x.reshape(-1, x.shape[-1]).T @ dy.reshape(-1, dy.shape[-1]), db = dy
        summed over N and T, dx = dy @ W^T.
            dW_o, db_o, dC from out = C @ W_o + b_o
            dO  = split_heads(dC)                           (N, h, T_q, d): merging's backward is splitting
            dQh, dKh, dVh = your scaled_dot_product_attention_backward(dO, cache.attention, dweights)
                                                            (the heads are a batch axis to it)
            dQp, dKp, dVp = merge_heads(dQh), merge_heads(dKh), merge_heads(dVh)
            then the three input projections as above.
        b_k's gradient comes out as 0 up to rounding (why? add a constant to every score of a
        query and see what the softmax does); it is not graded, but return it.
    """
    p, att = cache.params, cache.attention
    grads = {}
    dC, grads["W_o"], grads["b_o"] = _affine(cache.merged, dout, p["W_o"])
    heads = att.queries.shape[1]
    dQh, dKh, dVh = scaled_dot_product_attention_backward(_split(dC, heads), att, dweights)
    dq, grads["W_q"], grads["b_q"] = _affine(cache.queries, _merge(dQh), p["W_q"])
    dk, grads["W_k"], grads["b_k"] = _affine(cache.keys, _merge(dKh), p["W_k"])
    dv, grads["W_v"], grads["b_v"] = _affine(cache.values, _merge(dVh), p["W_v"])
    return dq, dk, dv, grads


@declare(title="a residual-norm sub-layer",
         summary="y = LayerNorm(x + FFN(x)): the feed-forward block inside a post-norm residual connection",
         practises="two paths into one sum, gradients that add; your feed-forward and layer-norm backwards composed",
         grads=("dx", "dW1", "db1", "dW2", "db2", "dgamma", "dbeta"),
         engine=R.feed_forward_sublayer_backward,
         terms=residual_norm_terms,
         cases=transformer_cases.residual_norm_cases(),
         forwards=("residual_norm_forward", "feed_forward_forward", "layer_norm_forward"))
def residual_norm_backward(dy, cache):
    """Backward of one post-norm residual sub-layer around the feed-forward block (Vaswani et al.).

    Forward (``residual_norm_forward(x, sublayer, gamma, beta, order="post", eps)`` with the sub-layer
    ``lambda z: feed_forward_forward(z, W1, b1, W2, b2)``, ReLU inside):
        f = FFN(x)               feed_forward_forward(x, W1, b1, W2, b2)            (N, T, D)
        s = x + f                the residual connection: x reaches s twice, directly and through the FFN
        y = LayerNorm(s)         layer_norm_forward(s, gamma, beta, eps)             (N, T, D)

    Args:
        dy: (N, T, D) gradient with respect to y.
        cache: npseq's ``ResidualNormCache``:
            cache.sublayer  the ``FeedForwardCache`` of f (as in your feed_forward_backward)
            cache.norm      the ``LayerNormCache`` of y (as in your layer_norm_backward)
            cache.order     "post" (npseq's pre-norm order, y = x + FFN(LayerNorm(x)), is not graded here)

    Returns:
        dx (N, T, D), dW1 (D, F), db1 (F,), dW2 (F, D), db2 (D,), dgamma (D,), dbeta (D,).

    Structure:
        Undo the last line first: your layer_norm_backward on cache.norm gives gamma's and beta's gradients
        and that of the sum s. x reached s twice, directly and through the FFN, so send s's gradient down both
        paths, unchanged along the direct one and through your feed_forward_backward on cache.sublayer along
        the other (which also yields the FFN's weight and bias gradients). x's gradient is the sum of what the
        two bring back.
    Hints:
        Undo the last line first, then send ds down both paths of the sum and add what comes back:
            ds, dgamma, dbeta       = your layer_norm_backward(dy, cache.norm)
            df, dW1, db1, dW2, db2  = your feed_forward_backward(ds, cache.sublayer)
            dx = ds + df
    """
    ds, dgamma, dbeta = layer_norm_backward(dy, cache.norm)
    df, dW1, db1, dW2, db2 = feed_forward_backward(ds, cache.sublayer)
    return ds + df, dW1, db1, dW2, db2, dgamma, dbeta


EXERCISES = exercise_table(globals())
"""The set's graded functions, in the order of the sheet."""
