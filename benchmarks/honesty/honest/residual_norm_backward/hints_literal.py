# three lines from the hints on top of my layer-norm and feed-forward backwards (also written from their hints)
import numpy as np


def layer_norm_backward(dy, cache):
    D = dy.shape[-1]
    x_hat = cache.x_hat
    dgamma = (dy * x_hat).reshape(-1, D).sum(axis=0)
    dbeta = dy.reshape(-1, D).sum(axis=0)
    g = dy * cache.gamma
    dx = cache.inv_sigma * (g - g.mean(axis=-1, keepdims=True)
                            - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return dx, dgamma, dbeta


def feed_forward_backward(dy, cache):
    D = cache.x.shape[-1]
    F = cache.W1.shape[1]
    x = cache.x.reshape(-1, D)
    z = cache.hidden.reshape(-1, F)
    g = dy.reshape(-1, dy.shape[-1])

    dW2 = z.T @ g
    db2 = g.sum(axis=0)
    dz = g @ cache.W2.T
    if cache.activation == "relu":
        da = dz * (z > 0)
    else:
        a = cache.act.x.reshape(-1, F)
        t = cache.act.tanh.reshape(-1, F)
        da = dz * ((1 + t) / 2 + a / 2 * (1 - t ** 2) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * a ** 2))
    dW1 = x.T @ da
    db1 = da.sum(axis=0)
    dx = (da @ cache.W1.T).reshape(cache.x.shape)
    return dx, dW1, db1, dW2, db2


def residual_norm_backward(dy, cache):
    ds, dgamma, dbeta = layer_norm_backward(dy, cache.norm)
    df, dW1, db1, dW2, db2 = feed_forward_backward(ds, cache.sublayer)
    dx = ds + df
    return dx, dW1, db1, dW2, db2, dgamma, dbeta
