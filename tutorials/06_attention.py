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

# %%
import inspect
import re

import numpy as np

from npseq.cli import DEMO_SETTINGS, Corpus, attention_rows, decode_sentence, evaluate
from npseq.functional import attention as A
from npseq.functional import masked_softmax
from npseq.gradcheck import check_function, check_module
from npseq.models import LuongAttentionDecoder, Seq2SeqAttentionDecoder, build_seq2seq
from npseq.optim import Adam
from npseq.train import train_seq2seq
from npseq.viz import plot_history, show_attention_grid, show_heatmaps

from _common import FAST, code, figure_path, show

rng = np.random.default_rng(0)


# %% [markdown]
# ## Scores, weights, context
#
# Batch first, as everywhere in npseq: queries $q \in \mathbb{R}^{N \times Q \times D_q}$, keys
# $k \in \mathbb{R}^{N \times K \times D_k}$ and values $v \in \mathbb{R}^{N \times K \times D_v}$. In a decoder
# the query is (derived from) the decoder state, and the keys and values are both the
# encoder states $h_1 \dots h_S$. A *score* $s_{nqk}$ says how well query $q$ matches key $k$;
# three choices are classic:
#
# $$\text{dot:}\quad s_{nqk} = \lambda\, q_{nq} \cdot k_{nk}, \qquad \lambda = 1 \text{ (Luong) or } 1/\sqrt{D} \text{ (scaled, Vaswani et al.)},$$
# $$\text{general:}\quad s_{nqk} = q_{nq}\, W\, k_{nk}^\top, \qquad W \in \mathbb{R}^{D_q \times D_k},$$
# $$\text{additive:}\quad s_{nqk} = w_v \cdot \tanh\big(q_{nq} W_q + k_{nk} W_k\big), \qquad W_q \in \mathbb{R}^{D_q \times h},\ W_k \in \mathbb{R}^{D_k \times h},\ w_v \in \mathbb{R}^{h}.$$
#
# The dot score needs $D_q = D_k$ and has no parameters; the general score learns which
# query features should match which key features; the additive score is a small MLP on
# the pair, and is the one Bahdanau et al. (2014) introduced. Whatever the score, the
# rest is shared: a softmax over the keys turns scores into weights, and the context is
# the weighted average of the values,
#
# $$\alpha_{nq\cdot} = \operatorname{masked\_softmax}(s_{nq\cdot}), \qquad c_{nq} = \sum_k \alpha_{nqk}\, v_{nk}.$$
#
# In npseq the shared part is `attention_pooling_forward`, and each score function is a
# few lines in front of it. General attention is literally dot attention applied to the
# projected queries $qW$; additive attention projects the keys first (a decoder does this
# once per source batch, not once per step) and then calls the "projected" variant:

# %%
for function in (A.attention_pooling_forward, A.dot_attention_forward, A.general_attention_forward,
                 A.additive_attention_forward, A.additive_attention_projected_forward):
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
path, figure = show_heatmaps(weights[0], [f"key {k + 1}" for k in range(6)], [f"valid_len = {n}" for n in lens[0]],
                             figure_path("06_masked_softmax.png"), title="one row of scores, five valid lengths",
                             return_figure=True)
figure.axes[0].set_xlabel("keys")
figure.axes[0].set_ylabel("queries (same scores)")
figure.savefig(path, dpi=100)
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
# The backward of attention pooling goes through the softmax Jacobian,
# $ds_{k} = \alpha_k (d\alpha_k - \sum_j d\alpha_j \alpha_j)$, which is zero at masked keys, and then
# through the score function. Each pair is checked with masks that leave some keys out;
# the checked backward also takes an optional gradient on the weights themselves
# (`dweights`), and both are perturbed:

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
# step that produces $y_t$. In npseq:

# %%
print(inspect.getdoc(Seq2SeqAttentionDecoder))
print(code(Seq2SeqAttentionDecoder._step))

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
# test examples it has never seen. `Corpus`, `evaluate`, `decode_sentence` and
# `attention_rows` are the helpers of the `npseq` command.

# %%
NUM_EXAMPLES = 1200 if FAST else None  # None: the whole task (10,000 pairs)
EPOCHS = {"numbers": 2, "dates": 2, "reverse": 2} if FAST else {"numbers": 6, "dates": 8, "reverse": 10}
LR = 0.003


def train(task, corpus, decoder="bahdanau", **options):
    settings = dict(DEMO_SETTINGS, decoder=decoder, **options)
    model = build_seq2seq(len(corpus.src_vocab), len(corpus.tgt_vocab), seed=0, **settings)
    history = train_seq2seq(model, corpus.batches, corpus.tgt_vocab, Adam(model.parameters(), lr=LR), EPOCHS[task],
                            clip=1.0, progress=False)
    bleu, exact = evaluate(model, corpus, max(corpus.num_steps))
    described = ", ".join(f"{key}={value}" for key, value in options.items())
    print(f"{task:8} {decoder:9} {described:32} final train CE {history.token_ce[-1]:.4f}, test BLEU {bleu:.3f}, "
          f"exact match {exact:.1%}")
    return model, history


def panel(model, corpus, sentence, title):
    """(weights, source tokens, output tokens, title) of the greedy translation of one sentence."""
    # decode_sentence cuts the source to max_len tokens, so give it the longer of the two lengths.
    src_tokens, out_tokens, result = decode_sentence(model, sentence, corpus.src_vocab, corpus.tgt_vocab,
                                                     max(corpus.num_steps), corpus.task)
    print(f"  {sentence!r} -> {corpus.text.detokenize_target(out_tokens)!r}")
    return result.attention, src_tokens, attention_rows(out_tokens, result.attention), title


def first_source(corpus, pattern):
    """The first test source whose text matches the regular expression ``pattern``."""
    texts = [corpus.text.detokenize_source(src) for src, _ in corpus.test_pairs]
    return next((text for text in texts if re.search(pattern, text)), texts[0])


corpora, models, histories = {}, {}, {}
for task in ("numbers", "dates", "reverse"):
    corpora[task] = Corpus(task=task, num_examples=NUM_EXAMPLES, batch_size=128, seed=0)
    models[task], histories[task] = train(task, corpora[task])

panels = [
    panel(models["numbers"], corpora["numbers"], first_source(corpora["numbers"], r"(seventy|ninety) \w+ ?\w*$"),
          "numbers"),
    panel(models["dates"], corpora["dates"], first_source(corpora["dates"], r"^\d{4}/"), "dates, year first"),
    panel(models["dates"], corpora["dates"], first_source(corpora["dates"], r" of "), "dates, year last"),
    panel(models["reverse"], corpora["reverse"], first_source(corpora["reverse"], r"^(\w ){6,}"), "reverse"),
]
path = show_attention_grid(panels, figure_path("06_attention_three_tasks.png"), ncols=2,
                           suptitle="Bahdanau attention on unseen test examples (rows: outputs, columns: source)")
show(path)

# %% [markdown]
# Read each map row by row: row $t$ is the distribution $\alpha_{t\cdot}$ that produced output
# token $t$. (In fast mode the models have barely trained and the maps are mostly
# noise; run the tutorial without `NPSEQ_FAST` for the maps discussed here.)
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
# $$s_t = \operatorname{RNN}\big([E[y_{t-1}];\ \tilde h_{t-1}],\ s_{t-1}\big), \quad
#   \alpha_{t\cdot} = \operatorname{softmax}_s \operatorname{score}(s^{(L)}_t, h_s), \quad
#   \tilde h_t = \tanh\big([c_t;\ s^{(L)}_t]\, W_c\big), \quad
#   p(y_t \mid \cdot) = \operatorname{softmax}(\tilde h_t W_o + b_o),$$
#
# with any of the three scores (`"dot"`, `"general"`, `"concat"` = additive).

# %%
print(inspect.getdoc(LuongAttentionDecoder))
print(code(LuongAttentionDecoder._step))

# %% [markdown]
# We train both decoders on `reverse`, with the same encoder, sizes, data and optimiser
# (Luong with the `general` score and input feeding), and compare the training curves
# and the maps on two test sequences.

# %%
corpus = corpora["reverse"]
luong, luong_history = train("reverse", corpus, decoder="luong", score="general", input_feeding=True)
curves = {"Bahdanau (additive, query s_{t-1})": histories["reverse"].token_ce,
          "Luong (general, query s_t)": luong_history.token_ce}
path = plot_history(curves, figure_path("06_luong_vs_bahdanau_loss.png"), keys=list(curves), shared=True,
                    log_scale=True, title="reverse: training cross-entropy per token")
show(path)

sources = [first_source(corpus, r"^(\w ){6,}"), first_source(corpus, r"^(\w ){8,}")]
grid = [panel(model, corpus, sentence, f"{name}, {len(sentence.split())} tokens")
        for sentence in sources for name, model in (("Bahdanau", models["reverse"]), ("Luong", luong))]
path = show_attention_grid(grid, figure_path("06_luong_vs_bahdanau_attention.png"), ncols=2,
                           suptitle="reverse: Bahdanau (left) and Luong (right)")
show(path)

# %% [markdown]
# Both decoders learn the task and both draw an anti-diagonal, but they differ in how
# they draw it. Luong's query $s_t$ has already read $y_{t-1}$, the token it has just
# written, so it knows exactly which source position comes next; its maps are sharp
# and sit on the exact reversal. Bahdanau's query $s_{t-1}$ must choose the position
# before reading $y_{t-1}$; its maps are softer, spread over the right column and its
# neighbour to the right, whose encoder state still carries the same token. Compare
# the test exact matches printed above: in our runs the Bahdanau model, with the
# blurrier maps, had the lower training loss and the higher exact match. Sharp maps
# are not the same thing as a better model: the maps show *how* a model solved the
# task, not how well. (Whether the ranking survives a change of seed is exercise 5.)
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
#
# ## Exercises
#
# 1. Show that the general score with $W = I$ equals the dot score, and that the additive
#    score with $h = 1$ and $\tanh$ replaced by the identity is a sum of a query term and a
#    key term. Why does such a score produce the *same* weights for every query?
# 2. Derive $ds$ from $d\alpha$ for one softmax row and show that a masked key receives zero
#    gradient. Then break the mask in a copy of `masked_softmax` (give masked keys a
#    score of $-10^{9}$ instead of zeroing them) and find the input for which it returns
#    NaN while npseq's version does not.
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
