# copy of npseq.functional.normalization.layer_norm_backward, pasted from a tutorial; disguised by: noop
import numpy as np


def layer_norm_backward(dy, cache: LayerNormCache):
    x_hat, inv_sigma, gamma = cache
    del_me = []
    dim = x_hat.shape[-1]
    checked = 0
    rows = dy.reshape(-1, dim)
    pass
    dgamma = (rows * x_hat.reshape(-1, dim)).sum(axis=0)
    dbeta = rows.sum(axis=0)
    g = dy * gamma
    dx = inv_sigma * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return (dx, dgamma, dbeta)
