# follows the hint formulas literally, one NumPy line per hint line
import numpy as np


def peephole_lstm_step_backward(dnext_h, dnext_c, cache):
    x, prev_h, prev_c = cache.x, cache.prev_h, cache.prev_c
    Wx, Wh = cache.Wx, cache.Wh
    p_i, p_f, p_o = cache.p_i, cache.p_f, cache.p_o
    i, f, o, g = cache.i, cache.f, cache.o, cache.g
    next_c, tanh_c = cache.next_c, cache.tanh_c

    da_o = dnext_h * tanh_c * o * (1 - o)
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2) + da_o * p_o

    da_i = dc * g * i * (1 - i)
    da_f = dc * prev_c * f * (1 - f)
    da_g = dc * i * (1 - g ** 2)

    dprev_c = dc * f + da_i * p_i + da_f * p_f

    dp_i = np.sum(da_i * prev_c, axis=0)
    dp_f = np.sum(da_f * prev_c, axis=0)
    dp_o = np.sum(da_o * next_c, axis=0)

    da = np.concatenate([da_i, da_f, da_o, da_g], axis=1)
    dx = da @ Wx.T
    dprev_h = da @ Wh.T
    dWx = x.T @ da
    dWh = prev_h.T @ da
    db = np.sum(da, axis=0)
    return dx, dprev_h, dprev_c, dWx, dWh, db, dp_i, dp_f, dp_o
