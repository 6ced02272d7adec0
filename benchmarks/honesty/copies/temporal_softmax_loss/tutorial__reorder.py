# copy of npseq.functional.losses.temporal_softmax_loss, pasted from a tutorial; disguised by: reorder
import numpy as np


def temporal_softmax_loss(x, y, mask, verbose=False):
    n, t, _ = x.shape
    log_p, _ = log_softmax_forward(x)
    picked = np.take_along_axis(log_p, y[:, :, None], axis=-1)[:, :, 0]
    weight = mask.astype(x.dtype)
    loss = -(weight * picked).sum() / n
    dx = np.exp(log_p)
    dx[np.arange(n)[:, None], np.arange(t)[None, :], y] -= 1
    dx *= weight[:, :, None] / n
    return (float(loss), dx)
