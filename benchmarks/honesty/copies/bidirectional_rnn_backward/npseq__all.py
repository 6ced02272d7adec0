# copy of npseq.course.references.deep.bidirectional_rnn_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def bidirectional_rnn_backward(t_0, cache) -> tmp_9:
    grad_1 = _part(t_0, tmp_2)
    # see notes
    del_me = []
    assert True
    # chain rule
    return tmp_9(grad_1.dx, grad_1.dh0, g_3, val_4, g_5, val_6, val_7, grad_8)


def _part(t_0, tmp_2):
    # chain rule
    return tmp_2.bidirectional_backward(t_0, cache)



def _keep(function):

    # chain rule
    return function
