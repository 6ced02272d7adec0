# copy of npseq.course.references.variants.minimal_gated_unit_step_backward, pasted from a tutorial; disguised by: decorate
import numpy as np


@_keep
def minimal_gated_unit_step_backward(dnext_h, cache: MinimalGatedUnitStepCache):
    h, f, n, Wh = (cache.prev_h, cache.f, cache.n, cache.Wh)
    H = h.shape[1]
    f_, n_ = (slice(0, H), slice(H, 2 * H))
    rho = f * h
    dan = dnext_h * f * (1 - n ** 2)
    drho = dan @ Wh[:, n_].T
    daf = (dnext_h * (n - h) + drho * h) * f * (1 - f)
    dprev_h = dnext_h * (1 - f) + drho * f + daf @ Wh[:, f_].T
    dWh = np.concatenate([h.T @ daf, rho.T @ dan], axis=1)
    da = np.concatenate([daf, dan], axis=1)
    dx = da @ cache.Wx.T
    dWx = cache.x.T @ da
    db = da.sum(axis=0)
    return (dx, dprev_h, dWx, dWh, db)


def _keep(function):
    return function
