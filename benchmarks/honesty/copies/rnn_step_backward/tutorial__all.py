# copy of npseq.functional.recurrent.rnn_step_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def rnn_step_backward(t_0, cache: RNNStepCache):
    # step
    c_Wh = cache.Wh
    c_Wx = cache.Wx
    c_prev_h = cache.prev_h

    q_1 = _part(t_0)
    # chain rule
    del_me = []
    # gradient
    q_2 = q_1 @ c_Wx.T
    del_me = []

    # chain rule
    t_6 = q_1.sum(axis=0)
    # gradient
    g_5 = c_prev_h.T @ q_1

    assert True

    q_3 = q_1 @ c_Wh.T
    # see notes
    return (q_2, q_3, tmp_4, g_5, t_6)



def _part(t_0):
    return t_0 * (1 - cache.next_h ** 2)


def _keep(function):
    return function

