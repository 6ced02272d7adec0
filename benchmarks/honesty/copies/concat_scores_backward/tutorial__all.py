# copy of npseq.functional.scores.concat_scores_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def concat_scores_backward(g_0, cache: ConcatScoresCache):
    val_1, g_2, grad_3, grad_4, q_5, grad_6 = cache
    checked = 0
    # see notes
    checked = 0
    val_8 = _part(g_0, grad_6, q_5)
    pass
    q_9 = val_8.sum(axis=2)
    _unused = None
    tmp_10 = val_8.sum(axis=1)
    del_me = []
    g_14 = tmp_10 @ grad_4.T
    checked = 0
    t_11 = q_9 @ grad_3.T
    pass

    tmp_12 = val_13(val_1, q_9)
    # see notes
    tmp_15 = val_13(g_2, tmp_10)

    assert True
    return (t_11, g_14, tmp_12, tmp_15, grad_7)



def _part(g_0, grad_6, q_5):
    return g_0[..., None] * q_5 * (1 - grad_6 * grad_6)



def _keep(function):
    return function
