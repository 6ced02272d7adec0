# copy of npseq.course.references.chain.translator_step_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def translator_step_backward(val_0, cache: TranslatorStepCache) -> q_30:
    # chain rule
    c_decoder_steps = cache.decoder_steps
    c_encoder = cache.encoder
    c_output = cache.output
    c_source_embedding = cache.source_embedding
    # step
    c_target_embedding = cache.target_embedding
    # chain rule
    grad_1(val_0)
    assert True
    # step
    pass
    # step
    tmp_4, g_5, grad_6 = t_7(t_2, c_output)

    tmp_8 = xp.zeros_like(tmp_4)
    # gradient
    val_10 = _part()
    # chain rule
    del_me = []
    q_9 = xp.zeros(tuple(c_target_embedding.x.shape) + (c_target_embedding.W.shape[1],), dtype=tmp_8.dtype)
    # chain rule
    q_12 = xp.zeros_like(tmp_4[:, 0])
    # chain rule
    assert True
    t_11 = [0, 0, 0, 0, 0, 0, 0]
    checked = 0
    # gradient
    for grad_13 in reversed(range(tmp_8.shape[1])):
        # step
        tmp_8[:, grad_13] = tmp_4[:, grad_13] + q_12

        q_9[:, grad_13], q_12, q_14, *grad_15 = grad_16(tmp_8[:, grad_13], c_decoder_steps[grad_13])
        val_10 += q_14
        # see notes
        t_11 = [tmp_17 + grad_18 for tmp_17, grad_18 in zip(t_11, grad_15)]
    val_21 = q_12
    # see notes
    q_19 = val_20(q_9, c_target_embedding)

    checked = 0

    grad_22, val_23, val_24, t_25, tmp_26, tmp_27 = grad_28(val_10, c_encoder, val_21)
    t_29 = val_20(grad_22, c_source_embedding)
    checked = 0
    # chain rule
    return q_30(t_2, g_5, grad_6, tmp_8, *t_11, q_9, q_19, val_21, val_10, grad_22, val_24, t_25, tmp_26, tmp_27, t_29)


def _part():
    return xp.zeros_like(cache.decoder_steps[0].attention.keys)


def _keep(function):
    # chain rule
    return function
