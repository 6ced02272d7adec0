# named weight blocks, einsum contractions, one helper per variant for the hidden side
import numpy as np


def _split3(W):
    H = W.shape[1] // 3
    return W[:, :H], W[:, H:2 * H], W[:, 2 * H:]


def _hidden_side_reset_before(g_n, g_z, c):
    """reset applied to h before W_hn: returns (g_r, dh_from_Wh, dWh, dbh_is_dbx)."""
    Whr, Whz, Whn = _split3(c.Wh)
    h, r = c.prev_h, c.r
    g_rh = np.einsum('nk,jk->nj', g_n, Whn)          # gradient w.r.t. r*h
    g_r = g_rh * h * r * (1.0 - r)
    dh = (g_rh * r
          + np.einsum('nk,jk->nj', g_r, Whr)
          + np.einsum('nk,jk->nj', g_z, Whz))
    dWh = np.concatenate([
        np.einsum('nj,nk->jk', h, g_r),
        np.einsum('nj,nk->jk', h, g_z),
        np.einsum('nj,nk->jk', r * h, g_n),
    ], axis=1)
    return g_r, dh, dWh, None


def _hidden_side_reset_after(g_n, g_z, c):
    """reset applied to (h W_hn + b_hn): every hidden block sees plain h."""
    h, r = c.prev_h, c.r
    g_r = g_n * c.hn * r * (1.0 - r)
    g_hid = np.concatenate([g_r, g_z, g_n * r], axis=1)
    dh = np.einsum('nk,jk->nj', g_hid, c.Wh)
    dWh = np.einsum('nj,nk->jk', h, g_hid)
    dbh = np.einsum('nk->k', g_hid)
    return g_r, dh, dWh, dbh


def gru_step_backward(dnext_h, cache):
    z, n, h = cache.z, cache.n, cache.prev_h
    # h' = n + z (h - n)
    g_z = dnext_h * (h - n) * z * (1.0 - z)
    g_n = dnext_h * (1.0 - z) * (1.0 - n * n)

    side = _hidden_side_reset_after if cache.reset_after else _hidden_side_reset_before
    g_r, dh_W, dWh, dbh = side(g_n, g_z, cache)

    g_in = np.concatenate([g_r, g_z, g_n], axis=1)
    dx = np.einsum('nk,dk->nd', g_in, cache.Wx)
    dWx = np.einsum('nd,nk->dk', cache.x, g_in)
    dbx = np.einsum('nk->k', g_in)
    if dbh is None:
        dbh = dbx.copy()

    dprev_h = dnext_h * z + dh_W
    return dx, dprev_h, dWx, dWh, dbx, dbh
