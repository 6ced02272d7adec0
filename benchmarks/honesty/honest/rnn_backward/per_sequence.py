# one sequence at a time: only its valid steps (from the mask's length) are backpropagated, math inlined
import numpy as np


def rnn_step_backward(dnext_h, cache):
    N, H = dnext_h.shape
    dx = np.zeros_like(cache.x)
    dprev_h = np.zeros_like(cache.prev_h)
    dWx = np.zeros_like(cache.Wx)
    dWh = np.zeros_like(cache.Wh)
    db = np.zeros(H)
    for n in range(N):
        d = dnext_h[n] * (1.0 - cache.next_h[n] ** 2)
        dx[n] = cache.Wx @ d
        dprev_h[n] = cache.Wh @ d
        dWx += np.outer(cache.x[n], d)
        dWh += np.outer(cache.prev_h[n], d)
        db += d
    return dx, dprev_h, dWx, dWh, db


def rnn_backward(dh, cache):
    N, T, H = dh.shape
    steps = cache.steps
    Wx, Wh = steps[0].Wx, steps[0].Wh
    D = Wx.shape[0]
    lengths = cache.mask.sum(axis=1).astype(int)   # padding only at the end

    dx = np.zeros((N, T, D))
    dh0 = np.zeros((N, H))
    dWx = np.zeros_like(Wx)
    dWh = np.zeros_like(Wh)
    db = np.zeros(H)

    for n in range(N):
        L = lengths[n]
        # the padded steps output zeros and copy the state forward; nothing downstream
        # depends on the state after step L-1 except zero-gradient outputs and h_last
        dnext = np.zeros(H)
        for t in range(L - 1, -1, -1):
            st = steps[t]
            dnext = dnext + dh[n, t]
            da = dnext * (1.0 - st.next_h[n] ** 2)
            dx[n, t] = Wx @ da
            dWx += np.outer(st.x[n], da)
            dWh += np.outer(st.prev_h[n], da)
            db += da
            dnext = Wh @ da
        dh0[n] = dnext
    return dx, dh0, dWx, dWh, db
