# copy of npseq.functional.attention.additive_attention_backward, pasted from a tutorial; disguised by: decorate
import numpy as np


@_keep
def additive_attention_backward(dcontext, cache: AdditiveAttentionCache, dweights=None):
    score_cache, pooling = cache
    dscores, dvalues = attention_pooling_backward(dcontext, pooling, dweights)
    dqueries, dkeys, dWq, dWk, dwv = concat_scores_backward(dscores, score_cache)
    return (dqueries, dkeys, dvalues, dWq, dWk, dwv)


def _keep(function):
    return function
