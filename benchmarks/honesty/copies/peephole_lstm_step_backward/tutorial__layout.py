# copy of npseq.course.references.variants.peephole_lstm_step_backward, pasted from a tutorial; disguised by: layout
import numpy as np


def peephole_lstm_step_backward(dnext_h, dnext_c, cache: PeepholeLSTMStepCache):
    # see notes
    i, f, o, g, tanh_c, prev_c = (cache.i, cache.f, cache.o, cache.g, cache.tanh_c, cache.prev_c)
    dao = dnext_h * tanh_c * o * (1 - o)
    # gradient
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2) + dao * cache.p_o
    # see notes
    dai = dc * g * i * (1 - i)
    # step
    daf = dc * prev_c * f * (1 - f)
    dag = dc * i * (1 - g ** 2)
    # see notes
    dprev_c = dc * f + dai * cache.p_i + daf * cache.p_f
    dp_i = (dai * prev_c).sum(axis=0)
    dp_f = (daf * prev_c).sum(axis=0)

    dp_o = (dao * cache.next_c).sum(axis=0)
    da = np.concatenate([dai, daf, dao, dag], axis=1)
    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    dWx = cache.x.T @ da
    dWh = cache.prev_h.T @ da
    db = da.sum(axis=0)

    return (dx, dprev_h, dprev_c, dWx, dWh, db, dp_i, dp_f, dp_o)
