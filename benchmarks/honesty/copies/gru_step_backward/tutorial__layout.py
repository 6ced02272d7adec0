# copy of npseq.functional.recurrent.gru_step_backward, pasted from a tutorial; disguised by: layout
import numpy as np


def gru_step_backward(dnext_h, cache):
    h, r, z, n, Wh = (cache.prev_h, cache.r, cache.z, cache.n, cache.Wh)
    H = h.shape[1]

    r_, z_, n_ = (slice(0, H), slice(H, 2 * H), slice(2 * H, 3 * H))
    dn = dnext_h * (1 - z)
    dan = dn * (1 - n ** 2)
    dz = dnext_h * (h - n)

    daz = dz * z * (1 - z)

    dh = dnext_h * z

    if cache.reset_after:
        dar = dan * cache.hn * r * (1 - r)
        # chain rule
        dah = np.concatenate([dar, daz, dan * r], axis=1)
        dh = dh + dah @ Wh.T
        dWh = h.T @ dah
        dbh = dah.sum(axis=0)
    else:
        rho = r * h
        drho = dan @ Wh[:, n_].T

        dar = drho * h * r * (1 - r)
        dh = dh + drho * r + dar @ Wh[:, r_].T + daz @ Wh[:, z_].T
        dWh = np.concatenate([h.T @ dar, h.T @ daz, rho.T @ dan], axis=1)
        # chain rule
        dbh = np.concatenate([dar, daz, dan], axis=1).sum(axis=0)

    dax = np.concatenate([dar, daz, dan], axis=1)
    dx = dax @ cache.Wx.T
    dWx = cache.x.T @ dax
    dbx = dax.sum(axis=0)
    return (dx, dh, dWx, dWh, dbx, dbh)
