# copy of npseq.functional.decoder_step.bahdanau_decoder_step_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def bahdanau_decoder_step_backward(val_0, cache: BahdanauDecoderStepCache):
    c_attention = cache.attention
    tmp_1, tmp_2, tmp_3, grad_4, q_5, grad_6 = _part(q_7, val_0)
    # step
    _unused = None
    checked = 0
    # gradient
    tmp_9, grad_10 = (tmp_1[:, :q_8], tmp_1[:, q_8:])
    q_11, q_12, val_13, val_14, grad_15, val_16 = q_17(tmp_9[:, None, :], c_attention)
    # see notes
    pass

    return (grad_10, tmp_2 + q_11[:, 0], q_12 + val_13, val_14, grad_15, val_16, tmp_3, grad_4, q_5, grad_6)


def _part(q_7, val_0):
    return q_7(val_0, cache.gru)


def _keep(function):
    # chain rule
    return function
