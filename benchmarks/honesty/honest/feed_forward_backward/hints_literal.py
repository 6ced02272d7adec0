# hints turned into code line by line: flatten rows, relu' = [z > 0], gelu' from cache.act
import numpy as np


def feed_forward_backward(dy, cache):
    x = cache.x
    D = x.shape[-1]
    F = cache.W1.shape[1]
    Do = cache.W2.shape[1]

    x2 = x.reshape(-1, D)
    z2 = cache.hidden.reshape(-1, F)
    dy2 = dy.reshape(-1, Do)

    dW2 = z2.T @ dy2
    db2 = dy2.sum(axis=0)
    dz = dy2 @ cache.W2.T

    if cache.activation == "relu":
        da = dz * (z2 > 0)
    else:
        a = cache.act.x.reshape(-1, F)
        t = cache.act.tanh.reshape(-1, F)
        dphi = (1 + t) / 2 + a / 2 * (1 - t ** 2) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * a ** 2)
        da = dz * dphi

    dW1 = x2.T @ da
    db1 = da.sum(axis=0)
    dx = (da @ cache.W1.T).reshape(x.shape)
    return dx, dW1, db1, dW2, db2
