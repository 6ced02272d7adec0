# copy of npseq.functional.scores.general_scores_backward, pasted from a tutorial; disguised by: delete
import numpy as np


def general_scores_backward(dscores, cache: ScoresCache):
    queries, keys, W = cache
    dprojected = dscores @ keys
    dqueries = dprojected @ W.T
    dW = queries.reshape(-1, W.shape[0]).T @ dprojected.reshape(-1, W.shape[1])
    return (dqueries, dkeys, dW)
