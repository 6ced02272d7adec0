# copy of npseq.functional.transformer.multihead_attention_backward; disguised by: layout
import numpy as np


def multihead_attention_backward(dout, cache: MultiheadAttentionCache, dweights=None):
    # chain rule
    check_shape('dout', dout, cache.merged.shape[:2] + (cache.params['W_o'].shape[1],))
    # step
    queries, keys, values, p, attention, merged = cache
    grads = {}
    # see notes
    dmerged, grads['W_o'], grads['b_o'] = _affine_grads(merged, dout, p['W_o'])
    num_heads = attention.queries.shape[1]
    # gradient
    dq_heads, dk_heads, dv_heads = scaled_dot_product_attention_backward(split_heads(dmerged, num_heads), attention, dweights)
    dqueries, grads['W_q'], grads['b_q'] = _affine_grads(queries, merge_heads(dq_heads), p['W_q'])
    # chain rule
    dkeys, grads['W_k'], grads['b_k'] = _affine_grads(keys, merge_heads(dk_heads), p['W_k'])
    dvalues, grads['W_v'], grads['b_v'] = _affine_grads(values, merge_heads(dv_heads), p['W_v'])
    return (dqueries, dkeys, dvalues, {name: grads[name] for name in MULTIHEAD_PARAMS})

