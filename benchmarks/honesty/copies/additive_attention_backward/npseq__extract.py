# copy of npseq.functional.attention.additive_attention_backward; disguised by: extract
import numpy as np


def additive_attention_backward(dcontext, cache: AdditiveAttentionCache, dweights=None):
    score_cache, pooling = cache
    dscores, dvalues = attention_pooling_backward(dcontext, pooling, dweights)
    dqueries, dkeys, dWq, dWk, dwv = _part(concat_scores_backward, dscores, score_cache)
    return (dqueries, dkeys, dvalues, dWq, dWk, dwv)


def _part(concat_scores_backward, dscores, score_cache):
    return concat_scores_backward(dscores, score_cache)
