# einsum-heavy, one-hot matrices for the embeddings, gradients accumulated in dicts keyed by name
import numpy as np


def _sig_d(s):
    return s * (1 - s)


def gru_step_backward(dnext_h, cache):
    c = cache
    H = c.prev_h.shape[1]
    Wh_r, Wh_z, Wh_n = c.Wh[:, :H], c.Wh[:, H:2 * H], c.Wh[:, 2 * H:]

    g_cand = dnext_h * (1 - c.z) * (1 - c.n * c.n)      # through tanh
    g_upd = dnext_h * (c.prev_h - c.n) * _sig_d(c.z)     # through sigmoid
    if c.reset_after:
        g_hn = g_cand * c.r                              # into h @ W_hn + b_hn
        g_rst = g_cand * c.hn * _sig_d(c.r)
        hid_in = [c.prev_h, c.prev_h, c.prev_h]
        hid_grad = [g_rst, g_upd, g_hn]
        dprev = dnext_h * c.z + g_hn @ Wh_n.T
    else:
        g_rh = g_cand @ Wh_n.T                           # into r * h
        g_rst = g_rh * c.prev_h * _sig_d(c.r)
        hid_in = [c.prev_h, c.prev_h, c.r * c.prev_h]
        hid_grad = [g_rst, g_upd, g_cand]
        dprev = dnext_h * c.z + g_rh * c.r
    dprev = dprev + g_rst @ Wh_r.T + g_upd @ Wh_z.T

    g_in = np.hstack([g_rst, g_upd, g_cand])
    dWh = np.hstack([np.einsum('ni,nj->ij', a, b) for a, b in zip(hid_in, hid_grad)])
    dbh = np.hstack([b.sum(0) for b in hid_grad])
    return (g_in @ c.Wx.T, dprev, np.einsum('nd,ng->dg', c.x, g_in), dWh, g_in.sum(0), dbh)


def masked_softmax_backward(dweights, cache):
    w = cache.weights
    proj = np.einsum('...k,...k->...', dweights, w)
    return np.where(cache.mask, w * (dweights - proj[..., None]), 0.0)


def additive_attention_backward(dcontext, cache, dweights=None):
    sc, pl = cache.scores, cache.pooling
    A = pl.pooled
    dvalues = np.einsum('nqk,nqe->nke', A, dcontext)
    dA = np.einsum('nqe,nke->nqk', dcontext, pl.values)
    if dweights is not None:
        dA = dA + dweights
    dS = masked_softmax_backward(dA, pl.softmax)
    F_ = sc.features
    dwv = np.einsum('nqk,nqkh->h', dS, F_)
    dU = np.einsum('nqk,h->nqkh', dS, sc.wv) * (1 - F_ * F_)
    dWq = np.einsum('nqd,nqkh->dh', sc.queries, dU)
    dWk = np.einsum('nkd,nqkh->dh', sc.keys, dU)
    dqueries = np.einsum('nqkh,dh->nqd', dU, sc.Wq)
    dkeys = np.einsum('nqkh,dh->nkd', dU, sc.Wk)
    return dqueries, dkeys, dvalues, dWq, dWk, dwv


def word_embedding_backward(dout, cache):
    V = cache.W.shape[0]
    onehot = (cache.x[..., None] == np.arange(V)).astype(dout.dtype)   # (N, T, V)
    return np.einsum('ntv,ntd->vd', onehot, dout)


def temporal_softmax_loss(x, y, mask):
    N = x.shape[0]
    m = np.asarray(mask, dtype=float)
    z = x - np.max(x, axis=-1, keepdims=True)
    lse = np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    logp = z - lse
    onehot = (y[..., None] == np.arange(x.shape[-1])).astype(float)
    loss = -np.sum(m * np.sum(onehot * logp, axis=-1)) / N
    dx = (np.exp(logp) - onehot) * m[..., None] / N
    return loss, dx


def bahdanau_decoder_step_backward(dnext_h, cache):
    split = cache.context.shape[-1]
    du, dh_rec, dWx, dWh, dbx, dbh = gru_step_backward(dnext_h, cache.gru)
    d_ctx = du[:, None, :split]
    d_emb = du[:, split:]
    dq, dk, dv, dWq, dWk, dwv = additive_attention_backward(d_ctx, cache.attention)
    # prev_h was the GRU's state and the attention's query; the encoder outputs were keys and values
    return d_emb, dh_rec + dq[:, 0, :], dk + dv, dWq, dWk, dwv, dWx, dWh, dbx, dbh


def temporal_affine_backward(dout, cache):
    return (np.einsum('ntm,dm->ntd', dout, cache.w),
            np.einsum('ntd,ntm->dm', cache.x, dout),
            np.einsum('ntm->m', dout))


def gru_backward(dh, cache, dh_last=None):
    N, T, H = dh.shape
    alive = np.asarray(cache.mask).astype(bool)
    names = ("Wx", "Wh", "bx", "bh")
    acc = dict.fromkeys(names, 0.0)
    dxs = []
    nxt = np.zeros((N, H)) if dh_last is None else dh_last
    for t in reversed(range(T)):
        keep = alive[:, t:t + 1]
        total = nxt + np.where(keep, dh[:, t], 0.0)
        dx_t, dprev, *ws = gru_step_backward(np.where(keep, total, 0.0), cache.steps[t])
        for k, g in zip(names, ws):
            acc[k] = acc[k] + g
        dxs.append(dx_t)
        nxt = np.where(keep, dprev, total)
    dx = np.stack(dxs[::-1], axis=1)
    return dx, nxt, acc["Wx"], acc["Wh"], acc["bx"], acc["bh"]


DEC_NAMES = ("Wq", "Wk", "wv", "Wx", "Wh", "bx", "bh")


def translator_step_backward(dloss, cache):
    # loss and output layer
    dscores = dloss * temporal_softmax_loss(cache.scores, cache.target_out, cache.target_mask)[1]
    d_from_scores, dW_out, db_out = temporal_affine_backward(dscores, cache.output)

    # decoder, back through time; s_t feeds its scores and the next step
    N, T, H = d_from_scores.shape
    dstates = np.zeros_like(d_from_scores)
    dec = dict.fromkeys(DEC_NAMES, 0.0)
    d_tgt_steps = [None] * T
    d_enc_out = 0.0
    d_next = np.zeros((N, H))
    for t in range(T - 1, -1, -1):
        dstates[:, t] = d_from_scores[:, t] + d_next
        out = bahdanau_decoder_step_backward(dstates[:, t], cache.decoder_steps[t])
        d_tgt_steps[t], d_next, dk = out[:3]
        d_enc_out = d_enc_out + dk
        for name, g in zip(DEC_NAMES, out[3:]):
            dec[name] = dec[name] + g
    dtarget_embedded = np.stack(d_tgt_steps, axis=1)
    dW_tgt_embed = word_embedding_backward(dtarget_embedded, cache.target_embedding)

    # encoder: its outputs (keys and values of every step) and its last state (the decoder's s_{-1})
    dencoder_state = d_next
    enc = gru_backward(d_enc_out, cache.encoder, dh_last=dencoder_state)
    dsource_embedded = enc[0]
    dWx_enc, dWh_enc, dbx_enc, dbh_enc = enc[2:]
    dW_src_embed = word_embedding_backward(dsource_embedded, cache.source_embedding)

    return (dscores, dW_out, db_out, dstates,
            dec["Wq"], dec["Wk"], dec["wv"], dec["Wx"], dec["Wh"], dec["bx"], dec["bh"],
            dtarget_embedded, dW_tgt_embed, dencoder_state, d_enc_out, dsource_embedded,
            dWx_enc, dWh_enc, dbx_enc, dbh_enc, dW_src_embed)
