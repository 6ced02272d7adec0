# copy of npseq.functional.recurrent.lstm_step_backward, pasted from a tutorial; disguised by: extract
import numpy as np


def lstm_step_backward(dnext_h, dnext_c, cache: LSTMStepCache):
    i, f, o, g, tanh_c = (cache.i, cache.f, cache.o, cache.g, cache.tanh_c)
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    dai = dc * g * i * (1 - i)
    daf = _part(dc, f)
    dao = dnext_h * tanh_c * o * (1 - o)
    dag = dc * i * (1 - g ** 2)
    dprev_c = dc * f
    da = np.concatenate([dai, daf, dao, dag], axis=1)
    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWx = cache.x.T @ da
    dWh = cache.prev_h.T @ da
    db = da.sum(axis=0)
    return (dx, dprev_h, dprev_c, dWx, dWh, db)


def _part(dc, f):
    return dc * cache.prev_c * f * (1 - f)
