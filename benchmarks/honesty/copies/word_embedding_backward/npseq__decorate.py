# copy of npseq.functional.layers.word_embedding_backward; disguised by: decorate
import numpy as np


@_keep
def word_embedding_backward(dout, cache: WordEmbeddingCache):
    check_shape('dout', dout, tuple(cache.x.shape) + (cache.W.shape[1],))
    x, W = cache
    dW = backend.get_array_module(W).zeros_like(W)
    backend.scatter_add(dW, x.reshape(-1), dout.reshape(-1, W.shape[1]))
    return dW


def _keep(function):
    return function
