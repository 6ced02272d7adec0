# boolean mask with np.where, gradients of the weights kept in a dict, dx stacked at the end
import numpy as np


def _sig_d(s):
    return s * (1.0 - s)


def lstm_step_backward(dnext_h, dnext_c, cache):
    N, H = dnext_h.shape
    dgates = np.empty((N, 4 * H))
    dcell = dnext_c + dnext_h * cache.o * (1.0 - cache.tanh_c ** 2)
    dgates[:, 2 * H:3 * H] = dnext_h * cache.tanh_c * _sig_d(cache.o)
    dgates[:, :H] = dcell * cache.g * _sig_d(cache.i)
    dgates[:, H:2 * H] = dcell * cache.prev_c * _sig_d(cache.f)
    dgates[:, 3 * H:] = dcell * cache.i * (1.0 - cache.g ** 2)
    return (np.dot(dgates, cache.Wx.T), np.dot(dgates, cache.Wh.T), cache.f * dcell,
            np.dot(cache.x.T, dgates), np.dot(cache.prev_h.T, dgates), dgates.sum(0))


def lstm_backward(dh, cache):
    T = dh.shape[1]
    on_mask = cache.mask.astype(bool)
    carry_h = np.zeros_like(cache.h_last)
    carry_c = np.zeros_like(cache.c_last)
    acc = {}
    dx_rev = []
    for t in range(T - 1, -1, -1):
        live = on_mask[:, [t]]                       # (N, 1)
        gh = carry_h + np.where(live, dh[:, t], 0.0)
        dxt, dhp, dcp, *wgrads = lstm_step_backward(
            np.where(live, gh, 0.0), np.where(live, carry_c, 0.0), cache.steps[t])
        # padded steps copy (h, c) forward, so their gradients pass through unchanged
        carry_h = np.where(live, dhp, gh)
        carry_c = np.where(live, dcp, carry_c)
        for name, gr in zip(('dWx', 'dWh', 'db'), wgrads):
            acc[name] = acc.get(name, 0.0) + gr
        dx_rev.append(dxt)
    dx = np.stack(dx_rev[::-1], axis=1)
    return dx, carry_h, acc['dWx'], acc['dWh'], acc['db']
