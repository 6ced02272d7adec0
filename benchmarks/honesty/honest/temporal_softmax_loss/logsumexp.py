# 3-d throughout: log-softmax via a logsumexp helper, take_along_axis for the targets, one-hot for dx
import numpy as np


def logsumexp(z, axis=-1):
    zmax = z.max(axis=axis, keepdims=True)
    return zmax + np.log(np.exp(z - zmax).sum(axis=axis, keepdims=True))


def temporal_softmax_loss(x, y, mask):
    N, _, V = x.shape
    m = mask.astype(x.dtype)
    log_probs = x - logsumexp(x)                                   # (N, T, V)
    picked = np.take_along_axis(log_probs, y[..., None], axis=-1)[..., 0]
    loss = -(m * picked).sum() / N

    targets = np.eye(V)[y]                                        # (N, T, V) one-hot
    dx = (np.exp(log_probs) - targets) * (m / N)[..., None]
    return loss, dx
