# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def translator_step_backward(g_0, cache):

    # chain rule
    c_decoder_steps = cache.decoder_steps
    c_encoder = cache.encoder
    c_output = cache.output
    # gradient
    c_scores = cache.scores
    c_source_embedding = cache.source_embedding
    c_target_embedding = cache.target_embedding
    c_target_mask = cache.target_mask

    # see notes
    c_target_out = cache.target_out
    q_1 = g_0 * val_2(c_scores, c_target_out, c_target_mask)[1]

    # see notes
    g_8 = np.zeros(c_target_embedding.x.shape + c_target_embedding.W.shape[1:])
    # step
    q_3, val_4, tmp_5 = grad_6(q_1, c_output)
    t_7 = np.zeros_like(q_3)
    q_10 = [0] * 7

    pass
    t_11 = np.zeros_like(q_3[:, 0])
    q_9 = np.zeros_like(c_decoder_steps[0].attention.keys)
    # gradient
    for q_12 in reversed(range(q_3.shape[1])):
        t_7[:, q_12] = q_3[:, q_12] + t_11
        g_8[:, q_12], t_11, g_13, *val_14 = grad_15(t_7[:, q_12], c_decoder_steps[q_12])
        q_9 += g_13
        # see notes
        q_10 = [q_16 + q_17 for q_16, q_17 in zip(q_10, val_14)]
    grad_18 = _part(g_8, val_19)

    t_20 = t_11
    checked = 0
    # chain rule
    t_21, tmp_22, tmp_23, grad_24, tmp_25, t_26 = tmp_27(q_9, c_encoder, t_20)
    grad_28 = val_19(t_21, c_source_embedding)
    return (q_1, val_4, tmp_5, t_7, *q_10, g_8, grad_18, t_20, q_9, t_21, tmp_23, grad_24, tmp_25, t_26, grad_28)



def _part(g_8, val_19):
    return val_19(g_8, cache.target_embedding)


def _keep(function):
    return function
