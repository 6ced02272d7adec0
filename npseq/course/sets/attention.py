"""The attention set: Luong's scores, local-p attention, masked attention.

Four exercises, each a declared, solved function (:func:`~npseq.course.exercise.declare`): Luong's
"general" and "concat" scores (:mod:`npseq.functional.local_attention`'s pairs), local-p attention with
its predicted position and Luong's dot attention under a padding and a causal mask (both the course's own
compositions, :mod:`npseq.course.references.attention`). Local-p attention builds on the general score
and on the classic set's masked softmax, masked dot attention on the masked softmax (the learner's own).
"""
from ... import backend
from ... import functional as F
from ..cases import attention as attention_cases
from ..exercise import declare, exercise_table
from ..references import attention as R
from ..terms import local_p_attention_terms
from .classic import masked_softmax_backward

np = backend.numpy

REFERENCES = "npseq.course.references.attention"
"""Where the hand-out imports the composed attentions' forwards from."""


@declare(title="Luong's general score",
         summary="the bilinear score s = q W k^T",
         practises="a bilinear form: one weight matrix between two batched inputs, its gradient summed over both",
         grads=("dqueries", "dkeys", "dW"),
         engine=F.general_scores_backward,
         cases=attention_cases.general_scores_cases(),
         forwards=("general_scores_forward",))
def general_scores_backward(dscores, cache):
    """Backward of Luong's "general" score between every query and every key of an example.

    Forward (``general_scores_forward(queries, keys, W)``; q = queries, k = keys):
        s[n, i, j] = q[n, i] @ W @ k[n, j]       (N, Q, K)   one score per (query, key) pair
    that is, per example, s = (q @ W) @ k^T.

    Args:
        dscores: (N, Q, K) gradient with respect to the scores s.
        cache: npseq's ``ScoresCache``:
            cache.queries  (N, Q, Dq)  q
            cache.keys     (N, K, Dk)  k
            cache.W        (Dq, Dk)

    Returns:
        dqueries (N, Q, Dq), dkeys (N, K, Dk), dW (Dq, Dk).

    Structure:
        Each score pairs one query with one key through W. Treat the queries projected by W as an
        intermediate, so that the score is a plain dot score between it and k. ds goes back to the keys and to
        the projected queries, then through W to the queries and to W, one matrix product per example. Each
        key receives from every query of its example and each query from every key. W is shared by every
        example and every query, so its gradient sums over both.
    Hints:
        Call p = q @ W (N, Q, Dk) the projected queries; then s = p @ k^T is a plain dot score.
        @ on 3-d arrays multiplies one matrix per example; swap the last two axes with .swapaxes(1, 2).
            dp       = ds @ k                       (N, Q, Dk)
            dkeys    = ds^T @ p                     (N, K, Dk)
            dqueries = dp @ W^T                     (N, Q, Dq)
            dW       = sum_{n,i} q[n, i]^T dp[n, i]  (Dq, Dk)
        W is shared by every example and every query, so its gradient sums over both: flatten,
        q.reshape(-1, Dq).T @ dp.reshape(-1, Dk).
    """
    q, k, W = cache.queries, cache.keys, cache.W
    dp = dscores @ k
    dW = q.reshape(-1, W.shape[0]).T @ dp.reshape(-1, W.shape[1])
    return dp @ W.T, dscores.swapaxes(1, 2) @ (q @ W), dW


@declare(title="Luong's concat score",
         summary="the concat (additive) score s = wv . tanh(q Wq + k Wk)",
         practises="a 4-d (N, Q, K, H) intermediate, broadcasting undone by sums over the axis it filled",
         grads=("dqueries", "dkeys", "dWq", "dWk", "dwv"),
         engine=F.concat_scores_backward,
         cases=attention_cases.concat_scores_cases(),
         forwards=("concat_scores_forward",))
def concat_scores_backward(dscores, cache):
    """Backward of Luong's "concat" score (Bahdanau's additive score), without the softmax after it.

    Forward (``concat_scores_forward(queries, keys, Wq, Wk, wv)``; q = queries, k = keys). Luong writes
    v_a^T tanh(W_a [h_t; hbar_s]); W_a split into a block for the query and one for the key is
    [Wq; Wk], so that (H is the score's hidden size):
        u[n, i, j, :] = q[n, i] @ Wq + k[n, j] @ Wk    (N, Q, K, H)  (q @ Wq broadcast over keys, k @ Wk over queries)
        f             = tanh(u)                        (N, Q, K, H)  the "features"
        s[n, i, j]    = f[n, i, j, :] . wv             (N, Q, K)

    Args:
        dscores: (N, Q, K) gradient with respect to the scores s.
        cache: npseq's ``ConcatScoresCache``:
            cache.queries   (N, Q, Dq)
            cache.keys      (N, K, Dk)
            cache.Wq        (Dq, H)
            cache.Wk        (Dk, H)
            cache.wv        (H,)
            cache.features  (N, Q, K, H)  f = tanh(u)

    Returns:
        dqueries (N, Q, Dq), dkeys (N, K, Dk), dWq (Dq, H), dWk (Dk, H), dwv (H,).

    Structure:
        The score is the dot product of the features f with wv, so ds goes to wv (summed over every example,
        query and key, since wv is shared by all) and to f. Then through the tanh to u, its derivative read
        off the cached f. u adds a query term and a key term, each broadcast (the query's over the keys, the
        key's over the queries), so the query side's gradient sums over the keys and the key side's over the
        queries. Each side then goes through its weight, Wq or Wk, to the queries or the keys; Wq and Wk sum
        over every example and every query or key.
    Hints:
        tanh'(u) = 1 - f^2, and f is in the cache.
            dwv  = sum_{n,i,j} ds[n, i, j] * f[n, i, j, :]          (H,)   (np.einsum("nij,nijh->h", ...))
            du   = ds[..., None] * wv * (1 - f^2)                   (N, Q, K, H)
        q @ Wq was broadcast over the keys (axis 2) and k @ Wk over the queries (axis 1); undo each
        broadcast by summing over the axis it filled:
            dqp  = du.sum(axis=2)   (N, Q, H)          dkp = du.sum(axis=1)   (N, K, H)
            dqueries = dqp @ Wq^T      dWq = q.reshape(-1, Dq).T @ dqp.reshape(-1, H)
            dkeys    = dkp @ Wk^T      dWk = k.reshape(-1, Dk).T @ dkp.reshape(-1, H)
    """
    q, k, f = cache.queries, cache.keys, cache.features
    hidden = f.shape[-1]
    dwv = np.einsum("nij,nijh->h", dscores, f)
    du = dscores[..., None] * cache.wv * (1 - f ** 2)
    dqp, dkp = du.sum(axis=2), du.sum(axis=1)
    dWq = q.reshape(-1, q.shape[-1]).T @ dqp.reshape(-1, hidden)
    dWk = k.reshape(-1, k.shape[-1]).T @ dkp.reshape(-1, hidden)
    return dqp @ cache.Wq.T, dkp @ cache.Wk.T, dWq, dWk, dwv


@declare(title="local-p attention",
         summary="Luong's local-p attention: a predicted position, a window, a Gaussian",
         practises=("two paths into the query (the scores and the predicted position), a windowed softmax, "
                    "a Gaussian whose centre is learned; the window's jumps carry no gradient"),
         grads=("dqueries", "dkeys", "dvalues", "dW", "dWp", "dvp"),
         engine=R.local_p_attention_backward,
         terms=local_p_attention_terms,
         cases=attention_cases.local_p_attention_cases(),
         forwards=("local_p_attention_forward",),
         forwards_module=REFERENCES)
def local_p_attention_backward(dcontext, cache):
    """Backward of Luong's local-p attention with the general score (Luong, Pham and Manning 2015, 3.2).

    Forward (``local_p_attention_forward(queries, keys, values, W, Wp, vp, source_lens, half_width)``;
    h = queries, hbar = keys, v = values, S = source_lens[n] the example's own length, D = half_width,
    H the position predictor's hidden size):
        s     = (h @ W) @ hbar^T                       (N, Q, K)   the general score (general_scores_forward)
        u     = tanh(h @ Wp)                           (N, Q, H)
        r     = sigmoid(u @ vp)                        (N, Q)
        p     = S * r                                  (N, Q)      the predicted position, in [0, S]
        m[n, i, j] = (|j - p[n, i]| <= D) and (j < S)              the window: up to 2D + 1 keys around p
        alpha = softmax of s over the keys of the window, exactly 0 outside it
        gamma[n, i, j] = exp(-(j - p[n, i])^2 / (2 sigma^2)),  sigma = D / 2
        a     = alpha * gamma                          (N, Q, K)   the weights (they sum to less than 1)
        c     = a @ v                                  (N, Q, Dv)  the context
    A sentence of length 0 has p = 0 and an empty window: zero weights, zero context.

    Args:
        dcontext: (N, Q, Dv) gradient with respect to the context c.
        cache: a ``LocalPAttentionCache`` of three caches, one per part:
            cache.scores                the ``ScoresCache`` of s: .queries h, .keys hbar, .W
            cache.position.queries      (N, Q, Dq)  h
            cache.position.Wp           (Dq, H)
            cache.position.vp           (H,)
            cache.position.features     (N, Q, H)   u
            cache.position.ratio        (N, Q)      r
            cache.position.source_lens  (N,)        S, as floats
            cache.pooling.values        (N, K, Dv)  v
            cache.pooling.softmax       the ``MaskedSoftmaxCache`` of alpha: .weights alpha (N, Q, K),
                                        .mask the window m
            cache.pooling.centers       (N, Q)      p
            cache.pooling.gaussian      (N, Q, K)   gamma
            cache.pooling.sigma         float       D / 2
            cache.pooling.weights       (N, Q, K)   a

    Returns:
        dqueries (N, Q, Dq), dkeys (N, K, Dk), dvalues (N, K, Dv), dW (Dq, Dk), dWp (Dq, H), dvp (H,).

    Structure:
        The context pools v with the weights a, so dc goes to v and to a; a is the product of alpha and gamma,
        so its gradient splits in two. alpha's share goes through your masked_softmax_backward (the classic
        set, on the softmax cache) to the scores, then through your general_scores_backward to h, hbar and W.
        gamma's share reaches the centre p, summed over the keys (treat the window as fixed, its jumps have no
        derivative), then goes back through the scaling by S, the sigmoid, vp, the tanh and Wp (the cached r
        and u give the derivatives), vp and Wp summing over every example and query. h feeds both the scores
        and the position, so its gradient is the sum of the two paths.
    Hints:
        The window's edges jump as p moves (a key is in or out): they have no derivative, so treat
        the window as fixed. p reaches the context through gamma alone, with
        d gamma / d p = gamma * (j - p) / sigma^2.
            dvalues  = a^T @ dc                                   (N, K, Dv), per example
            da       = dc @ v^T                                   (N, Q, K)
            dp       = sum_j da * a * (j - p) / sigma^2           (N, Q)   (j - p: np.arange(K) - p[:, :, None])
            ds       = masked_softmax_backward(da * gamma, cache.pooling.softmax)     (your masked softmax)
            dq_s, dkeys, dW = general_scores_backward(ds, cache.scores)              (your general score)
        Then the position, back through p = S * sigmoid(tanh(h @ Wp) @ vp):
            dz       = dp * S * r * (1 - r)                       (N, Q)   (S[:, None] broadcasts over queries)
            dvp      = sum_{n,i} dz[n, i] * u[n, i]               (H,)
            dg       = dz[..., None] * vp * (1 - u^2)             (N, Q, H)
            dWp      = h.reshape(-1, Dq).T @ dg.reshape(-1, H)
        h feeds both the scores and the position, so its gradient is the sum of the two paths:
            dqueries = dq_s + dg @ Wp^T
    """
    pooling, position = cache.pooling, cache.position
    a, v, p = pooling.weights, pooling.values, pooling.centers
    dvalues = a.swapaxes(1, 2) @ dcontext
    da = dcontext @ v.swapaxes(1, 2)
    dp = (da * a * (np.arange(a.shape[2]) - p[:, :, None])).sum(axis=2) / pooling.sigma ** 2
    ds = masked_softmax_backward(da * pooling.gaussian, pooling.softmax)
    dq_s, dkeys, dW = general_scores_backward(ds, cache.scores)
    r, u, h = position.ratio, position.features, position.queries
    dz = dp * position.source_lens[:, None] * r * (1 - r)
    dvp = np.einsum("ni,nih->h", dz, u)
    dg = dz[..., None] * position.vp * (1 - u ** 2)
    dWp = h.reshape(-1, h.shape[-1]).T @ dg.reshape(-1, u.shape[-1])
    return dq_s + dg @ position.Wp.T, dkeys, dvalues, dW, dWp, dvp


@declare(title="masked dot attention",
         summary="Luong's dot attention under a padding and a causal mask",
         practises="two masks combined into one, exact zeros where masked, a query that sees no key",
         grads=("dqueries", "dkeys", "dvalues"),
         engine=R.masked_dot_attention_backward,
         cases=attention_cases.masked_dot_attention_cases(),
         forwards=("masked_dot_attention_forward",),
         forwards_module=REFERENCES)
def masked_dot_attention_backward(dcontext, cache, dweights=None):
    """Backward of Luong's (unscaled) dot attention under a key-padding mask and a causal mask together.

    Forward (``masked_dot_attention_forward(queries, keys, values, valid_lens, causal)``; q = queries,
    k = keys, v = values, l = valid_lens[n] or valid_lens[n, i]):
        S = q @ k^T                                    (N, Q, K)   not divided by sqrt(D): Luong's dot score
        mask[n, i, j] = (j < l) and (j <= i if causal)             (as npseq.functional.attention_mask builds it)
        A = softmax of S over the keys where mask is True, exactly 0 where it is False
        C = A @ v                                      (N, Q, Dv)  the context
    Query i sees keys 0 .. i (positions counted from the start of both sequences), and none at or
    past its valid length; a query that sees no key (l = 0) gets all-zero weights and a zero context.

    Args:
        dcontext: (N, Q, Dv) gradient with respect to the context C.
        cache: a ``MaskedDotAttentionCache``:
            cache.queries  (N, Q, D)
            cache.keys     (N, K, D)
            cache.values   (N, K, Dv)
            cache.mask     (N, Q, K) bool, True where a key counts ((1, Q, K) when valid_lens is None)
            cache.softmax  the ``MaskedSoftmaxCache`` of A: .weights A (N, Q, K) and .mask (the same mask)
        dweights: (N, Q, K) gradient with respect to the returned weights A, or None
            (then only the context carries gradient).

    Returns:
        dqueries (N, Q, D), dkeys (N, K, D), dvalues (N, K, Dv).

    Structure:
        Undo the forward from the context back. C pools v with the weights A, so dC goes to v and to A, to
        which dweights adds when given. Then through your masked_softmax_backward (the classic set, on
        cache.softmax) to the scores S, and through the dot product to q and k, one product per example; each
        query receives from every key it saw, each key from every query that saw it. The masks need no work of
        their own, since A is exactly 0 where masked and no gradient flows there, and there is no scale to
        undo.
    Hints:
        Undo the forward from the bottom up (swap the last two axes with .swapaxes(1, 2)):
            dvalues  = A^T @ dC                                   (N, K, Dv)
            dA       = dC @ v^T  (+ dweights if given)            (N, Q, K)
            dS       = masked_softmax_backward(dA, cache.softmax)   (your masked softmax)
            dqueries = dS @ k          dkeys = dS^T @ q
        The masks need nothing more: A is exactly 0 at every masked key, so the softmax's
        backward gives 0 there, and a query that sees no key gets zeros everywhere.
        There is no 1 / sqrt(D) to undo: these scores are not scaled.
    """
    A = cache.softmax.weights
    dvalues = A.swapaxes(1, 2) @ dcontext
    dA = dcontext @ cache.values.swapaxes(1, 2)
    if dweights is not None:
        dA = dA + dweights
    dS = masked_softmax_backward(dA, cache.softmax)
    return dS @ cache.keys, dS.swapaxes(1, 2) @ cache.queries, dvalues


EXERCISES = exercise_table(globals())
"""The set's graded functions, in the order of the sheet."""
