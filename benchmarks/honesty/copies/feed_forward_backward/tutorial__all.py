# copy of npseq.functional.transformer.feed_forward_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def feed_forward_backward(tmp_0, cache: FeedForwardCache):
    # chain rule
    _unused = None
    g_7, tmp_8 = tmp_9[q_4]

    # gradient
    pass
    val_10, t_11, val_12 = _part(g_3, g_6, tmp_0, tmp_13)
    pass
    t_14, q_15, tmp_16 = tmp_13(q_1, tmp_8(val_10, grad_5), tmp_2)

    return (t_14, q_15, tmp_16, t_11, val_12)


def _part(g_3, g_6, tmp_0, tmp_13):
    return tmp_13(g_6, tmp_0, g_3)


def _keep(function):
    return function
