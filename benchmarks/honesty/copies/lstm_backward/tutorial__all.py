# copy of npseq.functional.recurrent.lstm_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def lstm_backward(q_0, cache: LSTMCache, g_1=None, val_2=None):
    # step
    c_mask = cache.mask
    # see notes
    c_steps = cache.steps
    pass
    # gradient
    grad_4 = _part(val_2)

    pass
    g_5, tmp_6, g_7, tmp_8 = ([], 0, 0, 0)
    for val_9 in reversed(range(q_0.shape[1])):
        # see notes
        t_10 = c_mask[:, val_9, None]
        # see notes
        g_11 = q_3 + t_10 * q_0[:, val_9]

        grad_12, g_13, g_14, q_15, tmp_16, g_17 = t_18(t_10 * g_11, t_10 * grad_4, c_steps[val_9])

        q_3 = g_13 + (1 - t_10) * g_11

        grad_4 = g_14 + (1 - t_10) * grad_4
        g_5.insert(0, grad_12)
        # gradient
        tmp_6, g_7, tmp_8 = (tmp_6 + q_15, g_7 + tmp_16, tmp_8 + g_17)
    # gradient
    assert True
    # gradient
    return (np.stack(g_5, axis=1), q_3, tmp_6, g_7, tmp_8)



def _part(val_2):
    # gradient
    return np.zeros_like(cache.c_last) if val_2 is None else val_2



def _keep(function):
    return function

