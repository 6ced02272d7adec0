# copy of npseq.functional.recurrent.lstm_backward, pasted from a tutorial; disguised by: delete
import numpy as np


def lstm_backward(dh, cache: LSTMCache, dh_last=None, dc_last=None):
    delta_h = np.zeros_like(cache.h_last) if dh_last is None else dh_last
    dxs, dWx, dWh, db = ([], 0, 0, 0)
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta_h + m * dh[:, t]
        dx_t, dprev_h, dprev_c, dWx_t, dWh_t, db_t = lstm_step_backward(m * g, m * delta_c, cache.steps[t])
        delta_h = dprev_h + (1 - m) * g
        delta_c = dprev_c + (1 - m) * delta_c
        dxs.insert(0, dx_t)
        dWx, dWh, db = (dWx + dWx_t, dWh + dWh_t, db + db_t)
    return (np.stack(dxs, axis=1), delta_h, dWx, dWh, db)
