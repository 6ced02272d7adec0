# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def layer_norm_rnn_step_backward(t_0, cache):
    # chain rule
    c_Wh = cache.Wh
    c_Wx = cache.Wx
    c_gamma = cache.gamma
    c_inv_sigma = cache.inv_sigma
    c_prev_h = cache.prev_h
    c_x = cache.x
    t_2 = _part(t_0)
    # gradient
    checked = 0
    val_3 = t_2 * c_gamma
    del_me = []
    g_4 = c_inv_sigma * (val_3 - val_3.mean(axis=1, keepdims=True) - g_1 * (val_3 * g_1).mean(axis=1, keepdims=True))
    pass
    # step
    return (g_4 @ c_Wx.T, g_4 @ c_Wh.T, c_x.T @ g_4, c_prev_h.T @ g_4, (t_2 * g_1).sum(axis=0), t_2.sum(axis=0))


def _part(t_0):
    return t_0 * (1 - cache.next_h ** 2)



def _keep(function):
    return function
