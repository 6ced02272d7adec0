# one sequence at a time over its valid steps only (length from the mask), step math written out per example
import numpy as np


def lstm_step_backward(dnext_h, dnext_c, cache):
    # batch version, kept for single steps; lstm_backward below writes it out per example
    sig_p = lambda s: s * (1 - s)
    dc = dnext_c + dnext_h * cache.o * (1 - cache.tanh_c ** 2)
    da = np.hstack([dc * cache.g * sig_p(cache.i),
                    dc * cache.prev_c * sig_p(cache.f),
                    dnext_h * cache.tanh_c * sig_p(cache.o),
                    dc * cache.i * (1 - cache.g ** 2)])
    return (da @ cache.Wx.T, da @ cache.Wh.T, dc * cache.f,
            cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0))


def lstm_backward(dh, cache):
    N, T, H = dh.shape
    Wx, Wh = cache.steps[0].Wx, cache.steps[0].Wh
    D = Wx.shape[0]
    lens = np.rint(cache.mask.sum(axis=1)).astype(int)

    dx = np.zeros((N, T, D))
    dh0 = np.zeros((N, H))
    dWx = np.zeros((D, 4 * H))
    dWh = np.zeros((H, 4 * H))
    db = np.zeros(4 * H)

    for n in range(N):
        hgrad = np.zeros(H)
        cgrad = np.zeros(H)
        for t in range(lens[n] - 1, -1, -1):
            s = cache.steps[t]
            i, f, o, g, tc = s.i[n], s.f[n], s.o[n], s.g[n], s.tanh_c[n]
            hgrad = hgrad + dh[n, t]
            cgrad = cgrad + hgrad * o * (1 - tc ** 2)
            da = np.concatenate([
                cgrad * g * i * (1 - i),
                cgrad * s.prev_c[n] * f * (1 - f),
                hgrad * tc * o * (1 - o),
                cgrad * i * (1 - g ** 2),
            ])
            dx[n, t] = Wx @ da
            dWx += np.outer(s.x[n], da)
            dWh += np.outer(s.prev_h[n], da)
            db += da
            hgrad = Wh @ da
            cgrad = cgrad * f
        dh0[n] = hgrad
    return dx, dh0, dWx, dWh, db
