# one example at a time: a loop over the batch, outer products accumulated into the weight gradients
import numpy as np


def peephole_lstm_step_backward(dnext_h, dnext_c, cache):
    N, H = dnext_h.shape
    D = cache.x.shape[1]

    dx = np.zeros((N, D))
    dprev_h = np.zeros((N, H))
    dprev_c = np.zeros((N, H))
    dWx = np.zeros((D, 4 * H))
    dWh = np.zeros((H, 4 * H))
    db = np.zeros(4 * H)
    dpi = np.zeros(H)
    dpf = np.zeros(H)
    dpo = np.zeros(H)

    for n in range(N):
        dh = dnext_h[n]
        ig, fg, og, gg = cache.i[n], cache.f[n], cache.o[n], cache.g[n]
        tc = cache.tanh_c[n]
        cprev = cache.prev_c[n]
        cnew = cache.next_c[n]

        # output gate first, it looks at the new cell
        go = dh * tc * og * (1 - og)
        gc = dnext_c[n] + dh * og * (1 - tc * tc) + go * cache.p_o

        gi = gc * gg * ig * (1 - ig)
        gf = gc * cprev * fg * (1 - fg)
        gg_ = gc * ig * (1 - gg * gg)

        dprev_c[n] = gc * fg + gi * cache.p_i + gf * cache.p_f

        dpi += gi * cprev
        dpf += gf * cprev
        dpo += go * cnew

        ga = np.hstack((gi, gf, go, gg_))   # (4H,)
        dx[n] = cache.Wx.dot(ga)
        dprev_h[n] = cache.Wh.dot(ga)
        dWx += np.outer(cache.x[n], ga)
        dWh += np.outer(cache.prev_h[n], ga)
        db += ga

    return dx, dprev_h, dprev_c, dWx, dWh, db, dpi, dpf, dpo
