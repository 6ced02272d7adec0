# loops over every position (n, t), accumulating outer products for the shared weights
import numpy as np


def _relu_prime(z):
    return (z > 0).astype(float)


def _gelu_prime(a, t):
    k = np.sqrt(2 / np.pi)
    sech2 = 1 - t * t
    return 0.5 * (1 + t) + 0.5 * a * sech2 * k * (1 + 0.134145 * a * a)


def feed_forward_backward(dy, cache):
    W1, W2 = cache.W1, cache.W2
    Din, F = W1.shape
    Dout = W2.shape[1]
    xs = cache.x.reshape(-1, Din)
    hs = cache.hidden.reshape(-1, F)
    gs = dy.reshape(-1, Dout)
    if cache.activation == "gelu":
        pre = cache.act.x.reshape(-1, F)
        th = cache.act.tanh.reshape(-1, F)

    dW1 = np.zeros_like(W1)
    db1 = np.zeros(F)
    dW2 = np.zeros_like(W2)
    db2 = np.zeros(Dout)
    dxs = np.zeros_like(xs)

    for p in range(xs.shape[0]):
        g = gs[p]
        dW2 += np.outer(hs[p], g)
        db2 += g
        dh = W2 @ g
        if cache.activation == "relu":
            dpre = dh * _relu_prime(hs[p])
        else:
            dpre = dh * _gelu_prime(pre[p], th[p])
        dW1 += np.outer(xs[p], dpre)
        db1 += dpre
        dxs[p] = W1 @ dpre

    return dxs.reshape(cache.x.shape), dW1, db1, dW2, db2
