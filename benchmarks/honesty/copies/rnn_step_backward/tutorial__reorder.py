# copy of npseq.functional.recurrent.rnn_step_backward, pasted from a tutorial; disguised by: reorder
import numpy as np


def rnn_step_backward(dnext_h, cache: RNNStepCache):
    da = dnext_h * (1 - cache.next_h ** 2)
    dWx = cache.x.T @ da
    dx = da @ cache.Wx.T
    dWh = cache.prev_h.T @ da
    db = da.sum(axis=0)
    dprev_h = da @ cache.Wh.T
    return (dx, dprev_h, dWx, dWh, db)
