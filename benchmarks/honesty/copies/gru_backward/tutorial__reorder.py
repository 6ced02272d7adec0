# copy of npseq.functional.recurrent.gru_backward, pasted from a tutorial; disguised by: reorder
import numpy as np


def gru_backward(dh, cache: GRUCache, dh_last=None):
    delta = np.zeros_like(cache.h_last) if dh_last is None else dh_last
    dxs, dWx, dWh, dbx, dbh = ([], 0, 0, 0, 0)
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta + m * dh[:, t]
        dx_t, dprev_h, dWx_t, dWh_t, dbx_t, dbh_t = gru_step_backward(m * g, cache.steps[t])
        delta = dprev_h + (1 - m) * g
        dxs.insert(0, dx_t)
        dWx, dWh, dbx, dbh = (dWx + dWx_t, dWh + dWh_t, dbx + dbx_t, dbh + dbh_t)
    return (np.stack(dxs, axis=1), delta, dWx, dWh, dbx, dbh)
