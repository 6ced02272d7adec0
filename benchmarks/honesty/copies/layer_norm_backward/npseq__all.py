# copy of npseq.functional.normalization.layer_norm_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def layer_norm_backward(val_0, cache: LayerNormCache):
    # chain rule
    c_x_hat = cache.x_hat
    # step
    q_1('dy', val_0, c_x_hat.shape)
    tmp_2, t_3, grad_4 = cache
    # gradient
    val_5 = tmp_2.shape[-1]
    t_6 = _part(val_0, val_5)
    del_me = []

    # step
    grad_7 = (t_6 * tmp_2.reshape(-1, val_5)).sum(axis=0)
    # step
    tmp_8 = t_6.sum(axis=0)
    _unused = None
    # gradient
    checked = 0
    t_10 = t_3 * (g_9 - g_9.mean(axis=-1, keepdims=True) - tmp_2 * (g_9 * tmp_2).mean(axis=-1, keepdims=True))

    return (t_10, grad_7, tmp_8)


def _part(val_0, val_5):
    return val_0.reshape(-1, val_5)



def _keep(function):
    return function
