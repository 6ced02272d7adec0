# copy of npseq.course.references.variants.coupled_lstm_step_backward; disguised by: reorder
import numpy as np


def coupled_lstm_step_backward(dnext_h, dnext_c, cache: CoupledLSTMStepCache):
    _check_upstream({'dnext_h': dnext_h, 'dnext_c': dnext_c}, cache.prev_h)
    xp = backend.get_array_module(dnext_h)
    f, o, g, tanh_c = (cache.f, cache.o, cache.g, cache.tanh_c)
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    dao = dnext_h * tanh_c * o * (1 - o)
    daf = dc * (cache.prev_c - g) * f * (1 - f)
    dag = dc * (1 - f) * (1 - g ** 2)
    da = xp.concatenate([daf, dao, dag], axis=1)
    dprev_c = dc * f
    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWh = cache.prev_h.T @ da
    db = da.sum(axis=0)
    dWx = cache.x.T @ da
    return (dx, dprev_h, dprev_c, dWx, dWh, db)
