"""The classic set: the backward passes of the recurrent cells and layers, Bahdanau attention, the loss.

Ten exercises, each a declared, solved function (:func:`~npseq.course.exercise.declare`):
its docstring the hand-out's text, its body a solution in plain NumPy, calling the
learner's earlier functions where one builds on another.
"""
from ... import backend
from ... import functional as F
from ..cases import classic as classic_cases
from ..exercise import declare, exercise_table
from ..terms import bahdanau_decoder_step_terms, gru_step_terms, lstm_step_terms

np = backend.numpy


@declare(title="RNN",
         summary="a tanh RNN step",
         practises="chain rule through `tanh`, matrix shapes",
         grads=("dx", "dprev_h", "dWx", "dWh", "db"),
         engine=F.rnn_step_backward,
         cases=classic_cases.rnn_step_cases(),
         forwards=("rnn_step_forward",))
def rnn_step_backward(dnext_h, cache):
    """Backward of one vanilla RNN step ``next_h = tanh(x @ Wx + prev_h @ Wh + b)``.

    Args:
        dnext_h: (N, H) gradient of the loss with respect to next_h.
        cache: npseq's ``RNNStepCache`` from ``rnn_step_forward(x, prev_h, Wx, Wh, b)``:
            cache.x       (N, D)  the input
            cache.prev_h  (N, H)  the previous hidden state
            cache.Wx      (D, H)
            cache.Wh      (H, H)
            cache.next_h  (N, H)  tanh(a), the step's output

    Returns:
        dx (N, D), dprev_h (N, H), dWx (D, H), dWh (H, H), db (H,).

    Structure:
        The loss reaches this step through next_h alone. Go back through the tanh to its pre-activation a
        first (tanh's derivative can be read off its output next_h, which the cache holds, so a is never
        recomputed), then through the affine map. Each input that entered a product (x with Wx, prev_h with
        Wh) receives a term built from a's gradient and its partner in that product; the bias receives a's
        gradient itself, summed over the N rows it was broadcast over.

    Hints:
        Call a = x @ Wx + prev_h @ Wh + b the pre-activation.
        tanh'(a) = 1 - tanh(a)^2, and tanh(a) is in the cache: no need to recompute a.
            da      = dnext_h * (1 - next_h^2)            (N, H)
            dx      = da @ Wx^T         dprev_h = da @ Wh^T
            dWx     = x^T @ da          dWh     = prev_h^T @ da
            db      = sum_n da                            (the bias was broadcast over the batch)
        Check a shape by its meaning: dWx must have Wx's shape (D, H).
    """
    da = dnext_h * (1 - cache.next_h ** 2)
    return da @ cache.Wx.T, da @ cache.Wh.T, cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0)


@declare(title="LSTM",
         summary="an LSTM step (gates i, f, o, g)",
         practises="gates `[i, f, o, g]`, two paths into the cell",
         grads=("dx", "dprev_h", "dprev_c", "dWx", "dWh", "db"),
         engine=F.lstm_step_backward,
         cases=classic_cases.lstm_step_cases(),
         forwards=("lstm_step_forward",),
         gates=("i", "f", "o", "g"),
         gated=("dWx", "dWh", "db"),
         terms=lstm_step_terms)
def lstm_step_backward(dnext_h, dnext_c, cache):
    """Backward of one LSTM step.

    Forward, with the 4H columns of the pre-activation split into four blocks of H
    in the order [i, f, o, g]:
        a       = x @ Wx + prev_h @ Wh + b               (N, 4H) = [a_i, a_f, a_o, a_g]
        i, f, o = sigmoid(a_i), sigmoid(a_f), sigmoid(a_o)
        g       = tanh(a_g)
        next_c  = f * prev_c + i * g
        next_h  = o * tanh(next_c)

    Args:
        dnext_h, dnext_c: (N, H) gradients with respect to next_h and next_c.
        cache: npseq's ``LSTMStepCache`` from ``lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b)``:
            cache.x       (N, D)
            cache.prev_h  (N, H)
            cache.prev_c  (N, H)
            cache.Wx      (D, 4H)
            cache.Wh      (H, 4H)
            cache.i       (N, H)   input gate, sigmoid(a_i)
            cache.f       (N, H)   forget gate, sigmoid(a_f)
            cache.o       (N, H)   output gate, sigmoid(a_o)
            cache.g       (N, H)   candidate cell, tanh(a_g)
            cache.tanh_c  (N, H)   tanh(next_c)

    Returns:
        dx (N, D), dprev_h (N, H), dprev_c (N, H), dWx (D, 4H), dWh (H, 4H), db (4H,).

    Structure:
        Two gradients arrive, for next_h and for next_c. next_h depends on next_c through tanh(next_c), so the
        cell's gradient is the sum of two paths, the direct one from dnext_c and the one through next_h (whose
        tanh derivative cache.tanh_c provides); the output gate o receives from next_h alone. From the cell,
        the gradient flows to f, i, g and prev_c; prev_c receives from the cell update only, through f. Each
        gate goes back through its own sigmoid or tanh to its block of a, the cached i, f, o, g giving the
        derivatives. Laid side by side in the order [i, f, o, g], the four blocks make a's gradient, and from
        there the affine map is handled exactly as in the RNN step, the bias summing over the N rows.

    Hints:
        The cell state receives gradient along two paths, directly and through next_h:
            dc      = dnext_c + dnext_h * o * (1 - tanh_c^2)
        Each gate's pre-activation, with sigmoid'(a) = s (1 - s) and tanh'(a) = 1 - t^2:
            da_i    = dc * g * i (1 - i)
            da_f    = dc * prev_c * f (1 - f)
            da_o    = dnext_h * tanh_c * o (1 - o)
            da_g    = dc * i * (1 - g^2)
            dprev_c = dc * f
        Put da = [da_i, da_f, da_o, da_g] side by side, (N, 4H), in that order; from
        there on it is exactly the RNN step: dx = da @ Wx^T, dWx = x^T @ da, ...
    """
    i, f, o, g, tanh_c = cache.i, cache.f, cache.o, cache.g, cache.tanh_c
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    da = np.concatenate([dc * g * i * (1 - i), dc * cache.prev_c * f * (1 - f),
                         dnext_h * tanh_c * o * (1 - o), dc * i * (1 - g ** 2)], axis=1)
    return da @ cache.Wx.T, da @ cache.Wh.T, dc * f, cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0)


@declare(title="GRU",
         summary="a GRU step, both variants (reset gate before or after W_hn)",
         practises=("both GRU variants in one function, branching on `cache.reset_after` (d2l's reset-before, "
                    "PyTorch's reset-after)"),
         grads=("dx", "dprev_h", "dWx", "dWh", "dbx", "dbh"),
         engine=F.gru_step_backward,
         cases=classic_cases.gru_step_cases(),
         forwards=("gru_step_forward",),
         gates=("r", "z", "n"),
         gated=("dWx", "dWh", "dbx", "dbh"),
         terms=gru_step_terms,
         placeholder=('if cache.reset_after:\n    raise NotImplementedError("gru_step_backward: the reset_after=True '
                      'branch (PyTorch\'s GRU)")\n'
                      'raise NotImplementedError("gru_step_backward: the reset_after=False branch (d2l\'s GRU)")'))
def gru_step_backward(dnext_h, cache):
    """Backward of one GRU step, in both variants (``cache.reset_after`` says which).

    Forward, with the 3H columns of Wx, Wh, bx, bh in three blocks of H, order [r, z, n]
    (W_hn is Wh[:, 2H:], b_hn is bh[2H:], and so on); h is prev_h:
        r  = sigmoid(x @ W_xr + b_xr + h @ W_hr + b_hr)
        z  = sigmoid(x @ W_xz + b_xz + h @ W_hz + b_hz)
        n  = tanh(x @ W_xn + b_xn + (r * h) @ W_hn + b_hn)         reset_after=False (Cho et al., d2l)
        n  = tanh(x @ W_xn + b_xn + r * (h @ W_hn + b_hn))         reset_after=True (PyTorch, cuDNN)
        h' = (1 - z) * n + z * h                                   (next_h, both variants)

    Args:
        dnext_h: (N, H) gradient with respect to h'.
        cache: from ``gru_step_forward(x, prev_h, Wx, Wh, bx, bh, reset_after)``, a ``GRUStepCache``
            (reset_after=False) or a ``GRUResetAfterStepCache`` (reset_after=True):
            cache.x            (N, D)
            cache.prev_h       (N, H)   h above
            cache.Wx           (D, 3H)
            cache.Wh           (H, 3H)
            cache.r            (N, H)   reset gate
            cache.z            (N, H)   update gate
            cache.n            (N, H)   candidate state
            cache.hn           (N, H)   h @ W_hn + b_hn, what r multiplies (GRUResetAfterStepCache only)
            cache.reset_after  bool     which variant (a class constant of each cache type)

    Returns:
        dx (N, D), dprev_h (N, H), dWx (D, 3H), dWh (H, 3H), dbx (3H,), dbh (3H,).

    Structure:
        next_h mixes n and h under the update gate z, so dnext_h goes three ways, to n, to z, and straight to
        h. n goes back through its tanh, z and r through their sigmoids (the cache holds r, z and n), each to
        its pre-activation; r reaches next_h only through n's. Without reset_after, r multiplies h before
        W_hn, so n's gradient goes back through W_hn to that product and splits between r and h; with
        reset_after, r multiplies cache.hn, so it splits between r and hn, whose part goes on to W_hn, b_hn
        and h. The input side is the same affine map in both variants; h sums its direct path and every path
        back through Wh; each bias sums over the N rows.

    Hints:
        Both variants start the same way (a_r, a_z, a_n are the three pre-activations):
            da_n = dnext_h * (1 - z) * (1 - n^2)
            da_z = dnext_h * (h - n) * z (1 - z)
            dh   = dnext_h * z                      (the direct path; more terms are added below)
        The input side sees the same pre-activations in both variants, so with
        dax = [da_r, da_z, da_n]  (N, 3H):  dx = dax @ Wx^T,  dWx = x^T @ dax,  dbx = sum_n dax.

        reset_after=False (rho = r * h feeds W_hn):
            drho = da_n @ W_hn^T,     da_r = drho * h * r (1 - r)
            dh  += drho * r + [da_r, da_z] @ [W_hr, W_hz]^T
            dWh  = [h^T @ da_r,  h^T @ da_z,  rho^T @ da_n]   (three H-column blocks)
            dbh  = dbx           (b_h sits in the same sums as b_x)
        reset_after=True (eta = h @ W_hn + b_hn = cache.hn is multiplied by r):
            da_r = da_n * eta * r (1 - r)
            dah  = [da_r, da_z, da_n * r]                     (N, 3H), the hidden side's pre-activations
            dh  += dah @ Wh^T,   dWh = h^T @ dah,   dbh = sum_n dah
        Do the variant you know first: the grader scores each one separately.
    """
    h, r, z, n, Wh = cache.prev_h, cache.r, cache.z, cache.n, cache.Wh
    H = h.shape[1]
    dan = dnext_h * (1 - z) * (1 - n ** 2)
    daz = dnext_h * (h - n) * z * (1 - z)
    dh = dnext_h * z
    if cache.reset_after:
        dar = dan * cache.hn * r * (1 - r)
        dah = np.concatenate([dar, daz, dan * r], axis=1)
        dh = dh + dah @ Wh.T
        dWh, dbh = h.T @ dah, dah.sum(axis=0)
    else:
        drho = dan @ Wh[:, 2 * H:].T
        dar = drho * h * r * (1 - r)
        dh = dh + drho * r + dar @ Wh[:, :H].T + daz @ Wh[:, H:2 * H].T
        dWh = np.concatenate([h.T @ dar, h.T @ daz, (r * h).T @ dan], axis=1)
        dbh = np.concatenate([dar, daz, dan], axis=1).sum(axis=0)
    dax = np.concatenate([dar, daz, dan], axis=1)
    return dax @ cache.Wx.T, dh, cache.x.T @ dax, dWh, dax.sum(axis=0), dbh


@declare(title="masked softmax",
         summary="softmax over the valid keys only",
         practises="softmax Jacobian, masks, an empty row",
         grads=("dscores",),
         engine=F.masked_softmax_backward,
         cases=classic_cases.masked_softmax_cases(),
         caller_cases=classic_cases.masked_softmax_caller_cases(),
         forwards=("masked_softmax",))
def masked_softmax_backward(dweights, cache):
    """Backward of the masked softmax over the keys axis.

    Forward: for each (n, q) row, with l the row's valid length,
        weights[n, q, k] = exp(s[n, q, k]) / sum_{j < l} exp(s[n, q, j])   for k < l
        weights[n, q, k] = 0                                                for k >= l
    so a row with l = 0 is all zeros.

    Args:
        dweights: (N, Q, K) gradient with respect to the weights (multi-head attention, in the
            transformer set, hands it (N, h, Q, K): one softmax per head).
        cache: npseq's ``MaskedSoftmaxCache`` from ``masked_softmax(scores, valid_lens)``:
            cache.weights  (N, Q, K)  the softmax output a, exactly 0 at masked keys
            cache.mask     (N, Q, K)  bool, True at the valid keys

    Returns:
        dscores, dweights' shape.

    Structure:
        Every weight of a row depends on every valid score of that row, so each score's gradient is a sum of
        contributions from the whole row, not a single term; rows are independent, one softmax per (n, q) and
        per head, whatever the axes before K. The softmax's derivative needs only its output a, which the
        cache holds, so the softmax is never recomputed. Masked keys have weight zero and receive no gradient,
        and a row with no valid key receives zeros throughout.

    Hints:
        The softmax Jacobian is da_j/ds_k = a_j ([j = k] - a_k). Applied to dweights:
            dscores[n, q, k] = a[n, q, k] * (dweights[n, q, k] - sum_j dweights[n, q, j] * a[n, q, j])
        (sum over the last axis, K, whatever the number of axes before it, with keepdims=True so
        that it broadcasts).
        Masked keys have a = 0 and so get exactly 0, and an empty row gets all zeros:
        nothing to divide, no NaN. Do not recompute the softmax.
    """
    a = cache.weights
    return a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))


@declare(title="additive attention",
         summary="Bahdanau attention",
         practises="Bahdanau attention end to end",
         grads=("dqueries", "dkeys", "dvalues", "dWq", "dWk", "dwv"),
         engine=F.additive_attention_backward,
         cases=classic_cases.additive_attention_cases(),
         forwards=("additive_attention_forward",))
def additive_attention_backward(dcontext, cache, dweights=None):
    """Backward of additive (Bahdanau) attention.

    Forward (q = queries, k = keys, v = values; a small MLP scores every query-key pair):
        u[n, q, k, :] = q[n, q] @ Wq + k[n, k] @ Wk        (N, Q, K, h)  (broadcast over k and over q)
        f             = tanh(u)                            (N, Q, K, h)  the "features"
        s[n, q, k]    = f[n, q, k, :] . wv                 (N, Q, K)     scores
        a             = masked_softmax(s, valid_lens)      (N, Q, K)     weights, returned too
        c[n, q]       = sum_k a[n, q, k] * v[n, k]         (N, Q, Dv)    context: c = a @ v per example

    Args:
        dcontext: (N, Q, Dv) gradient with respect to the context.
        cache: npseq's ``AdditiveAttentionCache`` from
            ``additive_attention_forward(queries, keys, values, Wq, Wk, wv, valid_lens)``;
            it holds the caches of its two parts, the score and the pooling:
            cache.scores.queries                 (N, Q, Dq)
            cache.scores.keys                    (N, K, Dk)
            cache.scores.Wq                      (Dq, h)
            cache.scores.Wk                      (Dk, h)
            cache.scores.wv                      (h,)
            cache.scores.features                (N, Q, K, h)  f = tanh(u)
            cache.pooling.values                 (N, K, Dv)
            cache.pooling.softmax                the MaskedSoftmaxCache of a (exercise 4)
            cache.pooling.pooled                 (N, Q, K)     the weights a that multiplied v
            (cache.pooling.gain, None, and cache.pooling.dropout: unused here; the exercise
            weighs no key by a gain and has no dropout.)
        dweights: (N, Q, K) gradient with respect to the returned weights a, or None
            (then only the context carries gradient).

    Returns:
        dqueries (N, Q, Dq), dkeys (N, K, Dk), dvalues (N, K, Dv), dWq (Dq, h), dWk (Dk, h), dwv (h,).

    Structure:
        Undo the forward from the context back. The context pools v with the weights a, so its gradient splits
        into one for v (summed over the queries that pooled it) and one for a, to which dweights adds when
        given. Then go through the masked softmax to the scores (your masked_softmax_backward, on the softmax
        cache), through the dot product with wv to wv and f, and through the tanh to u (its derivative read
        off the cached f). u's query term was broadcast over the keys and its key term over the queries, so sum over
        the keys for the query side and over the queries for the key side, then go through Wq and Wk; the
        weights sum over all positions.

    Hints:
        Undo the forward from the bottom up. @ on 3-d arrays multiplies one matrix per
        example; swap the last two axes with .swapaxes(1, 2).
            dv   = a^T @ dcontext                       (N, K, Dv), per example
            da   = dcontext @ v^T  (+ dweights if given)  (N, Q, K)
            ds   = masked_softmax_backward(da, softmax cache)   (your exercise 4)
            dwv  = sum_{n,q,k} ds[n, q, k] * f[n, q, k, :]       (h,)
            du   = ds[..., None] * wv * (1 - f^2)                (N, Q, K, h)
            dq_p = sum_k du   (N, Q, h)     dk_p = sum_q du   (N, K, h)   (q Wq was broadcast over k, k Wk over q)
            dqueries = dq_p @ Wq^T          dWq = sum_{n,q} q[n, q]^T dq_p[n, q]
            dkeys    = dk_p @ Wk^T          dWk = sum_{n,k} k[n, k]^T dk_p[n, k]
        For the weight gradients, flatten: q.reshape(-1, Dq).T @ dq_p.reshape(-1, h).
        Until exercise 4 is done, npseq's own masked softmax backward can stand in:
        ``from npseq.functional import masked_softmax_backward as npseq_masked_softmax_backward``
        (under another name: a name the grader grades must be your own). The grader
        reports any use of npseq's backward functions to your instructor, so replace it
        by your exercise 4 before you hand in.
    """
    s, p = cache.scores, cache.pooling
    a, v, f = p.pooled, p.values, s.features
    dvalues = a.swapaxes(1, 2) @ dcontext
    da = dcontext @ v.swapaxes(1, 2)
    if dweights is not None:
        da = da + dweights
    ds = masked_softmax_backward(da, p.softmax)
    dwv = np.einsum("nqk,nqkh->h", ds, f)
    du = ds[..., None] * s.wv * (1 - f ** 2)
    dq_p, dk_p = du.sum(axis=2), du.sum(axis=1)
    dq, dk = s.queries, s.keys
    return (dq_p @ s.Wq.T, dk_p @ s.Wk.T, dvalues, dq.reshape(-1, dq.shape[-1]).T @ dq_p.reshape(-1, du.shape[-1]),
            dk.reshape(-1, dk.shape[-1]).T @ dk_p.reshape(-1, du.shape[-1]), dwv)


@declare(title="backpropagation through time",
         summary="backpropagation through time, with padding",
         practises="backpropagation through time with padding, a row of all padding",
         grads=("dx", "dh0", "dWx", "dWh", "db"),
         engine=F.rnn_backward,
         cases=classic_cases.sequence_cases(F.rnn_forward, 1, 12),
         forwards=("rnn_forward",),
         time_axes=(("dx", 1),), recurrent=("dx",),
         upstream_time_axis=1)
def rnn_backward(dh, cache):
    """Backward of a vanilla RNN over a padded sequence (backpropagation through time).

    Forward, for t = 0 .. T-1, with the padding mask m_t = [t < valid_len] (N, 1):
        h~_t = tanh(x_t @ Wx + h_{t-1} @ Wh + b)            (rnn_step_forward, exercise 1)
        h_t  = m_t * h~_t + (1 - m_t) * h_{t-1}             (a padded step keeps the state)
        y_t  = m_t * h~_t                                   (and outputs zeros)
    The outputs y (N, T, H) are returned; h_{T-1} is each sequence's last valid state.

    Args:
        dh: (N, T, H) gradient of the loss with respect to the outputs y.
        cache: npseq's ``RNNCache`` from ``rnn_forward(x, h0, Wx, Wh, b, valid_lens)``:
            cache.steps   list of T ``RNNStepCache`` (exercise 1), one per step, for h~_t
            cache.mask    (N, T)  m: 1.0 at valid steps, 0.0 at padding
            cache.h_last  (N, H)  the final state (its gradient here is zero)

    Returns:
        dx (N, T, D), dh0 (N, H), dWx (D, H), dWh (H, H), db (H,).

    Structure:
        Walk the steps from the last back to the first, calling your rnn_step_backward on each
        step's cache. The state h_t receives from two places, the output y_t and the step after it, which
        hands back its previous state's gradient (the last step has no step after it). A valid step sends
        the sum through h~_t into the step backward and hands the resulting previous-state gradient to the
        step before; a padded step has no output gradient and passes its state's gradient straight back,
        untouched. Wx, Wh and b are reused at every step, so their gradients sum over t; what step 0 hands
        back is dh0, so a row of all padding gets zero dx and dh0.

    Hints:
        Walk back from t = T-1 with delta, the gradient reaching h_t from the later steps
        (zeros before the last step):
            g       = delta + m_t * dh[:, t]                   dL/dh_t
            dx_t, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m_t * g, cache.steps[t])
            delta   = dprev_h + (1 - m_t) * g                  a padded step passes g straight back
        dh0 is the last delta; each weight's gradient is the sum over t of its steps'.
        A row of all padding (valid_len 0) outputs only zeros, so its dx and dh0 are 0.
    """
    delta, dxs, dWx, dWh, db = np.zeros_like(cache.h_last), [], 0, 0, 0
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta + m * dh[:, t]
        dx_t, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m * g, cache.steps[t])
        delta = dprev_h + (1 - m) * g
        dxs.insert(0, dx_t)
        dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
    return np.stack(dxs, axis=1), delta, dWx, dWh, db


@declare(title="LSTM over time",
         summary="the same for the LSTM",
         practises="the same with two running gradients, `h` and `c`",
         grads=("dx", "dh0", "dWx", "dWh", "db"),
         engine=F.lstm_backward,
         cases=classic_cases.sequence_cases(F.lstm_forward, 4, 14),
         forwards=("lstm_forward",),
         gates=("i", "f", "o", "g"),
         gated=("dWx", "dWh", "db"),
         time_axes=(("dx", 1),), recurrent=("dx",),
         upstream_time_axis=1)
def lstm_backward(dh, cache):
    """Backward of an LSTM over a padded sequence; the cell state starts at zero.

    Forward, for t = 0 .. T-1, with m_t = [t < valid_len] (N, 1) and c_{-1} = 0:
        h~_t, c~_t = lstm_step_forward(x_t, h_{t-1}, c_{t-1}, Wx, Wh, b)   (exercise 2)
        h_t = m_t * h~_t + (1 - m_t) * h_{t-1},   c_t = m_t * c~_t + (1 - m_t) * c_{t-1}
        y_t = m_t * h~_t

    Args:
        dh: (N, T, H) gradient with respect to the outputs y.
        cache: npseq's ``LSTMCache`` from ``lstm_forward(x, h0, Wx, Wh, b, valid_lens)``:
            cache.steps   list of T ``LSTMStepCache`` (exercise 2)
            cache.mask    (N, T)  m
            cache.h_last  (N, H)  final hidden state
            cache.c_last  (N, H)  final cell state

    Returns:
        dx (N, T, D), dh0 (N, H), dWx (D, 4H), dWh (H, 4H), db (4H,).

    Structure:
        The same walk from the last step to the first, calling your lstm_step_backward, with two
        running gradients, one for the hidden state and one for the cell state, both zero at the last step
        (nothing comes after it). At a valid step, the hidden one together with the output's gradient, and
        the cell one, go into the step backward, which hands prev_h's and prev_c's gradients to step t-1; a
        padded step passes both straight back, untouched. The weights' gradients sum over t, the hidden
        gradient handed back by step 0 is dh0, and the cell's is dropped, since the cell state starts at a
        constant zero (there is no dc0).

    Hints:
        Two running gradients this time, delta_h and delta_c (both zero before the last step):
            g = delta_h + m_t * dh[:, t]
            dx_t, dprev_h, dprev_c, ... = lstm_step_backward(m_t * g, m_t * delta_c, cache.steps[t])
            delta_h = dprev_h + (1 - m_t) * g
            delta_c = dprev_c + (1 - m_t) * delta_c
        There is no dc0: the cell state starts at the constant zero.
    """
    delta_h, delta_c = np.zeros_like(cache.h_last), np.zeros_like(cache.c_last)
    dxs, dWx, dWh, db = [], 0, 0, 0
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta_h + m * dh[:, t]
        dx_t, dprev_h, dprev_c, dWx_t, dWh_t, db_t = lstm_step_backward(m * g, m * delta_c, cache.steps[t])
        delta_h, delta_c = dprev_h + (1 - m) * g, dprev_c + (1 - m) * delta_c
        dxs.insert(0, dx_t)
        dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
    return np.stack(dxs, axis=1), delta_h, dWx, dWh, db


@declare(title="word embedding",
         summary="a lookup table, with repeated token ids",
         practises="repeated ids: gradients that must add up",
         grads=("dW",),
         engine=F.word_embedding_backward,
         cases=classic_cases.word_embedding_cases(),
         forwards=("word_embedding_forward",))
def word_embedding_backward(dout, cache):
    """Backward of a word-embedding lookup, ``out[n, t] = W[x[n, t]]``.

    Args:
        dout: (N, T, D) gradient with respect to out.
        cache: npseq's ``WordEmbeddingCache`` from ``word_embedding_forward(x, W)``:
            cache.x  (N, T)  integer token ids in [0, V)
            cache.W  (V, D)

    Returns:
        dW (V, D): dW[v] = sum of dout[n, t] over every (n, t) with x[n, t] = v.

    Structure:
        The lookup copies row x[n, t] of W into out[n, t], so each position of out hands its gradient,
        unchanged, to exactly one row of W. A row used at several positions (a repeated id) receives the sum
        of all their gradients, so the contributions must accumulate rather than overwrite one another; rows
        of unused ids receive nothing. The ids are integers and need no gradient.

    Hints:
        Ids repeat (a sentence has several "the"). ``dW[x] += dout`` keeps only one of
        the repeated updates, because NumPy's buffered fancy assignment writes each index
        once; ``np.add.at(dW, x, dout)`` adds them all. Rows of unused ids stay zero.
    """
    dW = np.zeros_like(cache.W)
    np.add.at(dW, cache.x, dout)
    return dW


@declare(title="loss over time",
         summary="the loss over padded sequences and its gradient",
         practises="a loss over padded sequences, large scores",
         grads=("loss", "dx"),
         engine=F.temporal_softmax_loss,
         cases=classic_cases.temporal_softmax_loss_cases(),
         forwards=(),
         time_axes=(("dx", 1),))
def temporal_softmax_loss(x, y, mask):
    """Softmax cross-entropy at every time step, summed over the valid steps, averaged over N.

    L = -(1/N) sum_{n,t} mask[n, t] * log p[n, t, y[n, t]],   p[n, t] = softmax(x[n, t])

    Args:
        x: (N, T, V) scores; y: (N, T) integer targets in [0, V);
        mask: (N, T) booleans, True where the step counts.

    Returns:
        loss (a float) and dx (N, T, V) = dL/dx.

    Structure:
        The loss is a sum of independent cross-entropy terms, one per (n, t), each touching only its own score
        row x[n, t], so each row's gradient comes from its own term alone, back through the log of the softmax
        to the scores; the probabilities computed for the loss, row maximum subtracted first, serve again
        here. The mask weighs each term, so a padded step receives no gradient, and the average over N scales
        every row's gradient by the same factor, with rows of all padding still counted in N.

    Hints:
        Subtract each row's maximum before exp (large scores overflow otherwise).
            dx[n, t, v] = mask[n, t] * (p[n, t, v] - [v = y[n, t]]) / N
        A row of all padding contributes nothing to the loss and gets dx = 0; N still
        counts it.
    """
    n = x.shape[0]
    shifted = x - x.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_p, y[..., None], axis=-1)[..., 0]
    loss = -(mask * picked).sum() / n
    dx = np.exp(log_p)
    dx[np.arange(n)[:, None], np.arange(x.shape[1]), y] -= 1
    return loss, dx * mask[..., None] / n


@declare(title="a Bahdanau decoder step",
         summary="attention and a GRU step end to end",
         practises="attention and a GRU step composed, gradients that add",
         grads=("dx", "dprev_h", "denc_outputs", "dWq", "dWk", "dwv", "dWx", "dWh", "dbx", "dbh"),
         engine=F.bahdanau_decoder_step_backward,
         cases=classic_cases.decoder_step_cases(),
         forwards=("bahdanau_decoder_step_forward",),
         gates=("r", "z", "n"),
         gated=("dWx", "dWh", "dbx", "dbh"),
         terms=bahdanau_decoder_step_terms)
def bahdanau_decoder_step_backward(dnext_h, cache):
    """Backward of one step of a Bahdanau decoder: attention with the previous state, then a GRU step.

    Forward (``bahdanau_decoder_step_forward``; h is prev_h, k the encoder outputs):
        c, a, _ = additive_attention_forward(h[:, None, :], k, k, Wq, Wk, wv, valid_lens)   (exercise 5)
        u       = [c[:, 0], x]          (N, H_enc + E)  context first, then the embedded input
        h'      = gru_step_forward(u, h, Wx, Wh, bx, bh)  reset before (exercise 3)

    Args:
        dnext_h: (N, H) gradient with respect to h'.
        cache: a ``BahdanauDecoderStepCache``:
            cache.attention  the ``AdditiveAttentionCache`` of c (exercise 5)
            cache.gru        the ``GRUStepCache`` of the GRU step on u (exercise 3)
            cache.context    (N, H_enc)  c[:, 0], whose width says where u splits

    Returns:
        dx (N, E), dprev_h (N, H), denc_outputs (N, S, H_enc), dWq, dWk, dwv, dWx, dWh, dbx, dbh
        (each shaped like its array).

    Structure:
        Undo the two stages in reverse. First the GRU step, with your gru_step_backward on the
        GRU's cache; it gives the gradient of u, a first gradient for h, and the GRU's own weight and bias
        gradients. As u is the context and x side by side, split its gradient at the context's width
        (cache.context), the second part being dx. The context's part, with its query axis of one restored,
        goes into your additive_attention_backward on the attention's cache. h was used twice, as
        the GRU's previous state and as the query, so dprev_h sums the two; the encoder outputs were both keys
        and values, so denc_outputs sums those two.

    Hints:
        h and k are each used twice, so each gets the sum of two gradients:
            du, dh_gru, dWx, dWh, dbx, dbh = gru_step_backward(dnext_h, cache.gru)
            dc, dx = du[:, :H_enc], du[:, H_enc:]
            dq, dk, dv, dWq, dWk, dwv = additive_attention_backward(dc[:, None, :], cache.attention)
            dprev_h = dh_gru + dq[:, 0]        denc_outputs = dk + dv
    """
    du, dh_gru, dWx, dWh, dbx, dbh = gru_step_backward(dnext_h, cache.gru)
    enc = cache.context.shape[1]
    dq, dk, dv, dWq, dWk, dwv = additive_attention_backward(du[:, None, :enc], cache.attention)
    return du[:, enc:], dh_gru + dq[:, 0], dk + dv, dWq, dWk, dwv, dWx, dWh, dbx, dbh


EXERCISES = exercise_table(globals())
"""The set's graded functions, in the order of the sheet."""
