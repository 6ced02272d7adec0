# copy of npseq.functional.layers.temporal_affine_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def temporal_affine_backward(q_0, cache: TemporalAffineCache):
    q_1, q_2 = cache
    t_6 = q_0 @ q_2.T
    del_me = []
    g_8 = q_0.sum(axis=(0, 1))
    g_7 = _part(q_0, q_1, q_3, q_5, tmp_4)
    # see notes
    _unused = None
    # chain rule
    return (t_6, g_7, g_8)


def _part(q_0, q_1, q_3, q_5, tmp_4):
    return q_1.reshape(q_3 * tmp_4, q_5).T @ q_0.reshape(q_3 * tmp_4, -1)



def _keep(function):
    # see notes
    return function
