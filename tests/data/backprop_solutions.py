"""Hand-written solutions of every exercise in tutorials/exercises/backprop_exercises.py, in plain NumPy.

The grader's tests use this file to show that each exercise can be solved from its
docstring alone, without npseq's backward functions (the honesty check stays silent).
"""
import numpy as np


def rnn_step_backward(dnext_h, cache):
    da = dnext_h * (1 - cache.next_h ** 2)
    return da @ cache.Wx.T, da @ cache.Wh.T, cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0)


def lstm_step_backward(dnext_h, dnext_c, cache):
    i, f, o, g, tanh_c = cache.i, cache.f, cache.o, cache.g, cache.tanh_c
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    da = np.concatenate([dc * g * i * (1 - i), dc * cache.prev_c * f * (1 - f),
                         dnext_h * tanh_c * o * (1 - o), dc * i * (1 - g ** 2)], axis=1)
    return da @ cache.Wx.T, da @ cache.Wh.T, dc * f, cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0)


def gru_step_backward(dnext_h, cache):
    h, r, z, n, Wh = cache.prev_h, cache.r, cache.z, cache.n, cache.Wh
    H = h.shape[1]
    dan = dnext_h * (1 - z) * (1 - n ** 2)
    daz = dnext_h * (h - n) * z * (1 - z)
    dh = dnext_h * z
    if cache.reset_after:
        dar = dan * cache.hn * r * (1 - r)
        dah = np.concatenate([dar, daz, dan * r], axis=1)
        dh = dh + dah @ Wh.T
        dWh, dbh = h.T @ dah, dah.sum(axis=0)
    else:
        drho = dan @ Wh[:, 2 * H:].T
        dar = drho * h * r * (1 - r)
        dh = dh + drho * r + dar @ Wh[:, :H].T + daz @ Wh[:, H:2 * H].T
        dWh = np.concatenate([h.T @ dar, h.T @ daz, (r * h).T @ dan], axis=1)
        dbh = np.concatenate([dar, daz, dan], axis=1).sum(axis=0)
    dax = np.concatenate([dar, daz, dan], axis=1)
    return dax @ cache.Wx.T, dh, cache.x.T @ dax, dWh, dax.sum(axis=0), dbh


def masked_softmax_backward(dweights, cache):
    a = cache.weights
    return a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))


def additive_attention_backward(dcontext, cache, dweights=None):
    p = cache.projected
    a, v, f = p.pooling.pooled, p.pooling.values, p.features
    dvalues = a.swapaxes(1, 2) @ dcontext
    da = dcontext @ v.swapaxes(1, 2)
    if dweights is not None:
        da = da + dweights
    ds = masked_softmax_backward(da, p.pooling.softmax)
    dwv = np.einsum("nqk,nqkh->h", ds, f)
    du = ds[..., None] * p.wv * (1 - f ** 2)
    dq_p, dk_p = du.sum(axis=2), du.sum(axis=1)
    dq, dk = p.queries, cache.keys
    return (dq_p @ p.Wq.T, dk_p @ cache.Wk.T, dvalues, dq.reshape(-1, dq.shape[-1]).T @ dq_p.reshape(-1, du.shape[-1]),
            dk.reshape(-1, dk.shape[-1]).T @ dk_p.reshape(-1, du.shape[-1]), dwv)


def rnn_backward(dh, cache):
    delta, dxs, dWx, dWh, db = np.zeros_like(cache.h_last), [], 0, 0, 0
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta + m * dh[:, t]
        dx_t, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m * g, cache.steps[t])
        delta = dprev_h + (1 - m) * g
        dxs.insert(0, dx_t)
        dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
    return np.stack(dxs, axis=1), delta, dWx, dWh, db


def lstm_backward(dh, cache):
    delta_h, delta_c = np.zeros_like(cache.h_last), np.zeros_like(cache.c_last)
    dxs, dWx, dWh, db = [], 0, 0, 0
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta_h + m * dh[:, t]
        dx_t, dprev_h, dprev_c, dWx_t, dWh_t, db_t = lstm_step_backward(m * g, m * delta_c, cache.steps[t])
        delta_h, delta_c = dprev_h + (1 - m) * g, dprev_c + (1 - m) * delta_c
        dxs.insert(0, dx_t)
        dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
    return np.stack(dxs, axis=1), delta_h, dWx, dWh, db


def word_embedding_backward(dout, cache):
    dW = np.zeros_like(cache.W)
    np.add.at(dW, cache.x, dout)
    return dW


def temporal_softmax_loss(x, y, mask):
    n = x.shape[0]
    shifted = x - x.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_p, y[..., None], axis=-1)[..., 0]
    loss = -(mask * picked).sum() / n
    dx = np.exp(log_p)
    dx[np.arange(n)[:, None], np.arange(x.shape[1]), y] -= 1
    return loss, dx * mask[..., None] / n


def bahdanau_decoder_step_backward(dnext_h, cache):
    du, dh_gru, dWx, dWh, dbx, dbh = gru_step_backward(dnext_h, cache.gru)
    enc = cache.context.shape[1]
    dq, dk, dv, dWq, dWk, dwv = additive_attention_backward(du[:, None, :enc], cache.attention)
    return du[:, enc:], dh_gru + dq[:, 0], dk + dv, dWq, dWk, dwv, dWx, dWh, dbx, dbh


def layer_norm_backward(dy, cache):
    x_hat, s, gamma = cache.x_hat, cache.inv_sigma, cache.gamma
    rows, hats = dy.reshape(-1, dy.shape[-1]), x_hat.reshape(-1, x_hat.shape[-1])
    g = dy * gamma
    dx = s * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return dx, (rows * hats).sum(axis=0), rows.sum(axis=0)


def _split(x, heads):
    n, t, features = x.shape
    return x.reshape(n, t, heads, features // heads).transpose(0, 2, 1, 3)


def _merge(x):
    n, heads, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(n, t, heads * d)


def _affine(x, dy, W):
    """dx, dW, db of y = x @ W + b on (N, T, *) arrays."""
    rows_x, rows_dy = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return dy @ W.T, rows_x.T @ rows_dy, rows_dy.sum(axis=0)


def multihead_attention_backward(dout, cache, dweights=None):
    p, att = cache.params, cache.attention
    grads = {}
    dC, grads["W_o"], grads["b_o"] = _affine(cache.merged, dout, p["W_o"])
    heads = att.queries.shape[1]
    dO = _split(dC, heads)
    dVh = att.pooled.swapaxes(-1, -2) @ dO
    dA = dO @ att.values.swapaxes(-1, -2)
    if dweights is not None:
        dA = dA + dweights
    dS = masked_softmax_backward(dA, att.softmax) * att.scale
    dQh, dKh = dS @ att.keys, dS.swapaxes(-1, -2) @ att.queries
    dq, grads["W_q"], grads["b_q"] = _affine(cache.queries, _merge(dQh), p["W_q"])
    dk, grads["W_k"], grads["b_k"] = _affine(cache.keys, _merge(dKh), p["W_k"])
    dv, grads["W_v"], grads["b_v"] = _affine(cache.values, _merge(dVh), p["W_v"])
    return dq, dk, dv, grads
