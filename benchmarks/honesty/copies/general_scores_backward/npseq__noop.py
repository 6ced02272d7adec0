# copy of npseq.functional.scores.general_scores_backward; disguised by: noop
import numpy as np


def general_scores_backward(dscores, cache: ScoresCache):
    check_dscores(dscores, cache)
    queries, keys, W = cache
    _unused = None
    dprojected = dscores @ keys
    dkeys = dscores.swapaxes(1, 2) @ (queries @ W)
    dqueries = dprojected @ W.T
    dW = project_weight_grad(queries, dprojected)
    return (dqueries, dkeys, dW)
