"""The variants set: cells whose backward no tutorial prints.

Four exercises, one step of a recurrent cell each: the LSTM with peephole connections, the coupled
input-forget gate LSTM, the minimal gated unit and a layer-normalised tanh RNN. Their forwards and
reference backwards are the course's own (:mod:`npseq.course.references.variants`), not npseq's public
API, so no tutorial has printed the answer. Each is a declared, solved function
(:func:`~npseq.course.exercise.declare`): its docstring the hand-out's text, its body a solution in
plain NumPy that calls nothing of another set's.
"""
from ... import backend
from ..cases import variants as variants_cases
from ..exercise import declare, exercise_table
from ..references import variants as R
from ..terms import peephole_lstm_step_terms

np = backend.numpy

REFERENCES = "npseq.course.references.variants"
"""Where the hand-out imports the cells' forwards from."""


@declare(title="peephole LSTM",
         summary="an LSTM step whose gates peek at the cell state (gates i, f, o, g)",
         practises="a cell state that feeds the gates: three peephole vectors, an output gate that reads `next_c`",
         grads=("dx", "dprev_h", "dprev_c", "dWx", "dWh", "db", "dp_i", "dp_f", "dp_o"),
         engine=R.peephole_lstm_step_backward,
         terms=peephole_lstm_step_terms,
         cases=variants_cases.peephole_lstm_step_cases(),
         forwards=("peephole_lstm_step_forward",),
         forwards_module=REFERENCES,
         gates=("i", "f", "o", "g"),
         gated=("dWx", "dWh", "db"))
def peephole_lstm_step_backward(dnext_h, dnext_c, cache):
    """Backward of one step of an LSTM with peephole connections (Gers & Schmidhuber).

    Forward, with the 4H columns of the pre-activation in four blocks of H, order [i, f, o, g]
    (npseq's LSTM), and three peephole vectors p_i, p_f, p_o of H weights each (one per unit):
        a       = x @ Wx + prev_h @ Wh + b                 (N, 4H) = [a_i, a_f, a_o, a_g]
        i       = sigmoid(a_i + p_i * prev_c)
        f       = sigmoid(a_f + p_f * prev_c)
        g       = tanh(a_g)
        next_c  = f * prev_c + i * g
        o       = sigmoid(a_o + p_o * next_c)              the output gate peeks at the *new* cell
        next_h  = o * tanh(next_c)

    Args:
        dnext_h, dnext_c: (N, H) gradients with respect to next_h and next_c.
        cache: a ``PeepholeLSTMStepCache`` from
            ``peephole_lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b, p_i, p_f, p_o)``:
            cache.x       (N, D)
            cache.prev_h  (N, H)
            cache.prev_c  (N, H)
            cache.Wx      (D, 4H)
            cache.Wh      (H, 4H)
            cache.p_i     (H,)     input gate's peephole
            cache.p_f     (H,)     forget gate's peephole
            cache.p_o     (H,)     output gate's peephole
            cache.i       (N, H)   input gate
            cache.f       (N, H)   forget gate
            cache.o       (N, H)   output gate
            cache.g       (N, H)   candidate cell, tanh(a_g)
            cache.next_c  (N, H)   the new cell state
            cache.tanh_c  (N, H)   tanh(next_c)

    Returns:
        dx (N, D), dprev_h (N, H), dprev_c (N, H), dWx (D, 4H), dWh (H, 4H), db (4H,),
        dp_i (H,), dp_f (H,), dp_o (H,).

    Structure:
        Gradients arrive for next_h and next_c. The output gate o receives from next_h alone, and since it
        peeks at next_c, next_c gathers three paths, dnext_c directly, next_h through tanh(next_c), and o's
        pre-activation through the peephole p_o. From the cell, go to f, i and g, each back through its
        sigmoid or tanh (the cached gates and tanh_c give the derivatives), and to prev_c, which sums the cell
        update's path with those through the peepholes of i and f. Each peephole multiplied a cell state
        (prev_c for i and f, next_c for o) and is shared by the N rows, so its gradient sums over them. The
        four blocks, side by side as [i, f, o, g], make a's gradient for the usual affine map.
    Hints:
        Start with the output gate: it is computed from next_c, so it sends next_c a gradient too.
            da_o    = dnext_h * tanh_c * o (1 - o)
            dc      = dnext_c + dnext_h * o * (1 - tanh_c^2) + da_o * p_o      three paths into next_c
        Then the other gates, exactly as in the plain LSTM:
            da_i    = dc * g * i (1 - i)
            da_f    = dc * prev_c * f (1 - f)
            da_g    = dc * i * (1 - g^2)
        prev_c reaches next_c directly and through the peepholes of i and f:
            dprev_c = dc * f + da_i * p_i + da_f * p_f
        A peephole multiplies a cell state elementwise and is shared by the whole batch:
            dp_i    = sum_n da_i * prev_c      dp_f = sum_n da_f * prev_c      dp_o = sum_n da_o * next_c
        Put da = [da_i, da_f, da_o, da_g] side by side, (N, 4H), in that order; the rest is the
        RNN step: dx = da @ Wx^T, dprev_h = da @ Wh^T, dWx = x^T @ da, dWh = prev_h^T @ da, db = sum_n da.
    """
    i, f, o, g, tanh_c, prev_c = cache.i, cache.f, cache.o, cache.g, cache.tanh_c, cache.prev_c
    dao = dnext_h * tanh_c * o * (1 - o)
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2) + dao * cache.p_o
    dai, daf, dag = dc * g * i * (1 - i), dc * prev_c * f * (1 - f), dc * i * (1 - g ** 2)
    da = np.concatenate([dai, daf, dao, dag], axis=1)
    return (da @ cache.Wx.T, da @ cache.Wh.T, dc * f + dai * cache.p_i + daf * cache.p_f, cache.x.T @ da,
            cache.prev_h.T @ da, da.sum(axis=0), (dai * prev_c).sum(axis=0), (daf * prev_c).sum(axis=0),
            (dao * cache.next_c).sum(axis=0))


@declare(title="coupled-gate LSTM",
         summary="an LSTM step whose input gate is 1 - f (gates f, o, g)",
         practises="one gate reaching the cell twice, as `f` and as `1 - f`; three gate blocks, not four",
         grads=("dx", "dprev_h", "dprev_c", "dWx", "dWh", "db"),
         engine=R.coupled_lstm_step_backward,
         cases=variants_cases.coupled_lstm_step_cases(),
         forwards=("coupled_lstm_step_forward",),
         forwards_module=REFERENCES,
         gates=("f", "o", "g"),
         gated=("dWx", "dWh", "db"))
def coupled_lstm_step_backward(dnext_h, dnext_c, cache):
    """Backward of one step of the coupled input-forget gate LSTM (CIFG, Greff et al.).

    Forward: the input gate has no weights of its own, it is 1 - f (a unit takes in as much as it
    forgets). The 3H columns of the pre-activation are three blocks of H, order [f, o, g]:
        a       = x @ Wx + prev_h @ Wh + b                 (N, 3H) = [a_f, a_o, a_g]
        f, o    = sigmoid(a_f), sigmoid(a_o)
        g       = tanh(a_g)
        next_c  = f * prev_c + (1 - f) * g
        next_h  = o * tanh(next_c)

    Args:
        dnext_h, dnext_c: (N, H) gradients with respect to next_h and next_c.
        cache: a ``CoupledLSTMStepCache`` from ``coupled_lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b)``:
            cache.x       (N, D)
            cache.prev_h  (N, H)
            cache.prev_c  (N, H)
            cache.Wx      (D, 3H)
            cache.Wh      (H, 3H)
            cache.f       (N, H)   forget gate (the input gate is 1 - f)
            cache.o       (N, H)   output gate
            cache.g       (N, H)   candidate cell, tanh(a_g)
            cache.tanh_c  (N, H)   tanh(next_c)

    Returns:
        dx (N, D), dprev_h (N, H), dprev_c (N, H), dWx (D, 3H), dWh (H, 3H), db (3H,).

    Structure:
        Two gradients arrive, for next_h and for next_c. As in the LSTM, the cell's gradient sums the direct
        path from dnext_c and the one through tanh(next_c) in next_h; the output gate o receives from next_h
        alone. From the cell, the gradient flows to g, to prev_c (through f alone) and to f, which reaches
        next_c twice, as the forget gate and through the input gate made from it, so its two contributions
        combine. Each gate goes back through its sigmoid or tanh to its block of a (the cached f, o, g and
        tanh_c give the derivatives). Side by side in the order [f, o, g], the three blocks make a's gradient,
        and the affine map follows as in the RNN step, the bias summing over the N rows.
    Hints:
        The cell state receives gradient directly and through next_h, as in the LSTM:
            dc      = dnext_c + dnext_h * o * (1 - tanh_c^2)
        f appears twice in next_c; d next_c / d f = prev_c - g:
            da_f    = dc * (prev_c - g) * f (1 - f)
            da_o    = dnext_h * tanh_c * o (1 - o)
            da_g    = dc * (1 - f) * (1 - g^2)
            dprev_c = dc * f
        With da = [da_f, da_o, da_g] (N, 3H), in that order: dx = da @ Wx^T, dprev_h = da @ Wh^T,
        dWx = x^T @ da, dWh = prev_h^T @ da, db = sum_n da.
    """
    f, o, g, tanh_c = cache.f, cache.o, cache.g, cache.tanh_c
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    da = np.concatenate([dc * (cache.prev_c - g) * f * (1 - f), dnext_h * tanh_c * o * (1 - o),
                         dc * (1 - f) * (1 - g ** 2)], axis=1)
    return da @ cache.Wx.T, da @ cache.Wh.T, dc * f, cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0)


@declare(title="minimal gated unit",
         summary="the MGU: one gate that both resets and updates the state (gates f, n)",
         practises="one gate reached three ways (reset, mix, 1 - f); a GRU with a gate fewer",
         grads=("dx", "dprev_h", "dWx", "dWh", "db"),
         engine=R.minimal_gated_unit_step_backward,
         cases=variants_cases.minimal_gated_unit_step_cases(),
         forwards=("minimal_gated_unit_step_forward",),
         forwards_module=REFERENCES,
         gates=("f", "n"),
         gated=("dWx", "dWh", "db"))
def minimal_gated_unit_step_backward(dnext_h, cache):
    """Backward of one step of the minimal gated unit (MGU, Zhou et al.).

    Forward, with the 2H columns of Wx, Wh, b in two blocks of H, order [f, n] (W_hn is Wh[:, H:],
    b_f is b[:H], and so on); h is prev_h:
        f  = sigmoid(x @ W_xf + h @ W_hf + b_f)
        n  = tanh(x @ W_xn + (f * h) @ W_hn + b_n)
        h' = (1 - f) * h + f * n                              (next_h)
    f is a GRU's reset gate and its update gate at once.

    Args:
        dnext_h: (N, H) gradient with respect to h'.
        cache: a ``MinimalGatedUnitStepCache`` from ``minimal_gated_unit_step_forward(x, prev_h, Wx, Wh, b)``:
            cache.x       (N, D)
            cache.prev_h  (N, H)   h above
            cache.Wx      (D, 2H)
            cache.Wh      (H, 2H)
            cache.f       (N, H)   the gate
            cache.n       (N, H)   candidate state

    Returns:
        dx (N, D), dprev_h (N, H), dWx (D, 2H), dWh (H, 2H), db (2H,).

    Structure:
        dnext_h goes three ways, to the candidate n, to the gate f, and straight to h. Go back through n's
        tanh first (the cached n gives its derivative) to its pre-activation, whose recurrent part is W_hn
        applied to the product of f and h (call it rho); rho's gradient then splits between f and h. f sums
        two contributions, through the mix of n and h and through rho, before going back through its sigmoid.
        h sums three paths, the direct one, the one through rho, and the one back through W_hf from f's
        pre-activation. Wh's two blocks pair with different inputs (h for f's block, rho for n's); Wx and b
        see both blocks side by side as an ordinary affine map, the bias summing over the N rows.
    Hints:
        Call rho = f * h what W_hn multiplies. The candidate first, then the gate, which reaches h'
        through the mix (n - h) and through rho:
            da_n    = dnext_h * f * (1 - n^2)
            drho    = da_n @ W_hn^T
            da_f    = (dnext_h * (n - h) + drho * h) * f (1 - f)
        h reaches h' three ways: directly, through rho, and through the gate's pre-activation:
            dprev_h = dnext_h * (1 - f) + drho * f + da_f @ W_hf^T
            dWh     = [h^T @ da_f,  rho^T @ da_n]                 (two H-column blocks)
        The input side sees da = [da_f, da_n] (N, 2H): dx = da @ Wx^T, dWx = x^T @ da, db = sum_n da.
    """
    h, f, n, Wh = cache.prev_h, cache.f, cache.n, cache.Wh
    H = h.shape[1]
    dan = dnext_h * f * (1 - n ** 2)
    drho = dan @ Wh[:, H:].T
    daf = (dnext_h * (n - h) + drho * h) * f * (1 - f)
    da = np.concatenate([daf, dan], axis=1)
    return (da @ cache.Wx.T, dnext_h * (1 - f) + drho * f + daf @ Wh[:, :H].T, cache.x.T @ da,
            np.concatenate([h.T @ daf, (f * h).T @ dan], axis=1), da.sum(axis=0))


@declare(title="layer-normalised RNN",
         summary="a tanh RNN step with layer normalisation of its pre-activation",
         practises="layer norm's row-coupling Jacobian inside a recurrent step; gain and shift shared over the batch",
         grads=("dx", "dprev_h", "dWx", "dWh", "dgamma", "dbeta"),
         engine=R.layer_norm_rnn_step_backward,
         cases=variants_cases.layer_norm_rnn_step_cases(),
         forwards=("layer_norm_rnn_step_forward",),
         forwards_module=REFERENCES)
def layer_norm_rnn_step_backward(dnext_h, cache):
    """Backward of one step of a layer-normalised tanh RNN (Ba, Kiros & Hinton).

    Forward (``layer_norm_rnn_step_forward(x, prev_h, Wx, Wh, gamma, beta, eps)``); the
    normalisation is over the H units of each row, and beta takes the place of the bias:
        a       = x @ Wx + prev_h @ Wh                       (N, H), no bias
        mu      = mean(a)            sigma^2 = mean((a - mu)^2)      per row, biased
        s       = 1 / sqrt(sigma^2 + eps)                    (N, 1)
        a_hat   = (a - mu) * s                               (N, H)
        next_h  = tanh(gamma * a_hat + beta)                 (N, H)

    Args:
        dnext_h: (N, H) gradient with respect to next_h.
        cache: a ``LayerNormRNNStepCache``:
            cache.x          (N, D)
            cache.prev_h     (N, H)
            cache.Wx         (D, H)
            cache.Wh         (H, H)
            cache.gamma      (H,)    the gain
            cache.a_hat      (N, H)  the normalised pre-activation
            cache.inv_sigma  (N, 1)  s, kept with a last axis of 1 so that it broadcasts
            cache.next_h     (N, H)  the step's output

    Returns:
        dx (N, D), dprev_h (N, H), dWx (D, H), dWh (H, H), dgamma (H,), dbeta (H,).

    Structure:
        The loss reaches this step through next_h alone. Go back through the tanh (its derivative read off the
        cached next_h) to its input, the scaled and shifted a_hat. gamma and beta are shared by the N rows, so
        their gradients sum over them, and a_hat receives its gradient through gamma. Then go through the
        normalisation to a: mu and s depend on the whole row, so every entry of a reaches every entry of a_hat
        in its row, and each entry's gradient is a sum over the row that reduces to row means (the cached
        a_hat and inv_sigma suffice, nothing is recomputed). From a's gradient on, it is the RNN step's affine
        map, no bias.
    Hints:
        Call z = gamma * a_hat + beta. Through the tanh first:
            dz      = dnext_h * (1 - next_h^2)
        gamma and beta are shared by every row of the batch:
            dgamma  = sum_n dz * a_hat         dbeta = sum_n dz
        Layer normalisation's backward: with g = dz * gamma (the gradient of a_hat), and every
        a_j reaching every a_hat_i of its row through mu and s,
            d a_hat_i / d a_j = (s / H) (H [i = j] - 1 - a_hat_i a_hat_j), which sums to
            da      = s * (g - mean(g) - a_hat * mean(g * a_hat))     (means over the H units, keepdims=True)
        From da on it is the RNN step without a bias:
            dx = da @ Wx^T,  dprev_h = da @ Wh^T,  dWx = x^T @ da,  dWh = prev_h^T @ da.
    """
    a_hat = cache.a_hat
    dz = dnext_h * (1 - cache.next_h ** 2)
    g = dz * cache.gamma
    da = cache.inv_sigma * (g - g.mean(axis=1, keepdims=True) - a_hat * (g * a_hat).mean(axis=1, keepdims=True))
    return (da @ cache.Wx.T, da @ cache.Wh.T, cache.x.T @ da, cache.prev_h.T @ da, (dz * a_hat).sum(axis=0),
            dz.sum(axis=0))


EXERCISES = exercise_table(globals())
"""The set's graded functions, in the order of the sheet."""
