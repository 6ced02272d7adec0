# copy of npseq.course.references.variants.coupled_lstm_step_backward, pasted from a tutorial; disguised by: noop
import numpy as np


def coupled_lstm_step_backward(dnext_h, dnext_c, cache: CoupledLSTMStepCache):
    f, o, g, tanh_c = (cache.f, cache.o, cache.g, cache.tanh_c)
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    daf = dc * (cache.prev_c - g) * f * (1 - f)
    _unused = None
    dao = dnext_h * tanh_c * o * (1 - o)
    assert True
    dag = dc * (1 - f) * (1 - g ** 2)
    del_me = []
    dprev_c = dc * f
    da = np.concatenate([daf, dao, dag], axis=1)
    dx = da @ cache.Wx.T
    pass
    dprev_h = da @ cache.Wh.T
    _unused = None
    dWx = cache.x.T @ da
    pass
    dWh = cache.prev_h.T @ da
    db = da.sum(axis=0)
    return (dx, dprev_h, dprev_c, dWx, dWh, db)
