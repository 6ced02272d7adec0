# einsum throughout; the backward split into three helpers (pooling, position predictor, scores)
import numpy as np


def masked_softmax_backward(dweights, cache):
    w = cache.weights
    inner = np.einsum('nqk,nqk->nq', dweights, w)
    return w * (dweights - inner[..., None])


def general_scores_backward(dscores, cache):
    dq = np.einsum('nqk,nkb,ab->nqa', dscores, cache.keys, cache.W)
    dk = np.einsum('nqk,nqa,ab->nkb', dscores, cache.queries, cache.W)
    dW = np.einsum('nqk,nqa,nkb->ab', dscores, cache.queries, cache.keys)
    return dq, dk, dW


def _pooling_backward(dctx, pool):
    """c = (alpha * gamma) @ v: returns d alpha, d p, d v."""
    K = pool.values.shape[1]
    dv = np.einsum('nqk,nqd->nkd', pool.weights, dctx)
    dweights = np.einsum('nqd,nkd->nqk', dctx, pool.values)
    offset = np.arange(K)[None, None, :] - pool.centers[:, :, None]
    # d gamma / d p = gamma (j - p) / sigma^2 and a = alpha gamma
    dcenter = np.einsum('nqk,nqk->nq', dweights * pool.weights, offset) / pool.sigma ** 2
    dalpha = dweights * pool.gaussian
    return dalpha, dcenter, dv


def _position_backward(dcenter, pos):
    """p = S * sigmoid(tanh(h Wp) vp): returns d h, d Wp, d vp."""
    r = pos.ratio
    dlogit = dcenter * pos.source_lens[:, None] * r * (1.0 - r)
    dvp = np.einsum('nq,nqh->h', dlogit, pos.features)
    dpre = np.einsum('nq,h,nqh->nqh', dlogit, pos.vp, 1.0 - pos.features ** 2)
    dWp = np.einsum('nqa,nqh->ah', pos.queries, dpre)
    dh = np.einsum('nqh,ah->nqa', dpre, pos.Wp)
    return dh, dWp, dvp


def local_p_attention_backward(dcontext, cache):
    dalpha, dcenter, dvalues = _pooling_backward(dcontext, cache.pooling)
    dscores = masked_softmax_backward(dalpha, cache.pooling.softmax)
    dq_scores, dkeys, dW = general_scores_backward(dscores, cache.scores)
    dq_pos, dWp, dvp = _position_backward(dcenter, cache.position)
    return dq_scores + dq_pos, dkeys, dvalues, dW, dWp, dvp
