# collects the pre-activation gradients of every step, then all weight gradients at once with einsum over (n, t)
import numpy as np


def _step_preacts(dnext, c):
    """gradients of one GRU step's pre-activations and of its previous state.

    returns dax (N, 3H) for the input side, dah (N, 3H) for the hidden side (what multiplies Wh,
    with the input that multiplied it in hin), and dprev (N, H)."""
    h, r, z, n = c.prev_h, c.r, c.z, c.n
    H = h.shape[1]
    dan = dnext * (1 - z) * (1 - n * n)
    daz = dnext * z * (1 - z) * (h - n)
    if c.reset_after:
        dar = dan * c.hn * r * (1 - r)
        dah = np.hstack([dar, daz, dan * r])
        hin = np.hstack([h, h, h])                          # each block of Wh multiplies h
        dprev = dnext * z + dah @ c.Wh.T
    else:
        tmp = dan @ c.Wh[:, 2 * H:].T                       # gradient of r * h
        dar = tmp * h * r * (1 - r)
        dah = np.hstack([dar, daz, dan])
        hin = np.hstack([h, h, r * h])                      # the n block of Wh multiplies r * h
        dprev = dnext * z + tmp * r + dar @ c.Wh[:, :H].T + daz @ c.Wh[:, H:2 * H].T
    dax = np.hstack([dar, daz, dan])
    return dax, dah, hin, dprev


def _blockwise_outer(inp3, grad, H):
    """sum over rows of inp_block^T grad_block for the three H-column blocks."""
    return np.hstack([inp3[:, k * H:(k + 1) * H].T @ grad[:, k * H:(k + 1) * H] for k in range(3)])


def gru_step_backward(dnext_h, cache):
    H = cache.prev_h.shape[1]
    dax, dah, hin, dprev = _step_preacts(dnext_h, cache)
    dx = dax @ cache.Wx.T
    dWx = cache.x.T @ dax
    dWh = _blockwise_outer(hin, dah, H)
    return dx, dprev, dWx, dWh, dax.sum(0), dah.sum(0)


def gru_backward(dh, cache, dh_last=None):
    N, T, H = dh.shape
    mask = np.asarray(cache.mask, dtype=float)
    Wx = cache.steps[0].Wx
    DAX = np.zeros((N, T, 3 * H))
    DAH = np.zeros((N, T, 3 * H))
    HIN = np.zeros((N, T, 3 * H))
    X = np.stack([c.x for c in cache.steps], axis=1)

    running = np.zeros((N, H)) if dh_last is None else dh_last.copy()
    for t in range(T - 1, -1, -1):
        m = mask[:, t:t + 1]
        reaching = running + m * dh[:, t]
        dax, dah, hin, dprev = _step_preacts(m * reaching, cache.steps[t])
        DAX[:, t], DAH[:, t], HIN[:, t] = dax, dah, hin
        running = dprev + (1 - m) * reaching

    dx = np.einsum('ntg,dg->ntd', DAX, Wx)
    dWx = np.einsum('ntd,ntg->dg', X, DAX)
    dbx = DAX.sum(axis=(0, 1))
    dbh = DAH.sum(axis=(0, 1))
    dWh = np.concatenate(
        [np.einsum('nti,ntj->ij', HIN[..., k * H:(k + 1) * H], DAH[..., k * H:(k + 1) * H]) for k in range(3)],
        axis=1)
    return dx, running, dWx, dWh, dbx, dbh
