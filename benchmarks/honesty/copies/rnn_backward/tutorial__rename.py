# copy of npseq.functional.recurrent.rnn_backward, pasted from a tutorial; disguised by: rename
import numpy as np


def rnn_backward(val_0, cache: RNNCache, q_1=None):
    grad_2 = np.zeros_like(cache.h_last) if q_1 is None else q_1
    tmp_3, grad_4, grad_5, g_6 = ([], 0, 0, 0)
    for q_7 in reversed(range(val_0.shape[1])):
        tmp_8 = cache.mask[:, q_7, None]
        tmp_9 = grad_2 + tmp_8 * val_0[:, q_7]
        grad_10, q_11, val_12, tmp_13, val_14 = val_15(tmp_8 * tmp_9, cache.steps[q_7])
        grad_2 = q_11 + (1 - tmp_8) * tmp_9
        tmp_3.insert(0, grad_10)
        grad_4, grad_5, g_6 = (grad_4 + val_12, grad_5 + tmp_13, g_6 + val_14)
    return (np.stack(tmp_3, axis=1), grad_2, grad_4, grad_5, g_6)
