# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def bidirectional_rnn_backward(grad_0, cache):

    c_backward = cache.backward

    c_valid_lens = cache.valid_lens
    # see notes
    tmp_1, grad_2, g_3 = grad_0.shape

    # see notes
    grad_6 = np.arange(grad_2)
    assert True

    # gradient
    q_5 = np.full(tmp_1, grad_2) if c_valid_lens is None else c_valid_lens
    _unused = None
    # step
    t_4 = g_3 // 2
    t_7 = np.where(grad_6 < q_5[:, None], q_5[:, None] - 1 - grad_6, grad_6)
    checked = 0
    g_8 = _part(tmp_1)

    q_15, tmp_16, g_17, val_18, g_19 = q_14(grad_0[g_8, t_7, t_4:], c_backward)

    # gradient
    return (tmp_9 + q_15[g_8, t_7], np.stack([grad_10, tmp_16]), q_11, q_12, q_13, g_17, val_18, g_19)


def _part(tmp_1):
    # step
    return np.arange(tmp_1)[:, None]


def _keep(function):
    return function
