# small derivative helpers, gate gradients filled into a preallocated array, einsum for the weight sums
import numpy as np


def _dsig(s):
    # derivative of the sigmoid written in terms of its output
    return s * (1.0 - s)


def _dtanh(t):
    return 1.0 - t * t


def peephole_lstm_step_backward(dnext_h, dnext_c, cache):
    c = cache
    N, H = dnext_h.shape

    # next_h = o * tanh(next_c)
    d_o = dnext_h * c.tanh_c
    d_pre_o = d_o * _dsig(c.o)          # pre-activation of the output gate (includes p_o * next_c)

    # next_c is reached by dnext_c, by tanh in next_h and by the o-peephole
    d_cell = dnext_c + dnext_h * c.o * _dtanh(c.tanh_c) + c.p_o * d_pre_o

    # next_c = f * prev_c + i * g
    d_pre_i = (d_cell * c.g) * _dsig(c.i)
    d_pre_f = (d_cell * c.prev_c) * _dsig(c.f)
    d_pre_g = (d_cell * c.i) * _dtanh(c.g)

    dgates = np.empty((N, 4 * H))
    dgates[:, 0:H] = d_pre_i
    dgates[:, H:2 * H] = d_pre_f
    dgates[:, 2 * H:3 * H] = d_pre_o
    dgates[:, 3 * H:] = d_pre_g

    # peephole weights, summed over the batch
    dp_i = np.einsum('nh,nh->h', d_pre_i, c.prev_c)
    dp_f = np.einsum('nh,nh->h', d_pre_f, c.prev_c)
    dp_o = np.einsum('nh,nh->h', d_pre_o, c.next_c)

    dprev_c = c.f * d_cell + c.p_i * d_pre_i + c.p_f * d_pre_f

    dWx = np.einsum('nd,nk->dk', c.x, dgates)
    dWh = np.einsum('nh,nk->hk', c.prev_h, dgates)
    db = dgates.sum(0)
    dx = np.einsum('nk,dk->nd', dgates, c.Wx)
    dprev_h = np.einsum('nk,hk->nh', dgates, c.Wh)
    return dx, dprev_h, dprev_c, dWx, dWh, db, dp_i, dp_f, dp_o
