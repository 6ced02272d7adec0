# copy of npseq.functional.layers.temporal_affine_backward, pasted from a tutorial; disguised by: alias
import numpy as np


def temporal_affine_backward(dout, cache: TemporalAffineCache):
    x, w = cache
    n, t, d = x.shape
    dx = dout @ w.T
    dw = x.reshape(n * t, d).T @ dout.reshape(n * t, -1)
    db = dout.sum(axis=(0, 1))
    return (dx, dw, db)
