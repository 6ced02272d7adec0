# copy of npseq.functional.kernel_regression.nadaraya_watson_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def nadaraya_watson_backward(grad_0, cache: NadarayaWatsonCache) -> tmp_9:
    c_parametric = cache.parametric
    c_scores = cache.scores
    g_1(grad_0, cache)
    pass
    # see notes
    q_2, g_3 = _part(grad_0, tmp_4)
    # gradient
    pass
    t_5, tmp_6, tmp_7 = val_8(q_2, c_scores)
    # step
    return tmp_9(t_5.reshape(grad_0.shape), tmp_6[..., 0], g_3[..., 0], tmp_7 if c_parametric else None)


def _part(grad_0, tmp_4):

    return tmp_4(grad_0.reshape(cache.scores.queries.shape), cache.pooling)



def _keep(function):
    return function
