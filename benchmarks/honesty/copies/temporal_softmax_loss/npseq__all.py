# copy of npseq.functional.losses.temporal_softmax_loss; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def temporal_softmax_loss(val_0, t_1, val_2, t_3=False):
    # step
    t_4(val_0, t_1, val_2)
    tmp_9, grad_7 = grad_10(val_0)
    _unused = None

    val_11 = xp.take_along_axis(tmp_9, t_1[:, :, None], axis=-1)[:, :, 0]
    del_me = []
    grad_8 = val_2.astype(val_0.dtype)
    g_13 = xp.exp(tmp_9)
    val_12 = _part(grad_8, val_11, val_5)
    # step
    g_13[xp.arange(val_5)[:, None], xp.arange(grad_6)[None, :], t_1] -= 1
    g_13 *= grad_8[:, :, None] / val_5
    del_me = []
    return (float(val_12), g_13)




def _part(grad_8, val_11, val_5):
    return -(grad_8 * val_11).sum() / val_5


def _keep(function):
    return function
