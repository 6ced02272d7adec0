# the hints of both exercises typed in as given: gru_step_backward per variant, then delta carried back in time
import numpy as np


def gru_step_backward(dnext_h, cache):
    x, h = cache.x, cache.prev_h
    r, z, n = cache.r, cache.z, cache.n
    H = h.shape[1]
    Wh = cache.Wh

    da_n = dnext_h * (1 - z) * (1 - n ** 2)
    da_z = dnext_h * (h - n) * z * (1 - z)
    dh = dnext_h * z

    if cache.reset_after:
        eta = cache.hn
        da_r = da_n * eta * r * (1 - r)
        dah = np.concatenate([da_r, da_z, da_n * r], axis=1)
        dh += dah @ Wh.T
        dWh = h.T @ dah
        dbh = dah.sum(axis=0)
    else:
        rho = r * h
        drho = da_n @ Wh[:, 2 * H:].T
        da_r = drho * h * r * (1 - r)
        dh += drho * r + np.concatenate([da_r, da_z], axis=1) @ Wh[:, :2 * H].T
        dWh = np.concatenate([h.T @ da_r, h.T @ da_z, rho.T @ da_n], axis=1)

    dax = np.concatenate([da_r, da_z, da_n], axis=1)
    dx = dax @ cache.Wx.T
    dWx = x.T @ dax
    dbx = dax.sum(axis=0)
    if not cache.reset_after:
        dbh = dbx
    return dx, dh, dWx, dWh, dbx, dbh


def gru_backward(dh, cache, dh_last=None):
    N, T, H = dh.shape
    D = cache.steps[0].x.shape[1]
    dx = np.zeros((N, T, D))
    dWx = np.zeros_like(cache.steps[0].Wx)
    dWh = np.zeros_like(cache.steps[0].Wh)
    dbx = np.zeros(3 * H)
    dbh = np.zeros(3 * H)

    delta = np.zeros((N, H)) if dh_last is None else dh_last
    for t in range(T - 1, -1, -1):
        m = cache.mask[:, t, None]
        g = delta + m * dh[:, t]
        dx[:, t], dprev_h, dWx_t, dWh_t, dbx_t, dbh_t = gru_step_backward(m * g, cache.steps[t])
        delta = dprev_h + (1 - m) * g
        dWx += dWx_t
        dWh += dWh_t
        dbx += dbx_t
        dbh += dbh_t
    dh0 = delta
    return dx, dh0, dWx, dWh, dbx, dbh
