# hints followed literally: delta walked back from T-1, mask as an (N, 1) column, step backward per t
import numpy as np


def rnn_step_backward(dnext_h, cache):
    da = dnext_h * (1 - cache.next_h ** 2)
    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWx = cache.x.T @ da
    dWh = cache.prev_h.T @ da
    db = np.sum(da, axis=0)
    return dx, dprev_h, dWx, dWh, db


def rnn_backward(dh, cache):
    N, T, H = dh.shape
    D = cache.steps[0].x.shape[1]
    dx = np.zeros((N, T, D))
    dWx = np.zeros((D, H))
    dWh = np.zeros((H, H))
    db = np.zeros(H)
    delta = np.zeros((N, H))
    for t in reversed(range(T)):
        m_t = cache.mask[:, t][:, None]
        g = delta + m_t * dh[:, t]
        dx_t, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m_t * g, cache.steps[t])
        delta = dprev_h + (1 - m_t) * g
        dx[:, t] = dx_t
        dWx += dWx_t
        dWh += dWh_t
        db += db_t
    dh0 = delta
    return dx, dh0, dWx, dWh, db
