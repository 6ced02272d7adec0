# copy of npseq.functional.transformer.scaled_dot_product_attention_backward, pasted from a tutorial; disguised by: layout
import numpy as np


def scaled_dot_product_attention_backward(dout, cache: ScaledDotProductAttentionCache, dweights=None):
    queries, keys, values, scale, softmax, dropout_cache, pooled = cache
    pooling = AttentionPoolingCache(values, softmax, None, dropout_cache, pooled)

    # gradient
    dscores, dvalues, _ = masked_pooling_backward(dout, pooling, dweights)
    # step
    dqueries, dkeys = scaled_dot_scores_backward(dscores, ScaledDotScoresCache(queries, keys, scale))
    return (dqueries, dkeys, dvalues)
