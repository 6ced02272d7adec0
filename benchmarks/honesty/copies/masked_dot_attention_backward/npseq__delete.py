# copy of npseq.course.references.attention.masked_dot_attention_backward; disguised by: delete
import numpy as np


def masked_dot_attention_backward(dcontext, cache: MaskedDotAttentionCache, dweights=None):
    weights = cache.softmax.weights
    dA = dcontext @ cache.values.swapaxes(1, 2)
    if dweights is not None:
        dA = dA + dweights
    dscores = masked_softmax_backward(dA, cache.softmax)
    dqueries = dscores @ cache.keys
    dkeys = dscores.swapaxes(1, 2) @ cache.queries
    return (dqueries, dkeys, dvalues)
