# hints followed literally: two running gradients delta_h, delta_c and the step backward per t
import numpy as np


def lstm_step_backward(dnext_h, dnext_c, cache):
    i, f, o, g = cache.i, cache.f, cache.o, cache.g
    tanh_c = cache.tanh_c
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    da_i = dc * g * i * (1 - i)
    da_f = dc * cache.prev_c * f * (1 - f)
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


def lstm_backward(dh, cache):
    N, T, H = dh.shape
    D = cache.steps[0].x.shape[1]
    dx = np.zeros((N, T, D))
    dWx = np.zeros((D, 4 * H))
    dWh = np.zeros((H, 4 * H))
    db = np.zeros(4 * H)
    delta_h = np.zeros((N, H))
    delta_c = np.zeros((N, H))
    for t in reversed(range(T)):
        m_t = cache.mask[:, t][:, None]
        g = delta_h + m_t * dh[:, t]
        dx_t, dprev_h, dprev_c, dWx_t, dWh_t, db_t = lstm_step_backward(
            m_t * g, m_t * delta_c, cache.steps[t])
        delta_h = dprev_h + (1 - m_t) * g
        delta_c = dprev_c + (1 - m_t) * delta_c
        dx[:, t] = dx_t
        dWx += dWx_t
        dWh += dWh_t
        db += db_t
    dh0 = delta_h
    return dx, dh0, dWx, dWh, db
