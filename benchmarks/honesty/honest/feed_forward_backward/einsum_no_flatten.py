# einsum over the (n, t) axes directly (x is (N, T, D)), GELU derivative recomputed from the pre-activation
import numpy as np

SQRT_2_OVER_PI = np.sqrt(2.0 / np.pi)
C = 0.044715


def gelu_grad(a):
    u = SQRT_2_OVER_PI * (a + C * a ** 3)
    th = np.tanh(u)
    du_da = SQRT_2_OVER_PI * (1.0 + 3.0 * C * a * a)
    return 0.5 * (1.0 + th) + 0.5 * a * (1.0 - th * th) * du_da


def feed_forward_backward(dy, cache):
    W1, W2 = cache.W1, cache.W2
    h = cache.hidden

    grad_W2 = np.einsum('ntf,nto->fo', h, dy)
    grad_b2 = np.einsum('nto->o', dy)
    dh = np.einsum('...o,fo->...f', dy, W2)

    if cache.activation == 'relu':
        dpre = np.where(h > 0, dh, 0.0)
    elif cache.activation == 'gelu':
        dpre = dh * gelu_grad(cache.act.x)
    else:
        raise ValueError(cache.activation)

    grad_W1 = np.einsum('ntd,ntf->df', cache.x, dpre)
    grad_b1 = np.einsum('ntf->f', dpre)
    grad_x = np.einsum('...f,df->...d', dpre, W1)
    return grad_x, grad_W1, grad_b1, grad_W2, grad_b2
