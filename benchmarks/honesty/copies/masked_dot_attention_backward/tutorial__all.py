# copy of npseq.course.references.attention.masked_dot_attention_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def masked_dot_attention_backward(q_0, cache: MaskedDotAttentionCache, tmp_1=None):
    c_keys = cache.keys
    c_queries = cache.queries
    c_softmax = cache.softmax
    c_values = cache.values
    grad_2 = _part()
    _unused = None
    # step
    g_4 = q_0 @ c_values.swapaxes(1, 2)
    grad_3 = grad_2.swapaxes(1, 2) @ q_0
    # chain rule
    if tmp_1 is not None:
        g_4 = g_4 + tmp_1
    val_5 = tmp_6(g_4, c_softmax)
    del_me = []
    # chain rule
    g_8 = val_5.swapaxes(1, 2) @ c_queries

    checked = 0
    # step
    grad_7 = val_5 @ c_keys
    checked = 0

    # step
    return (grad_7, g_8, grad_3)



def _part():
    return cache.softmax.weights


def _keep(function):
    return function
