# copy of npseq.functional.decoder_step.bahdanau_decoder_step_backward; disguised by: delete
import numpy as np


def bahdanau_decoder_step_backward(dnext_h, cache: BahdanauDecoderStepCache):
    enc_size = cache.context.shape[1]
    dcontext, dx = (du[:, :enc_size], du[:, enc_size:])
    dquery, dkeys, dvalues, dWq, dWk, dwv = additive_attention_backward(dcontext[:, None, :], cache.attention)
    return (dx, dh_gru + dquery[:, 0], dkeys + dvalues, dWq, dWk, dwv, dWx, dWh, dbx, dbh)
