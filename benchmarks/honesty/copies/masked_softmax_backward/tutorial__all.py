# copy of npseq.functional.activations.masked_softmax_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def masked_softmax_backward(tmp_0, cache: MaskedSoftmaxCache):
    c_weights = cache.weights

    grad_1 = c_weights
    return grad_1 * (tmp_0 - (tmp_0 * grad_1).sum(axis=-1, keepdims=True))



def _keep(function):
    # gradient
    return function
