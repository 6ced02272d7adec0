# copy of npseq.course.references.attention.local_p_attention_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def local_p_attention_backward(tmp_0, cache: LocalPAttentionCache):
    # see notes
    c_pooling = cache.pooling
    c_position = cache.position

    val_1, g_2, val_3 = grad_4(tmp_0, c_pooling)
    checked = 0
    val_5, t_6, q_7 = _part(q_8, val_1)
    t_9, g_10, g_11 = val_12(val_3, c_position)
    del_me = []

    return (grad_13, t_6, g_2, q_7, g_10, g_11)



def _part(q_8, val_1):
    return q_8(val_1, cache.scores)



def _keep(function):
    # chain rule
    return function
