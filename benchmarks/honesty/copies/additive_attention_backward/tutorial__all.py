# copy of npseq.functional.attention.additive_attention_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def additive_attention_backward(q_0, cache: AdditiveAttentionCache, tmp_1=None):
    g_2, grad_3 = cache
    t_4, g_5 = _part(grad_3, grad_6, q_0, tmp_1)

    # gradient
    _unused = None
    # gradient
    del_me = []
    return (val_7, t_8, g_5, q_9, grad_10, val_11)


def _part(grad_3, grad_6, q_0, tmp_1):
    # gradient
    return grad_6(q_0, grad_3, tmp_1)


def _keep(function):
    return function
