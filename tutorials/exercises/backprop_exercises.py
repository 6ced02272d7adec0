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

Notation in the equations: ``*`` multiplies elementwise (with NumPy broadcasting),
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

    Structure:
        The loss reaches this step through next_h alone. Go back through the tanh to its pre-activation a
        first (tanh's derivative can be read off its output next_h, which the cache holds, so a is never
        recomputed), then through the affine map. Each input that entered a product (x with Wx, prev_h with
        Wh) receives a term built from a's gradient and its partner in that product; the bias receives a's
        gradient itself, summed over the N rows it was broadcast over.

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

    Structure:
        Two gradients arrive, for next_h and for next_c. next_h depends on next_c through tanh(next_c), so the
        cell's gradient is the sum of two paths, the direct one from dnext_c and the one through next_h (whose
        tanh derivative cache.tanh_c provides); the output gate o receives from next_h alone. From the cell,
        the gradient flows to f, i, g and prev_c; prev_c receives from the cell update only, through f. Each
        gate goes back through its own sigmoid or tanh to its block of a, the cached i, f, o, g giving the
        derivatives. Laid side by side in the order [i, f, o, g], the four blocks make a's gradient, and from
        there the affine map is handled exactly as in the RNN step, the bias summing over the N rows.

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

    Structure:
        next_h mixes n and h under the update gate z, so dnext_h goes three ways, to n, to z, and straight to
        h. n goes back through its tanh, z and r through their sigmoids (the cache holds r, z and n), each to
        its pre-activation; r reaches next_h only through n's. Without reset_after, r multiplies h before
        W_hn, so n's gradient goes back through W_hn to that product and splits between r and h; with
        reset_after, r multiplies cache.hn, so it splits between r and hn, whose part goes on to W_hn, b_hn
        and h. The input side is the same affine map in both variants; h sums its direct path and every path
        back through Wh; each bias sums over the N rows.

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

    Structure:
        Every weight of a row depends on every valid score of that row, so each score's gradient is a sum of
        contributions from the whole row, not a single term; rows are independent, one softmax per (n, q) and
        per head, whatever the axes before K. The softmax's derivative needs only its output a, which the
        cache holds, so the softmax is never recomputed. Masked keys have weight zero and receive no gradient,
        and a row with no valid key receives zeros throughout.

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

    Structure:
        Undo the forward from the context back. The context pools v with the weights a, so its gradient splits
        into one for v (summed over the queries that pooled it) and one for a, to which dweights adds when
        given. Then go through the masked softmax to the scores (your masked_softmax_backward, on the softmax
        cache), through the dot product with wv to wv and f, and through the tanh to u (its derivative read
        off the cached f). u's query term was broadcast over the keys and its key term over the queries, so sum over
        the keys for the query side and over the queries for the key side, then go through Wq and Wk; the
        weights sum over all positions.

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

    Structure:
        Walk the steps from the last back to the first, calling your rnn_step_backward on each
        step's cache. The state h_t receives from two places, the output y_t and the step after it, which
        hands back its previous state's gradient (the last step has no step after it). A valid step sends
        the sum through h~_t into the step backward and hands the resulting previous-state gradient to the
        step before; a padded step has no output gradient and passes its state's gradient straight back,
        untouched. Wx, Wh and b are reused at every step, so their gradients sum over t; what step 0 hands
        back is dh0, so a row of all padding gets zero dx and dh0.

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

    Structure:
        The same walk from the last step to the first, calling your lstm_step_backward, with two
        running gradients, one for the hidden state and one for the cell state, both zero at the last step
        (nothing comes after it). At a valid step, the hidden one together with the output's gradient, and
        the cell one, go into the step backward, which hands prev_h's and prev_c's gradients to step t-1; a
        padded step passes both straight back, untouched. The weights' gradients sum over t, the hidden
        gradient handed back by step 0 is dh0, and the cell's is dropped, since the cell state starts at a
        constant zero (there is no dc0).

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

    Structure:
        The lookup copies row x[n, t] of W into out[n, t], so each position of out hands its gradient,
        unchanged, to exactly one row of W. A row used at several positions (a repeated id) receives the sum
        of all their gradients, so the contributions must accumulate rather than overwrite one another; rows
        of unused ids receive nothing. The ids are integers and need no gradient.

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

    Structure:
        The loss is a sum of independent cross-entropy terms, one per (n, t), each touching only its own score
        row x[n, t], so each row's gradient comes from its own term alone, back through the log of the softmax
        to the scores; the probabilities computed for the loss, row maximum subtracted first, serve again
        here. The mask weighs each term, so a padded step receives no gradient, and the average over N scales
        every row's gradient by the same factor, with rows of all padding still counted in N.

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

    Structure:
        Undo the two stages in reverse. First the GRU step, with your gru_step_backward on the
        GRU's cache; it gives the gradient of u, a first gradient for h, and the GRU's own weight and bias
        gradients. As u is the context and x side by side, split its gradient at the context's width
        (cache.context), the second part being dx. The context's part, with its query axis of one restored,
        goes into your additive_attention_backward on the attention's cache. h was used twice, as
        the GRU's previous state and as the query, so dprev_h sums the two; the encoder outputs were both keys
        and values, so denc_outputs sums those two.

    """
    raise NotImplementedError("bahdanau_decoder_step_backward: the equations are in the docstring")


if __name__ == "__main__":
    import sys

    from npseq.grade import main

    sys.exit(main([__file__, '--set', 'classic'] + sys.argv[1:]))
