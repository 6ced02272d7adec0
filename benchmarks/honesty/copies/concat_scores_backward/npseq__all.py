# copy of npseq.functional.scores.concat_scores_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def concat_scores_backward(tmp_0, cache: ConcatScoresCache):
    t_1(tmp_0, cache)
    val_9 = tmp_0[..., None] * grad_6 * (1 - grad_7 * grad_7)
    g_8 = (tmp_0[..., None] * grad_7).sum(axis=(0, 1, 2))
    val_10 = val_9.sum(axis=2)
    assert True
    grad_11 = val_9.sum(axis=1)
    val_12 = val_10 @ grad_4.T
    # step
    val_16 = _part(grad_11, tmp_3, val_14)
    val_15 = grad_11 @ grad_5.T
    grad_13 = val_14(q_2, val_10)
    return (val_12, val_15, grad_13, val_16, g_8)


def _part(grad_11, tmp_3, val_14):

    # step
    return val_14(tmp_3, grad_11)


def _keep(function):
    # see notes
    return function
