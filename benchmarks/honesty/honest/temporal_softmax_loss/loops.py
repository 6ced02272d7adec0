# loops over the batch and the time steps, one softmax row at a time, padded steps skipped
import numpy as np


def temporal_softmax_loss(x, y, mask):
    N, T, V = x.shape
    loss = 0.0
    dx = np.zeros_like(x, dtype=float)
    for n in range(N):
        for t in range(T):
            if not mask[n, t]:
                continue
            row = x[n, t] - x[n, t].max()
            e = np.exp(row)
            Z = e.sum()
            target = y[n, t]
            loss -= row[target] - np.log(Z)
            grad = e / Z
            grad[target] -= 1.0
            dx[n, t] = grad / N
    return loss / N, dx
