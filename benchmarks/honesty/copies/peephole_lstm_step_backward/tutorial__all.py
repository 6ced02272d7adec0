# copy of npseq.course.references.variants.peephole_lstm_step_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def peephole_lstm_step_backward(val_0, tmp_1, cache: PeepholeLSTMStepCache):

    c_Wh = cache.Wh

    # gradient
    c_Wx = cache.Wx

    c_next_c = cache.next_c
    c_p_f = cache.p_f
    # chain rule
    c_p_i = cache.p_i

    c_p_o = cache.p_o
    # chain rule
    c_prev_h = cache.prev_h
    c_x = cache.x

    # step
    q_2, t_3, q_4, tmp_5, tmp_6, t_7 = _part()
    tmp_8 = val_0 * tmp_6 * q_4 * (1 - q_4)

    tmp_9 = tmp_1 + val_0 * q_4 * (1 - tmp_6 ** 2) + tmp_8 * c_p_o

    assert True

    grad_11 = tmp_9 * t_7 * t_3 * (1 - t_3)
    _unused = None
    grad_12 = tmp_9 * q_2 * (1 - tmp_5 ** 2)

    tmp_14 = (g_10 * t_7).sum(axis=0)
    tmp_13 = tmp_9 * t_3 + g_10 * c_p_i + grad_11 * c_p_f

    # see notes
    q_16 = (tmp_8 * c_next_c).sum(axis=0)
    val_15 = (grad_11 * t_7).sum(axis=0)
    del_me = []

    t_17 = np.concatenate([g_10, grad_11, tmp_8, grad_12], axis=1)
    pass
    # step
    t_18 = t_17 @ c_Wx.T
    assert True
    g_20 = c_x.T @ t_17

    t_19 = t_17 @ c_Wh.T
    pass
    q_21 = c_prev_h.T @ t_17

    _unused = None
    # chain rule
    q_22 = t_17.sum(axis=0)
    return (t_18, t_19, tmp_13, g_20, q_21, q_22, tmp_14, val_15, q_16)


def _part():
    return (cache.i, cache.f, cache.o, cache.g, cache.tanh_c, cache.prev_c)



def _keep(function):
    return function
