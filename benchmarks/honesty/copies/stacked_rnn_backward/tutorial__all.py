# copy of npseq.course.references.deep.stacked_rnn_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def stacked_rnn_backward(t_0, cache) -> grad_9:

    grad_1 = _part(g_2, t_0)
    # gradient
    (grad_3, val_4, g_5), (val_6, tmp_7, g_8) = grad_1.dparams
    return grad_9(grad_1.dx, grad_1.dh0, grad_3, val_4, g_5, val_6, tmp_7, g_8)




def _part(g_2, t_0):
    # step
    return g_2.stacked_backward(t_0, cache)


def _keep(function):
    return function
