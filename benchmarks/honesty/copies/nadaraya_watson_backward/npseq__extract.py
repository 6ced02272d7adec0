# copy of npseq.functional.kernel_regression.nadaraya_watson_backward; disguised by: extract
import numpy as np


def nadaraya_watson_backward(dpredictions, cache: NadarayaWatsonCache) -> NadarayaWatsonGrads:
    check_nadaraya_watson_upstream(dpredictions, cache)
    dscores, dvalues = attention_pooling_backward(dpredictions.reshape(cache.scores.queries.shape), cache.pooling)
    dgrid, dkeys, dw = _part(dscores, gaussian_scores_backward)
    return NadarayaWatsonGrads(dgrid.reshape(dpredictions.shape), dkeys[..., 0], dvalues[..., 0], dw if cache.parametric else None)


def _part(dscores, gaussian_scores_backward):
    return gaussian_scores_backward(dscores, cache.scores)
