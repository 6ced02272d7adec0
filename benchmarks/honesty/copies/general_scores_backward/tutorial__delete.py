# copy of npseq.functional.scores.general_scores_backward, pasted from a tutorial; disguised by: delete
import numpy as np


def general_scores_backward(dscores, cache: ScoresCache):
    queries, keys, W = cache
    dprojected = dscores @ keys
    dqueries = dprojected @ W.T
    dW = project_weight_grad(queries, dprojected)
    return (dqueries, dkeys, dW)
