"""The deep set: recurrent layers stacked and read in both directions, and attention pooling by similarity (d2l's
deep and bidirectional RNNs and Nadaraya-Watson kernel regression, tutorials 11 and 12).

Three exercises, each a declared, solved function (:func:`~npseq.course.exercise.declare`): two tanh RNN layers
stacked over a padded sequence, built on the classic set's RNN step; a bidirectional tanh RNN layer, built on the
classic set's backpropagation through time; Nadaraya-Watson kernel regression with a learned width, built on the
classic set's masked softmax. Their references are npseq's (:func:`~npseq.functional.stacked_backward` and
:func:`~npseq.functional.bidirectional_backward`, called with every weight named by
:mod:`npseq.course.references.deep`, and :func:`~npseq.functional.nadaraya_watson_backward`); tutorials 11 and 12
print them, as the tutorials before print the classic set's. The grader names the layer or the direction where a
mistake enters (:class:`~npseq.course.exercise.Part`), and walks the backward direction's steps in its own order.
"""
from ... import backend
from ... import functional as F
from ..cases import deep as deep_cases
from ..exercise import Part, declare, exercise_table
from ..references import deep as R
from ..terms import bidirectional_rnn_terms
from .classic import masked_softmax_backward, rnn_backward, rnn_step_backward

np = backend.numpy

REFERENCES = "npseq.course.references.deep"
"""Where the hand-out imports the forwards from."""


@declare(title="stacked RNN",
         summary="two tanh RNN layers stacked, over a padded sequence",
         practises=("a state reached from two places, the layer above at the same step and its own next step; "
                    "a layer's weights summed over its own steps only"),
         grads=R.StackedRNNGrads._fields,
         engine=R.stacked_rnn_backward,
         cases=deep_cases.stacked_rnn_cases(),
         forwards=("stacked_rnn_forward",),
         forwards_module=REFERENCES,
         time_axes=(("dx", 1),), recurrent=("dx",),
         upstream_time_axis=1,
         parts=(Part("layer 2", ("dWx2", "dWh2", "db2"), rows=(("dh0", 1),)),
                Part("layer 1", ("dWx1", "dWh1", "db1"), rows=(("dh0", 0),), fed_by="layer 2")))
def stacked_rnn_backward(dy, cache):
    """Backward of two stacked tanh RNN layers over a padded sequence (a deep RNN, d2l's H^(l)).

    Forward (``stacked_rnn_forward(x, h0, Wx1, Wh1, b1, Wx2, Wh2, b2, valid_lens)``): layer l reads its own
    previous state and, at the same step, the layer below, H_t^(l) = f(H_{t-1}^(l), H_t^(l-1)), with
    H^(0) = x. With the padding mask m_t = [t < valid_len] (N, 1), for l = 1, 2 and t = 0 .. T-1:
        H~_t^(l) = tanh(Y_t^(l-1) @ Wx_l + H_{t-1}^(l) @ Wh_l + b_l)     (rnn_step_forward)
        H_t^(l)  = m_t * H~_t^(l) + (1 - m_t) * H_{t-1}^(l)              a padded step keeps the state
        Y_t^(l)  = m_t * H~_t^(l)                                        and outputs zeros
    where Y^(0) = x, H_{-1}^(l) = h0[l - 1], and Y^(2) (N, T, H), the top layer's outputs, is returned.
    Layer 1's Wx1 is (D, H); layer 2 reads layer 1's outputs, so Wx2 is (H, H).

    Args:
        dy: (N, T, H) gradient of the loss with respect to the outputs Y^(2).
        cache: npseq's ``StackedCache`` from ``stacked_rnn_forward``:
            cache.layers   [layer 1's, layer 2's] ``RNNCache`` (rnn_forward's), the bottom layer first:
                cache.layers[l - 1].steps  list of T ``RNNStepCache`` (rnn_step_forward's), [t] that of H~_t^(l)
                cache.layers[l - 1].mask   (N, T)  m: 1.0 at valid steps, 0.0 at padding
            cache.h_last   (2, N, H)  each layer's final state (its gradient here is zero)

    Returns:
        dx (N, T, D), dh0 (2, N, H) (row 0 layer 1's, row 1 layer 2's), dWx1 (D, H), dWh1 (H, H), db1 (H,),
        dWx2 (H, H), dWh2 (H, H), db2 (H,).

    Structure:
        The gradient reaching a state H_t^(l) is the sum of what comes from the layer above at the same step
        (the loss's dy for layer 2, the input gradient of layer 2's step t for layer 1) and what comes from
        step t+1 of its own layer. Walk the steps from the last back to the first and, at each step, the
        layers from the top down, calling your rnn_step_backward on each layer's step cache: the input gradient
        it returns is what the layer below gets from above at that step, and the previous state's gradient is
        what the same layer's step t-1 gets. Padding works as in rnn_backward: a padded step sends nothing
        through its cell and passes its state's gradient straight back. A layer's weights sum over its own
        steps only; each layer's step 0 hands back its row of dh0, and layer 1's input gradients are dx.
    Hints:
        Keep one running gradient per layer, delta[l] (zeros before the last step): what reaches
        H_t^(l) from step t+1. For t = T-1, ..., 0, start from above = dy[:, t], then for l = 2, 1:
            m        = cache.layers[l - 1].mask[:, t, None]
            g        = delta[l] + m * above                    dL/dH_t^(l): from step t+1 and from above
            above, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m * g, cache.layers[l - 1].steps[t])
            delta[l] = dprev_h + (1 - m) * g                   a padded step passes g straight back
        Once layer 1 is done, above is dx[:, t]. dh0 stacks [delta[1], delta[2]]; layer l's weight
        gradients are the sums of its own steps'. Walking the layers whole is as right: your
        rnn_backward on layer 2 with dy, then on layer 1 with the dx it returns.
    """
    layers = cache.layers
    n, steps, hidden = dy.shape
    delta = [np.zeros((n, hidden)) for _ in layers]
    dx = np.zeros((n, steps, layers[0].steps[0].x.shape[1]))
    dWx, dWh, db = [0] * len(layers), [0] * len(layers), [0] * len(layers)
    for t in reversed(range(steps)):
        above = dy[:, t]
        for l in reversed(range(len(layers))):
            m = layers[l].mask[:, t, None]
            g = delta[l] + m * above
            above, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m * g, layers[l].steps[t])
            delta[l] = dprev_h + (1 - m) * g
            dWx[l], dWh[l], db[l] = dWx[l] + dWx_t, dWh[l] + dWh_t, db[l] + db_t
        dx[:, t] = above
    return dx, np.stack(delta), dWx[0], dWh[0], db[0], dWx[1], dWh[1], db[1]


@declare(title="bidirectional RNN",
         summary="a bidirectional tanh RNN layer, over a padded sequence",
         practises=("the outputs' gradient split between two directions, one run backward in its own time order; "
                    "each sequence reversed within its valid length"),
         grads=R.BidirectionalRNNGrads._fields,
         engine=R.bidirectional_rnn_backward,
         terms=bidirectional_rnn_terms,
         cases=deep_cases.bidirectional_rnn_cases(),
         forwards=("bidirectional_rnn_forward",),
         forwards_module=REFERENCES,
         time_axes=(("dx", 1),), recurrent=("dx",),
         upstream_time_axis=1,
         parts=(Part("the forward direction", ("dWx_f", "dWh_f", "db_f"), rows=(("dh0", 0),)),
                Part("the backward direction", ("dWx_b", "dWh_b", "db_b"), rows=(("dh0", 1),), walks_up=True)))
def bidirectional_rnn_backward(dy, cache):
    """Backward of a bidirectional tanh RNN layer over a padded sequence.

    Forward (``bidirectional_rnn_forward(x, h0, Wx_f, Wh_f, b_f, Wx_b, Wh_b, b_b, valid_lens)``): two RNNs
    read the same inputs, the forward direction from the first step to the last, the backward direction from
    each sequence's last valid step (l - 1, l its valid length) back to the first, and their outputs are put
    side by side:
        H>_t = f(H>_{t-1}, x_t)   with Wx_f, Wh_f, b_f, from h0[0]      the forward direction
        H<_t = f(H<_{t+1}, x_t)   with Wx_b, Wh_b, b_b, from h0[1]      the backward direction
        y_t  = [H>_t, H<_t]       (N, T, 2H): the forward direction's H features first
    f is the tanh RNN step with padding of rnn_forward (your rnn_backward's). The backward direction is rnn_forward
    on the sequence reversed, each within its valid length, the padding left in place:
        rev(a)[n, t] = a[n, l - 1 - t]  for t < l,     a[n, t]  for t >= l       (rev(rev(a)) = a)
        y>, cache.forward  = rnn_forward(x, h0[0], Wx_f, Wh_f, b_f, valid_lens)
        y', cache.backward = rnn_forward(rev(x), h0[1], Wx_b, Wh_b, b_b, valid_lens)
        y = [y>, rev(y')]  along the last axis
    Without valid_lens every sequence is T long and rev reverses all T steps.

    Args:
        dy: (N, T, 2H) gradient of the loss with respect to the outputs y.
        cache: npseq's ``BidirectionalCache`` from ``bidirectional_rnn_forward``:
            cache.forward     the forward direction's ``RNNCache`` (rnn_forward's): .steps, .mask
            cache.backward    the backward direction's ``RNNCache``, in its own time order: its step k
                              read x at t = l - 1 - k (k < l; its padding stays at the end)
            cache.valid_lens  (N,) the valid lengths l, or None

    Returns:
        dx (N, T, D), dh0 (2, N, H) (row 0 the forward direction's, row 1 the backward one's),
        dWx_f (D, H), dWh_f (H, H), db_f (H,), dWx_b (D, H), dWh_b (H, H), db_b (H,).

    Structure:
        The outputs' gradient splits between the directions: its first H features reach the forward
        direction, its last H the backward one. Each direction is an RNN over a sequence, so your rnn_backward
        does its whole backward on its own cache; but the backward direction's cache is in its own, reversed,
        time order, so hand it its half of dy reversed the same way, each sequence within its valid length.
        Its backward then visits the sequence's steps from the first up, its own last step first. The input
        gradient it returns is in that reversed order too: put it back in time order before adding it to the
        forward direction's, since x feeds both. Each direction's weights and initial state are its own.
    Hints:
        With l the valid lengths (T for every sequence without valid_lens), rev is one index, (N, T):
            order[n, t] = l[n] - 1 - t  for t < l[n],    t  for t >= l[n]
            rev(a)      = a[np.arange(N)[:, None], order]
            dx_f, dh0_f, dWx_f, dWh_f, db_f = rnn_backward(dy[:, :, :H], cache.forward)
            dx_r, dh0_b, dWx_b, dWh_b, db_b = rnn_backward(rev(dy[:, :, H:]), cache.backward)
            dx  = dx_f + rev(dx_r)            dh0 = [dh0_f, dh0_b], stacked    (2, N, H)
        Reversing all T steps (a[:, ::-1]) is right only for a sequence without padding.
    """
    n, steps, width = dy.shape
    hidden = width // 2
    lens = np.full(n, steps) if cache.valid_lens is None else cache.valid_lens
    t = np.arange(steps)
    order = np.where(t < lens[:, None], lens[:, None] - 1 - t, t)
    rows = np.arange(n)[:, None]
    dx_f, dh0_f, dWx_f, dWh_f, db_f = rnn_backward(dy[:, :, :hidden], cache.forward)
    dx_r, dh0_b, dWx_b, dWh_b, db_b = rnn_backward(dy[rows, order, hidden:], cache.backward)
    return dx_f + dx_r[rows, order], np.stack([dh0_f, dh0_b]), dWx_f, dWh_f, db_f, dWx_b, dWh_b, db_b


@declare(title="Nadaraya-Watson pooling",
         summary="Nadaraya-Watson kernel regression: a Gaussian kernel of learned width w, softmax-normalised",
         practises=("attention pooling with one learned number: a score from a distance, a key reached with the "
                    "opposite sign of its query, a scalar's gradient summed over every score"),
         grads=F.NadarayaWatsonGrads._fields,
         engine=F.nadaraya_watson_backward,
         cases=deep_cases.nadaraya_watson_cases(),
         forwards=("nadaraya_watson_forward",))
def nadaraya_watson_backward(dpredictions, cache):
    """Backward of Nadaraya-Watson kernel regression with a Gaussian kernel of learned width w (d2l's parametric
    attention pooling).

    Forward (``nadaraya_watson_forward(queries, keys, values, w)``): a query x is answered with an average of
    the values y_k, each weighted by how close its key x_k is to x (all of them numbers, one feature each):
        s[n, q, k] = -((x[n, q] - x_k[n, k]) * w)^2 / 2      (N, Q, K)   a Gaussian kernel's log, width 1/|w|
        a[n, q, :] = softmax(s[n, q, :])                     (N, Q, K)   every key counts: no mask
        p[n, q]    = sum_k a[n, q, k] * y[n, k]              (N, Q)      the predictions
    The queries are (N, Q) (Q queries per example, sharing its keys) or (N,) (one query per example, each
    example with its own keys: d2l's training, Q = 1 and the predictions (N,)); keys and values (N, K);
    w is a 0-d array.

    Args:
        dpredictions: gradient with respect to the predictions p, shaped like the queries.
        cache: npseq's ``NadarayaWatsonCache``, whose parts hold Q = 1 for queries (N,):
            cache.scores.queries      (N, Q, 1)     x, with a feature axis of 1
            cache.scores.keys         (N, K, 1)     x_k
            cache.scores.w            ()            w
            cache.scores.differences  (N, Q, K, 1)  x[n, q] - x_k[n, k]
            cache.pooling.values      (N, K, 1)     y
            cache.pooling.softmax     the ``MaskedSoftmaxCache`` of a (every key valid): .weights (N, Q, K)

    Returns:
        dqueries (the queries' shape), dkeys (N, K), dvalues (N, K), dw (), a 0-d array.

    Structure:
        The prediction averages the values with the weights, so its gradient reaches the values (each used
        by every query of its example, so summed over them) and the weights. From the weights,
        your masked_softmax_backward (the classic set, on cache.pooling.softmax) gives the scores' gradient. A score
        depends on the query and the key through their difference only, scaled by w: the query's gradient sums
        over its keys, the key's over its queries with the opposite sign (the key enters the difference with a
        minus), and w, one number in every score, sums over all of them. Work in the cache's (N, Q, K) shapes
        and give dqueries the shape of dpredictions at the end.
    Hints:
        With d = x - x_k, the cached differences without their last axis (N, Q, K), a the weights and
        y the values without theirs (N, K):
            dvalues  = sum_q a[n, q, k] * dp[n, q]                          (N, K)
            ds       = masked_softmax_backward(dp[..., None] * y[:, None, :], cache.pooling.softmax)   (yours)
        ds/dx = -w^2 d, ds/dx_k = w^2 d and ds/dw = -w d^2, so
            dqueries = -w^2 * sum_k ds * d        (N, Q), reshaped to dpredictions' shape
            dkeys    =  w^2 * sum_q ds * d        (N, K)
            dw       = -w * sum_{n,q,k} ds * d^2  ()
    """
    softmax, scores = cache.pooling.softmax, cache.scores
    a, d, w = softmax.weights, scores.differences[..., 0], scores.w
    dp = dpredictions.reshape(a.shape[:2])
    dvalues = (a * dp[..., None]).sum(axis=1)
    ds = masked_softmax_backward(dp[..., None] * cache.pooling.values[:, None, :, 0], softmax)
    dqueries = -w ** 2 * (ds * d).sum(axis=2)
    dkeys = w ** 2 * (ds * d).sum(axis=1)
    return dqueries.reshape(dpredictions.shape), dkeys, dvalues, -w * (ds * d ** 2).sum()


EXERCISES = exercise_table(globals())
"""The set's graded functions, in the order of the sheet."""
