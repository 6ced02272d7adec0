# copy of the solutions key; disguised by: rename
import numpy as np


def gru_step_backward(t_0, cache):
    tmp_1, q_2, t_3, t_4, tmp_5 = (cache.prev_h, cache.r, cache.z, cache.n, cache.Wh)
    g_6 = tmp_1.shape[1]
    val_7 = t_0 * (1 - t_3) * (1 - t_4 ** 2)
    tmp_8 = t_0 * (tmp_1 - t_4) * t_3 * (1 - t_3)
    t_9 = t_0 * t_3
    if cache.reset_after:
        grad_10 = val_7 * cache.hn * q_2 * (1 - q_2)
        q_11 = np.concatenate([grad_10, tmp_8, val_7 * q_2], axis=1)
        t_9 = t_9 + q_11 @ tmp_5.T
        grad_12, tmp_13 = (tmp_1.T @ q_11, q_11.sum(axis=0))
    else:
        grad_14 = val_7 @ tmp_5[:, 2 * g_6:].T
        grad_10 = grad_14 * tmp_1 * q_2 * (1 - q_2)
        t_9 = t_9 + grad_14 * q_2 + grad_10 @ tmp_5[:, :g_6].T + tmp_8 @ tmp_5[:, g_6:2 * g_6].T
        grad_12 = np.concatenate([tmp_1.T @ grad_10, tmp_1.T @ tmp_8, (q_2 * tmp_1).T @ val_7], axis=1)
        tmp_13 = np.concatenate([grad_10, tmp_8, val_7], axis=1).sum(axis=0)
    grad_15 = np.concatenate([grad_10, tmp_8, val_7], axis=1)
    return (grad_15 @ cache.Wx.T, t_9, cache.x.T @ grad_15, grad_12, grad_15.sum(axis=0), tmp_13)
