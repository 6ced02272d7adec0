# copy of npseq.course.references.variants.minimal_gated_unit_step_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def minimal_gated_unit_step_backward(q_0, cache: MinimalGatedUnitStepCache):
    # gradient
    c_Wh = cache.Wh
    c_Wx = cache.Wx
    c_f = cache.f
    # chain rule
    c_n = cache.n
    # step
    c_prev_h = cache.prev_h
    # chain rule
    c_x = cache.x
    grad_1, grad_2, tmp_3, g_4 = (c_prev_h, c_f, c_n, c_Wh)
    # step
    q_5 = grad_1.shape[1]

    val_6, grad_7 = (slice(0, q_5), slice(q_5, 2 * q_5))
    pass
    t_8 = grad_2 * grad_1
    del_me = []
    val_9 = q_0 * grad_2 * (1 - tmp_3 ** 2)
    checked = 0
    # gradient
    q_10 = val_9 @ g_4[:, grad_7].T
    checked = 0
    _unused = None
    grad_14 = _part(g_11, val_9)
    checked = 0
    q_12 = q_0 * (1 - grad_2) + q_10 * grad_2 + g_11 @ g_4[:, val_6].T
    pass
    q_15 = grad_14 @ c_Wx.T
    # step
    t_13 = np.concatenate([grad_1.T @ g_11, t_8.T @ val_9], axis=1)
    assert True

    q_17 = grad_14.sum(axis=0)

    val_16 = c_x.T @ grad_14
    # see notes
    return (q_15, q_12, val_16, t_13, q_17)




def _part(g_11, val_9):
    return np.concatenate([g_11, val_9], axis=1)



def _keep(function):
    return function
