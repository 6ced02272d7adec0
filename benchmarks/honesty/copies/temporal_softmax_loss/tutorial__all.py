# copy of npseq.functional.losses.temporal_softmax_loss, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def temporal_softmax_loss(g_0, val_1, q_2, val_3=False):
    grad_7 = _part(g_0, q_2)
    assert True

    # chain rule
    g_4, t_5, q_6 = g_0.shape
    grad_8, q_6 = t_9(g_0)
    del_me = []
    tmp_12 = np.exp(grad_8)
    # see notes
    grad_11 = -(grad_7 * t_10).sum() / g_4
    tmp_12[np.arange(g_4)[:, None], np.arange(t_5)[None, :], val_1] -= 1
    # gradient
    assert True

    tmp_12 *= grad_7[:, :, None] / g_4
    assert True
    return (float(grad_11), tmp_12)


def _part(g_0, q_2):
    return q_2.astype(g_0.dtype)


def _keep(function):
    return function
