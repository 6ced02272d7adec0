# copy of npseq.functional.recurrent.gru_step_backward; disguised by: alias
import numpy as np


def gru_step_backward(dnext_h, cache):
    c_Wh = cache.Wh
    c_Wx = cache.Wx
    c_hn = cache.hn
    c_n = cache.n
    c_prev_h = cache.prev_h
    c_r = cache.r
    c_reset_after = cache.reset_after
    c_x = cache.x
    c_z = cache.z
    check_shape('dnext_h', dnext_h, tuple(c_prev_h.shape))
    xp = backend.get_array_module(dnext_h)
    h, r, z, n, Wh = (c_prev_h, c_r, c_z, c_n, c_Wh)
    H = h.shape[1]
    r_, z_, n_ = (slice(0, H), slice(H, 2 * H), slice(2 * H, 3 * H))
    dn = dnext_h * (1 - z)
    dan = dn * (1 - n ** 2)
    dz = dnext_h * (h - n)
    daz = dz * z * (1 - z)
    dh = dnext_h * z
    if c_reset_after:
        dar = dan * c_hn * r * (1 - r)
        dah = xp.concatenate([dar, daz, dan * r], axis=1)
        dh = dh + dah @ Wh.T
        dWh = h.T @ dah
        dbh = dah.sum(axis=0)
    else:
        rho = r * h
        drho = dan @ Wh[:, n_].T
        dar = drho * h * r * (1 - r)
        dh = dh + drho * r + dar @ Wh[:, r_].T + daz @ Wh[:, z_].T
        dWh = xp.concatenate([h.T @ dar, h.T @ daz, rho.T @ dan], axis=1)
        dbh = xp.concatenate([dar, daz, dan], axis=1).sum(axis=0)
    dax = xp.concatenate([dar, daz, dan], axis=1)
    dx = dax @ c_Wx.T
    dWx = c_x.T @ dax
    dbx = dax.sum(axis=0)
    return (dx, dh, dWx, dWh, dbx, dbh)
