# einsum with explicit n, t indices, no reshapes
import numpy as np


def temporal_affine_backward(dout, cache):
    dx = np.einsum('ntm,dm->ntd', dout, cache.w)
    dw = np.einsum('ntd,ntm->dm', cache.x, dout)
    db = np.einsum('ntm->m', dout)
    return dx, dw, db
