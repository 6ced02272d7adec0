# everything as einsum, indices named after the axes (n batch, q query, k key, d features, j hidden)
import numpy as np


def masked_softmax_backward(dweights, cache):
    probs = cache.weights
    row_dot = np.einsum('nqk,nqk->nq', dweights, probs)
    return np.where(cache.mask, probs * (dweights - row_dot[:, :, None]), 0.0)


def additive_attention_backward(dcontext, cache, dweights=None):
    S = cache.scores
    P = cache.pooling
    feats = S.features                      # (N, Q, K, J)
    attn = P.pooled                         # (N, Q, K)

    # context = attn @ values
    dvalues = np.einsum('nqk,nqd->nkd', attn, dcontext)
    dattn = np.einsum('nqd,nkd->nqk', dcontext, P.values)
    if dweights is not None:
        dattn += dweights

    dscores = masked_softmax_backward(dattn, P.softmax)

    # scores = feats . wv
    dwv = np.einsum('nqk,nqkj->j', dscores, feats)
    dpre = np.einsum('nqk,j,nqkj->nqkj', dscores, S.wv, 1.0 - feats ** 2)

    # pre = queries @ Wq (broadcast over k) + keys @ Wk (broadcast over q)
    dWq = np.einsum('nqd,nqkj->dj', S.queries, dpre)
    dWk = np.einsum('nkd,nqkj->dj', S.keys, dpre)
    dqueries = np.einsum('nqkj,dj->nqd', dpre, S.Wq)
    dkeys = np.einsum('nqkj,dj->nkd', dpre, S.Wk)
    return dqueries, dkeys, dvalues, dWq, dWk, dwv
