# loops over the rows (n, t) for the layer norm, staged graph through mean and variance; FFN per row too
import numpy as np


def layer_norm_backward(dy, cache):
    D = dy.shape[-1]
    rows_dy = dy.reshape(-1, D)
    rows_xh = cache.x_hat.reshape(-1, D)
    rows_s = cache.inv_sigma.reshape(-1)
    dx = np.empty_like(rows_dy)
    dgamma = np.zeros(D)
    dbeta = np.zeros(D)
    for r in range(rows_dy.shape[0]):
        g_out, xh, s = rows_dy[r], rows_xh[r], rows_s[r]
        dbeta += g_out
        dgamma += g_out * xh
        dxh = g_out * cache.gamma
        centred = xh / s                        # x - mu
        # x_hat = centred * s, s = (var + eps)^(-1/2), var = mean(centred^2)
        ds_ = np.dot(dxh, centred)
        dvar = ds_ * (-0.5) * s ** 3
        dcentred = dxh * s + dvar * 2.0 * centred / D
        dx[r] = dcentred - dcentred.mean()
    return dx.reshape(dy.shape), dgamma, dbeta


def feed_forward_backward(dy, cache):
    W1, W2 = cache.W1, cache.W2
    X = cache.x.reshape(-1, W1.shape[0])
    Z = cache.hidden.reshape(-1, W1.shape[1])
    G = dy.reshape(-1, W2.shape[1])
    gelu = cache.activation == "gelu"
    if gelu:
        A = cache.act.x.reshape(Z.shape)
        Th = cache.act.tanh.reshape(Z.shape)
    dW1 = np.zeros_like(W1)
    db1 = np.zeros(W1.shape[1])
    dW2 = np.zeros_like(W2)
    db2 = np.zeros(W2.shape[1])
    dX = np.zeros_like(X)
    for r in range(X.shape[0]):
        dW2 += np.outer(Z[r], G[r])
        db2 += G[r]
        dz = W2 @ G[r]
        if gelu:
            a, t = A[r], Th[r]
            deriv = 0.5 * (1 + t) + 0.5 * a * (1 - t ** 2) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * a ** 2)
        else:
            deriv = Z[r] > 0
        da = dz * deriv
        dW1 += np.outer(X[r], da)
        db1 += da
        dX[r] = W1 @ da
    return dX.reshape(cache.x.shape), dW1, db1, dW2, db2


def residual_norm_backward(dy, cache):
    assert cache.order == "post"
    d_sum, dgamma, dbeta = layer_norm_backward(dy, cache.norm)
    # the residual sum copies its gradient to both of its inputs
    d_direct = d_sum
    d_through_ffn, dW1, db1, dW2, db2 = feed_forward_backward(d_sum, cache.sublayer)
    dx = d_direct + d_through_ffn
    return dx, dW1, db1, dW2, db2, dgamma, dbeta
