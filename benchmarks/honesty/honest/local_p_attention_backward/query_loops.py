# loops over examples and queries, an explicit softmax Jacobian per query row
import numpy as np


def masked_softmax_backward(dweights, cache):
    N, Q, K = dweights.shape
    out = np.zeros_like(dweights)
    for n in range(N):
        for i in range(Q):
            a = cache.weights[n, i]
            J = np.diag(a) - np.outer(a, a)          # da_j / ds_k (zero rows/cols at masked keys)
            out[n, i] = J.T @ dweights[n, i]
    return out


def general_scores_backward(dscores, cache):
    q, k, W = cache.queries, cache.keys, cache.W
    dq = np.zeros_like(q)
    dk = np.zeros_like(k)
    dW = np.zeros_like(W)
    for n in range(q.shape[0]):
        proj = q[n] @ W
        dproj = dscores[n] @ k[n]
        dk[n] = dscores[n].T @ proj
        dq[n] = dproj @ W.T
        dW += q[n].T @ dproj
    return dq, dk, dW


def local_p_attention_backward(dcontext, cache):
    sc, pos, pool = cache.scores, cache.position, cache.pooling
    N, Q, Dv = dcontext.shape
    K = pool.values.shape[1]
    Dq, Hp = pos.Wp.shape
    sig2 = pool.sigma ** 2
    positions = np.arange(K, dtype=float)

    dvalues = np.zeros_like(pool.values)
    dalpha = np.zeros((N, Q, K))
    dq_pos = np.zeros((N, Q, Dq))
    dWp = np.zeros((Dq, Hp))
    dvp = np.zeros(Hp)

    for n in range(N):
        S = pos.source_lens[n]
        for i in range(Q):
            w = pool.weights[n, i]                      # (K,)
            dc = dcontext[n, i]                         # (Dv,)
            dvalues[n] += np.outer(w, dc)
            dw = pool.values[n] @ dc                    # (K,)
            dalpha[n, i] = dw * pool.gaussian[n, i]
            dcenter = np.sum(dw * w * (positions - pool.centers[n, i])) / sig2

            # p = S * r, r = sigmoid(u . vp), u = tanh(h Wp)
            r = pos.ratio[n, i]
            u = pos.features[n, i]
            dlogit = dcenter * S * r * (1 - r)
            dvp += dlogit * u
            dpre = dlogit * pos.vp * (1 - u ** 2)      # (Hp,)
            dWp += np.outer(pos.queries[n, i], dpre)
            dq_pos[n, i] = pos.Wp @ dpre

    dscores = masked_softmax_backward(dalpha, pool.softmax)
    dq_sc, dkeys, dW = general_scores_backward(dscores, sc)
    return dq_sc + dq_pos, dkeys, dvalues, dW, dWp, dvp
