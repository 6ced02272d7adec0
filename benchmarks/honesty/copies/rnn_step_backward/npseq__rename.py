# copy of npseq.functional.recurrent.rnn_step_backward; disguised by: rename
import numpy as np


def rnn_step_backward(t_0, cache: RNNStepCache):
    val_1('dnext_h', t_0, tuple(cache.next_h.shape))
    grad_2 = t_0 * (1 - cache.next_h ** 2)
    tmp_3 = grad_2 @ cache.Wx.T
    tmp_4 = grad_2 @ cache.Wh.T
    tmp_5 = cache.x.T @ grad_2
    g_6 = cache.prev_h.T @ grad_2
    g_7 = grad_2.sum(axis=0)
    return (tmp_3, tmp_4, tmp_5, g_6, g_7)
