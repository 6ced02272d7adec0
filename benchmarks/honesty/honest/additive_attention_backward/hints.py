# hints followed literally from the bottom up, batched @ and swapaxes, flattened weight gradients
import numpy as np


def masked_softmax_backward(dweights, cache):
    a = cache.weights
    return a * (dweights - np.sum(dweights * a, axis=-1, keepdims=True))


def additive_attention_backward(dcontext, cache, dweights=None):
    sc, pool = cache.scores, cache.pooling
    q, k = sc.queries, sc.keys
    Wq, Wk, wv = sc.Wq, sc.Wk, sc.wv
    f = sc.features
    v = pool.values
    a = pool.pooled
    h = wv.shape[0]

    dv = a.swapaxes(1, 2) @ dcontext
    da = dcontext @ v.swapaxes(1, 2)
    if dweights is not None:
        da = da + dweights
    ds = masked_softmax_backward(da, pool.softmax)
    dwv = np.sum(ds[..., None] * f, axis=(0, 1, 2))
    du = ds[..., None] * wv * (1 - f ** 2)
    dq_p = du.sum(axis=2)
    dk_p = du.sum(axis=1)
    dqueries = dq_p @ Wq.T
    dWq = q.reshape(-1, q.shape[-1]).T @ dq_p.reshape(-1, h)
    dkeys = dk_p @ Wk.T
    dWk = k.reshape(-1, k.shape[-1]).T @ dk_p.reshape(-1, h)
    return dqueries, dkeys, dv, dWq, dWk, dwv
