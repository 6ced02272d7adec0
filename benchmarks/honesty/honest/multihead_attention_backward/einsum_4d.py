# einsum for everything; the head split is folded into the einsums by viewing W as (D_in, h, d)
import numpy as np


def masked_softmax_backward(dweights, cache):
    w = cache.weights
    dot = np.einsum('...k,...k->...', w, dweights)[..., None]
    return w * dweights - w * dot


def scaled_dot_product_attention_backward(dout, cache, dweights=None):
    attn = cache.pooled
    dv = np.einsum('...qk,...qe->...ke', attn, dout)
    da = np.einsum('...qe,...ke->...qk', dout, cache.values)
    if dweights is not None:
        da = da + dweights
    ds = masked_softmax_backward(da, cache.softmax) * cache.scale
    dq = np.einsum('...qk,...kc->...qc', ds, cache.keys)
    dk = np.einsum('...qk,...qc->...kc', ds, cache.queries)
    return dq, dk, dv


def multihead_attention_backward(dout, cache, dweights=None):
    P = cache.params
    att = cache.attention
    N, h, Tq, d = att.queries.shape

    # output projection: out[n,t,o] = sum_c C[n,t,c] W_o[c,o] + b_o[o]
    g = {}
    g["W_o"] = np.einsum('ntc,nto->co', cache.merged, dout)
    g["b_o"] = np.einsum('nto->o', dout)
    dC = np.einsum('nto,co->ntc', dout, P["W_o"])

    # merged column c = head * d + j, so (N, T, D) -> (N, T, h, d) -> (N, h, T, d)
    dO = np.einsum('ntij->nitj', dC.reshape(N, Tq, h, d))
    dQh, dKh, dVh = scaled_dot_product_attention_backward(dO, att, dweights)

    out = []
    for name, x, dXh in (("q", cache.queries, dQh), ("k", cache.keys, dKh), ("v", cache.values, dVh)):
        W = P["W_" + name]
        W3 = W.reshape(W.shape[0], h, d)
        g["W_" + name] = np.einsum('ntm,nitj->mij', x, dXh).reshape(W.shape)
        g["b_" + name] = np.einsum('nitj->ij', dXh).reshape(-1)
        out.append(np.einsum('nitj,mij->ntm', dXh, W3))

    dqueries, dkeys, dvalues = out
    return dqueries, dkeys, dvalues, g
