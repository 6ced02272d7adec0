# per-row loop for the state gradients, einsum over the batch for the weights
import numpy as np


def minimal_gated_unit_step_backward(dnext_h, cache):
    Nb, H = cache.prev_h.shape
    Wxf, Wxn = cache.Wx[:, :H], cache.Wx[:, H:]
    Whf, Whn = cache.Wh[:, :H], cache.Wh[:, H:]

    g_n = np.zeros((Nb, H))      # gradient of n's pre-activation
    g_f = np.zeros((Nb, H))      # gradient of f's pre-activation
    g_h = np.zeros((Nb, H))

    for r in range(Nb):
        hr, fr, nr, dr = cache.prev_h[r], cache.f[r], cache.n[r], dnext_h[r]
        g_n[r] = dr * fr * (1 - nr ** 2)
        g_reset = Whn.dot(g_n[r])                 # gradient wrt f*h
        dfr = dr * (nr - hr) + g_reset * hr
        g_f[r] = dfr * fr * (1 - fr)
        g_h[r] = dr * (1 - fr) + g_reset * fr + Whf.dot(g_f[r])

    reset_h = cache.f * cache.prev_h
    dWhf = np.einsum('bi,bj->ij', cache.prev_h, g_f)
    dWhn = np.einsum('bi,bj->ij', reset_h, g_n)
    dWxf = np.einsum('bd,bj->dj', cache.x, g_f)
    dWxn = np.einsum('bd,bj->dj', cache.x, g_n)
    dx = np.einsum('bj,dj->bd', g_f, Wxf) + np.einsum('bj,dj->bd', g_n, Wxn)

    dWx = np.concatenate([dWxf, dWxn], axis=1)
    dWh = np.concatenate([dWhf, dWhn], axis=1)
    db = np.concatenate([g_f.sum(0), g_n.sum(0)])
    return dx, g_h, dWx, dWh, db
