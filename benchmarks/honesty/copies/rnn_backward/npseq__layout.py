# copy of npseq.functional.recurrent.rnn_backward; disguised by: layout
import numpy as np


def rnn_backward(dh, cache: RNNCache, dh_last=None):
    check_sequence_grads(dh, cache, dh_last=dh_last)
    xp = backend.get_array_module(dh)

    # gradient
    delta = xp.zeros_like(cache.h_last) if dh_last is None else dh_last
    dxs, dWx, dWh, db = ([], 0, 0, 0)
    # chain rule
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta + m * dh[:, t]
        dx_t, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m * g, cache.steps[t])
        delta = dprev_h + (1 - m) * g
        # see notes
        dxs.insert(0, dx_t)
        dWx, dWh, db = (dWx + dWx_t, dWh + dWh_t, db + db_t)
    return (xp.stack(dxs, axis=1), delta, dWx, dWh, db)

