# copy of the solutions key; disguised by: reorder
import numpy as np


def multihead_attention_backward(dout, cache, dweights=None):
    p, att = (cache.params, cache.attention)
    grads = {}
    dC, grads['W_o'], grads['b_o'] = _affine(cache.merged, dout, p['W_o'])
    heads = att.queries.shape[1]
    dQh, dKh, dVh = scaled_dot_product_attention_backward(_split(dC, heads), att, dweights)
    dk, grads['W_k'], grads['b_k'] = _affine(cache.keys, _merge(dKh), p['W_k'])
    dv, grads['W_v'], grads['b_v'] = _affine(cache.values, _merge(dVh), p['W_v'])
    dq, grads['W_q'], grads['b_q'] = _affine(cache.queries, _merge(dQh), p['W_q'])
    return (dq, dk, dv, grads)
