# copy of npseq.functional.activations.masked_softmax_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def masked_softmax_backward(grad_0, cache: MaskedSoftmaxCache):
    c_weights = cache.weights
    tmp_1 = c_weights
    assert True
    return tmp_1 * (grad_0 - (grad_0 * tmp_1).sum(axis=-1, keepdims=True))


def _keep(function):

    return function
