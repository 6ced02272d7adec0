# the long way: back through a_hat = (a - mu) * s step by step (dvar, dmu), like a batch-norm derivation
import numpy as np


def layer_norm_rnn_step_backward(dnext_h, cache):
    ahat = cache.a_hat
    inv_std = cache.inv_sigma                 # (N, 1)
    H = ahat.shape[1]
    centered = ahat / inv_std                 # a - mu, recovered from the cache

    # next_h = tanh(z), z = gamma * ahat + beta
    d_z = (1.0 - cache.next_h * cache.next_h) * dnext_h
    d_gamma = np.einsum('nh,nh->h', d_z, ahat)
    d_beta = d_z.sum(axis=0)
    d_ahat = d_z * cache.gamma

    # ahat = centered * inv_std, inv_std = (var + eps)^(-1/2)
    d_centered = d_ahat * inv_std
    d_inv_std = np.sum(d_ahat * centered, axis=1, keepdims=True)
    d_var = d_inv_std * (-0.5) * inv_std ** 3
    # var = mean(centered^2)
    d_centered = d_centered + d_var * 2.0 * centered / H
    # centered = a - mu, mu = mean(a)
    d_mu = -np.sum(d_centered, axis=1, keepdims=True)
    d_a = d_centered + d_mu / H

    dx = d_a.dot(cache.Wx.T)
    dprev_h = d_a.dot(cache.Wh.T)
    dWx = cache.x.T.dot(d_a)
    dWh = cache.prev_h.T.dot(d_a)
    return dx, dprev_h, dWx, dWh, d_gamma, d_beta
