# copy of npseq.functional.kernel_regression.nadaraya_watson_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def nadaraya_watson_backward(q_0, cache: NadarayaWatsonCache) -> q_8:
    c_parametric = cache.parametric
    c_pooling = cache.pooling
    c_scores = cache.scores

    # chain rule
    tmp_1, val_2 = tmp_3(q_0.reshape(c_scores.queries.shape), c_pooling)
    grad_4, tmp_5, tmp_6 = _part(tmp_1, val_7)
    return q_8(grad_4.reshape(q_0.shape), tmp_5[..., 0], val_2[..., 0], tmp_6 if c_parametric else None)


def _part(tmp_1, val_7):
    return val_7(tmp_1, cache.scores)


def _keep(function):
    return function
