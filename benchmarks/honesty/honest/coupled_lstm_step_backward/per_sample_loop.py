# loops over the examples of the batch, with np.outer for the parameter gradients
import numpy as np


def sigmoid_grad(y):
    return y * (1 - y)


def coupled_lstm_step_backward(dnext_h, dnext_c, cache):
    n_batch, hidden = dnext_h.shape
    dx = np.zeros_like(cache.x)
    dprev_h = np.zeros_like(cache.prev_h)
    dprev_c = np.zeros_like(cache.prev_c)
    dWx = np.zeros_like(cache.Wx)
    dWh = np.zeros_like(cache.Wh)
    db = np.zeros(cache.Wx.shape[1])

    for k in range(n_batch):
        f = cache.f[k]
        o = cache.o[k]
        g = cache.g[k]
        tc = cache.tanh_c[k]
        pc = cache.prev_c[k]

        grad_c = dnext_c[k] + dnext_h[k] * o * (1 - tc ** 2)
        grad_o = dnext_h[k] * tc
        # d c / d f = prev_c - g because f shows up as f and as (1 - f)
        grad_f = grad_c * (pc - g)
        grad_g = grad_c * (1 - f)

        pre = np.zeros(3 * hidden)
        pre[:hidden] = grad_f * sigmoid_grad(f)
        pre[hidden:2 * hidden] = grad_o * sigmoid_grad(o)
        pre[2 * hidden:] = grad_g * (1 - g ** 2)

        dprev_c[k] = grad_c * f
        dx[k] = cache.Wx @ pre
        dprev_h[k] = cache.Wh @ pre
        dWx += np.outer(cache.x[k], pre)
        dWh += np.outer(cache.prev_h[k], pre)
        db += pre

    return dx, dprev_h, dprev_c, dWx, dWh, db
