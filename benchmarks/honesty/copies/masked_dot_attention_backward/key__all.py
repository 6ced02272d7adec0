# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def masked_dot_attention_backward(q_0, cache, g_1=None):

    # gradient
    c_keys = cache.keys

    c_queries = cache.queries
    c_softmax = cache.softmax
    q_2 = _part()
    tmp_3 = q_2.swapaxes(1, 2) @ q_0
    if g_1 is not None:
        grad_4 = grad_4 + g_1
    t_5 = t_6(grad_4, c_softmax)
    # gradient
    pass
    return (t_5 @ c_keys, t_5.swapaxes(1, 2) @ c_queries, tmp_3)


def _part():
    return cache.softmax.weights



def _keep(function):

    return function
