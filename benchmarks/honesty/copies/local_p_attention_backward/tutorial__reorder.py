# copy of npseq.course.references.attention.local_p_attention_backward, pasted from a tutorial; disguised by: reorder
import numpy as np


def local_p_attention_backward(dcontext, cache: LocalPAttentionCache):
    dscores, dvalues, dcenters = local_attention_pooling_backward(dcontext, cache.pooling)
    dqueries_by_scores, dkeys, dW = general_scores_backward(dscores, cache.scores)
    dqueries_by_position, dWp, dvp = predictive_position_backward(dcenters, cache.position)
    dqueries = dqueries_by_scores + dqueries_by_position
    return (dqueries, dkeys, dvalues, dW, dWp, dvp)
