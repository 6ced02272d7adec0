# each row flipped by a Python loop over the batch; the two directions through one backpropagation through time
import numpy as np


def rnn_step_backward(dnext_h, cache):
    dz = (1 - cache.next_h * cache.next_h) * dnext_h
    dx = np.dot(dz, cache.Wx.T)
    dh = np.dot(dz, cache.Wh.T)
    return dx, dh, np.dot(cache.x.T, dz), np.dot(cache.prev_h.T, dz), dz.sum(axis=0)


def rnn_backward(dh, cache):
    N, T, _ = dh.shape
    back = np.zeros_like(cache.h_last)
    dxs, totals = [], None
    for t in range(T - 1, -1, -1):
        on = cache.mask[:, t].reshape(N, 1)
        here = back + on * dh[:, t]
        dx_t, dprev, *dw = rnn_step_backward(on * here, cache.steps[t])
        back = np.where(on > 0, dprev, here)
        dxs.append(dx_t)
        totals = dw if totals is None else [a + b for a, b in zip(totals, dw)]
    return (np.stack(dxs[::-1], axis=1), back, *totals)


def _flip(a, lens):
    out = a.copy()
    for row, length in enumerate(lens):
        out[row, :length] = a[row, :length][::-1]
    return out


def bidirectional_rnn_backward(dy, cache):
    N, T, two_h = dy.shape
    half = two_h // 2
    lens = [T] * N if cache.valid_lens is None else [int(v) for v in cache.valid_lens]
    fwd = rnn_backward(dy[..., :half], cache.forward)
    bwd = rnn_backward(_flip(dy[..., half:], lens), cache.backward)
    dx = fwd[0] + _flip(bwd[0], lens)
    return (dx, np.stack([fwd[1], bwd[1]])) + tuple(fwd[2:]) + tuple(bwd[2:])
