# copy of the solutions key; disguised by: reorder
import numpy as np


def rnn_backward(dh, cache):
    delta, dxs, dWx, dWh, db = (np.zeros_like(cache.h_last), [], 0, 0, 0)
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta + m * dh[:, t]
        dx_t, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m * g, cache.steps[t])
        delta = dprev_h + (1 - m) * g
        dxs.insert(0, dx_t)
        dWx, dWh, db = (dWx + dWx_t, dWh + dWh_t, db + db_t)
    return (np.stack(dxs, axis=1), delta, dWx, dWh, db)
