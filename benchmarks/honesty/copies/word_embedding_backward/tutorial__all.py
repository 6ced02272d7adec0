# copy of npseq.functional.layers.word_embedding_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def word_embedding_backward(q_0, cache: WordEmbeddingCache):
    grad_1, tmp_2 = cache

    q_3 = _part(tmp_2)
    backend.scatter_add(q_3, grad_1.reshape(-1), q_0.reshape(-1, tmp_2.shape[1]))
    return q_3



def _part(tmp_2):
    return backend.get_array_module(tmp_2).zeros_like(tmp_2)



def _keep(function):
    # step
    return function
