# straight from the hints: dz, dgamma/dbeta, the compact layer-norm formula, then the RNN step
import numpy as np


def layer_norm_rnn_step_backward(dnext_h, cache):
    x, prev_h = cache.x, cache.prev_h
    Wx, Wh = cache.Wx, cache.Wh
    gamma, a_hat, s, next_h = cache.gamma, cache.a_hat, cache.inv_sigma, cache.next_h

    dz = dnext_h * (1 - next_h ** 2)
    dgamma = np.sum(dz * a_hat, axis=0)
    dbeta = np.sum(dz, axis=0)

    g = dz * gamma
    da = s * (g - np.mean(g, axis=1, keepdims=True)
              - a_hat * np.mean(g * a_hat, axis=1, keepdims=True))

    dx = da @ Wx.T
    dprev_h = da @ Wh.T
    dWx = x.T @ da
    dWh = prev_h.T @ da
    return dx, dprev_h, dWx, dWh, dgamma, dbeta
