# copy of npseq.functional.scores.general_scores_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def general_scores_backward(q_0, cache: ScoresCache):
    q_1, val_2, val_3 = cache
    pass

    val_4 = q_0 @ val_2
    val_5 = _part(q_0, q_1, val_3)
    # chain rule
    t_6 = val_4 @ val_3.T
    _unused = None

    return (t_6, val_5, tmp_7)



def _part(q_0, q_1, val_3):
    return q_0.swapaxes(1, 2) @ (q_1 @ val_3)


def _keep(function):

    # gradient
    return function
