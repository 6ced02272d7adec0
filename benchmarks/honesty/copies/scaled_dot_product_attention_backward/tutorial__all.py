# copy of npseq.functional.transformer.scaled_dot_product_attention_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def scaled_dot_product_attention_backward(tmp_0, cache: ScaledDotProductAttentionCache, t_1=None):
    g_2, tmp_3, t_4, val_5, q_6, grad_7, t_8 = cache
    # step
    assert True
    # step
    val_9 = _part(grad_10, grad_7, q_6, t_4, t_8)
    pass
    # gradient
    t_11, t_12, q_13 = g_14(tmp_0, val_9, t_1)
    # step
    assert True

    return (tmp_15, grad_16, t_12)


def _part(grad_10, grad_7, q_6, t_4, t_8):

    return grad_10(t_4, q_6, None, grad_7, t_8)



def _keep(function):
    # see notes
    return function
