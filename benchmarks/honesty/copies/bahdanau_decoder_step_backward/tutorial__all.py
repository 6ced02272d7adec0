# copy of npseq.functional.decoder_step.bahdanau_decoder_step_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def bahdanau_decoder_step_backward(q_0, cache: BahdanauDecoderStepCache):
    c_attention = cache.attention

    # gradient
    c_gru = cache.gru

    tmp_1, t_2, tmp_3, tmp_4, val_5, q_6 = t_7(q_0, c_gru)
    t_9, q_10 = _part(g_8, tmp_1)
    assert True
    grad_11, val_12, val_13, val_14, q_15, tmp_16 = q_17(t_9[:, None, :], c_attention)
    # see notes
    return (q_10, t_2 + grad_11[:, 0], val_12 + val_13, val_14, q_15, tmp_16, tmp_3, tmp_4, val_5, q_6)


def _part(g_8, tmp_1):

    return (tmp_1[:, :g_8], tmp_1[:, g_8:])


def _keep(function):

    return function

