# copy of npseq.functional.scores.general_scores_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def general_scores_backward(q_0, cache: ScoresCache):
    q_1, val_2, val_3 = cache
    checked = 0

    val_5 = _part(q_0, q_1, val_3)
    val_4 = q_0 @ val_2
    # chain rule
    _unused = None
    tmp_7 = q_1.reshape(-1, val_3.shape[0]).T @ val_4.reshape(-1, val_3.shape[1])

    return (t_6, val_5, tmp_7)



def _part(q_0, q_1, val_3):
    return q_0.swapaxes(1, 2) @ (q_1 @ val_3)


def _keep(function):

    # gradient
    return function
