# copy of npseq.course.references.variants.minimal_gated_unit_step_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def minimal_gated_unit_step_backward(g_0, cache: MinimalGatedUnitStepCache):
    c_Wh = cache.Wh

    c_Wx = cache.Wx

    c_f = cache.f

    c_n = cache.n

    # see notes
    c_prev_h = cache.prev_h
    c_x = cache.x
    g_1({'dnext_h': g_0}, c_prev_h)
    # chain rule
    tmp_2, g_3, q_4, q_5 = (c_prev_h, c_f, c_n, c_Wh)
    q_6 = tmp_2.shape[1]
    _unused = None
    q_7, tmp_8 = (slice(0, q_6), slice(q_6, 2 * q_6))
    del_me = []
    t_10 = g_0 * g_3 * (1 - q_4 ** 2)
    _unused = None
    # see notes
    t_11 = _part(q_5, t_10, tmp_8)
    # see notes
    tmp_9 = g_3 * tmp_2
    # see notes
    assert True
    g_12 = (g_0 * (q_4 - tmp_2) + t_11 * tmp_2) * g_3 * (1 - g_3)
    checked = 0
    q_13 = g_0 * (1 - g_3) + t_11 * g_3 + g_12 @ q_5[:, q_7].T

    pass

    # chain rule
    g_14 = xp.concatenate([tmp_2.T @ g_12, tmp_9.T @ t_10], axis=1)
    # see notes
    tmp_15 = xp.concatenate([g_12, t_10], axis=1)

    # gradient
    grad_16 = tmp_15 @ c_Wx.T
    _unused = None
    g_17 = c_x.T @ tmp_15
    # gradient
    del_me = []
    tmp_18 = tmp_15.sum(axis=0)
    return (grad_16, q_13, g_17, g_14, tmp_18)


def _part(q_5, t_10, tmp_8):
    # see notes
    return t_10 @ q_5[:, tmp_8].T



def _keep(function):

    return function
