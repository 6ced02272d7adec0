# per-example loop, the four gates handled in a loop over a small table, outer products for the weights
import numpy as np


def lstm_step_backward(dnext_h, dnext_c, cache):
    x, hp, cp = cache.x, cache.prev_h, cache.prev_c
    Wx, Wh = cache.Wx, cache.Wh
    N, D = x.shape
    H = hp.shape[1]

    dx = np.zeros_like(x)
    dprev_h = np.zeros_like(hp)
    dprev_c = np.zeros_like(cp)
    dWx = np.zeros_like(Wx)
    dWh = np.zeros_like(Wh)
    db = np.zeros(4 * H)

    for n in range(N):
        i, f, o, g, tc = cache.i[n], cache.f[n], cache.o[n], cache.g[n], cache.tanh_c[n]
        dh = dnext_h[n]
        # dL/dc for this example
        dc = dnext_c[n] + dh * o * (1 - tc * tc)
        # gradient w.r.t. each gate's output, then through its nonlinearity
        upstream = [dc * g, dc * cp[n], dh * tc, dc * i]
        local = [i * (1 - i), f * (1 - f), o * (1 - o), 1 - g * g]
        da = np.zeros(4 * H)
        for k in range(4):
            da[k * H:(k + 1) * H] = upstream[k] * local[k]

        dprev_c[n] = dc * f
        dx[n] = Wx @ da
        dprev_h[n] = Wh @ da
        dWx += np.outer(x[n], da)
        dWh += np.outer(hp[n], da)
        db += da
    return dx, dprev_h, dprev_c, dWx, dWh, db
