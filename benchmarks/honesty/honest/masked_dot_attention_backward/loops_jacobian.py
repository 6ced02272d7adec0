# example-by-example loop; the softmax backward uses an explicit Jacobian per query row
import numpy as np


def softmax_row_jacobian(p):
    # d p_j / d s_k = p_j (delta_jk - p_k)
    return np.diag(p) - np.outer(p, p)


def masked_softmax_backward(dweights, cache):
    N, Q, K = dweights.shape
    dscores = np.empty((N, Q, K))
    for n in range(N):
        for i in range(Q):
            p = cache.weights[n, i]
            dscores[n, i] = softmax_row_jacobian(p).T.dot(dweights[n, i])
    return dscores


def masked_dot_attention_backward(dcontext, cache, dweights=None):
    queries, keys, values = cache.queries, cache.keys, cache.values
    weights = cache.softmax.weights
    N = queries.shape[0]

    dW = np.empty(weights.shape)
    dvalues = np.empty(values.shape)
    for n in range(N):
        # C_n = A_n V_n
        dW[n] = dcontext[n].dot(values[n].T)
        dvalues[n] = weights[n].T.dot(dcontext[n])
    if dweights is not None:
        dW = dW + dweights

    dS = masked_softmax_backward(dW, cache.softmax)

    dqueries = np.empty(queries.shape)
    dkeys = np.empty(keys.shape)
    for n in range(N):
        # S_n = Q_n K_n^T, no scaling
        dqueries[n] = dS[n].dot(keys[n])
        dkeys[n] = dS[n].T.dot(queries[n])
    return dqueries, dkeys, dvalues
