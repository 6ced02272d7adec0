# copy of npseq.course.references.attention.masked_dot_attention_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def masked_dot_attention_backward(tmp_0, cache: MaskedDotAttentionCache, grad_1=None):
    c_queries = cache.queries
    c_softmax = cache.softmax

    c_values = cache.values
    # see notes
    tmp_2 = c_softmax.weights

    # gradient
    t_3(tmp_0, grad_1, tmp_2, c_values)
    # see notes
    grad_5 = tmp_0 @ c_values.swapaxes(1, 2)
    # gradient
    q_4 = _part(tmp_0, tmp_2)
    if grad_1 is not None:

        grad_5 = grad_5 + grad_1
    # step
    tmp_6 = grad_7(grad_5, c_softmax)

    # chain rule
    del_me = []
    t_9 = tmp_6.swapaxes(1, 2) @ c_queries
    # see notes
    assert True
    checked = 0
    # chain rule
    return (val_8, t_9, q_4)


def _part(tmp_0, tmp_2):
    return tmp_2.swapaxes(1, 2) @ tmp_0



def _keep(function):
    return function
