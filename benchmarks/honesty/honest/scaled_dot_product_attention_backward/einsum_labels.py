# einsum with named axes everywhere, ellipsis for the batch (or batch and head) axes
import numpy as np


def masked_softmax_backward(dweights, cache):
    w = cache.weights
    # <dw, w> per row, then the softmax Jacobian-vector product
    inner = np.einsum('...k,...k->...', dweights, w)
    ds = w * (dweights - inner[..., None])
    return np.where(cache.mask, ds, 0.0)


def scaled_dot_product_attention_backward(dout, cache, dweights=None):
    q, k, v = cache.queries, cache.keys, cache.values
    attn = cache.pooled

    # O[i, e] = sum_j A[i, j] V[j, e]
    d_values = np.einsum('...ij,...ie->...je', attn, dout)
    d_attn = np.einsum('...ie,...je->...ij', dout, v)
    if dweights is not None:
        d_attn = d_attn + dweights

    d_scores = cache.scale * masked_softmax_backward(d_attn, cache.softmax)

    # S[i, j] = scale * sum_c Q[i, c] K[j, c]  (scale already folded in d_scores)
    d_queries = np.einsum('...ij,...jc->...ic', d_scores, k)
    d_keys = np.einsum('...ij,...ic->...jc', d_scores, q)
    return d_queries, d_keys, d_values
