# the hints as written: flatten for dgamma/dbeta, then dx = s * (g - mean(g) - x_hat * mean(g * x_hat))
import numpy as np


def layer_norm_backward(dy, cache):
    x_hat = cache.x_hat
    s = cache.inv_sigma
    gamma = cache.gamma
    D = dy.shape[-1]

    dgamma = (dy.reshape(-1, D) * x_hat.reshape(-1, D)).sum(axis=0)
    dbeta = dy.reshape(-1, D).sum(axis=0)

    g = dy * gamma
    dx = s * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return dx, dgamma, dbeta
