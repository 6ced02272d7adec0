# loops over the batch: one example at a time, weight gradients as sums of outer products
import numpy as np


def rnn_step_backward(dnext_h, cache):
    x, h_prev, Wx, Wh, h_next = cache.x, cache.prev_h, cache.Wx, cache.Wh, cache.next_h
    N, D = x.shape
    H = h_next.shape[1]

    dx = np.zeros((N, D))
    dprev_h = np.zeros((N, H))
    dWx = np.zeros((D, H))
    dWh = np.zeros((H, H))
    db = np.zeros(H)

    for n in range(N):
        # derivative of tanh at this example, times the upstream gradient
        dtanh = (1.0 - h_next[n] * h_next[n]) * dnext_h[n]
        dx[n] = Wx.dot(dtanh)
        dprev_h[n] = Wh.dot(dtanh)
        dWx += np.outer(x[n], dtanh)
        dWh += np.outer(h_prev[n], dtanh)
        db += dtanh
    return dx, dprev_h, dWx, dWh, db
