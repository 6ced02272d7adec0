# loop over the examples of the batch, vectors and outer products, both variants in one loop body
import numpy as np


def gru_step_backward(dnext_h, cache):
    X, Hprev = cache.x, cache.prev_h
    Wx, Wh = cache.Wx, cache.Wh
    N, D = X.shape
    H = Hprev.shape[1]
    Whn = Wh[:, 2 * H:]

    dx = np.zeros((N, D))
    dprev_h = np.zeros((N, H))
    dWx = np.zeros((D, 3 * H))
    dWh = np.zeros((H, 3 * H))
    dbx = np.zeros(3 * H)
    dbh = np.zeros(3 * H)

    for k in range(N):
        dout = dnext_h[k]
        h = Hprev[k]
        r, z, cand = cache.r[k], cache.z[k], cache.n[k]

        # through h' = (1 - z) n + z h
        dcand = dout * (1 - z)
        dz = dout * (h - cand)
        dh = dout * z

        an = dcand * (1 - cand ** 2)      # gradient at the candidate's pre-activation
        az = dz * z * (1 - z)

        if cache.reset_after:
            hn = cache.hn[k]
            dr = an * hn
            ar = dr * r * (1 - r)
            ah = np.concatenate((ar, az, an * r))
            dh = dh + Wh @ ah
            dWh += np.outer(h, ah)
            dbh += ah
        else:
            drh = Whn @ an                # gradient w.r.t. r * h
            dr = drh * h
            ar = dr * r * (1 - r)
            dh = dh + drh * r + Wh[:, :H] @ ar + Wh[:, H:2 * H] @ az
            dWh[:, :H] += np.outer(h, ar)
            dWh[:, H:2 * H] += np.outer(h, az)
            dWh[:, 2 * H:] += np.outer(r * h, an)
            dbh += np.concatenate((ar, az, an))

        ax = np.concatenate((ar, az, an))
        dx[k] = Wx @ ax
        dWx += np.outer(X[k], ax)
        dbx += ax
        dprev_h[k] = dh
    return dx, dprev_h, dWx, dWh, dbx, dbh
