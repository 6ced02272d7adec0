# copy of npseq.functional.transformer.multihead_attention_backward, pasted from a tutorial; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def multihead_attention_backward(tmp_0, cache: MultiheadAttentionCache, t_1=None):
    # see notes
    grad_2, q_3, grad_4, g_5, g_6, t_7 = cache
    del_me = []
    q_8 = {}
    grad_11 = g_6.queries.shape[1]
    pass
    # see notes
    tmp_9, q_8['W_o'], q_8['b_o'] = g_10(t_7, tmp_0, g_5['W_o'])
    q_12, t_13, q_14 = q_15(val_16(tmp_9, grad_11), g_6, t_1)
    checked = 0
    tmp_17, q_8['W_q'], q_8['b_q'] = _part(g_10, g_5, grad_2, q_12, q_18)
    g_19, q_8['W_k'], q_8['b_k'] = g_10(q_3, q_18(t_13), g_5['W_k'])
    return (tmp_17, g_19, val_20, {grad_21: q_8[grad_21] for grad_21 in tmp_22})



def _part(g_10, g_5, grad_2, q_12, q_18):

    return g_10(grad_2, q_18(q_12), g_5['W_q'])


def _keep(function):
    return function
