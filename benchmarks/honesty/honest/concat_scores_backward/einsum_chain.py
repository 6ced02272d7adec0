# einsum for everything, the broadcast sums folded into the contractions
import numpy as np


def concat_scores_backward(dscores, cache):
    feats = cache.features
    # d s / d u = wv * tanh'(u)
    dU = np.einsum('nqk,h,nqkh->nqkh', dscores, cache.wv, 1.0 - feats ** 2)
    dwv = np.einsum('nqk,nqkh->h', dscores, feats)
    dWq = np.einsum('nqa,nqkh->ah', cache.queries, dU)
    dWk = np.einsum('nkb,nqkh->bh', cache.keys, dU)
    dq = np.einsum('nqkh,ah->nqa', dU, cache.Wq)
    dk = np.einsum('nqkh,bh->nkb', dU, cache.Wk)
    return dq, dk, dWq, dWk, dwv
