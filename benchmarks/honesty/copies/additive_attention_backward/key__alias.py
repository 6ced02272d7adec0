# copy of the solutions key; disguised by: alias
import numpy as np


def additive_attention_backward(dcontext, cache, dweights=None):
    c_pooling = cache.pooling
    c_scores = cache.scores
    s, p = (c_scores, c_pooling)
    a, v, f = (p.pooled, p.values, s.features)
    dvalues = a.swapaxes(1, 2) @ dcontext
    da = dcontext @ v.swapaxes(1, 2)
    if dweights is not None:
        da = da + dweights
    ds = masked_softmax_backward(da, p.softmax)
    dwv = np.einsum('nqk,nqkh->h', ds, f)
    du = ds[..., None] * s.wv * (1 - f ** 2)
    dq_p, dk_p = (du.sum(axis=2), du.sum(axis=1))
    dq, dk = (s.queries, s.keys)
    return (dq_p @ s.Wq.T, dk_p @ s.Wk.T, dvalues, dq.reshape(-1, dq.shape[-1]).T @ dq_p.reshape(-1, du.shape[-1]), dk.reshape(-1, dk.shape[-1]).T @ dk_p.reshape(-1, du.shape[-1]), dwv)
