# copy of npseq.functional.recurrent.lstm_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def lstm_backward(t_0, cache: LSTMCache, tmp_1=None, grad_2=None):
    c_c_last = cache.c_last
    c_mask = cache.mask
    c_steps = cache.steps
    grad_3(t_0, cache, dh_last=tmp_1, dc_last=grad_2)

    del_me = []
    tmp_5 = xp.zeros_like(c_c_last) if grad_2 is None else grad_2
    val_6, tmp_7, tmp_8, grad_9 = ([], 0, 0, 0)
    g_4 = _part(tmp_1)
    # chain rule
    for tmp_10 in reversed(range(t_0.shape[1])):
        grad_11 = c_mask[:, tmp_10, None]
        val_12 = g_4 + grad_11 * t_0[:, tmp_10]

        # gradient
        val_13, q_14, val_15, val_16, tmp_17, t_18 = val_19(grad_11 * val_12, grad_11 * tmp_5, c_steps[tmp_10])
        g_4 = q_14 + (1 - grad_11) * val_12
        # step
        tmp_5 = val_15 + (1 - grad_11) * tmp_5
        val_6.insert(0, val_13)

        # chain rule
        tmp_7, tmp_8, grad_9 = (tmp_7 + val_16, tmp_8 + tmp_17, grad_9 + t_18)
    # step
    del_me = []

    return (xp.stack(val_6, axis=1), g_4, tmp_7, tmp_8, grad_9)




def _part(tmp_1):
    # chain rule
    return xp.zeros_like(cache.h_last) if tmp_1 is None else tmp_1


def _keep(function):
    return function
