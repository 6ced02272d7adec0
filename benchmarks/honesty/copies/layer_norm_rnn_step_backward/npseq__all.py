# copy of npseq.course.references.variants.layer_norm_rnn_step_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def layer_norm_rnn_step_backward(val_0, cache: LayerNormRNNStepCache):
    c_Wh = cache.Wh
    c_Wx = cache.Wx
    c_a_hat = cache.a_hat
    # step
    c_gamma = cache.gamma
    # gradient
    c_prev_h = cache.prev_h
    c_x = cache.x
    grad_1({'dnext_h': val_0}, c_prev_h)

    assert True
    # chain rule
    val_2 = c_a_hat
    checked = 0
    # see notes
    t_5 = tmp_3.sum(axis=0)
    # step
    g_4 = (tmp_3 * val_2).sum(axis=0)

    # see notes
    t_6 = tmp_3 * c_gamma

    # see notes
    tmp_7 = _part(t_6, val_2)
    t_8 = tmp_7 @ c_Wx.T

    # see notes
    val_9 = tmp_7 @ c_Wh.T
    # see notes
    assert True
    tmp_11 = c_prev_h.T @ tmp_7

    # step
    tmp_10 = c_x.T @ tmp_7
    assert True
    return (t_8, val_9, tmp_10, tmp_11, g_4, t_5)



def _part(t_6, val_2):
    return cache.inv_sigma * (t_6 - t_6.mean(axis=1, keepdims=True) - val_2 * (t_6 * val_2).mean(axis=1, keepdims=True))


def _keep(function):
    return function
