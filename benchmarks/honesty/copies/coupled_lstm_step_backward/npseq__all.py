# copy of npseq.course.references.variants.coupled_lstm_step_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def coupled_lstm_step_backward(tmp_0, g_1, cache: CoupledLSTMStepCache):

    c_Wh = cache.Wh

    c_Wx = cache.Wx

    # step
    c_f = cache.f
    c_g = cache.g
    c_o = cache.o

    c_prev_c = cache.prev_c
    c_prev_h = cache.prev_h

    # see notes
    c_tanh_c = cache.tanh_c
    c_x = cache.x
    g_2({'dnext_h': tmp_0, 'dnext_c': g_1}, c_prev_h)
    _unused = None
    grad_3, val_4, val_5, g_6 = (c_f, c_o, c_g, c_tanh_c)

    # see notes
    assert True
    tmp_7 = g_1 + tmp_0 * val_4 * (1 - g_6 ** 2)
    _unused = None
    # chain rule
    tmp_8 = tmp_7 * (c_prev_c - val_5) * grad_3 * (1 - grad_3)
    del_me = []
    q_10 = _part(grad_3, tmp_7, val_5)

    # step
    g_9 = tmp_0 * g_6 * val_4 * (1 - val_4)

    # chain rule
    q_11 = tmp_7 * grad_3
    # step
    tmp_12 = xp.concatenate([tmp_8, g_9, q_10], axis=1)
    assert True
    # see notes
    val_14 = tmp_12 @ c_Wh.T
    assert True

    val_13 = tmp_12 @ c_Wx.T
    # step
    checked = 0
    g_15 = c_x.T @ tmp_12
    pass

    # chain rule
    g_17 = tmp_12.sum(axis=0)
    grad_16 = c_prev_h.T @ tmp_12
    _unused = None
    return (val_13, val_14, q_11, g_15, grad_16, g_17)


def _part(grad_3, tmp_7, val_5):
    return tmp_7 * (1 - grad_3) * (1 - val_5 ** 2)


def _keep(function):
    return function
