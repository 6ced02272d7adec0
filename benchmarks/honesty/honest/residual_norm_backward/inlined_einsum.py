# one long function, every step inlined with einsum and sums over (n, t); the two earlier exercises defined separately
import numpy as np


def layer_norm_backward(dy, cache):
    xh, inv = cache.x_hat, cache.inv_sigma
    n_feat = xh.shape[-1]
    axes = tuple(range(dy.ndim - 1))
    dxh = dy * cache.gamma
    dx = (inv / n_feat) * (n_feat * dxh - dxh.sum(-1, keepdims=True) - xh * (dxh * xh).sum(-1, keepdims=True))
    return dx, (dy * xh).sum(axis=axes), dy.sum(axis=axes)


def feed_forward_backward(dy, cache):
    hid = cache.hidden
    dW2 = np.tensordot(hid, dy, axes=(tuple(range(hid.ndim - 1)), tuple(range(dy.ndim - 1))))
    db2 = dy.reshape(-1, dy.shape[-1]).sum(0)
    dhid = dy @ cache.W2.T
    if cache.activation == "relu":
        dpre = dhid * (hid > 0)
    else:
        a, t = cache.act.x, cache.act.tanh
        c = np.sqrt(2.0 / np.pi)
        dpre = dhid * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * c * (1 + 0.134145 * a * a))
    x = cache.x
    dW1 = np.tensordot(x, dpre, axes=(tuple(range(x.ndim - 1)), tuple(range(dpre.ndim - 1))))
    db1 = dpre.reshape(-1, dpre.shape[-1]).sum(0)
    return dpre @ cache.W1.T, dW1, db1, dW2, db2


def residual_norm_backward(dy, cache):
    # --- y = LayerNorm(s)
    ln = cache.norm
    xh, inv, gamma = ln.x_hat, ln.inv_sigma, ln.gamma
    dgamma = np.einsum('ntd,ntd->d', dy, xh)
    dbeta = np.einsum('ntd->d', dy)
    gxh = dy * gamma
    m1 = np.einsum('ntd->nt', gxh)[..., None] / xh.shape[-1]
    m2 = np.einsum('ntd,ntd->nt', gxh, xh)[..., None] / xh.shape[-1]
    ds = inv * (gxh - m1 - xh * m2)

    # --- s = x + f: ds flows to x directly and into the FFN
    ff = cache.sublayer
    z = ff.hidden
    dW2 = np.einsum('ntf,ntd->fd', z, ds)
    db2 = np.einsum('ntd->d', ds)
    dz = np.einsum('ntd,fd->ntf', ds, ff.W2)
    da = np.where(z > 0, dz, 0.0)            # ReLU inside the sub-layer
    dW1 = np.einsum('ntk,ntf->kf', ff.x, da)
    db1 = np.einsum('ntf->f', da)
    df = np.einsum('ntf,kf->ntk', da, ff.W1)

    dx = ds + df
    return dx, dW1, db1, dW2, db2, dgamma, dbeta
