# preallocated (N, 4H) gradient filled block by block through slices, derivative helpers
import numpy as np


def dsigmoid(s):
    # derivative of the logistic function, given its output s
    return s * (1.0 - s)


def dtanh(t):
    # derivative of tanh, given its output t
    return 1.0 - t * t


def lstm_step_backward(dnext_h, dnext_c, cache):
    N, H = dnext_h.shape
    gates = np.empty((N, 4 * H))
    I, F, O, G = (slice(k * H, (k + 1) * H) for k in range(4))

    # output gate first: it only sees next_h
    gates[:, O] = dnext_h * cache.tanh_c * dsigmoid(cache.o)

    # total gradient on the new cell state (its own plus the one through tanh)
    dcell = dnext_h * cache.o * dtanh(cache.tanh_c)
    dcell = dcell + dnext_c

    gates[:, I] = dcell * cache.g * dsigmoid(cache.i)
    gates[:, F] = dcell * cache.prev_c * dsigmoid(cache.f)
    gates[:, G] = dcell * cache.i * dtanh(cache.g)

    dprev_c = cache.f * dcell
    dprev_h = np.dot(gates, cache.Wh.T)
    dx = np.dot(gates, cache.Wx.T)
    dWh = np.dot(cache.prev_h.T, gates)
    dWx = np.dot(cache.x.T, gates)
    db = gates.sum(0)
    return dx, dprev_h, dprev_c, dWx, dWh, db
