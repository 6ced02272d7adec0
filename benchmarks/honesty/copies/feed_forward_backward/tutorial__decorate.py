# copy of npseq.functional.transformer.feed_forward_backward, pasted from a tutorial; disguised by: decorate
import numpy as np


@_keep
def feed_forward_backward(dy, cache: FeedForwardCache):
    x, W1, W2, activation, act, hidden = cache
    _, backward = ACTIVATIONS[activation]
    dhidden, dW2, db2 = _affine_grads(hidden, dy, W2)
    dx, dW1, db1 = _affine_grads(x, backward(dhidden, act), W1)
    return (dx, dW1, db1, dW2, db2)


def _keep(function):
    return function
