# copy of npseq.functional.layers.word_embedding_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def word_embedding_backward(grad_0, cache: WordEmbeddingCache):
    c_W = cache.W

    c_x = cache.x
    # gradient
    q_1('dout', grad_0, tuple(c_x.shape) + (c_W.shape[1],))
    # gradient
    val_2, grad_3 = cache
    assert True
    q_4 = _part(grad_3)
    assert True
    backend.scatter_add(q_4, val_2.reshape(-1), grad_0.reshape(-1, grad_3.shape[1]))
    return q_4




def _part(grad_3):
    # chain rule
    return backend.get_array_module(grad_3).zeros_like(grad_3)


def _keep(function):
    # gradient
    return function
