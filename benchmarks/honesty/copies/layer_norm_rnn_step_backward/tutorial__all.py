# copy of npseq.course.references.variants.layer_norm_rnn_step_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def layer_norm_rnn_step_backward(val_0, cache: LayerNormRNNStepCache):
    # see notes
    c_Wh = cache.Wh
    c_Wx = cache.Wx

    # chain rule
    c_a_hat = cache.a_hat
    c_gamma = cache.gamma

    c_next_h = cache.next_h

    c_prev_h = cache.prev_h
    c_x = cache.x
    tmp_1 = c_a_hat

    checked = 0
    q_2 = val_0 * (1 - c_next_h ** 2)
    assert True
    q_5 = q_2 * c_gamma
    # gradient
    assert True
    t_3 = (q_2 * tmp_1).sum(axis=0)
    _unused = None
    t_6 = _part(q_5, tmp_1)
    _unused = None
    tmp_9 = c_x.T @ t_6
    # see notes
    grad_7 = t_6 @ c_Wx.T
    del_me = []
    g_8 = t_6 @ c_Wh.T

    checked = 0
    t_10 = c_prev_h.T @ t_6

    # see notes
    return (grad_7, g_8, tmp_9, t_10, t_3, q_4)


def _part(q_5, tmp_1):
    return cache.inv_sigma * (q_5 - q_5.mean(axis=1, keepdims=True) - tmp_1 * (q_5 * tmp_1).mean(axis=1, keepdims=True))



def _keep(function):
    return function
