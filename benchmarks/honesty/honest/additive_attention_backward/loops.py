# a loop over the batch and the queries: 2-d matrices only, accumulating the shared weights' gradients
import numpy as np


def masked_softmax_backward(dweights, cache):
    w = cache.weights
    out = np.zeros_like(dweights)
    N, Q, _ = w.shape
    for n in range(N):
        for q in range(Q):
            p = w[n, q]
            g = dweights[n, q]
            out[n, q] = p * g - p * np.dot(p, g)   # masked keys have p = 0 -> 0
    return out


def additive_attention_backward(dcontext, cache, dweights=None):
    queries = cache.scores.queries
    keys = cache.scores.keys
    Wq, Wk, wv = cache.scores.Wq, cache.scores.Wk, cache.scores.wv
    F = cache.scores.features
    values = cache.pooling.values
    W = cache.pooling.pooled
    N, Q, _ = queries.shape

    dqueries = np.zeros_like(queries)
    dkeys = np.zeros_like(keys)
    dvalues = np.zeros_like(values)
    dWq = np.zeros_like(Wq)
    dWk = np.zeros_like(Wk)
    dwv = np.zeros_like(wv)

    # gradient w.r.t. the attention weights, for the whole batch at once
    dW = np.zeros_like(W)
    for n in range(N):
        dvalues[n] = W[n].T @ dcontext[n]
        dW[n] = dcontext[n] @ values[n].T
    if dweights is not None:
        dW = dW + dweights
    dS = masked_softmax_backward(dW, cache.pooling.softmax)

    for n in range(N):
        for q in range(Q):
            f = F[n, q]                                  # (K, h)
            ds = dS[n, q]                                # (K,)
            dwv += ds @ f
            dpre = np.outer(ds, wv) * (1.0 - f * f)      # (K, h)
            # the query's projection was added to every key's row
            dqp = dpre.sum(axis=0)                       # (h,)
            dqueries[n, q] = Wq @ dqp
            dWq += np.outer(queries[n, q], dqp)
            # the keys' projections, one row each
            dkeys[n] += dpre @ Wk.T
            dWk += keys[n].T @ dpre
    return dqueries, dkeys, dvalues, dWq, dWk, dwv
