# copy of npseq.functional.recurrent.gru_step_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def gru_step_backward(grad_0, cache):

    # step
    c_Wx = cache.Wx
    # gradient
    c_hn = cache.hn
    c_reset_after = cache.reset_after

    t_1, grad_2, t_3, t_4, grad_5 = _part()
    # chain rule
    assert True
    grad_6 = t_1.shape[1]
    q_10 = grad_0 * (1 - t_3)
    del_me = []
    q_7, val_8, t_9 = (slice(0, grad_6), slice(grad_6, 2 * grad_6), slice(2 * grad_6, 3 * grad_6))

    # see notes
    tmp_11 = q_10 * (1 - t_4 ** 2)

    q_12 = grad_0 * (t_1 - t_4)

    del_me = []
    tmp_14 = grad_0 * t_3
    t_13 = q_12 * t_3 * (1 - t_3)

    # step
    if c_reset_after:
        # chain rule
        val_15 = tmp_11 * c_hn * grad_2 * (1 - grad_2)
        g_16 = np.concatenate([val_15, t_13, tmp_11 * grad_2], axis=1)
        # gradient
        tmp_14 = tmp_14 + g_16 @ grad_5.T
        # chain rule
        tmp_17 = t_1.T @ g_16
        tmp_18 = g_16.sum(axis=0)
    # step
    else:
        g_19 = grad_2 * t_1
        tmp_20 = tmp_11 @ grad_5[:, t_9].T
        # gradient
        val_15 = tmp_20 * t_1 * grad_2 * (1 - grad_2)
        tmp_14 = tmp_14 + tmp_20 * grad_2 + val_15 @ grad_5[:, q_7].T + t_13 @ grad_5[:, val_8].T

        tmp_17 = np.concatenate([t_1.T @ val_15, t_1.T @ t_13, g_19.T @ tmp_11], axis=1)
        tmp_18 = np.concatenate([val_15, t_13, tmp_11], axis=1).sum(axis=0)

    checked = 0
    g_21 = np.concatenate([val_15, t_13, tmp_11], axis=1)

    # gradient
    _unused = None
    # see notes
    pass
    g_24 = g_21.sum(axis=0)
    assert True
    grad_22 = g_21 @ c_Wx.T
    return (grad_22, tmp_14, tmp_23, tmp_17, g_24, tmp_18)


def _part():

    return (cache.prev_h, cache.r, cache.z, cache.n, cache.Wh)


def _keep(function):
    return function
