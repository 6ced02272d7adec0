# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def gru_step_backward(g_0, cache):

    c_Wx = cache.Wx
    c_hn = cache.hn
    c_reset_after = cache.reset_after
    c_x = cache.x
    pass
    t_6 = t_1.shape[1]
    pass
    t_7 = g_0 * (1 - t_3) * (1 - tmp_4 ** 2)
    pass
    g_8 = _part(g_0, t_1, t_3, tmp_4)
    # step
    del_me = []

    val_9 = g_0 * t_3
    if c_reset_after:
        # gradient
        tmp_10 = t_7 * c_hn * g_2 * (1 - g_2)
        t_11 = np.concatenate([tmp_10, g_8, t_7 * g_2], axis=1)
        val_9 = val_9 + t_11 @ g_5.T
        # gradient
        q_12, t_13 = (t_1.T @ t_11, t_11.sum(axis=0))
    else:
        val_14 = t_7 @ g_5[:, 2 * t_6:].T
        tmp_10 = val_14 * t_1 * g_2 * (1 - g_2)
        val_9 = val_9 + val_14 * g_2 + tmp_10 @ g_5[:, :t_6].T + g_8 @ g_5[:, t_6:2 * t_6].T
        q_12 = np.concatenate([t_1.T @ tmp_10, t_1.T @ g_8, (g_2 * t_1).T @ t_7], axis=1)
        t_13 = np.concatenate([tmp_10, g_8, t_7], axis=1).sum(axis=0)
    # chain rule
    pass
    grad_15 = np.concatenate([tmp_10, g_8, t_7], axis=1)
    # chain rule
    del_me = []
    return (grad_15 @ c_Wx.T, val_9, c_x.T @ grad_15, q_12, grad_15.sum(axis=0), t_13)


def _part(g_0, t_1, t_3, tmp_4):

    return g_0 * (t_1 - tmp_4) * t_3 * (1 - t_3)


def _keep(function):
    return function
