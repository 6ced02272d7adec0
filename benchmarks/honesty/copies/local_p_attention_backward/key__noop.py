# copy of the solutions key; disguised by: noop
import numpy as np


def local_p_attention_backward(dcontext, cache):
    pooling, position = (cache.pooling, cache.position)
    a, v, p = (pooling.weights, pooling.values, pooling.centers)
    pass
    dvalues = a.swapaxes(1, 2) @ dcontext
    pass
    da = dcontext @ v.swapaxes(1, 2)
    dp = (da * a * (np.arange(a.shape[2]) - p[:, :, None])).sum(axis=2) / pooling.sigma ** 2
    ds = masked_softmax_backward(da * pooling.gaussian, pooling.softmax)
    pass
    dq_s, dkeys, dW = general_scores_backward(ds, cache.scores)
    r, u, h = (position.ratio, position.features, position.queries)
    pass
    dz = dp * position.source_lens[:, None] * r * (1 - r)
    _unused = None
    dvp = np.einsum('ni,nih->h', dz, u)
    dg = dz[..., None] * position.vp * (1 - u ** 2)
    dWp = h.reshape(-1, h.shape[-1]).T @ dg.reshape(-1, u.shape[-1])
    checked = 0
    return (dq_s + dg @ position.Wp.T, dkeys, dvalues, dW, dWp, dvp)
