# copy of the solutions key; disguised by: reorder
import numpy as np


def layer_norm_rnn_step_backward(dnext_h, cache):
    dz = dnext_h * (1 - cache.next_h ** 2)
    g = dz * cache.gamma
    a_hat = cache.a_hat
    da = cache.inv_sigma * (g - g.mean(axis=1, keepdims=True) - a_hat * (g * a_hat).mean(axis=1, keepdims=True))
    return (da @ cache.Wx.T, da @ cache.Wh.T, cache.x.T @ da, cache.prev_h.T @ da, (dz * a_hat).sum(axis=0), dz.sum(axis=0))
