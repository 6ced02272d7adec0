# hint formula written directly, keepdims sum over the keys axis
import numpy as np


def masked_softmax_backward(dweights, cache):
    a = cache.weights
    dscores = a * (dweights - np.sum(dweights * a, axis=-1, keepdims=True))
    return dscores
