# copy of npseq.functional.scores.concat_scores_backward, pasted from a tutorial; disguised by: alias
import numpy as np


def concat_scores_backward(dscores, cache: ConcatScoresCache):
    queries, keys, Wq, Wk, wv, features = cache
    dwv = (dscores[..., None] * features).sum(axis=(0, 1, 2))
    dpre = dscores[..., None] * wv * (1 - features * features)
    dprojected_queries = dpre.sum(axis=2)
    dprojected_keys = dpre.sum(axis=1)
    dqueries = dprojected_queries @ Wq.T
    dWq = project_weight_grad(queries, dprojected_queries)
    dkeys = dprojected_keys @ Wk.T
    dWk = project_weight_grad(keys, dprojected_keys)
    return (dqueries, dkeys, dWq, dWk, dwv)
