# hint formulas copied into NumPy one by one (rho = f * h, then da_n, drho, da_f, ...)
import numpy as np


def minimal_gated_unit_step_backward(dnext_h, cache):
    x, h = cache.x, cache.prev_h
    Wx, Wh = cache.Wx, cache.Wh
    f, n = cache.f, cache.n
    H = h.shape[1]
    W_hf = Wh[:, :H]
    W_hn = Wh[:, H:]

    rho = f * h
    da_n = dnext_h * f * (1 - n ** 2)
    drho = da_n @ W_hn.T
    da_f = (dnext_h * (n - h) + drho * h) * f * (1 - f)

    dprev_h = dnext_h * (1 - f) + drho * f + da_f @ W_hf.T
    dWh = np.concatenate([h.T @ da_f, rho.T @ da_n], axis=1)

    da = np.concatenate([da_f, da_n], axis=1)
    dx = da @ Wx.T
    dWx = x.T @ da
    db = np.sum(da, axis=0)
    return dx, dprev_h, dWx, dWh, db
