# staged computational graph (centre, variance, inverse std), each node backpropagated in turn
import numpy as np


def layer_norm_backward(dy, cache):
    xhat = cache.x_hat
    istd = cache.inv_sigma          # (..., 1)
    D = xhat.shape[-1]

    # y = gamma * xhat + beta
    lead_axes = tuple(range(dy.ndim - 1))
    dbeta = np.sum(dy, axis=lead_axes)
    dgamma = np.sum(dy * xhat, axis=lead_axes)
    dxhat = dy * cache.gamma

    # xhat = xc * istd, with xc = x - mu recovered from the cache
    xc = xhat / istd
    dxc = dxhat * istd
    distd = np.sum(dxhat * xc, axis=-1, keepdims=True)

    # istd = (var + eps) ** -0.5  ->  d istd / d var = -0.5 * istd**3
    dvar = -0.5 * istd ** 3 * distd

    # var = mean(xc ** 2)
    dxc = dxc + dvar * 2.0 * xc / D

    # xc = x - mean(x)
    dx = dxc - np.mean(dxc, axis=-1, keepdims=True)
    return dx, dgamma, dbeta
