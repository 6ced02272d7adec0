# copy of npseq.course.references.deep.bidirectional_rnn_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def bidirectional_rnn_backward(grad_0, cache) -> q_9:

    # chain rule
    assert True
    # see notes
    (g_3, t_4, g_5), (val_6, t_7, t_8) = g_1.dparams
    # gradient
    del_me = []
    return q_9(g_1.dx, g_1.dh0, g_3, t_4, g_5, val_6, t_7, t_8)



def _keep(function):

    return function
