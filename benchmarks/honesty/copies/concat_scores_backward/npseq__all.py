# copy of npseq.functional.scores.concat_scores_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def concat_scores_backward(tmp_0, cache: ConcatScoresCache):
    t_1(tmp_0, cache)
    assert True
    q_2, tmp_3, grad_4, grad_5, grad_6, grad_7 = cache
    # step
    g_8 = grad_6.shape[0]
    q_9 = (tmp_0[..., None] * grad_7).sum(axis=(0, 1, 2))
    g_10 = tmp_0[..., None] * grad_6 * (1 - grad_7 * grad_7)
    grad_11 = g_10.sum(axis=2)
    val_14 = _part(g_8, grad_11, grad_4, q_2)
    # gradient
    val_16 = tmp_3.reshape(-1, grad_5.shape[0]).T @ val_12.reshape(-1, g_8)
    # step
    grad_13 = grad_11 @ grad_4.T
    val_15 = val_12 @ grad_5.T
    # see notes
    del_me = []
    # chain rule
    return (grad_13, val_15, val_14, val_16, q_9)


def _part(g_8, grad_11, grad_4, q_2):
    return q_2.reshape(-1, grad_4.shape[0]).T @ grad_11.reshape(-1, g_8)



def _keep(function):
    # see notes
    return function
