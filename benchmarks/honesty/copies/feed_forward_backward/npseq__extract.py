# copy of npseq.functional.transformer.feed_forward_backward; disguised by: extract
import numpy as np


def feed_forward_backward(dy, cache: FeedForwardCache):
    check_shape('dy', dy, tuple(cache.hidden.shape[:-1]) + (cache.W2.shape[1],))
    x, W1, W2, activation, act, hidden = cache
    _, backward = ACTIVATIONS[activation]
    dhidden, dW2, db2 = _part(W2, _affine_grads, dy, hidden)
    dx, dW1, db1 = _affine_grads(x, backward(dhidden, act), W1)
    return (dx, dW1, db1, dW2, db2)


def _part(W2, _affine_grads, dy, hidden):
    return _affine_grads(hidden, dy, W2)
