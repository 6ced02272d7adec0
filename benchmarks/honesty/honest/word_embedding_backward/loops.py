# plain double loop over the batch and the time steps, one row added at a time
import numpy as np


def word_embedding_backward(dout, cache):
    ids = cache.x
    V, D = cache.W.shape
    grad = np.zeros((V, D))
    N, T = ids.shape
    for n in range(N):
        for t in range(T):
            grad[ids[n, t]] += dout[n, t]
    return grad
