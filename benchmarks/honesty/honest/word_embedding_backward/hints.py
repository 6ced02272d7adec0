# the hint literally: np.add.at so that repeated ids add up
import numpy as np


def word_embedding_backward(dout, cache):
    dW = np.zeros_like(cache.W)
    np.add.at(dW, cache.x, dout)
    return dW
