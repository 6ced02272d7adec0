# copy of npseq.functional.recurrent.gru_backward; disguised by: rename
import numpy as np


def gru_backward(t_0, cache: GRUCache, tmp_1=None):
    g_2(t_0, cache, dh_last=tmp_1)
    xp = backend.get_array_module(t_0)
    tmp_3 = xp.zeros_like(cache.h_last) if tmp_1 is None else tmp_1
    t_4, q_5, q_6, grad_7, q_8 = ([], 0, 0, 0, 0)
    for t_9 in reversed(range(t_0.shape[1])):
        tmp_10 = cache.mask[:, t_9, None]
        tmp_11 = tmp_3 + tmp_10 * t_0[:, t_9]
        g_12, grad_13, q_14, val_15, val_16, tmp_17 = grad_18(tmp_10 * tmp_11, cache.steps[t_9])
        tmp_3 = grad_13 + (1 - tmp_10) * tmp_11
        t_4.insert(0, g_12)
        q_5, q_6, grad_7, q_8 = (q_5 + q_14, q_6 + val_15, grad_7 + val_16, q_8 + tmp_17)
    return (xp.stack(t_4, axis=1), tmp_3, q_5, q_6, grad_7, q_8)
