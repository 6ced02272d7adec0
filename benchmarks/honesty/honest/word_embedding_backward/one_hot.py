# one-hot matrix of the ids times the flattened upstream gradient: dW = onehot^T @ dout
import numpy as np


def word_embedding_backward(dout, cache):
    V, D = cache.W.shape
    flat_ids = cache.x.reshape(-1)                 # (N*T,)
    onehot = np.zeros((flat_ids.size, V))
    onehot[np.arange(flat_ids.size), flat_ids] = 1.0
    return onehot.T @ dout.reshape(-1, D)
