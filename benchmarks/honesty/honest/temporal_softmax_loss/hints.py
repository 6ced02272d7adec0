# hints followed literally: flatten to (N*T, V), max-shifted softmax, mask and divide by N
import numpy as np


def temporal_softmax_loss(x, y, mask):
    N, T, V = x.shape
    x_flat = x.reshape(N * T, V)
    y_flat = y.reshape(N * T)
    mask_flat = mask.reshape(N * T)

    shifted = x_flat - np.max(x_flat, axis=1, keepdims=True)
    exp = np.exp(shifted)
    p = exp / np.sum(exp, axis=1, keepdims=True)
    log_p = shifted - np.log(np.sum(exp, axis=1, keepdims=True))

    loss = -np.sum(mask_flat * log_p[np.arange(N * T), y_flat]) / N

    dx_flat = p.copy()
    dx_flat[np.arange(N * T), y_flat] -= 1
    dx_flat /= N
    dx_flat *= mask_flat[:, None]
    dx = dx_flat.reshape(N, T, V)
    return float(loss), dx
