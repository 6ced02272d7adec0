# copy of npseq.course.references.variants.peephole_lstm_step_backward; disguised by: alias
import numpy as np


def peephole_lstm_step_backward(dnext_h, dnext_c, cache: PeepholeLSTMStepCache):
    c_Wh = cache.Wh
    c_Wx = cache.Wx
    c_f = cache.f
    c_g = cache.g
    c_i = cache.i
    c_next_c = cache.next_c
    c_o = cache.o
    c_p_f = cache.p_f
    c_p_i = cache.p_i
    c_p_o = cache.p_o
    c_prev_c = cache.prev_c
    c_prev_h = cache.prev_h
    c_tanh_c = cache.tanh_c
    c_x = cache.x
    _check_upstream({'dnext_h': dnext_h, 'dnext_c': dnext_c}, c_prev_h)
    xp = backend.get_array_module(dnext_h)
    i, f, o, g, tanh_c, prev_c = (c_i, c_f, c_o, c_g, c_tanh_c, c_prev_c)
    dao = dnext_h * tanh_c * o * (1 - o)
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2) + dao * c_p_o
    dai = dc * g * i * (1 - i)
    daf = dc * prev_c * f * (1 - f)
    dag = dc * i * (1 - g ** 2)
    dprev_c = dc * f + dai * c_p_i + daf * c_p_f
    dp_i = (dai * prev_c).sum(axis=0)
    dp_f = (daf * prev_c).sum(axis=0)
    dp_o = (dao * c_next_c).sum(axis=0)
    da = xp.concatenate([dai, daf, dao, dag], axis=1)
    dx = da @ c_Wx.T
    dprev_h = da @ c_Wh.T
    dWx = c_x.T @ da
    dWh = c_prev_h.T @ da
    db = da.sum(axis=0)
    return (dx, dprev_h, dprev_c, dWx, dWh, db, dp_i, dp_f, dp_o)
