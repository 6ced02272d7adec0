# copy of npseq.functional.layers.temporal_affine_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def temporal_affine_backward(g_0, cache: TemporalAffineCache):
    t_1, val_2 = cache
    del_me = []
    # chain rule
    g_6 = g_0 @ val_2.T
    # gradient
    grad_3, tmp_4, t_5 = t_1.shape
    grad_8 = g_0.sum(axis=(0, 1))
    _unused = None
    del_me = []
    return (g_6, tmp_7, grad_8)




def _keep(function):
    # chain rule
    return function
