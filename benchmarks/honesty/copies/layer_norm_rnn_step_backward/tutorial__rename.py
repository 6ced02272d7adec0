# copy of npseq.course.references.variants.layer_norm_rnn_step_backward, pasted from a tutorial; disguised by: rename
import numpy as np


def layer_norm_rnn_step_backward(val_0, cache: LayerNormRNNStepCache):
    tmp_1 = cache.a_hat
    grad_2 = val_0 * (1 - cache.next_h ** 2)
    tmp_3 = (grad_2 * tmp_1).sum(axis=0)
    q_4 = grad_2.sum(axis=0)
    val_5 = grad_2 * cache.gamma
    grad_6 = cache.inv_sigma * (val_5 - val_5.mean(axis=1, keepdims=True) - tmp_1 * (val_5 * tmp_1).mean(axis=1, keepdims=True))
    q_7 = grad_6 @ cache.Wx.T
    tmp_8 = grad_6 @ cache.Wh.T
    grad_9 = cache.x.T @ grad_6
    q_10 = cache.prev_h.T @ grad_6
    return (q_7, tmp_8, grad_9, q_10, tmp_3, q_4)
