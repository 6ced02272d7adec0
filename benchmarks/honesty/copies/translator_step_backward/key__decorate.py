# copy of the solutions key; disguised by: decorate
import numpy as np


@_keep
def translator_step_backward(dloss, cache):
    dscores = dloss * temporal_softmax_loss(cache.scores, cache.target_out, cache.target_mask)[1]
    dz_s, dW_out, db_out = temporal_affine_backward(dscores, cache.output)
    dstates = np.zeros_like(dz_s)
    dtarget_embedded = np.zeros(cache.target_embedding.x.shape + cache.target_embedding.W.shape[1:])
    denc_outputs = np.zeros_like(cache.decoder_steps[0].attention.keys)
    ddecoder = [0] * 7
    dprev = np.zeros_like(dz_s[:, 0])
    for t in reversed(range(dz_s.shape[1])):
        dstates[:, t] = dz_s[:, t] + dprev
        dtarget_embedded[:, t], dprev, dk_t, *dstep = bahdanau_decoder_step_backward(dstates[:, t], cache.decoder_steps[t])
        denc_outputs += dk_t
        ddecoder = [total + part for total, part in zip(ddecoder, dstep)]
    dW_tgt_embed = word_embedding_backward(dtarget_embedded, cache.target_embedding)
    dencoder_state = dprev
    dsource_embedded, _, dWx_enc, dWh_enc, dbx_enc, dbh_enc = gru_backward(denc_outputs, cache.encoder, dencoder_state)
    dW_src_embed = word_embedding_backward(dsource_embedded, cache.source_embedding)
    return (dscores, dW_out, db_out, dstates, *ddecoder, dtarget_embedded, dW_tgt_embed, dencoder_state, denc_outputs, dsource_embedded, dWx_enc, dWh_enc, dbx_enc, dbh_enc, dW_src_embed)


def _keep(function):
    return function
