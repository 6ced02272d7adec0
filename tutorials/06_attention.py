# %% [markdown]
# # 6. Attention: letting every decoder step look back at the whole source
#
# The plain encoder–decoder of tutorial 5 hands the decoder one vector, the encoder's
# final state, and asks it to produce the entire output from it. Whatever the decoder
# needs at step 12 must have survived in that vector since the encoder read it. The
# encoder computed a state $h_s$ for *every* source position, though. Attention keeps
# them all and lets each decoder step form its own summary of them: a weighted average
# $c_t = \sum_s \alpha_{ts} h_s$, with weights that the decoder computes from its current
# needs.
#
# The questions of this tutorial:
#
# 1. How are the weights computed? Three classic *score functions* (dot, general,
#    additive) and the *masked* softmax that keeps padding out.
# 2. How does the Bahdanau decoder use them, and what do the learned weights look like
#    on tasks whose correct alignment we know in advance (`numbers`, `dates`, `reverse`)?
# 3. What changes with Luong's decoder, which attends *after* its recurrent step?
# 4. What if a step looks only at a window of the source (Luong's *local* attention)?

# %%
import re

import numpy as np
from _common import COLUMN_PX, DPI, FAST, code, equations, save_figure, show

from npseq.data import BatchIterator, load_translation_data
from npseq.decode import evaluate_translations, translate
from npseq.functional import attention as A
from npseq.functional import local_attention as L
from npseq.functional import masked_softmax, masked_softmax_backward
from npseq.functional import pooling as P
from npseq.functional import scores as S
from npseq.gradcheck import check_function, check_module
from npseq.models import DEMO_SETTINGS, LuongAttentionDecoder, Seq2SeqAttentionDecoder, build_seq2seq
from npseq.nn import LocalAttention
from npseq.optim import Adam
from npseq.train import train_seq2seq
from npseq.viz import plot_history, show_attention_grid, show_heatmaps

rng = np.random.default_rng(0)
COLUMN_INCHES = COLUMN_PX / DPI  # the book's text column: the widest a figure may be and still show at its own size


# %% [markdown]
# ## Scores, weights, context
#
# Batch first, as everywhere in npseq: queries $q \in \mathbb{R}^{N \times Q \times D_q}$, keys
# $k \in \mathbb{R}^{N \times K \times D_k}$ and values $v \in \mathbb{R}^{N \times K \times D_v}$. In a decoder
# the query is (derived from) the decoder state, and the keys and values are both the
# encoder states $h_1 \dots h_S$. A *score* $s_{nqk}$ says how well query $q$ matches key $k$;
# three choices are classic:
#
# $$\begin{aligned}
#   \text{dot:}\quad s_{nqk} &= \lambda\, q_{nq} \cdot k_{nk}, \qquad \lambda = 1 \text{ (Luong) or } 1/\sqrt{D} \text{ (scaled, Vaswani et al.)}, \\
#   \text{general:}\quad s_{nqk} &= q_{nq}\, W\, k_{nk}^\top, \qquad W \in \mathbb{R}^{D_q \times D_k}, \\
#   \text{additive:}\quad s_{nqk} &= w_v \cdot \tanh\big(q_{nq} W_q + k_{nk} W_k\big), \\
#   &\qquad W_q \in \mathbb{R}^{D_q \times h},\ W_k \in \mathbb{R}^{D_k \times h},\ w_v \in \mathbb{R}^{h}.
# \end{aligned}$$
#
# The dot score needs $D_q = D_k$ and has no parameters; the general score learns which
# query features should match which key features; the additive score is a small MLP on
# the pair, and is the one Bahdanau et al. (2014) introduced. Whatever the score, the
# rest is shared: a softmax over the keys turns scores into weights, and the context is
# the weighted average of the values,
#
# $$\alpha_{nq\cdot} = \operatorname{masked\_softmax}(s_{nq\cdot}), \qquad c_{nq} = \sum_k \alpha_{nqk}\, v_{nk}.$$
#
# In npseq each score is a forward/backward pair of its own (`npseq.functional.scores`), and
# the shared part is one pair too, the masked pooling (`npseq.functional.pooling`): a
# softmax over the keys a boolean mask lets through, then the weighted average of the
# values. Every attention of this tutorial and of the Transformer's is a score pair
# followed by the pooling pair. Each function checks its arguments in one call at its top
# (`check_...`); the lines after it are the maths. The three scores:

# %%
for function in (S.dot_scores_forward, S.scaled_dot_scores_forward, S.general_scores_forward,
                 S.concat_scores_forward):
    print(code(function))

# %% [markdown]
# The pooling, and the two lines that make a global attention out of a score: build the
# mask of the valid keys, pool.

# %%
for function in (P.masked_pooling_forward, P.attention_pooling_forward, A.additive_attention_forward):
    print(code(function))

# %% [markdown]
# A quick consistency check of those equations: with $W = I$ the general score is the
# unscaled dot score, and scaling the dot score by $1/\sqrt{D}$ only flattens the weights
# (the order of the keys by weight is unchanged):

# %%
N, Q, K, D = 2, 3, 5, 4
queries, keys, values = (rng.standard_normal((N, Q, D)), rng.standard_normal((N, K, D)),
                         rng.standard_normal((N, K, 3)))
dot_context, dot_weights, _ = A.dot_attention_forward(queries, keys, values, scaled=False)
gen_context, gen_weights, _ = A.general_attention_forward(queries, keys, values, np.eye(D))
_, scaled_weights, _ = A.dot_attention_forward(queries, keys, values, scaled=True)
print("general with W = I equals unscaled dot:", np.allclose(gen_weights, dot_weights), np.allclose(gen_context, dot_context))
print("largest weight per query, unscaled:", dot_weights.max(-1).round(2).tolist())
print("largest weight per query, scaled  :", scaled_weights.max(-1).round(2).tolist())
print("same ranking of the keys:", (dot_weights.argsort(-1) == scaled_weights.argsort(-1)).all())

# %% [markdown]
# ## The masked softmax
#
# Sources in a batch have different lengths and are padded to a common $K$. The encoder
# states at padded positions are not part of the sentence, so they must get no weight:
# otherwise the same sentence would be translated differently depending on how much
# padding its batch needed. With $\ell$ the valid length of the row, npseq computes
#
# $$\alpha_{k} = \frac{[k < \ell]\, e^{s_k - m}}{\sum_{j < \ell} e^{s_j - m}}, \qquad m = \max_{j < \ell} s_j,$$
#
# so masked keys get *exactly* zero (not a tiny number), the maximum is taken over the
# valid keys only (nothing overflows), and a row with $\ell = 0$ is all zeros rather than
# NaN. `valid_lens` may give one length per example, shape $(N,)$, or one per query,
# shape $(N, Q)$:

# %%
print(code(masked_softmax))

scores = np.tile(rng.standard_normal((1, 1, 6)), (1, 5, 1))  # the same scores for 5 queries
lens = np.array([[6, 4, 2, 1, 0]])
weights, _ = masked_softmax(scores, lens)
print(weights[0].round(3))
_, figure = show_heatmaps(weights[0], [f"key {k + 1}" for k in range(6)], [f"valid_len = {n}" for n in lens[0]],
                          None, title="one row of scores, five valid lengths",
                          labels=("keys", "queries (same scores)"), return_figure=True)
path = save_figure(figure, "06_masked_softmax.png",
                   alt="The weights of one row of six scores (keys across) under five valid lengths, from all six "
                       "keys down to none (rows): each row spreads its weight over its first valid_len keys, the "
                       "keys past them are grey, and the last row is all grey.")
show(path)

# %% [markdown]
# Each row is the same six scores, renormalised over its first $\ell$ keys; the last
# row is empty. The practical consequence: padding the source with garbage encoder
# states changes nothing, provided the valid length is passed.

# %%
reference, _, _ = A.dot_attention_forward(queries, keys, values)
padded_keys = np.concatenate([keys, 100 * rng.standard_normal((N, 2, D))], axis=1)  # 2 wild padded keys
padded_values = np.concatenate([values, 100 * rng.standard_normal((N, 2, 3))], axis=1)
masked, _, _ = A.dot_attention_forward(queries, padded_keys, padded_values, np.array([K, K]))
unmasked, _, _ = A.dot_attention_forward(queries, padded_keys, padded_values)
print(f"padding + valid_lens:    max |change of the context| = {np.abs(masked - reference).max():.1e}")
print(f"padding, no valid_lens:  max |change of the context| = {np.abs(unmasked - reference).max():.1f}")

# %% [markdown]
# ## Gradient checks
#
# ### The backward of additive attention, step by step
#
# A backward pass runs the forward in reverse. Additive attention is five steps,
#
# $$\begin{aligned}
#   \hat q &= q W_q, \quad \hat k = k W_k, \quad f_{nqk} = \tanh(\hat q_{nq} + \hat k_{nk}), \quad
#   s_{nqk} = w_v \cdot f_{nqk}, \\
#   \alpha_{nq\cdot} &= \operatorname{masked\_softmax}(s_{nq\cdot}), \quad c_{nq} = \sum_k \alpha_{nqk} v_{nk},
# \end{aligned}$$
#
# with shapes $q$ $(N, Q, D_q)$, $k$ $(N, K, D_k)$, $v$ $(N, K, D_v)$, $\hat q$ $(N, Q, h)$, $\hat k$
# $(N, K, h)$, $f$ $(N, Q, K, h)$, $s$ and $\alpha$ $(N, Q, K)$, $c$ $(N, Q, D_v)$. We are given $dc$, the
# gradient of the loss with respect to the context ($dx$ always has the shape of $x$), and
# go back one step at a time. We take dropout on the weights to be off ($p = 0$, as in all
# the checks below). With dropout the context is $\tilde\alpha v$ with $\tilde\alpha = \alpha \odot m$,
# so $dv$ uses $\tilde\alpha$ instead of $\alpha$ and $d\alpha$ is multiplied by the same mask $m$. That
# multiplication is all that `dropout_backward` does in the code.
#
# **1. Context to weights and values.** $c_{nq} = \sum_k \alpha_{nqk} v_{nk}$ is linear in each factor:
#
# $$dv_{nk} = \sum_q \alpha_{nqk}\, dc_{nq} \quad (N, K, D_v), \qquad
#   d\alpha_{nqk} = dc_{nq} \cdot v_{nk} \quad (N, Q, K),$$
#
# or, one matrix per example, $dv = \alpha^\top dc$ and $d\alpha = dc\, v^\top$. If a loss also acts on the
# weights themselves, its gradient (`dweights`) is added to $d\alpha$.
#
# **2. Weights to scores: the masked softmax.** Over the valid keys of a row,
# $\alpha_j = e^{s_j} / \sum_i e^{s_i}$, so $\partial \alpha_j / \partial s_k = \alpha_j (\delta_{jk} - \alpha_k)$. The
# chain rule sums over every weight that $s_k$ moves:
#
# $$ds_{nqk} = \sum_j d\alpha_{nqj}\, \alpha_{nqj} (\delta_{jk} - \alpha_{nqk})
#   = \alpha_{nqk} \Big(d\alpha_{nqk} - \sum_j \alpha_{nqj}\, d\alpha_{nqj}\Big) \quad (N, Q, K).$$
#
# The gradient at a masked key ($k \ge \ell$) is exactly zero, because the forward
# replaces its score by $-\infty$ before the exponential, so no weight depends on it. The
# formula gives that zero without a special case: $\alpha_{nqk} = 0$ there, and for the same
# reason the masked keys drop out of the sum over $j$. A row with $\ell = 0$ has all-zero
# weights whatever its scores, so its whole $ds$ is zero. Since $\alpha = 0$ at masked keys,
# a key that every query masks (padding, with one valid length per example) gets $dv = 0$
# in step 1 and $d\hat k = 0$ in step 5: padding receives no gradient.
#
# **3. Scores to features and $w_v$.** $s_{nqk} = w_v \cdot f_{nqk}$ is a dot product:
#
# $$dw_v = \sum_{n,q,k} ds_{nqk}\, f_{nqk} \quad (h), \qquad df_{nqk} = ds_{nqk}\, w_v \quad (N, Q, K, h).$$
#
# **4. Through the tanh.** We call the pre-activation $u_{nqk} = \hat q_{nq} + \hat k_{nk}$, so that
# $f = \tanh u$. (We do not call it $a$: npseq's docstrings use $a$ for the weights.) With
# $\tanh' = 1 - \tanh^2$,
#
# $$du_{nqk} = df_{nqk} \odot (1 - f_{nqk}^2) = ds_{nqk}\, w_v \odot (1 - f_{nqk}^2) \quad (N, Q, K, h).$$
#
# **5. The two projections.** In $u_{nqk} = \hat q_{nq} + \hat k_{nk}$ the query term is repeated for every
# key and the key term for every query. A term that is used several times gets the sum of
# the gradients of its uses:
#
# $$d\hat q_{nq} = \sum_k du_{nqk} \quad (N, Q, h), \qquad d\hat k_{nk} = \sum_q du_{nqk} \quad (N, K, h),$$
# $$dq = d\hat q\, W_q^\top \quad (N, Q, D_q), \qquad
#   dW_q = \sum_{n,q} q_{nq}^\top\, d\hat q_{nq} = \sum_{n,q,k} q_{nq}^\top\, du_{nqk} \quad (D_q, h),$$
# $$dk = d\hat k\, W_k^\top \quad (N, K, D_k), \qquad
#   dW_k = \sum_{n,k} k_{nk}^\top\, d\hat k_{nk} = \sum_{n,q,k} k_{nk}^\top\, du_{nqk} \quad (D_k, h),$$
#
# where $q_{nq}^\top du_{nqk}$ is the outer product of a $D_q$-vector and an $h$-vector. Put
# differently, $dW_q$ sums $q^\top du$ over the keys (and over the queries and the batch), and
# $dq$ projects the key-summed $du$ back through $W_q^\top$.
#
# **What makes it cheap.** The right-hand forms of $dW_q$ and $dW_k$ are the naive
# computation: every $(q, k)$ pair sends its own $h$-vector back through both weight
# matrices, which costs $O(NQK(D_q + D_k)h)$. But $u$ is the *sum* of a query term and a key
# term, so the pair axis can be summed out first, on the small $h$-vectors: $du$ summed over
# the keys gives $d\hat q$, summed over the queries gives $d\hat k$, and each projection is then
# differentiated once for the $Q$ queries and once for the $K$ keys, not once per pair. The
# forward uses the same trick. The projected keys $\hat k = k W_k$ are computed once per
# batch and broadcast over the queries; their gradient is summed over the queries before it
# goes through $W_k$. A Bahdanau decoder takes this one step further. It projects the
# encoder outputs once per source batch, adds up the $d\hat k$ of all the steps, and goes
# back through $W_k$ only once; that arrangement, with its buffers reused in place, is the
# fast twin `additive_attention_projected_forward` in `npseq.functional.fast_attention`,
# which a test holds equal to the reference below within $10^{-12}$.
#
# Here is the reference, which follows the derivation line by line.
# `additive_attention_backward` is the pooling's backward, then the score's.
# `masked_pooling_backward` is step 1 (`pooled` is $\alpha$ when $p = 0$, and the
# `dropout_backward` call is the identity; without a gain, `dinside` is `dweights_total`),
# and `masked_softmax_backward` is step 2. In `concat_scores_backward`, `dwv` is step 3,
# `dpre` is $du$ (steps 3 and 4 together), and the two sums of step 5 are
# `dprojected_queries` and `dprojected_keys`. In `dWq` and `dWk`, reshaping to rows turns
# $\sum_{n,q}$ and $\sum_{n,k}$ into a single matrix product:

# %%
for function in (A.additive_attention_backward, P.masked_pooling_backward, masked_softmax_backward,
                 S.concat_scores_backward):
    print(code(function))

# %% [markdown]
# The zeros the derivation promises, on a small example whose masks include a fully
# masked key and a query with no valid key: padding receives exactly no gradient.

# %%
derive_rng = np.random.default_rng(2)
N, Q, K, Dq, Dk, Dv, h = 2, 3, 5, 3, 4, 2, 6
q, k, v = (derive_rng.standard_normal((N, Q, Dq)), derive_rng.standard_normal((N, K, Dk)),
           derive_rng.standard_normal((N, K, Dv)))
Wq, Wk, wv = derive_rng.standard_normal((Dq, h)), derive_rng.standard_normal((Dk, h)), derive_rng.standard_normal(h)
lens = np.array([[5, 3, 1], [4, 2, 0]])  # one valid length per query: key 5 of example 2 is masked for all queries
_, alpha, cache = A.additive_attention_forward(q, k, v, Wq, Wk, wv, lens)
dq, dk, dv, dWq, dWk, dwv = A.additive_attention_backward(derive_rng.standard_normal((N, Q, Dv)), cache)
print("masked key (example 2, key 5): dk and dv exactly 0:", not dk[1, 4].any() and not dv[1, 4].any())
print("query with no valid key (example 2, query 3): dq exactly 0:", not dq[1, 2].any())

# %% [markdown]
# The derivation is an argument; a finite-difference check is independent evidence. The
# dot and general scores share steps 1 and 2 and differ only in how $ds$ reaches the
# inputs ($dq = \lambda\, ds\, k$ and $dk = \lambda\, ds^\top q$ for the dot score). Each pair is checked
# with masks that leave some keys out. The backward also takes an optional gradient on
# the weights themselves (`dweights`), and the check perturbs both:

# %%
check_rng = np.random.default_rng(1)
q3, k5, v = check_rng.standard_normal((2, 2, 3)), check_rng.standard_normal((2, 4, 5)), check_rng.standard_normal((2, 4, 3))
k3 = check_rng.standard_normal((2, 4, 3))
lens = np.array([4, 2])


def with_weights_grad(backward):
    """A backward that also receives the upstream gradient of the weights (the second output)."""
    return lambda dcontext, dweights, cache: backward(dcontext, cache, dweights)


reports = {
    "dot (scaled)": check_function(A.dot_attention_forward, with_weights_grad(A.dot_attention_backward),
                                   {"queries": q3, "keys": k3, "values": v, "valid_lens": lens}),
    "general": check_function(A.general_attention_forward, with_weights_grad(A.general_attention_backward),
                              {"queries": q3, "keys": k5, "values": v, "W": 0.5 * check_rng.standard_normal((3, 5)),
                               "valid_lens": lens}),
    "additive": check_function(A.additive_attention_forward, with_weights_grad(A.additive_attention_backward),
                               {"queries": q3, "keys": k5, "values": v, "Wq": 0.5 * check_rng.standard_normal((3, 4)),
                                "Wk": 0.5 * check_rng.standard_normal((5, 4)), "wv": check_rng.standard_normal(4),
                                "valid_lens": lens}),
}
for name, report in reports.items():
    print(f"{name} attention\n{report}\n")
    assert report.ok

# %% [markdown]
# ## The Bahdanau decoder
#
# Bahdanau et al. put additive attention in front of the decoder's recurrent step. At
# step $t$ the query is the *previous* decoder state (top layer), the keys and values are
# the encoder outputs $h_s$, and the resulting context joins the embedded previous token
# as the input of the recurrent step:
#
# $$\alpha_{t\cdot} = \operatorname{masked\_softmax}_s\big(w_v \cdot \tanh(s^{(L)}_{t-1} W_q + h_s W_k)\big), \qquad
#   c_t = \sum_s \alpha_{ts} h_s,$$
# $$s_t = \operatorname{RNN}\big([c_t;\ E[y_{t-1}]],\ s_{t-1}\big), \qquad
#   p(y_t \mid y_{<t}, x) = \operatorname{softmax}(s^{(L)}_t W_o + b_o).$$
#
# The decoder decides where to look *before* it has processed $y_{t-1}$: the previous state
# already knows what has been written so far, and the context is then available to the
# step that produces $y_t$. In npseq, `step` embeds the previous token, runs the decoder's own
# `_step` (attention, then the recurrent layer) and projects to the vocabulary:

# %%
print(equations(Seq2SeqAttentionDecoder))
print(code(Seq2SeqAttentionDecoder.step))
print(code(Seq2SeqAttentionDecoder._step))

# %% [markdown]
# The backward of one step walks the same lines in reverse. `grads` holds the gradient of
# the state the step returned; the recurrent layer's backward turns it into that of the state
# the step read, plus the gradients of its input $[c_t;\ E[y_{t-1}]]$. The context's part goes
# back through the attention: into the query (the previous top-layer state, so it joins that
# state's gradient), the projected keys and the values. Every step reads the same encoder
# outputs, so their gradients are summed over the steps (`+=`):

# %%
print(code(Seq2SeqAttentionDecoder.step_backward))
print(code(Seq2SeqAttentionDecoder._step_backward))

# %% [markdown]
# A whole target sentence is the loop over `step`, each step reading the gold previous token
# (teacher forcing), and its backward the loop over `step_backward`, last step first. With
# target lengths a row past its sentence's end keeps its state, and its gradient passes straight
# back through that step:

# %%
print(code(Seq2SeqAttentionDecoder.forward))
print(code(Seq2SeqAttentionDecoder.backward))

# %% [markdown]
# That loop is the reference. Training runs its fast twin, `npseq.models.packed_decoder`: the
# same numbers (within $10^{-12}$ in float64, a test holds it there) with the embedding and the
# output layer run once for all steps, and each step running only the rows still inside their
# sentence.

# %% [markdown]
# The whole model, with its backward through the attention of every step into the
# encoder outputs, passes the finite-difference check (tiny sizes, float64, weights
# enlarged so that the attention is far from uniform):

# %%
tiny = build_seq2seq(6, 5, decoder="bahdanau", cell="gru", embed_size=3, num_hiddens=4, num_layers=2, dropout=0.0,
                     seed=0, dtype="float64")
for name, param in tiny.named_parameters():
    param.data *= 5.0 if "attention" in name else 2.0
report = check_module(tiny, {"src": check_rng.integers(0, 6, size=(2, 3)), "tgt_in": check_rng.integers(0, 5, size=(2, 3)),
                             "src_valid_lens": np.array([3, 1])}, h=1e-3, order=4)
print(report)
assert report.ok

# %% [markdown]
# ## What the weights learn, on three tasks with known alignments
#
# The built-in tasks were chosen because we know where a sensible model *should* look:
#
# * `numbers`: English number words to French (`seventy one` → `soixante et onze`). The
#   alignment is monotone and mostly one word to one word, except that the French 70s
#   and 90s need two English words at once (`seventy nine` → `soixante - dix - neuf`).
# * `dates`: ten human date formats, character by character, to ISO `yyyy-mm-dd`. For a
#   year-first source (`2005/09/11`) the alignment is monotone; for `25th of january 2011`
#   the year digits must be read at the end of the source and the day at its start.
# * `reverse`: a token sequence to its reverse; the alignment is the anti-diagonal.
#
# We train one Bahdanau model per task, with the settings of `npseq demo` (a one-layer
# GRU, 64 hidden units) but a smaller learning rate, and draw its attention weights on
# test examples it has never seen, one figure per task. `load_translation_data` (in
# `npseq.data`), `evaluate_translations` and `translate` (in `npseq.decode`) are what the
# `npseq` command uses too.

# %%
# Fast mode trains less, but enough for the maps to show their pattern (about 98% exact match or more).
NUM_EXAMPLES = 8000 if FAST else None  # None: the whole task (10,000 pairs)
EPOCHS = {"numbers": 4, "dates": 5, "reverse": 5} if FAST else {"numbers": 6, "dates": 8, "reverse": 10}
LR = 0.003


def train(task, corpus, decoder="bahdanau", **options):
    settings = dict(DEMO_SETTINGS, decoder=decoder, **options)
    model = build_seq2seq(len(corpus.src_vocab), len(corpus.tgt_vocab), seed=0, **settings)
    # Each model gets its own batch stream, shuffled from seed 0, so that it sees the same batches in the same
    # order whichever models trained before it: its numbers depend on its own settings alone.
    batches = BatchIterator(corpus.batches.arrays, corpus.batches.batch_size, seed=0)
    history = train_seq2seq(model, batches, corpus.tgt_vocab, Adam(model.parameters(), lr=LR), EPOCHS[task],
                            clip=1.0, progress=False)
    bleu, exact = evaluate_translations(model, corpus.test_pairs, corpus.src_vocab, corpus.tgt_vocab,
                                        src_len=corpus.num_steps[0], max_len=max(corpus.num_steps))
    described = ", ".join(f"{key}={value}" for key, value in options.items())
    print(f"{task:8} {decoder:9} {described:32} final train CE {history.token_ce[-1]:.4f}, test BLEU {bleu:.3f}, "
          f"exact match {exact:.1%}")
    return model, history


def panel(model, corpus, sentence, title):
    """(weights, source tokens, output tokens, title) of the greedy translation of one sentence."""
    # translate cuts the source to max_len tokens, so give it the longer of the two lengths.
    translation = translate(model, sentence, corpus.src_vocab, corpus.tgt_vocab, max(corpus.num_steps),
                            task=corpus.task)
    print(f"  {sentence!r} -> {translation.text!r}")
    return translation.result.attention, translation.source_tokens, translation.attention_rows, title


def monotone_share(weights):
    """The share of output steps whose most attended source position is at or after the previous step's."""
    peaks = weights.argmax(axis=1)
    return float(np.mean(peaks[1:] >= peaks[:-1]))


def reversal_mass(weights, shift=0):
    """The mean attention weight that output t of a reversal puts on source position S - 1 - t + shift
    (rows and columns are the S tokens and then <eos>; its row is left out)."""
    tokens = weights.shape[1] - 1
    return float(np.mean([weights[t, tokens - 1 - t + shift] for t in range(tokens)
                          if 0 <= tokens - 1 - t + shift <= tokens]))


def year_weight(weights, source, output):
    """(the weight the output's four year digits put on the year's digits in the source, where those start)."""
    start = next(i for i in range(len(source) - 3) if source[i:i + 4] == output[:4])
    return float(weights[:4, start:start + 4].sum(axis=1).mean()), start


def first_source(corpus, pattern):
    """The first test source whose text matches the regular expression ``pattern``."""
    texts = [corpus.text.detokenize_source(src) for src, _ in corpus.test_pairs]
    return next((text for text in texts if re.search(pattern, text)), texts[0])


corpora, models, histories = {}, {}, {}
for task in ("numbers", "dates", "reverse"):
    corpora[task] = load_translation_data(task, num_examples=NUM_EXAMPLES, batch_size=128, seed=0)
    models[task], histories[task] = train(task, corpora[task])

panels = {
    "numbers": [panel(models["numbers"], corpora["numbers"],
                      first_source(corpora["numbers"], r"(seventy|ninety) \w+ ?\w*$"), "numbers")],
    "dates": [panel(models["dates"], corpora["dates"], first_source(corpora["dates"], r"^\d{4}/"), "dates, year first"),
              panel(models["dates"], corpora["dates"], first_source(corpora["dates"], r" of "), "dates, year last")],
    "reverse": [panel(models["reverse"], corpora["reverse"], first_source(corpora["reverse"], r"^(\w ){6,}"),
                      "reverse")],
}
ALT = {
    "numbers": "Bahdanau attention weights of an unseen English number (columns) translated into French (rows): "
               "a band down and to the right, each French word reading the English word it translates or the "
               "one after it.",
    "dates": "Bahdanau attention weights of two unseen dates (source characters across, ISO output down). For the "
             "year-first date the band runs down and to the right; for the year-last date the year's digits read "
             "the end of the source, the month the month's name and the day its start.",
    "reverse": "Bahdanau attention weights of an unseen token sequence (columns) and its reverse (rows): "
               "the anti-diagonal, each output token reading the source position it copies or the one after it.",
}
for task, maps in panels.items():
    # One figure per task, its maps one under the other: side by side, the tokens would be too narrow to read.
    _, figure = show_attention_grid(maps, None, ncols=1,
                                    max_width=COLUMN_INCHES, suptitle="Bahdanau attention on unseen test data",
                                    return_figure=True)
    path = save_figure(figure, f"06_attention_{task}.png", alt=ALT[task])
    show(path)
    for weights, source, output, title in maps:
        if title == "numbers":
            print(f"{title:18} monotone steps {monotone_share(weights):.0%}")
        elif title == "reverse":
            print(f"{title:18} weight on the reversal or one position to its right "
                  f"{reversal_mass(weights) + reversal_mass(weights, 1):.0%}")
        else:
            weight, start = year_weight(weights, source, output)
            print(f"{title:18} the year's output digits put {weight:.0%} of their weight on the source's year, "
                  f"positions {start}-{start + 3} of {len(source)}")

# %% [markdown]
# Read each map row by row: row $t$ is the distribution $\alpha_{t\cdot}$ that produced output
# token $t$. The lines under the maps measure what the eye sees: for `numbers` the share of
# steps whose most attended position is at or after the previous step's (a monotone
# alignment has all of them), for the dates where the year's digits look, and for
# `reverse` the weight on the anti-diagonal.
#
# * **numbers**: a monotone band. A French word reads the English word it translates or
#   the position just after it (why the next position also works is explained under
#   `reverse`); a compound such as `quatre - vingt - quatorze` (ninety four) spreads over
#   the tens word and the unit word, because it needs both.
# * **dates, year first**: a monotone staircase: year digits on the year, month digits on
#   the month, day digits on the day; the separators `-` look at the source separators.
# * **dates, year last**: the same outputs read a completely different order, the year at
#   the end of the source, the month on the letters of the month name that identify it,
#   the day at the start. Attention has no built-in preference for monotone alignments.
# * **reverse**: the anti-diagonal. Where it sits one column to the right of the exact
#   reversal, the decoder is reading the encoder state just *after* the token it needs:
#   a unidirectional encoder state $h_{s+1}$ has just read $x_s$ and still carries it, so
#   either column does the job.
#
# ## Luong's decoder: attend after the step
#
# Luong et al. (2015) reorder the step: the recurrent layer runs first, and its *current*
# state $s_t$ is the query. The context and the state are then combined into an
# *attentional state* $\tilde h_t$, from which the output is predicted and which, with
# *input feeding*, is also fed to the next step:
#
# $$\begin{aligned}
#   s_t &= \operatorname{RNN}\big([E[y_{t-1}];\ \tilde h_{t-1}],\ s_{t-1}\big), &
#   \alpha_{t\cdot} &= \operatorname{softmax}_s \operatorname{score}(s^{(L)}_t, h_s), \\
#   \tilde h_t &= \tanh\big([c_t;\ s^{(L)}_t]\, W_c\big), &
#   p(y_t \mid \cdot) &= \operatorname{softmax}(\tilde h_t W_o + b_o),
# \end{aligned}$$
#
# with any of the three scores (`"dot"`, `"general"`, `"concat"` = additive).

# %%
print(equations(LuongAttentionDecoder))
print(code(LuongAttentionDecoder._step))

# %% [markdown]
# We train both decoders on `reverse`, with the same encoder, sizes, data and optimiser
# (Luong with the `general` score and input feeding), and compare the training curves
# and the maps on two test sequences (one row of maps per sequence, Bahdanau's on the
# left).

# %%
corpus = corpora["reverse"]
luong, luong_history = train("reverse", corpus, decoder="luong", score="general", input_feeding=True)
curves = {"Bahdanau": histories["reverse"].token_ce, "Luong": luong_history.token_ce}
_, figure = plot_history(curves, None, keys=list(curves), shared=True,
                         log_scale=True, title="reverse: training cross-entropy per token", return_figure=True)
path = save_figure(figure, "06_luong_vs_bahdanau_loss.png",
                   alt="The training cross-entropy per token of the Bahdanau and the Luong decoder on reverse, "
                       "epoch by epoch on a log scale: both curves fall steeply in the first epochs, as the two "
                       "models learn the task.")
show(path)

sources = [first_source(corpus, r"^(\w ){6,}"), first_source(corpus, r"^(\w ){8,}")]
grid = [panel(model, corpus, sentence, f"{name}, {len(sentence.split())} tokens")
        for sentence in sources for name, model in (("Bahdanau", models["reverse"]), ("Luong", luong))]
_, figure = show_attention_grid(grid, None, ncols=2,
                                max_width=COLUMN_INCHES, suptitle="reverse: Bahdanau (left) and Luong (right)",
                                return_figure=True)
path = save_figure(figure, "06_luong_vs_bahdanau_attention.png",
                   alt="Attention maps of the Bahdanau (left) and the Luong decoder (right) on two unseen sequences "
                       "to reverse (source across, output down): both draw the anti-diagonal, Luong's sharp on the "
                       "exact reversal, Bahdanau's spread over it and the position to its right.")
show(path)
for weights, _, _, title in grid:
    print(f"{title:22} weight on the exact reversal {reversal_mass(weights):.0%}, "
          f"one position to its right {reversal_mass(weights, 1):.0%}")

# %% [markdown]
# Both decoders learn the task and both draw an anti-diagonal, but they differ in how
# they draw it. Luong's query $s_t$ has already read $y_{t-1}$, the token it has just
# written, so it knows exactly which source position comes next; its maps are sharp
# and sit on the exact reversal. Bahdanau's query $s_{t-1}$ must choose the position
# before reading $y_{t-1}$; its maps are softer, spread over the right column and its
# neighbour to the right, whose encoder state still carries the same token: the lines under
# the maps give the weight each puts on the exact reversal and one position to its right.
# Compare the numbers printed above. In the full run the Bahdanau model reached a training cross-entropy
# of 0.0013 and an exact match of 100.0%, Luong's 0.0142 and 98.8%: the model with the
# blurrier maps is the better one here. Sharp maps are not the same thing as a better model:
# the maps show *how* a model solved the task, not how well. (Whether the ranking survives a
# change of seed is exercise 5.)
#
# ## Local attention: a window around an aligned position
#
# Global attention scores every source position at every step, which costs $O(S)$ per
# step and lets a step spread its weight anywhere. Luong et al. (2015, section 3.2) also
# proposed *local* attention: step $t$ looks only at the $2D + 1$ positions around an
# aligned position $p_t$, with a softmax over that window and exactly zero weight outside
# it (and beyond the sentence's own length $S_n$). Two ways to choose $p_t$:
#
# * **local-m** (monotonic) assumes the two sentences run in step: $p_t = t$.
# * **local-p** (predictive) lets the decoder predict it from its state,
#   $p_t = S_n\,\sigma(v_p^\top \tanh(W_p s_t))$, a real number in $[0, S_n]$, and multiplies
#   the window's weights by a Gaussian centred there,
#   $\gamma_t(s) = \exp\big(-(s - p_t)^2 / (2\sigma^2)\big)$ with $\sigma = D/2$.
#
# The window's edges move with $p_t$ in whole positions, which has no gradient; the
# Gaussian is what makes $p_t$, and through it $W_p$ and $v_p$, trainable:
# $\partial \gamma_t(s) / \partial p_t = \gamma_t(s)\,(s - p_t)/\sigma^2$. The pooling and the
# predicted position are two small pairs (scores come from the same dot, general and
# concat functions as before):

# %%
print(equations(L.local_attention_pooling_backward))
print(code(L.local_attention_pooling_forward))
print(code(L.local_attention_pooling_backward))
print(code(L.predictive_position_backward))

# %% [markdown]
# The layer `LocalAttention` composes the score, the position and the pooling. Its
# gradient check covers every path into $W_p$ and $v_p$, with one sentence shorter than
# the window's reach:

# %%
local_layer = LocalAttention(4, 5, mode="local-p", score="general", half_width=3, num_hiddens=6, rng=1,
                             dtype=np.float64)
local_inputs = {"queries": rng.standard_normal((2, 3, 4)), "keys": rng.standard_normal((2, 7, 5)),
                "values": rng.standard_normal((2, 7, 3)), "source_lens": np.array([7, 3]), "step": 0}
print(check_module(local_layer, local_inputs, h=1e-3, order=4))

# %% [markdown]
# Now the three attentions of Luong's decoder (general score, input feeding, window
# $D = 2$, so 5 positions) on two tasks whose alignments we know: `numbers`, nearly
# monotone, and `reverse`, the anti-diagonal. One figure per task: global and local-m
# side by side, local-p under global.

# %%
local_models = {}
for task in ("numbers", "reverse"):
    for attention in ("global", "local-m", "local-p"):
        local_models[task, attention], _ = train(task, corpora[task], decoder="luong", score="general",
                                                 attention=attention, window=2)
local_sources = {"numbers": first_source(corpora["numbers"], r"thousand \w+ hundred \w+ \w+$"),
                 "reverse": first_source(corpora["reverse"], r"^(\w ){8,}")}
LOCAL_ALT = {
    "numbers": "The attention maps of Luong's decoder with global, local-m and local-p attention on one unseen "
               "number (English across, French down), grey where a step could not see: global and local-m draw "
               "a band down the diagonal; local-p reads wherever its learned window has moved, on or off "
               "the words it needs.",
    "reverse": "The attention maps of Luong's decoder with global, local-m and local-p attention on one unseen "
               "sequence to reverse (source across, output down), grey where a step could not see: global and "
               "local-p draw the anti-diagonal, local-m's window stays on the diagonal and sees it only mid-sequence.",
}
for task in ("numbers", "reverse"):
    grid = [panel(local_models[task, attention], corpora[task], local_sources[task], attention)
            for attention in ("global", "local-m", "local-p")]
    # Two maps a row: three would leave the tokens too narrow to read in the book's column.
    _, figure = show_attention_grid(grid, None, ncols=2,
                                    max_width=COLUMN_INCHES,
                                    suptitle=f"{task}: Luong's attention, grey outside the window",
                                    return_figure=True)
    path = save_figure(figure, f"06_local_attention_{task}.png", alt=LOCAL_ALT[task])
    show(path)

# %% [markdown]
# Grey cells are positions a step could not see. The exact matches are printed above (fast
# mode trains on fewer examples and epochs than the full run). In the full run (seed 0, 6 epochs on
# `numbers`, 10 on `reverse`, every model on its own batch stream) they were:
#
# | task | global | local-m | local-p |
# | --- | --- | --- | --- |
# | numbers | 100.0% | 99.5% | 73.0% |
# | reverse | 98.8% | 64.0% | 92.0% |
#
# * On **numbers** global and local-m are as good as each other. The alignment is close to
#   monotone, so local-m's band $|s - t| \le 2$ covers the word a French token needs even
#   though French runs a little longer than English (`quatre - vingt - dix` is five tokens
#   for `ninety`). local-p is the fragile one: it must *learn* where to look, through the
#   Gaussian's gradient alone. In the full run, in 6 epochs, it had not: its window ran ahead
#   of the words it needed and stayed there, leaving them to the recurrent state, as in a
#   plain encoder-decoder. Whether it finds the alignment depends on the run: fast mode's
#   shorter run, printed above, may well have found it (compare its map with local-m's).
# * On **reverse** the source position that step $t$ needs is $S_n - 1 - t$. local-m's
#   window sits on the diagonal, so it sees the right token only near the middle of the
#   sequence; whatever it gets right elsewhere, it must carry in the recurrent state, as a
#   plain encoder-decoder does, and its accuracy shows it. local-p predicts the
#   anti-diagonal, a line its Gaussian can find, and recovers most of global attention's
#   accuracy.
#
# So a window helps when the alignment is predictable: it costs $O(D)$ instead of $O(S)$
# per step and cannot spread its weight over distant positions. It hurts when its
# assumption is wrong (local-m on a reordering task), or while a predicted window has not
# yet learned where to go (local-p on `numbers` in the full run). Luong et al. found local-p the
# best of their attentions on English-German, where sentences are long and alignments
# mostly monotone with local reordering.
#
# ## Summary
#
# * Attention replaces the single context vector by a per-step weighted average of all
#   encoder states; the weights are a softmax of scores between the decoder's query and
#   each encoder state (dot, general or additive).
# * The masked softmax gives padded positions exactly zero weight, so padding never
#   changes a translation.
# * Bahdanau's decoder attends with the previous state before its recurrent step; Luong's
#   attends with the current state after it and feeds the attentional state forward.
# * On tasks with known alignments the weights recover them: monotone for numbers and
#   year-first dates, reordered for year-last dates, the anti-diagonal for reversal.
# * Local attention looks at a window of $2D + 1$ positions: local-m around $p_t = t$,
#   local-p around a predicted $p_t$ with Gaussian weights. local-m matches global attention
#   where alignments are near the diagonal and fails where its assumption does not hold;
#   local-p must learn its positions, and may not within a short training run.
#
# ## Exercises
#
# 1. Show that the general score with $W = I$ equals the dot score, and that the additive
#    score with $h = 1$ and $\tanh$ replaced by the identity is a sum of a query term and a
#    key term. Why does such a score produce the *same* weights for every query?
# 2. Many implementations mask by giving masked keys a score of $-10^{9}$ and then taking an
#    ordinary stable softmax (subtract the row maximum, exponentiate, normalise). Write that
#    version and apply it to a row with no valid key ($\ell = 0$) in float64, float32 and
#    float16. Explain each result: why the first two give uniform weights $1/K$ and no NaN,
#    and why float16 gives NaN (what does $-10^{9}$ become in float16?). Why are uniform
#    weights wrong for an empty
#    row, and what context do they produce from padded encoder states? Read
#    `masked_softmax` and explain how npseq returns an all-zero row instead, and why that
#    row's $ds$ is then zero.
# 3. Scale the queries by 10 before a dot attention and plot the weights. Why does
#    Vaswani et al.'s $1/\sqrt{D}$ help when $D$ is large? (Compute the variance of
#    $q \cdot k$ for independent standard normal entries.)
# 4. Train a plain decoder (`decoder="plain"`) on `reverse` with the same settings and
#    compare its exact match with the Bahdanau model's, for the shortest and the longest
#    sequences separately.
# 5. Repeat the Luong-versus-Bahdanau comparison with three different seeds (the `seed`
#    of `build_seq2seq`). Is one decoder consistently faster on `reverse`? Then train
#    Luong's decoder with `score="dot"` and with `input_feeding=False` on `dates`: which
#    variant gives the most readable maps on the year-last example?
# 6. Use a bidirectional encoder (`bidirectional=True` in `build_seq2seq`) for the
#    Bahdanau model on `reverse`. Does the one-column shift disappear? Explain with what
#    $h_s$ now contains.
