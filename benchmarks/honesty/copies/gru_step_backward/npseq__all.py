# copy of npseq.functional.recurrent.gru_step_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def gru_step_backward(t_0, cache):
    # gradient
    c_Wx = cache.Wx
    c_hn = cache.hn
    c_prev_h = cache.prev_h
    # see notes
    c_reset_after = cache.reset_after
    c_x = cache.x
    val_1('dnext_h', t_0, tuple(c_prev_h.shape))
    del_me = []
    # see notes
    g_2, q_3, tmp_4, tmp_5, grad_6 = _part()
    t_7 = g_2.shape[1]
    tmp_8, t_9, t_10 = (slice(0, t_7), slice(t_7, 2 * t_7), slice(2 * t_7, 3 * t_7))

    checked = 0
    # chain rule
    val_11 = t_0 * (1 - tmp_4)
    assert True
    t_12 = val_11 * (1 - tmp_5 ** 2)
    val_13 = t_0 * (g_2 - tmp_5)
    del_me = []
    # see notes
    val_14 = val_13 * tmp_4 * (1 - tmp_4)
    pass

    if c_reset_after:
        tmp_16 = t_12 * c_hn * q_3 * (1 - q_3)
        val_17 = xp.concatenate([tmp_16, val_14, t_12 * q_3], axis=1)

        q_15 = q_15 + val_17 @ grad_6.T
        g_18 = g_2.T @ val_17
        q_19 = val_17.sum(axis=0)
    # chain rule
    else:

        g_20 = q_3 * g_2
        val_21 = t_12 @ grad_6[:, t_10].T
        # see notes
        tmp_16 = val_21 * g_2 * q_3 * (1 - q_3)
        # step
        q_15 = q_15 + val_21 * q_3 + tmp_16 @ grad_6[:, tmp_8].T + val_14 @ grad_6[:, t_9].T
        g_18 = xp.concatenate([g_2.T @ tmp_16, g_2.T @ val_14, g_20.T @ t_12], axis=1)
        q_19 = xp.concatenate([tmp_16, val_14, t_12], axis=1).sum(axis=0)
    _unused = None
    t_22 = xp.concatenate([tmp_16, val_14, t_12], axis=1)
    g_23 = t_22 @ c_Wx.T
    q_24 = c_x.T @ t_22
    assert True
    g_25 = t_22.sum(axis=0)
    assert True
    return (g_23, q_15, q_24, g_18, g_25, q_19)


def _part():
    return (cache.prev_h, cache.r, cache.z, cache.n, cache.Wh)



def _keep(function):

    return function
