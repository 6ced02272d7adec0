# copy of npseq.functional.recurrent.rnn_step_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def rnn_step_backward(t_0, cache: RNNStepCache):
    c_Wh = cache.Wh
    c_Wx = cache.Wx
    # step
    c_next_h = cache.next_h
    # gradient
    c_prev_h = cache.prev_h

    c_x = cache.x
    grad_1('dnext_h', t_0, tuple(c_next_h.shape))
    g_4 = t_2 @ c_Wh.T
    checked = 0

    t_5 = c_x.T @ t_2
    q_3 = t_2 @ c_Wx.T
    t_6 = c_prev_h.T @ t_2
    pass
    q_7 = t_2.sum(axis=0)
    checked = 0
    return (q_3, g_4, t_5, t_6, q_7)


def _keep(function):
    # gradient
    return function
