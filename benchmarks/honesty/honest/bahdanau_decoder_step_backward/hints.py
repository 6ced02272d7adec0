# hints followed literally: GRU step backward, split du, attention backward on the 1-query context, sums
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
        da_r = da_n * cache.hn * r * (1 - r)
        dah = np.hstack([da_r, da_z, da_n * r])
        dh += dah @ Wh.T
        dWh = h.T @ dah
        dbh = dah.sum(axis=0)
    else:
        W_hr, W_hz, W_hn = Wh[:, :H], Wh[:, H:2 * H], Wh[:, 2 * H:]
        rho = r * h
        drho = da_n @ W_hn.T
        da_r = drho * h * r * (1 - r)
        dh += drho * r + np.hstack([da_r, da_z]) @ np.hstack([W_hr, W_hz]).T
        dWh = np.hstack([h.T @ da_r, h.T @ da_z, rho.T @ da_n])
        dbh = None

    dax = np.hstack([da_r, da_z, da_n])
    dx = dax @ Wx.T
    dWx = x.T @ dax
    dbx = dax.sum(axis=0)
    if dbh is None:
        dbh = dbx.copy()
    return dx, dh, dWx, dWh, dbx, dbh


def masked_softmax_backward(dweights, cache):
    a = cache.weights
    return a * (dweights - np.sum(dweights * a, axis=-1, keepdims=True))


def additive_attention_backward(dcontext, cache, dweights=None):
    sc, pool = cache.scores, cache.pooling
    q, k = sc.queries, sc.keys
    Wq, Wk, wv = sc.Wq, sc.Wk, sc.wv
    f = sc.features
    v = pool.values
    a = pool.pooled
    h = wv.shape[0]

    dv = a.swapaxes(1, 2) @ dcontext
    da = dcontext @ v.swapaxes(1, 2)
    if dweights is not None:
        da = da + dweights
    ds = masked_softmax_backward(da, pool.softmax)
    dwv = np.sum(ds[..., None] * f, axis=(0, 1, 2))
    du = ds[..., None] * wv * (1 - f ** 2)
    dq_p = du.sum(axis=2)
    dk_p = du.sum(axis=1)
    dqueries = dq_p @ Wq.T
    dWq = q.reshape(-1, q.shape[-1]).T @ dq_p.reshape(-1, h)
    dkeys = dk_p @ Wk.T
    dWk = k.reshape(-1, k.shape[-1]).T @ dk_p.reshape(-1, h)
    return dqueries, dkeys, dv, dWq, dWk, dwv


def bahdanau_decoder_step_backward(dnext_h, cache):
    H_enc = cache.context.shape[1]
    du, dh_gru, dWx, dWh, dbx, dbh = gru_step_backward(dnext_h, cache.gru)
    dc, dx = du[:, :H_enc], du[:, H_enc:]
    dq, dk, dv, dWq, dWk, dwv = additive_attention_backward(dc[:, None, :], cache.attention)
    dprev_h = dh_gru + dq[:, 0]
    denc_outputs = dk + dv
    return dx, dprev_h, denc_outputs, dWq, dWk, dwv, dWx, dWh, dbx, dbh
