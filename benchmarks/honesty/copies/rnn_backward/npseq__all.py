# copy of npseq.functional.recurrent.rnn_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def rnn_backward(g_0, cache: RNNCache, val_1=None):
    c_mask = cache.mask

    # gradient
    c_steps = cache.steps
    t_2(g_0, cache, dh_last=val_1)
    # see notes
    del_me = []
    tmp_4, q_5, t_6, val_7 = ([], 0, 0, 0)
    for q_8 in reversed(range(g_0.shape[1])):
        grad_9 = c_mask[:, q_8, None]
        val_10 = grad_3 + grad_9 * g_0[:, q_8]

        t_11, t_12, grad_13, t_14, q_15 = g_16(grad_9 * val_10, c_steps[q_8])
        # gradient
        grad_3 = t_12 + (1 - grad_9) * val_10
        tmp_4.insert(0, t_11)
        q_5, t_6, val_7 = (q_5 + grad_13, t_6 + t_14, val_7 + q_15)
    pass
    return (xp.stack(tmp_4, axis=1), grad_3, q_5, t_6, val_7)



def _keep(function):
    return function
