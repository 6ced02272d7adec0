# walks the forward back as the hints list it, with my own split_heads/merge_heads and the earlier exercises
import numpy as np


def masked_softmax_backward(dweights, cache):
    a = cache.weights; return a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))


def scaled_dot_product_attention_backward(dout, cache, dweights=None):
    A = cache.pooled
    dV = A.swapaxes(-1, -2) @ dout
    dA = dout @ cache.values.swapaxes(-1, -2)
    if dweights is not None:
        dA = dA + dweights
    dS = masked_softmax_backward(dA, cache.softmax) * cache.scale
    dQ = dS @ cache.keys
    dK = dS.swapaxes(-1, -2) @ cache.queries
    return dQ, dK, dV


def split_heads(x, h):
    N, T, D = x.shape
    return x.reshape(N, T, h, D // h).transpose(0, 2, 1, 3)


def merge_heads(x):
    N, h, T, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(N, T, h * d)


def affine_backward(x, W, dy):
    dW = x.reshape(-1, x.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])
    db = dy.sum(axis=(0, 1))
    dx = dy @ W.T
    return dx, dW, db


def multihead_attention_backward(dout, cache, dweights=None):
    p = cache.params
    h = cache.attention.queries.shape[1]

    dC, dW_o, db_o = affine_backward(cache.merged, p["W_o"], dout)
    dO = split_heads(dC, h)
    dQh, dKh, dVh = scaled_dot_product_attention_backward(dO, cache.attention, dweights)
    dQp, dKp, dVp = merge_heads(dQh), merge_heads(dKh), merge_heads(dVh)

    dqueries, dW_q, db_q = affine_backward(cache.queries, p["W_q"], dQp)
    dkeys, dW_k, db_k = affine_backward(cache.keys, p["W_k"], dKp)
    dvalues, dW_v, db_v = affine_backward(cache.values, p["W_v"], dVp)

    grads = {"W_q": dW_q, "b_q": db_q, "W_k": dW_k, "b_k": db_k,
             "W_v": dW_v, "b_v": db_v, "W_o": dW_o, "b_o": db_o}
    return dqueries, dkeys, dvalues, grads
