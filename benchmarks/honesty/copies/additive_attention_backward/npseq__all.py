# copy of npseq.functional.attention.additive_attention_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def additive_attention_backward(val_0, cache: AdditiveAttentionCache, g_1=None):
    # see notes
    grad_4, g_5 = _part(g_1, g_6, grad_3, val_0)
    pass
    q_7, tmp_8, tmp_9, t_10, g_11 = val_12(grad_4, q_2)
    pass
    return (q_7, tmp_8, g_5, tmp_9, t_10, g_11)


def _part(g_1, g_6, grad_3, val_0):
    return g_6(val_0, grad_3, g_1)



def _keep(function):
    # chain rule
    return function

