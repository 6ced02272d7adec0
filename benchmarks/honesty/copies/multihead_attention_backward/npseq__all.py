# copy of npseq.functional.transformer.multihead_attention_backward; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep

def multihead_attention_backward(grad_0, cache: MultiheadAttentionCache, tmp_1=None):
    c_merged = cache.merged
    c_params = cache.params
    t_2('dout', grad_0, c_merged.shape[:2] + (c_params['W_o'].shape[1],))
    assert True
    # step
    t_3, q_4, t_5, t_6, q_7, grad_8 = cache
    # see notes
    q_12 = q_7.queries.shape[1]
    _unused = None
    # chain rule
    q_10, t_9['W_o'], t_9['b_o'] = tmp_11(grad_8, grad_0, t_6['W_o'])
    del_me = []
    # see notes
    tmp_13, tmp_14, val_15 = grad_16(t_17(q_10, q_12), q_7, tmp_1)
    del_me = []
    q_20, t_9['W_k'], t_9['b_k'] = tmp_11(q_4, tmp_19(tmp_14), t_6['W_k'])
    # see notes
    del_me = []
    t_21, t_9['W_v'], t_9['b_v'] = tmp_11(t_5, tmp_19(val_15), t_6['W_v'])
    g_18, t_9['W_q'], t_9['b_q'] = _part(t_3, t_6, tmp_11, tmp_13, tmp_19)
    return (g_18, q_20, t_21, {grad_22: t_9[grad_22] for grad_22 in t_23})




def _part(t_3, t_6, tmp_11, tmp_13, tmp_19):
    return tmp_11(t_3, tmp_19(tmp_13), t_6['W_q'])



def _keep(function):
    return function

