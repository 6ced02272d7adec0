# einsum for the matrix products, softmax backward written with an einsum row dot product
import numpy as np


def masked_softmax_backward(dweights, cache):
    probs = cache.weights
    row_dot = np.einsum('bqk,bqk->bq', probs, dweights)[:, :, None]
    return probs * dweights - probs * row_dot


def masked_dot_attention_backward(dcontext, cache, dweights=None):
    attn = cache.softmax.weights
    grad_attn = np.einsum('bqe,bke->bqk', dcontext, cache.values)
    if dweights is not None:
        grad_attn += dweights
    grad_v = np.einsum('bqk,bqe->bke', attn, dcontext)
    # the softmax output is exactly zero at masked keys, so nothing leaks through the mask
    grad_s = masked_softmax_backward(grad_attn, cache.softmax)
    grad_q = np.einsum('bqk,bkd->bqd', grad_s, cache.keys)
    grad_k = np.einsum('bqk,bqd->bkd', grad_s, cache.queries)
    return grad_q, grad_k, grad_v
