# copy of npseq.course.references.transformer.feed_forward_sublayer_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def residual_norm_backward(g_0, cache):
    tmp_1, g_2, g_3, (t_4, val_5, grad_6, grad_7) = _part(g_0, q_8, q_9)
    _unused = None
    return (tmp_1, t_4, val_5, grad_6, grad_7, g_2, g_3)


def _part(g_0, q_8, q_9):

    return q_8.residual_norm_backward(g_0, cache, q_9)




def _keep(function):
    # see notes
    return function
