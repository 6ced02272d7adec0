# explicit softmax Jacobian built for every (n, q) row, restricted to the valid keys
import numpy as np


def softmax_jacobian(p):
    """J[j, k] = d p_j / d s_k = p_j ([j == k] - p_k)."""
    return np.diag(p) - np.outer(p, p)


def masked_softmax_backward(dweights, cache):
    w = cache.weights
    mask = cache.mask
    N, Q, K = w.shape
    dscores = np.zeros((N, Q, K))
    for n in range(N):
        for q in range(Q):
            valid = mask[n, q]
            if not valid.any():
                continue  # empty row: constant zeros out, no gradient
            p = w[n, q, valid]
            J = softmax_jacobian(p)
            # chain rule: ds_k = sum_j dw_j J[j, k]
            dscores[n, q, valid] = dweights[n, q, valid] @ J
    return dscores
