# gate-by-gate: slices the weight blocks by name, fills gradient blocks in place; np.where for padding in time
import numpy as np


def sigmoid_grad_from_output(s):
    return s * (1.0 - s)


def tanh_grad_from_output(t):
    return 1.0 - t * t


def gru_step_backward(dnext_h, cache):
    x, hprev = cache.x, cache.prev_h
    r, z, n = cache.r, cache.z, cache.n
    Wx, Wh = cache.Wx, cache.Wh
    H = hprev.shape[1]
    R, Z, C = slice(0, H), slice(H, 2 * H), slice(2 * H, 3 * H)

    dWx = np.zeros_like(Wx)
    dWh = np.zeros_like(Wh)
    dbx = np.zeros(3 * H)
    dbh = np.zeros(3 * H)

    # h' = (1 - z) n + z hprev
    dn = dnext_h * (1.0 - z)
    dz = dnext_h * (hprev - n)
    dhprev = dnext_h * z

    g_n = dn * tanh_grad_from_output(n)        # pre-activation of n
    g_z = dz * sigmoid_grad_from_output(z)     # pre-activation of z

    if not cache.reset_after:
        # a_n = x Wxn + bxn + (r * hprev) Whn + bhn
        rh = r * hprev
        d_rh = g_n @ Wh[:, C].T
        dWh[:, C] = rh.T @ g_n
        dbh[C] = g_n.sum(0)
        dr = d_rh * hprev
        dhprev = dhprev + d_rh * r
    else:
        # a_n = x Wxn + bxn + r * (hprev Whn + bhn)
        hn = cache.hn
        d_hn = g_n * r
        dWh[:, C] = hprev.T @ d_hn
        dbh[C] = d_hn.sum(0)
        dr = g_n * hn
        dhprev = dhprev + d_hn @ Wh[:, C].T

    g_r = dr * sigmoid_grad_from_output(r)

    # the r and z gates: x Wx* + bx* + hprev Wh* + bh*
    for sl, g in ((R, g_r), (Z, g_z)):
        dWh[:, sl] = hprev.T @ g
        dbh[sl] = g.sum(0)
        dhprev = dhprev + g @ Wh[:, sl].T

    dx = np.zeros_like(x)
    for sl, g in ((R, g_r), (Z, g_z), (C, g_n)):
        dWx[:, sl] = x.T @ g
        dbx[sl] = g.sum(0)
        dx += g @ Wx[:, sl].T

    return dx, dhprev, dWx, dWh, dbx, dbh


def gru_backward(dh, cache, dh_last=None):
    steps = cache.steps
    N, T, H = dh.shape
    valid = cache.mask.astype(bool)
    first = steps[0]

    grads = [np.zeros_like(first.Wx), np.zeros_like(first.Wh), np.zeros(3 * H), np.zeros(3 * H)]
    dx_steps = [None] * T
    carry = np.zeros((N, H)) if dh_last is None else np.array(dh_last, dtype=float)

    for t in reversed(range(T)):
        v = valid[:, t][:, None]
        # the output y_t only exists at valid steps
        total = carry + np.where(v, dh[:, t], 0.0)
        into_step = np.where(v, total, 0.0)
        dxt, dprev, *wgrads = gru_step_backward(into_step, steps[t])
        dx_steps[t] = dxt
        for acc, gw in zip(grads, wgrads):
            acc += gw
        # padded rows: h_t = h_{t-1}, the gradient skips the step
        carry = np.where(v, dprev, total)

    dx = np.stack(dx_steps, axis=1)
    return (dx, carry) + tuple(grads)
