# steps outside, layers inside; every layer's pre-activation gradients kept (L, N, T, H), the weights by einsum at the end
import numpy as np


def rnn_step_backward(dnext_h, cache):
    g = dnext_h - dnext_h * cache.next_h * cache.next_h
    dWx = np.einsum("nd,nh->dh", cache.x, g)
    dWh = np.einsum("nk,nh->kh", cache.prev_h, g)
    return g @ cache.Wx.T, g @ cache.Wh.T, dWx, dWh, g.sum(0)


def stacked_rnn_backward(dy, cache):
    depth = len(cache.layers)
    N, T, H = dy.shape
    pre = np.zeros((depth, N, T, H))
    running = np.zeros((depth, N, H))
    dx = np.zeros((N, T, cache.layers[0].steps[0].Wx.shape[0]))
    for t in range(T - 1, -1, -1):
        incoming = dy[:, t, :]
        for k in range(depth - 1, -1, -1):
            step = cache.layers[k].steps[t]
            keep = cache.layers[k].mask[:, t:t + 1]
            total = running[k] + keep * incoming
            da = keep * total * (1 - step.next_h ** 2)
            pre[k, :, t] = da
            running[k] = da @ step.Wh.T + (1 - keep) * total
            incoming = da @ step.Wx.T
        dx[:, t] = incoming
    grads = []
    for k in range(depth):
        xs = np.stack([s.x for s in cache.layers[k].steps], axis=1)
        hs = np.stack([s.prev_h for s in cache.layers[k].steps], axis=1)
        grads += [np.einsum("ntd,nth->dh", xs, pre[k]), np.einsum("ntg,nth->gh", hs, pre[k]), pre[k].sum(axis=(0, 1))]
    return (dx, running, *grads)
