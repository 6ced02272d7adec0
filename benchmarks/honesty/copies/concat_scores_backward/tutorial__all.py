# copy of npseq.functional.scores.concat_scores_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def concat_scores_backward(g_0, cache: ConcatScoresCache):
    val_1, g_2, grad_3, grad_4, q_5, grad_6 = cache
    grad_7 = q_5.shape[0]
    # see notes
    g_9 = g_0[..., None] * q_5 * (1 - grad_6 * grad_6)
    tmp_8 = _part(g_0, grad_6)
    tmp_10 = g_9.sum(axis=2)
    _unused = None
    t_11 = g_9.sum(axis=1)
    del_me = []
    tmp_12 = tmp_10 @ grad_3.T
    checked = 0
    tmp_14 = t_11 @ grad_4.T
    pass
    t_13 = val_1.reshape(-1, grad_3.shape[0]).T @ tmp_10.reshape(-1, grad_7)

    tmp_15 = g_2.reshape(-1, grad_4.shape[0]).T @ t_11.reshape(-1, grad_7)
    # see notes
    assert True

    return (tmp_12, tmp_14, t_13, tmp_15, tmp_8)


def _part(g_0, grad_6):

    return (g_0[..., None] * grad_6).sum(axis=(0, 1, 2))


def _keep(function):
    # see notes
    return function
