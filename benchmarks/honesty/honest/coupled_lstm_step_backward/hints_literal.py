# the hint formulas turned into NumPy line by line
import numpy as np


def coupled_lstm_step_backward(dnext_h, dnext_c, cache):
    x, prev_h, prev_c = cache.x, cache.prev_h, cache.prev_c
    Wx, Wh = cache.Wx, cache.Wh
    f, o, g, tanh_c = cache.f, cache.o, cache.g, cache.tanh_c

    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    da_f = dc * (prev_c - g) * f * (1 - f)
    da_o = dnext_h * tanh_c * o * (1 - o)
    da_g = dc * (1 - f) * (1 - g ** 2)
    dprev_c = dc * f

    da = np.concatenate((da_f, da_o, da_g), axis=1)
    dx = da @ Wx.T
    dprev_h = da @ Wh.T
    dWx = x.T @ da
    dWh = prev_h.T @ da
    db = da.sum(axis=0)
    return dx, dprev_h, dprev_c, dWx, dWh, db
