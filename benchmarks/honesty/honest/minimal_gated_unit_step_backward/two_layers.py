# treats the gate and the candidate as two dense layers on stacked inputs [x, h] and [x, f*h]
import numpy as np


def dense_backward(dout, inp, W):
    """out = inp @ W + b  ->  (dinp, dW, db)"""
    return dout @ W.T, inp.T @ dout, dout.sum(axis=0)


def minimal_gated_unit_step_backward(dnext_h, cache):
    x, h, f, n = cache.x, cache.prev_h, cache.f, cache.n
    D = x.shape[1]
    H = h.shape[1]

    # weights of each layer: rows for x on top, rows for the recurrent input below
    W_gate = np.vstack((cache.Wx[:, :H], cache.Wh[:, :H]))   # (D+H, H)
    W_cand = np.vstack((cache.Wx[:, H:], cache.Wh[:, H:]))   # (D+H, H)
    in_gate = np.hstack((x, h))
    in_cand = np.hstack((x, f * h))

    # h' = h + f * (n - h)
    dn = dnext_h * f
    df = dnext_h * (n - h)
    dh = dnext_h * (1.0 - f)

    # candidate layer: n = tanh(in_cand @ W_cand + b_n)
    dpre_n = dn * (1.0 - n * n)
    din_cand, dW_cand, db_n = dense_backward(dpre_n, in_cand, W_cand)
    dx = din_cand[:, :D]
    dreset = din_cand[:, D:]          # gradient of f * h
    df += dreset * h
    dh += dreset * f

    # gate layer: f = sigmoid(in_gate @ W_gate + b_f)
    dpre_f = df * f * (1.0 - f)
    din_gate, dW_gate, db_f = dense_backward(dpre_f, in_gate, W_gate)
    dx = dx + din_gate[:, :D]
    dh = dh + din_gate[:, D:]

    dWx = np.hstack((dW_gate[:D], dW_cand[:D]))
    dWh = np.hstack((dW_gate[D:], dW_cand[D:]))
    db = np.concatenate((db_f, db_n))
    return dx, dh, dWx, dWh, db
