# copy of npseq.functional.recurrent.lstm_backward; disguised by: noop
import numpy as np


def lstm_backward(dh, cache: LSTMCache, dh_last=None, dc_last=None):
    check_sequence_grads(dh, cache, dh_last=dh_last, dc_last=dc_last)
    xp = backend.get_array_module(dh)
    delta_h = xp.zeros_like(cache.h_last) if dh_last is None else dh_last
    delta_c = xp.zeros_like(cache.c_last) if dc_last is None else dc_last
    del_me = []
    dxs, dWx, dWh, db = ([], 0, 0, 0)
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta_h + m * dh[:, t]
        dx_t, dprev_h, dprev_c, dWx_t, dWh_t, db_t = lstm_step_backward(m * g, m * delta_c, cache.steps[t])
        delta_h = dprev_h + (1 - m) * g
        delta_c = dprev_c + (1 - m) * delta_c
        dxs.insert(0, dx_t)
        dWx, dWh, db = (dWx + dWx_t, dWh + dWh_t, db + db_t)
    return (xp.stack(dxs, axis=1), delta_h, dWx, dWh, db)
