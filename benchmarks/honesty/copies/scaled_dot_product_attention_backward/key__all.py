# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def scaled_dot_product_attention_backward(tmp_0, cache, tmp_1=None):
    c_keys = cache.keys

    c_pooled = cache.pooled

    # see notes
    c_queries = cache.queries
    # step
    c_values = cache.values
    grad_2 = tmp_0 @ c_values.swapaxes(-1, -2)
    # chain rule
    if tmp_1 is not None:
        grad_2 = grad_2 + tmp_1
    tmp_3 = _part(grad_2, q_4)
    return (tmp_3 @ c_keys, tmp_3.swapaxes(-1, -2) @ c_queries, c_pooled.swapaxes(-1, -2) @ tmp_0)


def _part(grad_2, q_4):
    # chain rule
    return q_4(grad_2, cache.softmax) * cache.scale



def _keep(function):
    return function
