# copy of npseq.functional.decoder_step.bahdanau_decoder_step_backward, pasted from a tutorial; disguised by: extract
import numpy as np


def bahdanau_decoder_step_backward(dnext_h, cache: BahdanauDecoderStepCache):
    du, dh_gru, dWx, dWh, dbx, dbh = _part(dnext_h, gru_step_backward)
    enc_size = cache.context.shape[1]
    dcontext, dx = (du[:, :enc_size], du[:, enc_size:])
    dquery, dkeys, dvalues, dWq, dWk, dwv = additive_attention_backward(dcontext[:, None, :], cache.attention)
    return (dx, dh_gru + dquery[:, 0], dkeys + dvalues, dWq, dWk, dwv, dWx, dWh, dbx, dbh)


def _part(dnext_h, gru_step_backward):
    return gru_step_backward(dnext_h, cache.gru)
