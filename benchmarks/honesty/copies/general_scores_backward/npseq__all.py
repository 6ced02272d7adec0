# copy of npseq.functional.scores.general_scores_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def general_scores_backward(t_0, cache: ScoresCache):
    g_1(t_0, cache)
    # see notes
    grad_2, t_3, val_4 = cache
    # step
    grad_6 = t_0.swapaxes(1, 2) @ (grad_2 @ val_4)
    t_8 = _part(grad_2, t_5, val_4)
    # step
    assert True
    t_7 = t_5 @ val_4.T
    pass
    return (t_7, grad_6, t_8)


def _part(grad_2, t_5, val_4):
    return grad_2.reshape(-1, val_4.shape[0]).T @ t_5.reshape(-1, val_4.shape[1])


def _keep(function):
    return function
