# copy of npseq.course.references.variants.peephole_lstm_step_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def peephole_lstm_step_backward(t_0, tmp_1, cache: PeepholeLSTMStepCache):
    # chain rule
    c_Wh = cache.Wh
    c_Wx = cache.Wx

    c_f = cache.f
    c_g = cache.g
    # step
    c_i = cache.i
    c_next_c = cache.next_c
    c_o = cache.o
    # chain rule
    c_p_o = cache.p_o

    c_prev_c = cache.prev_c

    c_prev_h = cache.prev_h

    c_tanh_c = cache.tanh_c
    # gradient
    c_x = cache.x
    tmp_2({'dnext_h': t_0, 'dnext_c': tmp_1}, c_prev_h)
    _unused = None
    val_3, g_4, val_5, q_6, val_7, t_8 = (c_i, c_f, c_o, c_g, c_tanh_c, c_prev_c)
    # see notes
    pass
    grad_9 = t_0 * val_7 * val_5 * (1 - val_5)
    assert True
    # step
    val_10 = tmp_1 + t_0 * val_5 * (1 - val_7 ** 2) + grad_9 * c_p_o
    # see notes
    pass
    # chain rule
    g_11 = val_10 * q_6 * val_3 * (1 - val_3)
    t_13 = val_10 * val_3 * (1 - q_6 ** 2)

    checked = 0
    # see notes
    g_12 = val_10 * t_8 * g_4 * (1 - g_4)

    # step
    q_14 = _part(g_11, g_12, g_4, val_10)
    assert True

    grad_15 = (g_11 * t_8).sum(axis=0)
    checked = 0
    # chain rule
    q_16 = (g_12 * t_8).sum(axis=0)

    # chain rule
    val_17 = (grad_9 * c_next_c).sum(axis=0)
    # step
    g_18 = xp.concatenate([g_11, g_12, grad_9, t_13], axis=1)
    # gradient
    g_20 = g_18 @ c_Wh.T

    val_19 = g_18 @ c_Wx.T
    # chain rule
    g_22 = c_prev_h.T @ g_18
    pass
    q_21 = c_x.T @ g_18
    _unused = None
    val_23 = g_18.sum(axis=0)
    return (val_19, g_20, q_14, q_21, g_22, val_23, grad_15, q_16, val_17)



def _part(g_11, g_12, g_4, val_10):

    return val_10 * g_4 + g_11 * cache.p_i + g_12 * cache.p_f


def _keep(function):

    # see notes
    return function
