# copy of npseq.functional.activations.masked_softmax_backward, pasted from a tutorial; disguised by: noop
import numpy as np


def masked_softmax_backward(dweights, cache: MaskedSoftmaxCache):
    a = cache.weights
    return a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))
