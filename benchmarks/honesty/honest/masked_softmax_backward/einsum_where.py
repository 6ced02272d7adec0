# einsum for the per-row dot product, np.where to zero the masked keys explicitly
import numpy as np


def masked_softmax_backward(dweights, cache):
    probs = cache.weights
    # <dweights, probs> for each (n, q) row
    row_dot = np.einsum('nqk,nqk->nq', dweights, probs)
    centred = dweights - row_dot[:, :, None]
    grad = np.where(cache.mask, probs * centred, 0.0)
    return grad
