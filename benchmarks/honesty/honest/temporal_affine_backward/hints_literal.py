# the three hint lines: flatten N*T rows for dw, sum over n and t for db
import numpy as np


def temporal_affine_backward(dout, cache):
    x, w = cache.x, cache.w
    N, T, D = x.shape
    M = w.shape[1]
    dx = dout @ w.T
    dw = x.reshape(N * T, D).T @ dout.reshape(N * T, M)
    db = dout.sum(axis=(0, 1))
    return dx, dw, db
