# every exercise of the chain written from its hints, the translator step one hint line per forward line
import numpy as np


# ---- 1. GRU step
def gru_step_backward(dnext_h, cache):
    x, h = cache.x, cache.prev_h
    r, z, n = cache.r, cache.z, cache.n
    Wx, Wh = cache.Wx, cache.Wh
    H = h.shape[1]

    da_n = dnext_h * (1 - z) * (1 - n ** 2)
    da_z = dnext_h * (h - n) * z * (1 - z)
    dh = dnext_h * z

    if cache.reset_after:
        eta = cache.hn
        da_r = da_n * eta * r * (1 - r)
        dah = np.concatenate([da_r, da_z, da_n * r], axis=1)
        dh = dh + dah @ Wh.T
        dWh = h.T @ dah
        dbh = dah.sum(axis=0)
        dax = np.concatenate([da_r, da_z, da_n], axis=1)
        dbx = dax.sum(axis=0)
    else:
        rho = r * h
        drho = da_n @ Wh[:, 2 * H:].T
        da_r = drho * h * r * (1 - r)
        dh = dh + drho * r + np.concatenate([da_r, da_z], axis=1) @ Wh[:, :2 * H].T
        dWh = np.concatenate([h.T @ da_r, h.T @ da_z, rho.T @ da_n], axis=1)
        dax = np.concatenate([da_r, da_z, da_n], axis=1)
        dbx = dax.sum(axis=0)
        dbh = dbx

    dx = dax @ Wx.T
    dWx = x.T @ dax
    return dx, dh, dWx, dWh, dbx, dbh


# ---- 2. masked softmax
def masked_softmax_backward(dweights, cache):
    a = cache.weights; return a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))


# ---- 3. additive attention
def additive_attention_backward(dcontext, cache, dweights=None):
    q = cache.scores.queries
    k = cache.scores.keys
    Wq, Wk, wv = cache.scores.Wq, cache.scores.Wk, cache.scores.wv
    f = cache.scores.features
    v = cache.pooling.values
    a = cache.pooling.pooled
    h = wv.shape[0]

    dv = a.swapaxes(1, 2) @ dcontext
    da = dcontext @ v.swapaxes(1, 2)
    if dweights is not None:
        da = da + dweights
    ds = masked_softmax_backward(da, cache.pooling.softmax)
    dwv = (ds[..., None] * f).reshape(-1, h).sum(axis=0)
    du = ds[..., None] * wv * (1 - f ** 2)
    dq_p = du.sum(axis=2)
    dk_p = du.sum(axis=1)
    dqueries = dq_p @ Wq.T
    dWq = q.reshape(-1, q.shape[-1]).T @ dq_p.reshape(-1, h)
    dkeys = dk_p @ Wk.T
    dWk = k.reshape(-1, k.shape[-1]).T @ dk_p.reshape(-1, h)
    return dqueries, dkeys, dv, dWq, dWk, dwv


# ---- 4. word embedding
def word_embedding_backward(dout, cache):
    dW = np.zeros_like(cache.W)
    np.add.at(dW, cache.x, dout)
    return dW


# ---- 5. loss over time
def temporal_softmax_loss(x, y, mask):
    N, T, V = x.shape
    shifted = x - x.max(axis=2, keepdims=True)
    p = np.exp(shifted)
    p /= p.sum(axis=2, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=2, keepdims=True))
    nn, tt = np.meshgrid(np.arange(N), np.arange(T), indexing="ij")
    loss = -(mask * logp[nn, tt, y]).sum() / N
    dx = p.copy()
    dx[nn, tt, y] -= 1
    dx *= mask[:, :, None] / N
    return loss, dx


# ---- 6. Bahdanau decoder step
def bahdanau_decoder_step_backward(dnext_h, cache):
    H_enc = cache.context.shape[1]
    du, dh_gru, dWx, dWh, dbx, dbh = gru_step_backward(dnext_h, cache.gru)
    dc, dx = du[:, :H_enc], du[:, H_enc:]
    dq, dk, dv, dWq, dWk, dwv = additive_attention_backward(dc[:, None, :], cache.attention)
    dprev_h = dh_gru + dq[:, 0]
    denc_outputs = dk + dv
    return dx, dprev_h, denc_outputs, dWq, dWk, dwv, dWx, dWh, dbx, dbh


# ---- 7. vocabulary layer
def temporal_affine_backward(dout, cache):
    x, w = cache.x, cache.w
    N, T, D = x.shape
    M = w.shape[1]
    dx = dout @ w.T
    dw = x.reshape(N * T, D).T @ dout.reshape(N * T, M)
    db = dout.sum(axis=(0, 1))
    return dx, dw, db


# ---- 8. encoder
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
    return dx, delta, dWx, dWh, dbx, dbh


# ---- 9. one training step
def translator_step_backward(dloss, cache):
    _, dx_loss = temporal_softmax_loss(cache.scores, cache.target_out, cache.target_mask)
    dscores = dloss * dx_loss
    dz_s, dW_out, db_out = temporal_affine_backward(dscores, cache.output)

    N, T, H = dz_s.shape
    first = cache.decoder_steps[0]
    dstates = np.zeros((N, T, H))
    dtarget_embedded = None
    denc_outputs = None
    dWq = dWk = dwv = dWx_dec = dWh_dec = dbx_dec = dbh_dec = None

    dprev = np.zeros((N, H))
    for t in range(T - 1, -1, -1):
        dstates[:, t] = dz_s[:, t] + dprev
        du_t, dprev, dk_t, dWq_t, dWk_t, dwv_t, dWx_t, dWh_t, dbx_t, dbh_t = bahdanau_decoder_step_backward(
            dstates[:, t], cache.decoder_steps[t])
        if dtarget_embedded is None:
            dtarget_embedded = np.zeros((N, T, du_t.shape[1]))
            denc_outputs = np.zeros_like(dk_t)
            dWq, dWk, dwv = np.zeros_like(dWq_t), np.zeros_like(dWk_t), np.zeros_like(dwv_t)
            dWx_dec, dWh_dec = np.zeros_like(dWx_t), np.zeros_like(dWh_t)
            dbx_dec, dbh_dec = np.zeros_like(dbx_t), np.zeros_like(dbh_t)
        dtarget_embedded[:, t] = du_t
        denc_outputs += dk_t
        dWq += dWq_t
        dWk += dWk_t
        dwv += dwv_t
        dWx_dec += dWx_t
        dWh_dec += dWh_t
        dbx_dec += dbx_t
        dbh_dec += dbh_t

    dW_tgt_embed = word_embedding_backward(dtarget_embedded, cache.target_embedding)
    dencoder_state = dprev
    dsource_embedded, _, dWx_enc, dWh_enc, dbx_enc, dbh_enc = gru_backward(
        denc_outputs, cache.encoder, dencoder_state)
    dW_src_embed = word_embedding_backward(dsource_embedded, cache.source_embedding)

    return (dscores, dW_out, db_out, dstates, dWq, dWk, dwv, dWx_dec, dWh_dec, dbx_dec, dbh_dec,
            dtarget_embedded, dW_tgt_embed, dencoder_state, denc_outputs, dsource_embedded,
            dWx_enc, dWh_enc, dbx_enc, dbh_enc, dW_src_embed)
