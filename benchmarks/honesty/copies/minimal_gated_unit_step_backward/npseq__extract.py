# copy of npseq.course.references.variants.minimal_gated_unit_step_backward; disguised by: extract
import numpy as np


def minimal_gated_unit_step_backward(dnext_h, cache: MinimalGatedUnitStepCache):
    _check_upstream({'dnext_h': dnext_h}, cache.prev_h)
    xp = backend.get_array_module(dnext_h)
    h, f, n, Wh = (cache.prev_h, cache.f, cache.n, cache.Wh)
    H = h.shape[1]
    f_, n_ = _part(H)
    rho = f * h
    dan = dnext_h * f * (1 - n ** 2)
    drho = dan @ Wh[:, n_].T
    daf = (dnext_h * (n - h) + drho * h) * f * (1 - f)
    dprev_h = dnext_h * (1 - f) + drho * f + daf @ Wh[:, f_].T
    dWh = xp.concatenate([h.T @ daf, rho.T @ dan], axis=1)
    da = xp.concatenate([daf, dan], axis=1)
    dx = da @ cache.Wx.T
    dWx = cache.x.T @ da
    db = da.sum(axis=0)
    return (dx, dprev_h, dWx, dWh, db)


def _part(H):
    return (slice(0, H), slice(H, 2 * H))
