# hints followed literally, line by line, gates concatenated with np.concatenate
import numpy as np


def lstm_step_backward(dnext_h, dnext_c, cache):
    i, f, o, g = cache.i, cache.f, cache.o, cache.g
    tanh_c = cache.tanh_c
    prev_c = cache.prev_c

    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)

    da_i = dc * g * i * (1 - i)
    da_f = dc * prev_c * f * (1 - f)
    da_o = dnext_h * tanh_c * o * (1 - o)
    da_g = dc * i * (1 - g ** 2)
    dprev_c = dc * f

    da = np.concatenate([da_i, da_f, da_o, da_g], axis=1)

    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWx = cache.x.T @ da
    dWh = cache.prev_h.T @ da
    db = da.sum(axis=0)
    return dx, dprev_h, dprev_c, dWx, dWh, db
