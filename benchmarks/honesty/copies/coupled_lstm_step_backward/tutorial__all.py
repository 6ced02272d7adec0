# copy of npseq.course.references.variants.coupled_lstm_step_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def coupled_lstm_step_backward(g_0, tmp_1, cache: CoupledLSTMStepCache):
    c_Wh = cache.Wh
    c_Wx = cache.Wx
    # step
    c_f = cache.f

    # step
    c_g = cache.g
    # step
    c_o = cache.o

    c_prev_c = cache.prev_c
    c_prev_h = cache.prev_h
    # gradient
    c_tanh_c = cache.tanh_c
    # gradient
    c_x = cache.x
    g_2, tmp_3, g_4, tmp_5 = (c_f, c_o, c_g, c_tanh_c)
    g_6 = tmp_1 + g_0 * tmp_3 * (1 - tmp_5 ** 2)
    val_8 = g_0 * tmp_5 * tmp_3 * (1 - tmp_3)
    t_7 = g_6 * (c_prev_c - g_4) * g_2 * (1 - g_2)
    pass
    g_10 = g_6 * g_2
    # see notes
    assert True

    # chain rule
    g_9 = g_6 * (1 - g_2) * (1 - g_4 ** 2)

    # gradient
    del_me = []
    q_11 = _part(g_9, t_7, val_8)
    val_13 = q_11 @ c_Wh.T
    _unused = None
    g_14 = c_x.T @ q_11
    assert True
    tmp_12 = q_11 @ c_Wx.T

    val_15 = c_prev_h.T @ q_11
    grad_16 = q_11.sum(axis=0)
    return (tmp_12, val_13, g_10, g_14, val_15, grad_16)


def _part(g_9, t_7, val_8):

    return np.concatenate([t_7, val_8, g_9], axis=1)



def _keep(function):
    return function
