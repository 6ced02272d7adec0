# treats the input gate i = 1 - f as its own node and chains through it; stacked [x, h] for the weights
import numpy as np


def coupled_lstm_step_backward(dnext_h, dnext_c, cache):
    N, H = dnext_h.shape
    D = cache.x.shape[1]
    f, o, g = cache.f, cache.o, cache.g
    i = 1.0 - f                                   # the coupled input gate

    # next_h = o * tanh(c)
    dtotal_c = dnext_c + dnext_h * o * (1.0 - cache.tanh_c ** 2)
    dout = dnext_h * cache.tanh_c

    # c = f * prev_c + i * g
    dforget = dtotal_c * cache.prev_c
    dinput = dtotal_c * g
    dcand = dtotal_c * i
    dforget = dforget - dinput                    # i = 1 - f sends -dinput back to f

    # nonlinearities
    dzf = dforget * f * (1.0 - f)
    dzo = dout * o * (1.0 - o)
    dzg = dcand * (1.0 - g * g)
    dz = np.hstack([dzf, dzo, dzg])               # (N, 3H)

    # a = [x, prev_h] @ [[Wx], [Wh]] + b
    xh = np.hstack([cache.x, cache.prev_h])       # (N, D + H)
    W = np.vstack([cache.Wx, cache.Wh])           # (D + H, 3H)
    dW = xh.T.dot(dz)
    dxh = dz.dot(W.T)

    dx, dprev_h = dxh[:, :D], dxh[:, D:]
    dWx, dWh = dW[:D], dW[D:]
    db = dz.sum(axis=0)
    dprev_c = dtotal_c * f
    return dx, dprev_h, dprev_c, dWx, dWh, db
