# follows the hints line by line: batched @ with swapaxes, the masked softmax hint as-is
import numpy as np


def masked_softmax_backward(dweights, cache):
    a = cache.weights; return a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))


def scaled_dot_product_attention_backward(dout, cache, dweights=None):
    Q = cache.queries
    K = cache.keys
    V = cache.values
    A = cache.pooled

    dV = A.swapaxes(-1, -2) @ dout
    dA = dout @ V.swapaxes(-1, -2)
    if dweights is not None:
        dA = dA + dweights

    dS = masked_softmax_backward(dA, cache.softmax) * cache.scale

    dQ = dS @ K
    dK = dS.swapaxes(-1, -2) @ Q
    return dQ, dK, dV
