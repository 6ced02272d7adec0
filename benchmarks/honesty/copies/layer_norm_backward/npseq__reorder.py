# copy of npseq.functional.normalization.layer_norm_backward; disguised by: reorder
import numpy as np


def layer_norm_backward(dy, cache: LayerNormCache):
    check_shape('dy', dy, cache.x_hat.shape)
    x_hat, inv_sigma, gamma = cache
    dim = x_hat.shape[-1]
    rows = dy.reshape(-1, dim)
    dbeta = rows.sum(axis=0)
    g = dy * gamma
    dgamma = (rows * x_hat.reshape(-1, dim)).sum(axis=0)
    dx = inv_sigma * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return (dx, dgamma, dbeta)
