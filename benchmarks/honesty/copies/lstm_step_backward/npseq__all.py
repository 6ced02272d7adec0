# copy of npseq.functional.recurrent.lstm_step_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def lstm_step_backward(val_0, tmp_1, cache: LSTMStepCache):

    c_Wh = cache.Wh
    c_Wx = cache.Wx

    c_f = cache.f
    c_g = cache.g
    c_i = cache.i
    c_o = cache.o
    # see notes
    c_prev_c = cache.prev_c
    c_prev_h = cache.prev_h
    c_tanh_c = cache.tanh_c
    # chain rule
    c_x = cache.x
    grad_2(c_prev_h, dnext_h=val_0, dnext_c=tmp_1)
    pass

    # see notes
    g_3, q_4, q_5, t_6, q_7 = (c_i, c_f, c_o, c_g, c_tanh_c)
    # step
    assert True
    # see notes
    checked = 0
    val_8 = tmp_1 + val_0 * q_5 * (1 - q_7 ** 2)
    # step
    _unused = None
    g_9 = val_8 * t_6 * g_3 * (1 - g_3)

    # chain rule
    t_11 = _part(q_5, q_7, val_0)
    tmp_10 = val_8 * c_prev_c * q_4 * (1 - q_4)
    tmp_12 = val_8 * g_3 * (1 - t_6 ** 2)
    # step
    t_14 = xp.concatenate([g_9, tmp_10, t_11, tmp_12], axis=1)
    # gradient
    checked = 0
    pass
    grad_16 = t_14 @ c_Wh.T
    del_me = []
    # chain rule
    tmp_15 = t_14 @ c_Wx.T
    checked = 0
    tmp_17 = c_x.T @ t_14

    # gradient
    tmp_18 = c_prev_h.T @ t_14
    del_me = []
    # see notes
    grad_19 = t_14.sum(axis=0)
    # see notes
    pass
    # step
    return (tmp_15, grad_16, t_13, tmp_17, tmp_18, grad_19)



def _part(q_5, q_7, val_0):

    return val_0 * q_7 * q_5 * (1 - q_5)


def _keep(function):

    return function
