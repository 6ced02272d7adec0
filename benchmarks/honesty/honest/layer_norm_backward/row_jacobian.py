# builds the D x D Jacobian of x_hat for every row in a loop, no shortcut formula
import numpy as np


def xhat_jacobian(xh_row, s):
    """J[i, j] = d x_hat_i / d x_j for one row."""
    D = xh_row.shape[0]
    eye = np.eye(D)
    return (s / D) * (D * eye - 1.0 - np.outer(xh_row, xh_row))


def layer_norm_backward(dy, cache):
    shape = dy.shape
    D = shape[-1]
    dy_rows = dy.reshape(-1, D)
    xh_rows = cache.x_hat.reshape(-1, D)
    s_rows = cache.inv_sigma.reshape(-1)
    gamma = cache.gamma

    dx_rows = np.zeros_like(dy_rows)
    dgamma = np.zeros(D)
    dbeta = np.zeros(D)
    for r in range(dy_rows.shape[0]):
        dgamma += dy_rows[r] * xh_rows[r]
        dbeta += dy_rows[r]
        g = dy_rows[r] * gamma
        J = xhat_jacobian(xh_rows[r], s_rows[r])
        dx_rows[r] = J.T @ g
    return dx_rows.reshape(shape), dgamma, dbeta
