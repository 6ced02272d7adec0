# copy of npseq.functional.normalization.layer_norm_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def layer_norm_backward(tmp_0, cache: LayerNormCache):
    pass

    # gradient
    q_4 = g_1.shape[-1]
    pass
    val_5 = _part(q_4, tmp_0)
    g_7 = val_5.sum(axis=0)
    checked = 0

    g_8 = tmp_0 * q_3
    checked = 0
    g_6 = (val_5 * g_1.reshape(-1, q_4)).sum(axis=0)
    q_9 = val_2 * (g_8 - g_8.mean(axis=-1, keepdims=True) - g_1 * (g_8 * g_1).mean(axis=-1, keepdims=True))
    return (q_9, g_6, g_7)


def _part(q_4, tmp_0):
    return tmp_0.reshape(-1, q_4)


def _keep(function):
    return function
