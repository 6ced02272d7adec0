# copy of npseq.functional.transformer.scaled_dot_product_attention_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def scaled_dot_product_attention_backward(q_0, cache: ScaledDotProductAttentionCache, t_1=None):
    val_2, tmp_3, tmp_4, val_5, t_6, q_7, t_8 = cache
    grad_11, q_12, g_13 = _part(grad_9, q_0, t_1, t_14)

    g_15, tmp_16 = g_17(grad_11, grad_18(val_2, tmp_3, val_5))

    checked = 0
    return (g_15, tmp_16, q_12)


def _part(grad_9, q_0, t_1, t_14):
    return t_14(q_0, grad_9, t_1)


def _keep(function):
    return function
