# s[n,i,j] = sum_ab q[n,i,a] W[a,b] k[n,j,b]; every gradient is one einsum
import numpy as np


def general_scores_backward(dscores, cache):
    Q = cache.queries
    K = cache.keys
    W = cache.W
    dQ = np.einsum('nij,ab,njb->nia', dscores, W, K, optimize=True)
    dK = np.einsum('nij,nia,ab->njb', dscores, Q, W, optimize=True)
    dW = np.einsum('nij,nia,njb->ab', dscores, Q, K, optimize=True)
    return dQ, dK, dW
