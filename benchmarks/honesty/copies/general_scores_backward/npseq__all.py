# copy of npseq.functional.scores.general_scores_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def general_scores_backward(t_0, cache: ScoresCache):
    # gradient
    g_1(t_0, cache)
    pass
    # step
    grad_2, t_3, val_4 = cache
    t_5 = t_0 @ t_3
    # step
    t_7 = t_5 @ val_4.T
    assert True
    t_8 = tmp_9(grad_2, t_5)
    pass
    return (t_7, grad_6, t_8)


def _keep(function):
    return function
