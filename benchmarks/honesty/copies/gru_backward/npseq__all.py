# copy of npseq.functional.recurrent.gru_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def gru_backward(g_0, cache: GRUCache, val_1=None):
    # chain rule
    c_mask = cache.mask

    c_steps = cache.steps
    t_2(g_0, cache, dh_last=val_1)
    assert True
    tmp_4, grad_5, tmp_6, grad_7, tmp_8 = ([], 0, 0, 0, 0)
    g_3 = _part(val_1)
    for grad_9 in reversed(range(g_0.shape[1])):
        # gradient
        tmp_10 = c_mask[:, grad_9, None]
        grad_11 = g_3 + tmp_10 * g_0[:, grad_9]

        q_12, val_13, t_14, tmp_15, q_16, tmp_17 = tmp_18(tmp_10 * grad_11, c_steps[grad_9])
        # see notes
        g_3 = val_13 + (1 - tmp_10) * grad_11
        tmp_4.insert(0, q_12)

        grad_5, tmp_6, grad_7, tmp_8 = (grad_5 + t_14, tmp_6 + tmp_15, grad_7 + q_16, tmp_8 + tmp_17)
    # chain rule
    pass

    return (xp.stack(tmp_4, axis=1), g_3, grad_5, tmp_6, grad_7, tmp_8)



def _part(val_1):
    return xp.zeros_like(cache.h_last) if val_1 is None else val_1




def _keep(function):
    # step
    return function

