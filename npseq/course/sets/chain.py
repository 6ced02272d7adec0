"""The chain set: one training step of a small attention translator, link by link."""
from ... import backend
from ... import functional as F
from ..cases import chain as chain_cases
from ..exercise import declare, exercise_table
from ..references import chain as references
from .classic import bahdanau_decoder_step_backward, gru_step_backward, temporal_softmax_loss, word_embedding_backward

np = backend.numpy


@declare(title="the vocabulary layer",
         summary="one affine map at every time step: each state's scores over the words",
         practises="a weight shared by every step: gradients summed over N and T",
         grads=("dx", "dw", "db"),
         engine=F.temporal_affine_backward,
         cases=chain_cases.temporal_affine_cases(),
         forwards=("temporal_affine_forward",))
def temporal_affine_backward(dout, cache):
    """Backward of the same affine map applied at every time step, ``out[:, t] = x[:, t] @ w + b``.

    A translator's vocabulary layer: the scores of every word, from every decoder state.

    Args:
        dout: (N, T, M) gradient with respect to out.
        cache: npseq's ``TemporalAffineCache`` from ``temporal_affine_forward(x, w, b)``:
            cache.x  (N, T, D)
            cache.w  (D, M)

    Returns:
        dx (N, T, D), dw (D, M), db (M,).

    Structure:
        The same affine map is applied at every time step, so treat every (n, t) position as one row of a
        single affine layer. Each position's x receives its own term, back through w. w and b were reused at
        every position, so their gradients sum over the batch and over the time steps, every step adding its
        share.
    Hints:
        It is one affine layer on N*T rows, so flatten the leading axes for the weights:
            dx = dout @ w^T                                       (N, T, D)
            dw = x.reshape(N*T, D)^T @ dout.reshape(N*T, M)       (D, M): every step adds its share
            db = sum of dout over n and t                         (M,)
    """
    x, w = cache.x, cache.w
    rows = x.shape[0] * x.shape[1]
    return dout @ w.T, x.reshape(rows, -1).T @ dout.reshape(rows, -1), dout.sum(axis=(0, 1))


@declare(title="the encoder",
         summary="a GRU over padded sequences, with a gradient into its last state too",
         practises="backpropagation through time with padding, and a second way into the last state",
         grads=("dx", "dh0", "dWx", "dWh", "dbx", "dbh"),
         engine=F.gru_backward,
         cases=chain_cases.gru_sequence_cases(),
         forwards=("gru_forward",),
         gates=("r", "z", "n"),
         gated=("dWx", "dWh", "dbx", "dbh"),
         time_axes=(("dx", 1),), recurrent=("dx",))
def gru_backward(dh, cache, dh_last=None):
    """Backward of a GRU over a padded sequence, whose outputs and last state both reach the loss.

    Forward (``gru_forward(x, h0, Wx, Wh, bx, bh, reset_after, valid_lens)``), with the mask
    m_t = [t < valid_lens[n]] (1 at a valid step, 0 at padding):
        h~_t   = gru_step_forward(x[:, t], h_{t-1}, Wx, Wh, bx, bh, reset_after)
        h_t    = m_t * h~_t + (1 - m_t) * h_{t-1}     a padded step keeps the state
        y_t    = m_t * h~_t                           the outputs, 0 at padding    (N, T, H) all of them
        h_last = h_{T-1}                              each row's last valid state
    An encoder hands its outputs to the attention and its last state to the decoder as its
    first state: both get a gradient.

    Args:
        dh: (N, T, H) gradient with respect to the outputs y.
        cache: npseq's ``GRUCache``:
            cache.steps   list of T step caches (``GRUStepCache``, or ``GRUResetAfterStepCache`` with
                          reset_after=True), [t] that of h~_t
            cache.mask    (N, T)  m: 1 at valid steps, 0 at padding
            cache.h_last  (N, H)
        dh_last: (N, H) gradient with respect to h_last, or None (none).

    Returns:
        dx (N, T, D), dh0 (N, H), dWx (D, 3H), dWh (H, 3H), dbx (3H,), dbh (3H,).

    Structure:
        Walk the steps from the last back to the first, calling your gru_step_backward (the classic set) on
        each step's cache. h_t receives from two places, its output y_t (only at a valid step) and the step
        after it; at the last step that second gradient is dh_last, or zero when there is none, and a padded
        tail carries it back to the row's last valid step. A valid step sends the sum through h~_t into the
        step backward and hands the resulting previous-state gradient to step t-1; a padded step passed its
        state through unchanged, so it hands its gradient straight back. Wx, Wh, bx and bh are reused at every
        step, so their gradients sum over t, and what step 0 hands back is dh0.
    Hints:
        Walk t = T-1, ..., 0, carrying delta, the gradient that reaches h_t from after it
        (dh_last, or zeros, at t = T-1); with m = cache.mask[:, t, None], so that it broadcasts:
            g       = delta + m * dh[:, t]                 all that reaches h_t (the output only if valid)
            dx[:, t], dprev_h, dWx_t, dWh_t, dbx_t, dbh_t = gru_step_backward(m * g, cache.steps[t])
            delta   = dprev_h + (1 - m) * g                a padded step passed h_{t-1} through unchanged
        Sum the weights' gradients over the steps; dh0 is the last delta.
    """
    delta = np.zeros_like(cache.h_last) if dh_last is None else dh_last
    dx = np.zeros(dh.shape[:2] + cache.steps[0].x.shape[1:])
    dWx, dWh, dbx, dbh = 0, 0, 0, 0
    for t in reversed(range(dh.shape[1])):
        m = cache.mask[:, t, None]
        g = delta + m * dh[:, t]
        dx[:, t], dprev_h, dWx_t, dWh_t, dbx_t, dbh_t = gru_step_backward(m * g, cache.steps[t])
        delta = dprev_h + (1 - m) * g
        dWx, dWh, dbx, dbh = dWx + dWx_t, dWh + dWh_t, dbx + dbx_t, dbh + dbh_t
    return dx, delta, dWx, dWh, dbx, dbh


@declare(title="one training step, link by link",
         summary="the backward of a whole training step of an attention translator, every link graded",
         practises=("a whole model's backward as a chain of the exercises before it: a state reached from two "
                    "places, encoder outputs reached from every step, the first broken link found"),
         grads=references.TranslatorStepGrads._fields,
         engine=references.translator_step_backward,
         cases=chain_cases.translator_step_cases(),
         forwards=("translator_step_forward",),
         forwards_module="npseq.course.references.chain",
         gates=("r", "z", "n"),
         gated=("dWx_dec", "dWh_dec", "dbx_dec", "dbh_dec", "dWx_enc", "dWh_enc", "dbx_enc", "dbh_enc"),
         time_axes=(("dscores", 1), ("dstates", 1), ("dtarget_embedded", 1), ("dsource_embedded", 1)),
         recurrent=("dstates", "dtarget_embedded", "dsource_embedded"),
         chained=True)
def translator_step_backward(dloss, cache):
    """Backward of one training step of a small attention translator, every link of the chain returned.

    Forward (``translator_step_forward(source, source_lens, target_in, target_out, target_mask, params)``:
    d2l's translator with Bahdanau attention, one GRU layer each side, teacher forcing; l = source_lens):
        e       = W_src_embed[source]                                   (N, S, E) source embedded
        k       = gru_forward(e, 0, Wx_enc, Wh_enc, bx_enc, bh_enc, valid_lens=l)   (N, S, H) encoder outputs
        s_{-1}  = the encoder's h_last                                  (N, H)    the decoder starts from it
        u       = W_tgt_embed[target_in]                                (N, T, E) target embedded
        s_t     = bahdanau_decoder_step_forward(u[:, t], s_{t-1}, k, l, Wq, Wk, wv,
                                                Wx_dec, Wh_dec, bx_dec, bh_dec)      for t = 0, ..., T-1
        z       = temporal_affine_forward(s, W_out, b_out)              (N, T, V) scores; s = [s_0, ..., s_{T-1}]
        loss    = temporal_softmax_loss(z, target_out, target_mask)

    Args:
        dloss: a number, the gradient with respect to the loss.
        cache: a ``TranslatorStepCache``:
            cache.source_embedding  the ``WordEmbeddingCache`` of e
            cache.encoder           the ``GRUCache`` of k (cache.encoder.h_last is s_{-1})
            cache.target_embedding  the ``WordEmbeddingCache`` of u
            cache.decoder_steps     T ``BahdanauDecoderStepCache``, [t] that of s_t
            cache.output            the ``TemporalAffineCache`` of z (cache.output.x is s, (N, T, H))
            cache.scores            (N, T, V)  z
            cache.target_out        (N, T)
            cache.target_mask       (N, T)

    Returns:
        The links of the chain, in the order the backward meets them:
        dscores (N, T, V), dW_out (H, V), db_out (V,),
        dstates (N, T, H): all that reaches s_t, from its scores and from step t+1,
        dWq, dWk, dwv, dWx_dec, dWh_dec, dbx_dec, dbh_dec (each shaped like its weight),
        dtarget_embedded (N, T, E), dW_tgt_embed (V_tgt, E),
        dencoder_state (N, H): of s_{-1}; denc_outputs (N, S, H): of k,
        dsource_embedded (N, S, E), dWx_enc, dWh_enc, dbx_enc, dbh_enc, dW_src_embed (V_src, E).
        They are graded in this order: the first wrong one is where the chain broke.

    Structure:
        Undo the forward last line first, each line with its exercise: the loss (your temporal_softmax_loss,
        scaled by dloss), the vocabulary layer (your temporal_affine_backward), then the decoder steps from
        the last to the first with your bahdanau_decoder_step_backward. Each s_t feeds its scores and step
        t+1, so its gradient sums the two, and each step hands its previous state's gradient to the one
        before. Each step fills its own slot of u's gradient, but k and the decoder's weights serve every
        step, so theirs sum over t. What step 0 hands back is that of s_{-1}, the encoder's last state, which
        your gru_backward takes with k's summed gradient; both embeddings end in your word_embedding_backward.
    Hints:
        One line of the backward for each line of the forward, last first (the line it undoes on the right):
            dscores = dloss * the dx of temporal_softmax_loss(cache.scores, ...)         loss
            dz_s, dW_out, db_out = temporal_affine_backward(dscores, cache.output)      z
            dprev = 0 (N, H); then for t = T-1, ..., 0:                                 s_t
                dstates[:, t] = dz_s[:, t] + dprev                  s_t feeds z_t and step t+1
                du_t, dprev, dk_t, dWq_t, ..., dbh_dec_t = bahdanau_decoder_step_backward(dstates[:, t],
                                                                                     cache.decoder_steps[t])
                dtarget_embedded[:, t] = du_t;  denc_outputs += dk_t;  dWq += dWq_t, ...   (every step shares them)
            dW_tgt_embed = word_embedding_backward(dtarget_embedded, cache.target_embedding)   u
            dencoder_state = dprev                                                      s_{-1}
            dsource_embedded, _, dWx_enc, ... = gru_backward(denc_outputs, cache.encoder, dencoder_state)   k
            dW_src_embed = word_embedding_backward(dsource_embedded, cache.source_embedding)   e
        The encoder's outputs reach the loss at every step, as keys and as values (the step's backward
        adds those two), and its last state once more, as s_{-1}: the encoder gets both.
    """
    dscores = dloss * temporal_softmax_loss(cache.scores, cache.target_out, cache.target_mask)[1]  # loss
    dz_s, dW_out, db_out = temporal_affine_backward(dscores, cache.output)  # z = s W_out + b_out
    dstates = np.zeros_like(dz_s)
    dtarget_embedded = np.zeros(cache.target_embedding.x.shape + cache.target_embedding.W.shape[1:])
    denc_outputs = np.zeros_like(cache.decoder_steps[0].attention.keys)
    ddecoder = [0] * 7  # dWq, dWk, dwv, dWx_dec, dWh_dec, dbx_dec, dbh_dec: every step's share
    dprev = np.zeros_like(dz_s[:, 0])
    for t in reversed(range(dz_s.shape[1])):  # s_t = decoder_step(u_t, s_{t-1}, k)
        dstates[:, t] = dz_s[:, t] + dprev
        dtarget_embedded[:, t], dprev, dk_t, *dstep = bahdanau_decoder_step_backward(dstates[:, t],
                                                                                     cache.decoder_steps[t])
        denc_outputs += dk_t
        ddecoder = [total + part for total, part in zip(ddecoder, dstep)]
    dW_tgt_embed = word_embedding_backward(dtarget_embedded, cache.target_embedding)  # u = W_tgt_embed[target_in]
    dencoder_state = dprev  # s_{-1} = h_last
    dsource_embedded, _, dWx_enc, dWh_enc, dbx_enc, dbh_enc = gru_backward(denc_outputs, cache.encoder,
                                                                           dencoder_state)  # k = GRU(e)
    dW_src_embed = word_embedding_backward(dsource_embedded, cache.source_embedding)  # e = W_src_embed[source]
    return (dscores, dW_out, db_out, dstates, *ddecoder, dtarget_embedded, dW_tgt_embed, dencoder_state, denc_outputs,
            dsource_embedded, dWx_enc, dWh_enc, dbx_enc, dbh_enc, dW_src_embed)


EXERCISES = exercise_table(globals())
"""The set's graded functions, in the order of the sheet."""
