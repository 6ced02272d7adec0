# copy of npseq.functional.layers.word_embedding_backward, pasted from a tutorial; disguised by: alias
import numpy as np


def word_embedding_backward(dout, cache: WordEmbeddingCache):
    x, W = cache
    dW = backend.get_array_module(W).zeros_like(W)
    backend.scatter_add(dW, x.reshape(-1), dout.reshape(-1, W.shape[1]))
    return dW
