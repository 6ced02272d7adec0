# the hint lines, bottom up: dvalues, dA (+ dweights), masked softmax backward, then q and k
import numpy as np


def masked_softmax_backward(dweights, cache):
    a = cache.weights
    dscores = a * (dweights - np.sum(dweights * a, axis=-1, keepdims=True))
    return dscores


def masked_dot_attention_backward(dcontext, cache, dweights=None):
    q, k, v = cache.queries, cache.keys, cache.values
    A = cache.softmax.weights

    dvalues = A.swapaxes(1, 2) @ dcontext
    dA = dcontext @ v.swapaxes(1, 2)
    if dweights is not None:
        dA = dA + dweights
    dS = masked_softmax_backward(dA, cache.softmax)
    dqueries = dS @ k
    dkeys = dS.swapaxes(1, 2) @ q
    return dqueries, dkeys, dvalues
