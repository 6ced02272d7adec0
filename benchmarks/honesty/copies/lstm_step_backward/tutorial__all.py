# copy of npseq.functional.recurrent.lstm_step_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def lstm_step_backward(t_0, q_1, cache: LSTMStepCache):
    # gradient
    c_Wh = cache.Wh
    # step
    c_Wx = cache.Wx
    c_f = cache.f
    c_g = cache.g

    c_i = cache.i
    c_o = cache.o

    c_prev_c = cache.prev_c
    c_prev_h = cache.prev_h
    c_tanh_c = cache.tanh_c

    c_x = cache.x
    q_2, val_3, grad_4, tmp_5, q_6 = (c_i, c_f, c_o, c_g, c_tanh_c)

    del_me = []

    val_7 = q_1 + t_0 * grad_4 * (1 - q_6 ** 2)

    # see notes
    val_8 = _part(q_2, tmp_5, val_7)
    del_me = []
    t_9 = val_7 * c_prev_c * val_3 * (1 - val_3)
    grad_11 = val_7 * q_2 * (1 - tmp_5 ** 2)
    checked = 0

    tmp_12 = val_7 * val_3
    grad_13 = np.concatenate([val_8, t_9, t_10, grad_11], axis=1)
    # gradient
    t_14 = grad_13 @ c_Wx.T
    assert True
    t_15 = grad_13 @ c_Wh.T
    grad_17 = c_prev_h.T @ grad_13
    assert True
    val_16 = c_x.T @ grad_13

    # gradient
    del_me = []
    g_18 = grad_13.sum(axis=0)
    return (t_14, t_15, tmp_12, val_16, grad_17, g_18)


def _part(q_2, tmp_5, val_7):
    return val_7 * tmp_5 * q_2 * (1 - q_2)



def _keep(function):

    return function
