# per-example loops: GRU by outer products, the one-query attention written out for each example in 2-d
import numpy as np


def gru_step_backward(dnext_h, cache):
    X, Hprev = cache.x, cache.prev_h
    Wx, Wh = cache.Wx, cache.Wh
    N, D = X.shape
    H = Hprev.shape[1]
    Whn = Wh[:, 2 * H:]

    dx = np.zeros((N, D))
    dprev_h = np.zeros((N, H))
    dWx = np.zeros((D, 3 * H))
    dWh = np.zeros((H, 3 * H))
    dbx = np.zeros(3 * H)
    dbh = np.zeros(3 * H)

    for k in range(N):
        dout = dnext_h[k]
        h = Hprev[k]
        r, z, cand = cache.r[k], cache.z[k], cache.n[k]

        # through h' = (1 - z) n + z h
        dcand = dout * (1 - z)
        dz = dout * (h - cand)
        dh = dout * z

        an = dcand * (1 - cand ** 2)      # gradient at the candidate's pre-activation
        az = dz * z * (1 - z)

        if cache.reset_after:
            hn = cache.hn[k]
            dr = an * hn
            ar = dr * r * (1 - r)
            ah = np.concatenate((ar, az, an * r))
            dh = dh + Wh @ ah
            dWh += np.outer(h, ah)
            dbh += ah
        else:
            drh = Whn @ an                # gradient w.r.t. r * h
            dr = drh * h
            ar = dr * r * (1 - r)
            dh = dh + drh * r + Wh[:, :H] @ ar + Wh[:, H:2 * H] @ az
            dWh[:, :H] += np.outer(h, ar)
            dWh[:, H:2 * H] += np.outer(h, az)
            dWh[:, 2 * H:] += np.outer(r * h, an)
            dbh += np.concatenate((ar, az, an))

        ax = np.concatenate((ar, az, an))
        dx[k] = Wx @ ax
        dWx += np.outer(X[k], ax)
        dbx += ax
        dprev_h[k] = dh
    return dx, dprev_h, dWx, dWh, dbx, dbh


def masked_softmax_backward(dweights, cache):
    w = cache.weights
    out = np.zeros_like(dweights)
    N, Q, _ = w.shape
    for n in range(N):
        for q in range(Q):
            p = w[n, q]
            g = dweights[n, q]
            out[n, q] = p * g - p * np.dot(p, g)   # masked keys have p = 0 -> 0
    return out


def additive_attention_backward(dcontext, cache, dweights=None):
    queries = cache.scores.queries
    keys = cache.scores.keys
    Wq, Wk, wv = cache.scores.Wq, cache.scores.Wk, cache.scores.wv
    F = cache.scores.features
    values = cache.pooling.values
    W = cache.pooling.pooled
    N, Q, _ = queries.shape

    dqueries = np.zeros_like(queries)
    dkeys = np.zeros_like(keys)
    dvalues = np.zeros_like(values)
    dWq = np.zeros_like(Wq)
    dWk = np.zeros_like(Wk)
    dwv = np.zeros_like(wv)

    # gradient w.r.t. the attention weights, for the whole batch at once
    dW = np.zeros_like(W)
    for n in range(N):
        dvalues[n] = W[n].T @ dcontext[n]
        dW[n] = dcontext[n] @ values[n].T
    if dweights is not None:
        dW = dW + dweights
    dS = masked_softmax_backward(dW, cache.pooling.softmax)

    for n in range(N):
        for q in range(Q):
            f = F[n, q]                                  # (K, h)
            ds = dS[n, q]                                # (K,)
            dwv += ds @ f
            dpre = np.outer(ds, wv) * (1.0 - f * f)      # (K, h)
            # the query's projection was added to every key's row
            dqp = dpre.sum(axis=0)                       # (h,)
            dqueries[n, q] = Wq @ dqp
            dWq += np.outer(queries[n, q], dqp)
            # the keys' projections, one row each
            dkeys[n] += dpre @ Wk.T
            dWk += keys[n].T @ dpre
    return dqueries, dkeys, dvalues, dWq, dWk, dwv


def bahdanau_decoder_step_backward(dnext_h, cache):
    att = cache.attention
    Wq, Wk, wv = att.scores.Wq, att.scores.Wk, att.scores.wv
    prev_h = att.scores.queries[:, 0]            # (N, H), the decoder state used as the query
    enc = att.pooling.values                     # (N, S, H_enc), also the keys
    feats = att.scores.features[:, 0]            # (N, S, h)
    weights = att.pooling.pooled[:, 0]           # (N, S)
    valid = att.pooling.softmax.mask[:, 0]       # (N, S)
    Hc = cache.context.shape[1]

    dU, dprev_h, dWx, dWh, dbx, dbh = gru_step_backward(dnext_h, cache.gru)
    dx = dU[:, Hc:]
    dctx = dU[:, :Hc]

    N = dnext_h.shape[0]
    denc = np.zeros_like(enc)
    dWq = np.zeros_like(Wq)
    dWk = np.zeros_like(Wk)
    dwv = np.zeros_like(wv)
    for n in range(N):
        # context = weights @ enc
        denc[n] += np.outer(weights[n], dctx[n])
        dw = enc[n] @ dctx[n]                                   # (S,)
        # softmax over the valid encoder positions
        p = weights[n]
        ds = np.where(valid[n], p * (dw - p @ dw), 0.0)
        # scores = tanh(q Wq + k Wk) . wv
        dwv += feats[n].T @ ds
        dpre = (ds[:, None] * wv[None, :]) * (1.0 - feats[n] ** 2)   # (S, h)
        dq = dpre.sum(axis=0)
        dprev_h[n] += Wq @ dq
        dWq += np.outer(prev_h[n], dq)
        denc[n] += dpre @ Wk.T
        dWk += enc[n].T @ dpre
    return dx, dprev_h, denc, dWq, dWk, dwv, dWx, dWh, dbx, dbh
