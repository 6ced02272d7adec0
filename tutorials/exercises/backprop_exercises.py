"""Backpropagation by hand: ten backward passes of sequence models.

Replace each ``raise NotImplementedError`` by your code, and grade the file as often
as you like:

    npseq grade backprop_exercises.py --set classic       # or: python -m npseq.grade backprop_exercises.py --set classic
    npseq grade backprop_exercises.py --only rnn_step_backward

(running the file itself, ``python backprop_exercises.py``, grades it too). If this is
the copy in npseq's repository, work in a copy of it (``my_backprop.py``, say) and
grade that.

The forward passes are npseq's own, imported below, so every cache you receive has
npseq's layout; each exercise lists the fields you may use. The grader runs the
forward on fixed float64 inputs, calls your backward on the cache, and compares
each gradient you return with finite differences of the forward and with npseq's
own backward. Keep the signatures and the order of the returned gradients.

Notation in the hints: ``*`` multiplies elementwise (with NumPy broadcasting),
``@`` is a matrix product, ``A^T`` a transpose, ``sum_n`` a sum over the batch
axis. Shapes: N batch, T time steps, D input features, H hidden units, V vocabulary;
attention: Q queries, K keys, Dq/Dk/Dv query/key/value features, h the scoring MLP's
hidden size; the decoder step: E embedding, S source steps, H_enc encoder features;
multi-head attention: h heads, T_q/T_k query/key steps, D projected features,
d = D/h per head.
Gradient names mirror the forward's arguments: ``dWx`` is dLoss/dWx, and so on.
The gradient of an array always has that array's shape.

Exercises, roughly easiest first:

1. ``rnn_step_backward``               a tanh RNN step
2. ``lstm_step_backward``              an LSTM step (gates i, f, o, g)
3. ``gru_step_backward``               a GRU step, both variants (reset gate before or after W_hn)
4. ``masked_softmax_backward``         softmax over the valid keys only
5. ``additive_attention_backward``     Bahdanau attention (uses exercise 4)
6. ``rnn_backward``                    backpropagation through time, with padding (uses exercise 1)
7. ``lstm_backward``                   the same for the LSTM (uses exercise 2)
8. ``word_embedding_backward``         a lookup table, with repeated token ids
9. ``temporal_softmax_loss``           the loss over padded sequences and its gradient
10. ``bahdanau_decoder_step_backward`` attention and a GRU step end to end (uses exercises 3 and 5)

An exercise may call your own earlier functions (they are in this file).
"""
import numpy as np  # noqa: F401 (you will need it)

from npseq.functional import (  # noqa: F401 (the forwards, to experiment with: their caches are your inputs)
    additive_attention_forward,
    bahdanau_decoder_step_forward,
    gru_step_forward,
    lstm_forward,
    lstm_step_forward,
    masked_softmax,
    rnn_forward,
    rnn_step_forward,
    word_embedding_forward,
)


# ----------------------------------------------------------------------------------- 1. RNN
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

    Hints:
        Call a = x @ Wx + prev_h @ Wh + b the pre-activation.
        tanh'(a) = 1 - tanh(a)^2, and tanh(a) is in the cache: no need to recompute a.
            da      = dnext_h * (1 - next_h^2)            (N, H)
            dx      = da @ Wx^T         dprev_h = da @ Wh^T
            dWx     = x^T @ da          dWh     = prev_h^T @ da
            db      = sum_n da                            (the bias was broadcast over the batch)
        Check a shape by its meaning: dWx must have Wx's shape (D, H).
    """
    raise NotImplementedError("rnn_step_backward: the equations are in the docstring")


# ---------------------------------------------------------------------------------- 2. LSTM
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
    raise NotImplementedError("lstm_step_backward: the equations are in the docstring")


# ----------------------------------------------------------------------------------- 3. GRU
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
    if cache.reset_after:
        raise NotImplementedError("gru_step_backward: the reset_after=True branch (PyTorch's GRU)")
    raise NotImplementedError("gru_step_backward: the reset_after=False branch (d2l's GRU)")


# ------------------------------------------------------------------------ 4. masked softmax
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

    Hints:
        The softmax Jacobian is da_j/ds_k = a_j ([j = k] - a_k). Applied to dweights:
            dscores[n, q, k] = a[n, q, k] * (dweights[n, q, k] - sum_j dweights[n, q, j] * a[n, q, j])
        (sum over the last axis, K, whatever the number of axes before it, with keepdims=True so
        that it broadcasts).
        Masked keys have a = 0 and so get exactly 0, and an empty row gets all zeros:
        nothing to divide, no NaN. Do not recompute the softmax.
    """
    raise NotImplementedError("masked_softmax_backward: the equations are in the docstring")


# -------------------------------------------------------------------- 5. additive attention
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
    raise NotImplementedError("additive_attention_backward: the equations are in the docstring")


# ---------------------------------------------------------- 6. backpropagation through time
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

    Hints:
        Walk back from t = T-1 with delta, the gradient reaching h_t from the later steps
        (zeros before the last step):
            g       = delta + m_t * dh[:, t]                   dL/dh_t
            dx_t, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m_t * g, cache.steps[t])
            delta   = dprev_h + (1 - m_t) * g                  a padded step passes g straight back
        dh0 is the last delta; each weight's gradient is the sum over t of its steps'.
        A row of all padding (valid_len 0) outputs only zeros, so its dx and dh0 are 0.
    """
    raise NotImplementedError("rnn_backward: the equations are in the docstring")


# ------------------------------------------------------------------------ 7. LSTM over time
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

    Hints:
        Two running gradients this time, delta_h and delta_c (both zero before the last step):
            g = delta_h + m_t * dh[:, t]
            dx_t, dprev_h, dprev_c, ... = lstm_step_backward(m_t * g, m_t * delta_c, cache.steps[t])
            delta_h = dprev_h + (1 - m_t) * g
            delta_c = dprev_c + (1 - m_t) * delta_c
        There is no dc0: the cell state starts at the constant zero.
    """
    raise NotImplementedError("lstm_backward: the equations are in the docstring")


# ------------------------------------------------------------------------ 8. word embedding
def word_embedding_backward(dout, cache):
    """Backward of a word-embedding lookup, ``out[n, t] = W[x[n, t]]``.

    Args:
        dout: (N, T, D) gradient with respect to out.
        cache: npseq's ``WordEmbeddingCache`` from ``word_embedding_forward(x, W)``:
            cache.x  (N, T)  integer token ids in [0, V)
            cache.W  (V, D)

    Returns:
        dW (V, D): dW[v] = sum of dout[n, t] over every (n, t) with x[n, t] = v.

    Hints:
        Ids repeat (a sentence has several "the"). ``dW[x] += dout`` keeps only one of
        the repeated updates, because NumPy's buffered fancy assignment writes each index
        once; ``np.add.at(dW, x, dout)`` adds them all. Rows of unused ids stay zero.
    """
    raise NotImplementedError("word_embedding_backward: the equations are in the docstring")


# ------------------------------------------------------------------------ 9. loss over time
def temporal_softmax_loss(x, y, mask):
    """Softmax cross-entropy at every time step, summed over the valid steps, averaged over N.

    L = -(1/N) sum_{n,t} mask[n, t] * log p[n, t, y[n, t]],   p[n, t] = softmax(x[n, t])

    Args:
        x: (N, T, V) scores; y: (N, T) integer targets in [0, V);
        mask: (N, T) booleans, True where the step counts.

    Returns:
        loss (a float) and dx (N, T, V) = dL/dx.

    Hints:
        Subtract each row's maximum before exp (large scores overflow otherwise).
            dx[n, t, v] = mask[n, t] * (p[n, t, v] - [v = y[n, t]]) / N
        A row of all padding contributes nothing to the loss and gets dx = 0; N still
        counts it.
    """
    raise NotImplementedError("temporal_softmax_loss: the equations are in the docstring")


# -------------------------------------------------------------- 10. a Bahdanau decoder step
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

    Hints:
        h and k are each used twice, so each gets the sum of two gradients:
            du, dh_gru, dWx, dWh, dbx, dbh = gru_step_backward(dnext_h, cache.gru)
            dc, dx = du[:, :H_enc], du[:, H_enc:]
            dq, dk, dv, dWq, dWk, dwv = additive_attention_backward(dc[:, None, :], cache.attention)
            dprev_h = dh_gru + dq[:, 0]        denc_outputs = dk + dv
    """
    raise NotImplementedError("bahdanau_decoder_step_backward: the equations are in the docstring")


if __name__ == "__main__":
    import sys

    from npseq.grade import main

    sys.exit(main([__file__, '--set', 'classic'] + sys.argv[1:]))
