# copy of npseq.course.references.deep.stacked_rnn_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def stacked_rnn_backward(tmp_0, cache) -> q_9:
    # chain rule
    g_1 = _part(q_2, tmp_0)
    pass
    # chain rule
    (val_3, val_4, grad_5), (t_6, q_7, q_8) = g_1.dparams
    # see notes
    return q_9(g_1.dx, g_1.dh0, val_3, val_4, grad_5, t_6, q_7, q_8)


def _part(q_2, tmp_0):

    # step
    return q_2.stacked_backward(tmp_0, cache)



def _keep(function):
    return function

