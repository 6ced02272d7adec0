# each hint formula as a line of NumPy: dwv, du, dqp/dkp by summing the broadcast axes, then the projections
import numpy as np


def concat_scores_backward(dscores, cache):
    q, k = cache.queries, cache.keys
    Wq, Wk, wv = cache.Wq, cache.Wk, cache.wv
    f = cache.features
    Dq = q.shape[-1]
    Dk = k.shape[-1]
    H = wv.shape[0]

    dwv = np.einsum("nij,nijh->h", dscores, f)
    du = dscores[..., None] * wv * (1 - f ** 2)
    dqp = du.sum(axis=2)
    dkp = du.sum(axis=1)
    dqueries = dqp @ Wq.T
    dWq = q.reshape(-1, Dq).T @ dqp.reshape(-1, H)
    dkeys = dkp @ Wk.T
    dWk = k.reshape(-1, Dk).T @ dkp.reshape(-1, H)
    return dqueries, dkeys, dWq, dWk, dwv
