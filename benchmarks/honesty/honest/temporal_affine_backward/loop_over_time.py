# one ordinary affine backward per time step, weight gradients accumulated over the steps
import numpy as np


def affine_backward(dout, x, w):
    """backward of out = x @ w + b for 2-d x."""
    return dout.dot(w.T), x.T.dot(dout), np.sum(dout, axis=0)


def temporal_affine_backward(dout, cache):
    x = cache.x
    w = cache.w
    N, T, D = x.shape
    dx = np.zeros_like(x)
    dw = np.zeros_like(w)
    db = np.zeros(w.shape[1])
    for t in range(T):
        dx_t, dw_t, db_t = affine_backward(dout[:, t, :], x[:, t, :], w)
        dx[:, t, :] = dx_t
        dw += dw_t
        db += db_t
    return dx, dw, db
