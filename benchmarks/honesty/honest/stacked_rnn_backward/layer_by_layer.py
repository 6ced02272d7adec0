# layer by layer: the top layer's whole backpropagation through time, then the bottom's, fed what the top sent down
import numpy as np


def rnn_step_backward(dnext_h, cache):
    pre = dnext_h * (1.0 - np.square(cache.next_h))
    return pre @ cache.Wx.T, pre @ cache.Wh.T, cache.x.T @ pre, cache.prev_h.T @ pre, np.sum(pre, axis=0)


def _through_time(grad_out, layer):
    """one layer over the whole sequence: its input gradient (N, T, D), its initial state's, its weights' sums"""
    length = grad_out.shape[1]
    carry = np.zeros_like(layer.h_last)
    inputs = [None] * length
    sums = None
    for step in range(length - 1, -1, -1):
        valid = layer.mask[:, step][:, None]
        total = carry + valid * grad_out[:, step]
        parts = rnn_step_backward(valid * total, layer.steps[step])
        inputs[step] = parts[0]
        carry = parts[1] + (1.0 - valid) * total
        sums = parts[2:] if sums is None else tuple(a + b for a, b in zip(sums, parts[2:]))
    return np.stack(inputs, axis=1), carry, sums


def stacked_rnn_backward(dy, cache):
    lower, upper = cache.layers
    into_upper, dh0_upper, (dWx2, dWh2, db2) = _through_time(dy, upper)
    dx, dh0_lower, (dWx1, dWh1, db1) = _through_time(into_upper, lower)
    return dx, np.stack([dh0_lower, dh0_upper]), dWx1, dWh1, db1, dWx2, dWh2, db2
