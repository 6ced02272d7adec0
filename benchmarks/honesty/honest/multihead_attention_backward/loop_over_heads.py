# loops over the heads: each head is a slice of the projected columns, with a 3-d attention backward per head
import numpy as np


def masked_softmax_backward(dweights, cache):
    a = cache.weights
    s = np.sum(a * dweights, axis=-1, keepdims=True)
    dscores = a * (dweights - s)
    return np.where(cache.mask, dscores, 0.0)   # mask broadcasts (it may have a head axis of 1)


def _sdpa_core(dO, Q, K, V, A, softmax_cache, scale, dA_extra=None):
    """backward of O = softmax(Q K^T * scale) V for arrays with any leading batch axes."""
    dV = np.matmul(np.swapaxes(A, -1, -2), dO)
    dA = np.matmul(dO, np.swapaxes(V, -1, -2))
    if dA_extra is not None:
        dA = dA + dA_extra
    dS = scale * masked_softmax_backward(dA, softmax_cache)
    dQ = np.matmul(dS, K)
    dK = np.matmul(np.swapaxes(dS, -1, -2), Q)
    return dQ, dK, dV


def scaled_dot_product_attention_backward(dout, cache, dweights=None):
    return _sdpa_core(dout, cache.queries, cache.keys, cache.values, cache.pooled,
                      cache.softmax, cache.scale, dweights)


class _HeadSoftmax:
    """the slice of a masked-softmax cache that belongs to one head."""

    def __init__(self, full, i):
        self.weights = full.weights[:, i]
        # the mask may be stored with a head axis of 1, so broadcast it first
        self.mask = np.broadcast_to(full.mask, full.weights.shape)[:, i]


def multihead_attention_backward(dout, cache, dweights=None):
    prm = cache.params
    att = cache.attention
    num_heads = att.queries.shape[1]
    d = att.queries.shape[-1]

    Wo = prm["W_o"]
    D = Wo.shape[0]
    C2 = cache.merged.reshape(-1, D)
    dout2 = dout.reshape(-1, Wo.shape[1])
    dWo = C2.T @ dout2
    dbo = dout2.sum(0)
    dC = dout @ Wo.T                                   # (N, T_q, D)

    dQp = np.zeros(cache.queries.shape[:2] + (D,))
    dKp = np.zeros(cache.keys.shape[:2] + (D,))
    dVp = np.zeros(cache.values.shape[:2] + (D,))
    for i in range(num_heads):
        cols = slice(i * d, (i + 1) * d)
        dw_i = None if dweights is None else dweights[:, i]
        dq, dk, dv = _sdpa_core(dC[:, :, cols], att.queries[:, i], att.keys[:, i], att.values[:, i],
                                att.pooled[:, i], _HeadSoftmax(att.softmax, i), att.scale, dw_i)
        dQp[:, :, cols] = dq
        dKp[:, :, cols] = dk
        dVp[:, :, cols] = dv

    def proj_back(x, W, dy):
        x2 = x.reshape(-1, x.shape[-1])
        dy2 = dy.reshape(-1, dy.shape[-1])
        return dy @ W.T, x2.T @ dy2, dy2.sum(0)

    dq_in, dWq, dbq = proj_back(cache.queries, prm["W_q"], dQp)
    dk_in, dWk, dbk = proj_back(cache.keys, prm["W_k"], dKp)
    dv_in, dWv, dbv = proj_back(cache.values, prm["W_v"], dVp)

    grads = dict(W_q=dWq, b_q=dbq, W_k=dWk, b_k=dbk, W_v=dWv, b_v=dbv, W_o=dWo, b_o=dbo)
    return dq_in, dk_in, dv_in, grads
