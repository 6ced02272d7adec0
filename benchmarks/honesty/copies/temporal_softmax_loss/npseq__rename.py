# copy of npseq.functional.losses.temporal_softmax_loss; disguised by: rename
import numpy as np


def temporal_softmax_loss(val_0, val_1, q_2, grad_3=False):
    t_4(val_0, val_1, q_2)
    xp = backend.get_array_module(val_0)
    q_5, t_6, q_7 = val_0.shape
    g_8 = q_2.astype(val_0.dtype)
    q_9, q_7 = q_10(val_0)
    g_11 = xp.take_along_axis(q_9, val_1[:, :, None], axis=-1)[:, :, 0]
    t_12 = -(g_8 * g_11).sum() / q_5
    val_13 = xp.exp(q_9)
    val_13[xp.arange(q_5)[:, None], xp.arange(t_6)[None, :], val_1] -= 1
    val_13 *= g_8[:, :, None] / q_5
    return (float(t_12), val_13)
