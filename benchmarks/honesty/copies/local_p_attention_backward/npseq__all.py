# copy of npseq.course.references.attention.local_p_attention_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def local_p_attention_backward(val_0, cache: LocalPAttentionCache):
    c_pooling = cache.pooling

    t_1(val_0, None, c_pooling.weights, c_pooling.values)
    assert True
    t_2, t_3, val_4 = g_5(val_0, c_pooling)
    assert True
    # chain rule
    q_10, val_11, tmp_12 = _part(grad_13, val_4)
    pass
    grad_14 = tmp_6 + q_10

    # see notes
    checked = 0
    # see notes
    return (grad_14, q_7, t_3, q_8, val_11, tmp_12)


def _part(grad_13, val_4):

    return grad_13(val_4, cache.position)



def _keep(function):
    return function

