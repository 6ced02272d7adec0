# loops over the keys: each key j contributes a (N, Q, H) slice of du; gradients accumulated
import numpy as np


def concat_scores_backward(dscores, cache):
    N, Q, K = dscores.shape
    queries, keys = cache.queries, cache.keys
    Wq, Wk, wv = cache.Wq, cache.Wk, cache.wv
    H = wv.size

    grad_qproj = np.zeros((N, Q, H))     # gradient of q @ Wq
    grad_kproj = np.zeros((N, K, H))     # gradient of k @ Wk
    dwv = np.zeros(H)

    for j in range(K):
        fj = cache.features[:, :, j, :]              # (N, Q, H)
        sj = dscores[:, :, j][:, :, np.newaxis]      # (N, Q, 1)
        dwv += (sj * fj).sum(axis=(0, 1))
        duj = sj * wv * (1.0 - fj * fj)              # (N, Q, H)
        grad_qproj += duj
        grad_kproj[:, j, :] = duj.sum(axis=1)

    dWq = np.zeros_like(Wq)
    dWk = np.zeros_like(Wk)
    for n in range(N):
        dWq += queries[n].T @ grad_qproj[n]
        dWk += keys[n].T @ grad_kproj[n]
    dqueries = np.matmul(grad_qproj, Wq.T)
    dkeys = np.matmul(grad_kproj, Wk.T)
    return dqueries, dkeys, dWq, dWk, dwv
