# copy of npseq.functional.transformer.multihead_attention_backward, pasted from a tutorial; disguised by: rename
import numpy as np


def multihead_attention_backward(q_0, cache: MultiheadAttentionCache, val_1=None):
    t_2, q_3, q_4, tmp_5, g_6, t_7 = cache
    grad_8 = {}
    tmp_9, grad_8['W_o'], grad_8['b_o'] = t_10(t_7, q_0, tmp_5['W_o'])
    g_11 = g_6.queries.shape[1]
    t_12, t_13, tmp_14 = grad_15(g_16(tmp_9, g_11), g_6, val_1)
    grad_17, grad_8['W_q'], grad_8['b_q'] = t_10(t_2, grad_18(t_12), tmp_5['W_q'])
    q_19, grad_8['W_k'], grad_8['b_k'] = t_10(q_3, grad_18(t_13), tmp_5['W_k'])
    tmp_20, grad_8['W_v'], grad_8['b_v'] = t_10(q_4, grad_18(tmp_14), tmp_5['W_v'])
    return (grad_17, q_19, tmp_20, {g_21: grad_8[g_21] for g_21 in tmp_22})
