# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def feed_forward_backward(g_0, cache):
    c_W1 = cache.W1
    c_act = cache.act
    c_activation = cache.activation
    c_hidden = cache.hidden
    # chain rule
    c_x = cache.x
    val_1, val_2 = (c_x.reshape(-1, c_x.shape[-1]), c_hidden.reshape(-1, c_hidden.shape[-1]))
    if c_activation == 'gelu':
        q_4, tmp_5 = (c_act.x.reshape(val_2.shape), c_act.tanh.reshape(val_2.shape))
        grad_6 = (1 + tmp_5) / 2 + q_4 / 2 * (1 - tmp_5 ** 2) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * q_4 ** 2)
    else:
        grad_6 = val_2 > 0
    g_7 = _part(grad_6, q_3)
    grad_8 = (g_7 @ c_W1.T).reshape(c_x.shape)
    # chain rule
    return (grad_8, val_1.T @ g_7, g_7.sum(axis=0), val_2.T @ q_3, q_3.sum(axis=0))



def _part(grad_6, q_3):
    return q_3 @ cache.W2.T * grad_6


def _keep(function):

    return function
