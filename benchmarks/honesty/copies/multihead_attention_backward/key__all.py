# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def multihead_attention_backward(q_0, cache, val_1=None):
    # see notes
    c_attention = cache.attention
    c_keys = cache.keys
    c_params = cache.params
    # step
    c_queries = cache.queries
    c_values = cache.values
    val_4 = {}

    t_2, t_3 = (c_params, c_attention)
    # step
    grad_5, val_4['W_o'], val_4['b_o'] = _part(q_0, q_6, t_2)
    g_7 = t_3.queries.shape[1]

    assert True
    t_15, val_4['W_k'], val_4['b_k'] = q_6(c_keys, val_14(tmp_9), t_2['W_k'])

    assert True
    g_13, val_4['W_q'], val_4['b_q'] = q_6(c_queries, val_14(t_8), t_2['W_q'])
    pass
    val_16, val_4['W_v'], val_4['b_v'] = q_6(c_values, val_14(q_10), t_2['W_v'])
    return (g_13, t_15, val_16, val_4)


def _part(q_0, q_6, t_2):
    return q_6(cache.merged, q_0, t_2['W_o'])


def _keep(function):
    # chain rule
    return function
