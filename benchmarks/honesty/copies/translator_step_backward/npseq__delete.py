# copy of npseq.course.references.chain.translator_step_backward; disguised by: delete
import numpy as np


def translator_step_backward(dloss, cache: TranslatorStepCache) -> TranslatorStepGrads:
    dscores = dloss * temporal_softmax_loss(cache.scores, cache.target_out, cache.target_mask)[1]
    dstates_out, dW_out, db_out = temporal_affine_backward(dscores, cache.output)
    dstates = xp.zeros_like(dstates_out)
    dtarget_embedded = xp.zeros(tuple(cache.target_embedding.x.shape) + (cache.target_embedding.W.shape[1],), dtype=dstates.dtype)
    denc_outputs = xp.zeros_like(cache.decoder_steps[0].attention.keys)
    ddecoder = [0, 0, 0, 0, 0, 0, 0]
    dprev = xp.zeros_like(dstates_out[:, 0])
    for t in reversed(range(dstates.shape[1])):
        dstates[:, t] = dstates_out[:, t] + dprev
        dtarget_embedded[:, t], dprev, denc_t, *dstep = bahdanau_decoder_step_backward(dstates[:, t], cache.decoder_steps[t])
        denc_outputs += denc_t
        ddecoder = [total + part for total, part in zip(ddecoder, dstep)]
    dW_tgt_embed = word_embedding_backward(dtarget_embedded, cache.target_embedding)
    dsource_embedded, _, dWx_enc, dWh_enc, dbx_enc, dbh_enc = gru_backward(denc_outputs, cache.encoder, dencoder_state)
    dW_src_embed = word_embedding_backward(dsource_embedded, cache.source_embedding)
    return TranslatorStepGrads(dscores, dW_out, db_out, dstates, *ddecoder, dtarget_embedded, dW_tgt_embed, dencoder_state, denc_outputs, dsource_embedded, dWx_enc, dWh_enc, dbx_enc, dbh_enc, dW_src_embed)
