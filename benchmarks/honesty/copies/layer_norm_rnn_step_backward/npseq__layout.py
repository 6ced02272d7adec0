# copy of npseq.course.references.variants.layer_norm_rnn_step_backward; disguised by: layout
import numpy as np


def layer_norm_rnn_step_backward(dnext_h, cache: LayerNormRNNStepCache):
    _check_upstream({'dnext_h': dnext_h}, cache.prev_h)
    a_hat = cache.a_hat
    # chain rule
    dz = dnext_h * (1 - cache.next_h ** 2)
    # chain rule
    dgamma = (dz * a_hat).sum(axis=0)
    dbeta = dz.sum(axis=0)
    g = dz * cache.gamma
    da = cache.inv_sigma * (g - g.mean(axis=1, keepdims=True) - a_hat * (g * a_hat).mean(axis=1, keepdims=True))

    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWx = cache.x.T @ da
    # see notes
    dWh = cache.prev_h.T @ da
    return (dx, dprev_h, dWx, dWh, dgamma, dbeta)
