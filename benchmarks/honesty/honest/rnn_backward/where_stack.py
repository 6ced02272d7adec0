# boolean mask with np.where to route the gradient, per-step results collected in lists then stacked
import numpy as np


def rnn_step_backward(dnext_h, cache):
    dz = (1.0 - cache.next_h * cache.next_h) * dnext_h
    return (dz.dot(cache.Wx.T), dz.dot(cache.Wh.T),
            cache.x.T.dot(dz), cache.prev_h.T.dot(dz), dz.sum(axis=0))


def rnn_backward(dh, cache):
    T = dh.shape[1]
    valid = cache.mask > 0.5                 # (N, T) booleans
    running = np.zeros_like(cache.h_last)    # dL/dh_t from the future (h_last gets none)
    dxs = []
    grads = None
    for t in range(T - 1, -1, -1):
        on = valid[:, t:t + 1]
        # at a valid step the output and the carried state are the same h~_t
        total = running + np.where(on, dh[:, t], 0.0)
        step_in = np.where(on, total, 0.0)
        dxt, dhp, dWx_t, dWh_t, db_t = rnn_step_backward(step_in, cache.steps[t])
        # at a padded step h_t = h_{t-1}: the gradient goes straight through
        running = np.where(on, dhp, total)
        dxs.append(dxt)
        if grads is None:
            grads = [dWx_t, dWh_t, db_t]
        else:
            grads = [acc + new for acc, new in zip(grads, (dWx_t, dWh_t, db_t))]
    dx = np.stack(dxs[::-1], axis=1)
    dWx, dWh, db = grads
    return dx, running, dWx, dWh, db
