# flattens the batch axes and loops over each matrix and each query row, with the explicit softmax Jacobian
import numpy as np


def softmax_jacobian(a):
    """J[j, k] = d a_j / d s_k for one row of softmax outputs a."""
    return np.diag(a) - np.outer(a, a)


def masked_softmax_backward(dweights, cache):
    a = cache.weights
    K = a.shape[-1]
    a2 = a.reshape(-1, K)
    g2 = dweights.reshape(-1, K)
    out = np.zeros_like(a2)
    for r in range(a2.shape[0]):
        J = softmax_jacobian(a2[r])
        # chain rule: ds_k = sum_j g_j * J[j, k]
        out[r] = g2[r] @ J
    return out.reshape(a.shape)


def scaled_dot_product_attention_backward(dout, cache, dweights=None):
    Q = cache.queries
    K = cache.keys
    V = cache.values
    A = cache.pooled
    lead = Q.shape[:-2]
    Tq, d = Q.shape[-2:]
    Tk, dv = V.shape[-2:]

    Qf = Q.reshape(-1, Tq, d)
    Kf = K.reshape(-1, Tk, d)
    Vf = V.reshape(-1, Tk, dv)
    Af = A.reshape(-1, Tq, Tk)
    dOf = dout.reshape(-1, Tq, dv)
    B = Qf.shape[0]

    dA = np.zeros((B, Tq, Tk))
    dVf = np.zeros_like(Vf)
    for b in range(B):
        dA[b] = dOf[b] @ Vf[b].T
        dVf[b] = Af[b].T @ dOf[b]
    dA = dA.reshape(lead + (Tq, Tk))
    if dweights is not None:
        dA = dA + dweights

    dS = masked_softmax_backward(dA, cache.softmax).reshape(-1, Tq, Tk)

    dQf = np.zeros_like(Qf)
    dKf = np.zeros_like(Kf)
    for b in range(B):
        for i in range(Tq):
            row = dS[b, i] * cache.scale
            dQf[b, i] = row @ Kf[b]
            dKf[b] += np.outer(row, Qf[b, i])

    return dQf.reshape(Q.shape), dKf.reshape(K.shape), dVf.reshape(V.shape)
