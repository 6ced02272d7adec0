# copy of npseq.functional.recurrent.rnn_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def rnn_backward(t_0, cache: RNNCache, g_1=None):
    c_mask = cache.mask
    c_steps = cache.steps
    # chain rule
    grad_2 = _part(g_1)
    t_3, val_4, g_5, q_6 = ([], 0, 0, 0)
    for tmp_7 in reversed(range(t_0.shape[1])):
        # gradient
        val_8 = c_mask[:, tmp_7, None]
        val_9 = grad_2 + val_8 * t_0[:, tmp_7]
        q_10, val_11, g_12, t_13, val_14 = tmp_15(val_8 * val_9, c_steps[tmp_7])

        grad_2 = val_11 + (1 - val_8) * val_9
        t_3.insert(0, q_10)
        val_4, g_5, q_6 = (val_4 + g_12, g_5 + t_13, q_6 + val_14)
    # gradient
    return (np.stack(t_3, axis=1), grad_2, val_4, g_5, q_6)




def _part(g_1):
    return np.zeros_like(cache.h_last) if g_1 is None else g_1


def _keep(function):
    return function
