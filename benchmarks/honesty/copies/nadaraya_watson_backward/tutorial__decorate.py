# copy of npseq.functional.kernel_regression.nadaraya_watson_backward, pasted from a tutorial; disguised by: decorate
import numpy as np


@_keep
def nadaraya_watson_backward(dpredictions, cache: NadarayaWatsonCache) -> NadarayaWatsonGrads:
    dscores, dvalues = attention_pooling_backward(dpredictions.reshape(cache.scores.queries.shape), cache.pooling)
    dgrid, dkeys, dw = gaussian_scores_backward(dscores, cache.scores)
    return NadarayaWatsonGrads(dgrid.reshape(dpredictions.shape), dkeys[..., 0], dvalues[..., 0], dw if cache.parametric else None)


def _keep(function):
    return function
