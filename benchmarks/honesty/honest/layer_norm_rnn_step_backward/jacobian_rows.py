# builds the H x H layer-norm Jacobian of every row explicitly and multiplies by it
import numpy as np


def layernorm_jacobian(ahat_row, s_row):
    """J[i, j] = d ahat_i / d a_j for one row."""
    H = ahat_row.shape[0]
    return (s_row / H) * (H * np.eye(H) - np.ones((H, H)) - np.outer(ahat_row, ahat_row))


def layer_norm_rnn_step_backward(dnext_h, cache):
    N, H = dnext_h.shape
    # tanh
    dpre = dnext_h * (1.0 - cache.next_h ** 2)
    # z = gamma * ahat + beta
    dbeta = dpre.sum(axis=0)
    dgamma = (dpre * cache.a_hat).sum(axis=0)
    dahat = dpre * cache.gamma

    da = np.zeros((N, H))
    for row in range(N):
        J = layernorm_jacobian(cache.a_hat[row], cache.inv_sigma[row, 0])
        da[row] = J.T @ dahat[row]

    # a = x Wx + prev_h Wh
    dWx = cache.x.T @ da
    dWh = cache.prev_h.T @ da
    dx = da @ cache.Wx.T
    dprev_h = da @ cache.Wh.T
    return dx, dprev_h, dWx, dWh, dgamma, dbeta
