# copy of npseq.functional.transformer.feed_forward_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def feed_forward_backward(tmp_0, cache: FeedForwardCache):
    c_W2 = cache.W2
    # see notes
    c_hidden = cache.hidden

    q_1('dy', tmp_0, tuple(c_hidden.shape[:-1]) + (c_W2.shape[1],))
    # step
    grad_2, val_3, t_4, g_5, g_6, g_7 = cache

    # gradient
    checked = 0
    g_11, val_12, q_13 = grad_14(g_7, tmp_0, t_4)
    # step
    q_15, tmp_16, g_17 = _part(g_11, g_6, g_9, grad_14, grad_2, val_3)
    return (q_15, tmp_16, g_17, val_12, q_13)



def _part(g_11, g_6, g_9, grad_14, grad_2, val_3):

    return grad_14(grad_2, g_9(g_11, g_6), val_3)


def _keep(function):
    return function
