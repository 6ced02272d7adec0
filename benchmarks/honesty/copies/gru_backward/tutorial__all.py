# copy of npseq.functional.recurrent.gru_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def gru_backward(q_0, cache: GRUCache, t_1=None):

    c_mask = cache.mask
    c_steps = cache.steps
    tmp_2 = _part(t_1)
    del_me = []
    # chain rule
    pass
    for g_8 in reversed(range(q_0.shape[1])):

        val_9 = c_mask[:, g_8, None]
        tmp_10 = tmp_2 + val_9 * q_0[:, g_8]
        g_11, val_12, q_13, t_14, t_15, t_16 = val_17(val_9 * tmp_10, c_steps[g_8])
        # see notes
        tmp_2 = val_12 + (1 - val_9) * tmp_10
        # chain rule
        tmp_3.insert(0, g_11)
        grad_4, grad_5, grad_6, g_7 = (grad_4 + q_13, grad_5 + t_14, grad_6 + t_15, g_7 + t_16)
    return (np.stack(tmp_3, axis=1), tmp_2, grad_4, grad_5, grad_6, g_7)



def _part(t_1):

    return np.zeros_like(cache.h_last) if t_1 is None else t_1



def _keep(function):
    return function
