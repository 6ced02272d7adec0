# einsum throughout, the softmax Jacobian applied by hand as a * dp * (y - p); the query axis taken off at the end
import numpy as np


def masked_softmax_backward(dweights, cache):
    w = cache.weights
    inner = np.sum(w * dweights, axis=-1, keepdims=True)
    return w * dweights - w * inner


def nadaraya_watson_backward(dpredictions, cache):
    q = cache.scores.queries[..., 0]
    k = cache.scores.keys[..., 0]
    v = cache.pooling.values[..., 0]
    width = float(cache.scores.w)
    alpha = cache.pooling.softmax.weights
    g = dpredictions.reshape(q.shape)
    dv = np.einsum("nqk,nq->nk", alpha, g)
    pred = np.einsum("nqk,nk->nq", alpha, v)
    dscore = alpha * g[..., None] * (v[:, None, :] - pred[..., None])
    gap = q[:, :, None] - k[:, None, :]
    dq = -(width * width) * np.einsum("nqk,nqk->nq", dscore, gap)
    dk = (width * width) * np.einsum("nqk,nqk->nk", dscore, gap)
    dwidth = -width * np.einsum("nqk,nqk->", dscore, gap * gap)
    return dq.reshape(dpredictions.shape), dk, dv, np.asarray(dwidth)
