# hints followed literally for both variants, np.hstack for the gate blocks
import numpy as np


def gru_step_backward(dnext_h, cache):
    x, h = cache.x, cache.prev_h
    Wx, Wh = cache.Wx, cache.Wh
    r, z, n = cache.r, cache.z, cache.n
    H = h.shape[1]

    da_n = dnext_h * (1 - z) * (1 - n ** 2)
    da_z = dnext_h * (h - n) * z * (1 - z)
    dh = dnext_h * z

    if cache.reset_after:
        eta = cache.hn
        da_r = da_n * eta * r * (1 - r)
        dah = np.hstack([da_r, da_z, da_n * r])
        dh += dah @ Wh.T
        dWh = h.T @ dah
        dbh = dah.sum(axis=0)
    else:
        W_hr = Wh[:, :H]
        W_hz = Wh[:, H:2 * H]
        W_hn = Wh[:, 2 * H:]
        rho = r * h
        drho = da_n @ W_hn.T
        da_r = drho * h * r * (1 - r)
        dh += drho * r + np.hstack([da_r, da_z]) @ np.hstack([W_hr, W_hz]).T
        dWh = np.hstack([h.T @ da_r, h.T @ da_z, rho.T @ da_n])
        dbh = None  # filled below, equal to dbx

    dax = np.hstack([da_r, da_z, da_n])
    dx = dax @ Wx.T
    dWx = x.T @ dax
    dbx = dax.sum(axis=0)
    if not cache.reset_after:
        dbh = dbx.copy()
    return dx, dh, dWx, dWh, dbx, dbh
