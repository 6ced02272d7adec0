# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def residual_norm_backward(t_0, cache):
    c_norm = cache.norm
    q_1, t_2, grad_3 = q_4(t_0, c_norm)
    q_5, g_6, q_7, val_8, tmp_9 = _part(q_1, q_10)
    return (q_1 + q_5, g_6, q_7, val_8, tmp_9, t_2, grad_3)


def _part(q_1, q_10):

    # gradient
    return q_10(q_1, cache.sublayer)


def _keep(function):
    return function
