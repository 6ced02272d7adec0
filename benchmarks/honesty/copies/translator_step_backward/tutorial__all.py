# copy of npseq.course.references.chain.translator_step_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def translator_step_backward(tmp_0, cache: TranslatorStepCache) -> val_29:
    c_decoder_steps = cache.decoder_steps
    c_encoder = cache.encoder
    c_output = cache.output
    c_scores = cache.scores
    # gradient
    c_source_embedding = cache.source_embedding
    c_target_embedding = cache.target_embedding
    # step
    c_target_mask = cache.target_mask
    c_target_out = cache.target_out

    val_1 = tmp_0 * val_2(c_scores, c_target_out, c_target_mask)[1]
    # step
    pass
    g_3, tmp_4, tmp_5 = grad_6(val_1, c_output)
    q_9 = np.zeros_like(c_decoder_steps[0].attention.keys)
    pass
    # see notes
    val_7 = np.zeros_like(g_3)

    g_10 = [0, 0, 0, 0, 0, 0, 0]
    g_8 = np.zeros(tuple(c_target_embedding.x.shape) + (c_target_embedding.W.shape[1],), dtype=val_7.dtype)
    # step
    checked = 0
    g_11 = _part(g_3)
    # gradient
    for t_12 in reversed(range(val_7.shape[1])):
        # step
        val_7[:, t_12] = g_3[:, t_12] + g_11

        g_8[:, t_12], g_11, tmp_13, *tmp_14 = g_15(val_7[:, t_12], c_decoder_steps[t_12])
        q_9 += tmp_13
        g_10 = [q_16 + t_17 for q_16, t_17 in zip(g_10, tmp_14)]
    # see notes
    val_20 = g_11
    _unused = None
    tmp_18 = g_19(g_8, c_target_embedding)

    # gradient
    q_21, q_22, g_23, val_24, val_25, t_26 = tmp_27(q_9, c_encoder, val_20)

    grad_28 = g_19(q_21, c_source_embedding)
    # step
    del_me = []
    # chain rule
    return val_29(val_1, tmp_4, tmp_5, val_7, *g_10, g_8, tmp_18, val_20, q_9, q_21, g_23, val_24, val_25, t_26, grad_28)


def _part(g_3):
    return np.zeros_like(g_3[:, 0])


def _keep(function):
    return function
