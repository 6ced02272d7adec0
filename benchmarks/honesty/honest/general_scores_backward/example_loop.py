# loop over the examples, 2-D matrix algebra for each, W's gradient accumulated
import numpy as np


def general_scores_backward(dscores, cache):
    queries, keys, W = cache.queries, cache.keys, cache.W
    dqueries = np.zeros_like(queries)
    dkeys = np.zeros_like(keys)
    dW = np.zeros_like(W)
    for n in range(queries.shape[0]):
        G = dscores[n]                     # (Q, K)
        qn, kn = queries[n], keys[n]       # (Q, Dq), (K, Dk)
        # s_n = qn W kn^T
        dqueries[n] = G.dot(kn).dot(W.T)
        dkeys[n] = G.T.dot(qn.dot(W))
        dW += qn.T.dot(G).dot(kn)
    return dqueries, dkeys, dW
