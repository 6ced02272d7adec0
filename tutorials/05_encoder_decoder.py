# %% [markdown]
# # 5. The encoder–decoder: teacher forcing, the masked loss, and mistakes that snowball
#
# A language model (tutorials 3 and 4) continues one sequence. Translation maps a
# sequence to *another* one, of a different length, in a different vocabulary. The
# encoder–decoder does it with two recurrent networks: the encoder reads the source
# and summarises it in its final state; the decoder starts from that state and writes
# the output one token at a time, each token conditioned on the tokens before it.
#
# Three questions organise this tutorial:
#
# 1. How is such a model trained, when at test time every step reads the model's own
#    previous output? (Teacher forcing.)
# 2. How is the loss computed on padded batches of sequences of unequal lengths, and
#    why does the choice of *reduction* matter as soon as gradients are clipped?
# 3. What goes wrong when the trained model runs free, feeding itself its own guesses?
#    (Mistakes early in the output change everything that follows.)
#
# We train on the built-in `numbers` task (English number words to French), which a
# small model learns in seconds.

# %%
import math

import numpy as np
from _common import FAST, code, equations, save_figure, show
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from npseq import no_grad
from npseq.data import load_task
from npseq.decode import greedy_search_batch
from npseq.functional import masked_softmax_ce_forward
from npseq.gradcheck import check_module
from npseq.models import Seq2SeqDecoder, Seq2SeqEncoder, build_seq2seq
from npseq.nn import MaskedSoftmaxCELoss
from npseq.optim import Adam, clip_grad_norm
from npseq.train import teacher_forcing_inputs, train_seq2seq, train_seq2seq_step

rng = np.random.default_rng(0)

# %% [markdown]
# ## The model in equations
#
# Write the source as $x_1 \dots x_S$ and the target as $y_1 \dots y_{T'}$, where the last
# target token is always `<eos>`. The encoder embeds each source token and runs a
# recurrent network over them,
#
# $$h_s = f\big(E_x[x_s],\ h_{s-1}\big), \qquad s = 1, \dots, S,$$
#
# and the decoder runs a second recurrent network that starts from the encoder's final
# state, $s_0 = h_S$, and reads at step $t$ the previous target token together with a
# fixed *context* $c = h_S^{(L)}$ (the top layer's final state):
#
# $$s_t = g\big([E_y[y_{t-1}];\ c],\ s_{t-1}\big), \qquad
#   p(y_t \mid y_{<t}, x) = \operatorname{softmax}\big(s_t^{(L)} W_o + b_o\big),$$
#
# with $y_0 = \text{<bos>}$. The probability of a whole output factorises over steps,
#
# $$P(y \mid x) = \prod_{t=1}^{T'} p(y_t \mid y_{<t}, x),$$
#
# and training minimises the negative log-likelihood of the reference translation
# $y^*$, $-\sum_t \log p(y^*_t \mid y^*_{<t}, x)$. Everything the decoder knows about the
# source has to pass through the state $h_S$: that bottleneck is what attention
# (tutorial 6) removes. The two classes implement exactly this:

# %%
print(equations(Seq2SeqEncoder, until="``forward"))
print(equations(Seq2SeqDecoder))
print()
print(code(Seq2SeqDecoder._step))

# %% [markdown]
# `_step` is one decoder step: the embedded token and the context are concatenated and
# go through the recurrent layer. The shared `Decoder.forward` calls it once per target
# position, and `Decoder.step` (used by the search functions of tutorial 7) calls it for
# a single step.
#
# ## Teacher forcing
#
# In the loss above, step $t$ conditions on the *reference* prefix $y^*_{<t}$. So during
# training the decoder input at step $t$ is simply the reference token $y^*_{t-1}$: the
# whole input sequence is the target shifted right by one position, with `<bos>` in
# front. This is *teacher forcing*, and it is one line:

# %%
print(code(teacher_forcing_inputs))

# Fast mode trains a wider model on fewer examples, in smaller batches with larger steps: in half the updates of
# the full run it gets as far, to the few mistakes left that the figures at the end are about.
NUM_EXAMPLES, EPOCHS, HIDDEN, BATCH_SIZE, LR = (1200, 7, 64, 32, 0.01) if FAST else (3000, 12, 32, 64, 0.005)
data = load_task("numbers", batch_size=BATCH_SIZE, num_examples=NUM_EXAMPLES, split=(2 / 3, 0.0, 1 / 3), seed=0)
src_vocab, tgt_vocab = data.src_vocab, data.tgt_vocab
BOS, EOS = tgt_vocab["<bos>"], tgt_vocab["<eos>"]
X_test, X_len_test, Y_test, Y_len_test = data.test.arrays

n = int(np.argmax(Y_len_test))  # the test example with the longest target
dec_in = teacher_forcing_inputs(Y_test[n:n + 1], BOS)[0]
print("source        :", src_vocab.to_tokens(X_test[n, :X_len_test[n]].tolist()))
print("target Y      :", tgt_vocab.to_tokens(Y_test[n, :Y_len_test[n]].tolist()))
print("decoder input :", tgt_vocab.to_tokens(dec_in[:Y_len_test[n]].tolist()))
print(f"{len(data.train_pairs)} training pairs, {len(data.test_pairs)} test pairs; "
      f"vocabularies {len(src_vocab)} -> {len(tgt_vocab)} tokens; arrays padded to (S, T) = {data.num_steps}")

# %% [markdown]
# Read the last two lines column by column: at each position the decoder sees the token
# in the bottom row and must predict the token above it. Because every input is known
# in advance, a training step needs no sampling and no search; it is one forward pass
# over all positions. One training step of npseq is that forward pass, the masked loss,
# the backward pass, clipping and the optimizer step:

# %%
print(code(train_seq2seq_step))

# %% [markdown]
# ## The masked loss and its reductions
#
# A batch holds $N$ targets padded to a common length $T$; target $n$ has $\ell_n$ real
# tokens (its `<eos>` included) and $T - \ell_n$ padding positions that must not count.
# With the per-token loss $\ell_{nt} = -\log \operatorname{softmax}(z_{nt})_{y_{nt}}$ and the mask
# $m_{nt} = [t < \ell_n]$, the only question is how to add the masked terms up. npseq offers
# four *reductions*:
#
# | reduction | loss | weight of each valid token in the gradient |
# |---|---|---|
# | `"mean"` | $\sum_{n,t} m_{nt}\ell_{nt} \,/\, \sum_{n,t} m_{nt}$ | $1/\#\text{tokens}$ |
# | `"sum"` | $\sum_{n,t} m_{nt}\ell_{nt}$ | $1$ |
# | `"none"` | $L_n = \sum_t m_{nt}\ell_{nt}$, one number per sequence | the upstream $dL_n$ |
# | `"d2l"` | $\sum_n \frac{1}{T}\sum_t m_{nt}\ell_{nt}$ | $1/T$ |
#
# `"d2l"` is the objective of *Dive into Deep Learning*: each sequence's loss is
# averaged over all $T$ positions (padding counting as zero) and the batch is summed.
# In every case the gradient with respect to the logits is the familiar
# $w_{nt}\,(p_{nt} - \text{onehot}(y_{nt}))$ with the weight $w_{nt}$ from the table, so padded
# positions get exactly zero gradient. The functional docstring says the same:

# %%
print(equations(masked_softmax_ce_forward))

# %% [markdown]
# On one batch of the (untrained) model, the four reductions give four different
# numbers, yet they describe the same predictions: `MaskedSoftmaxCELoss` also keeps the
# summed negative log-likelihood and the token count, and their ratio, the per-token
# cross-entropy, is the same whatever the reduction.

# %%
model = build_seq2seq(len(src_vocab), len(tgt_vocab), decoder="plain", embed_size=32, num_hiddens=HIDDEN,
                      num_layers=1, dropout=0.0, seed=0)
X, X_len, Y, Y_len = next(iter(data.train))
with no_grad():
    logits = model(X, teacher_forcing_inputs(Y, BOS), X_len)
for reduction in ("mean", "sum", "none", "d2l"):
    fn = MaskedSoftmaxCELoss(reduction)
    loss = fn(logits, Y, Y_len)
    shown = f"shape {loss.shape}, first {loss[:3].round(2)}" if reduction == "none" else f"{float(loss):9.3f}"
    print(f"{reduction:>5}: loss {shown:<38} per-token CE = nll_sum / num_tokens = "
          f"{float(fn.nll_sum):.1f} / {fn.num_tokens} = {float(fn.nll_sum) / fn.num_tokens:.4f}")
print(f"uniform guessing over {len(tgt_vocab)} tokens would give log V = {math.log(len(tgt_vocab)):.4f}")

# %% [markdown]
# Since every padded position gets exactly zero gradient, the decoder need not compute it at
# all. That is why the training step printed above passes `Y_valid_len` to the model as
# well: given the target lengths, the recurrent decoder sorts the sentences longest first
# and runs step $t$ only for the $k_t = \#\{n : \ell_n > t\}$ sentences still going, the first
# $k_t$ rows (PyTorch's *packed sequences* do the same for an encoder). The logits of the
# padded positions come back as zeros, which the masked loss ignores, and the loss and every
# gradient are those of the full computation. How much this saves depends on how uneven the
# lengths are: the targets here fill

# %%
print(f"{Y_len.sum() / Y_len.size / Y.shape[1]:.0%} of this batch's {Y.shape[0]} x {Y.shape[1]} target positions.")

# %% [markdown]
# ### Why the reduction matters once gradients are clipped
#
# The reductions differ by a factor: `"sum"` is `"mean"` times the number of tokens in
# the batch, and `"d2l"` is `"sum"` divided by $T$. A constant factor would only rescale
# the learning rate of plain SGD, and Adam divides it out almost entirely (it normalises
# each coordinate by a running root mean square of its gradient). But the training loop
# clips the global gradient norm to $\theta = 1$ *before* the optimizer sees it, and
# clipping is not scale-free: it rescales a step only when its norm exceeds $\theta$.
# The factor grows with the batch, so the same threshold means different things. We
# measure the gradient norm of the same untrained model under each reduction, for
# batches of increasing size:

# %%
BATCH_SIZES = (8, 32, 128) if FAST else (8, 32, 128, 512)
train_X, train_X_len, train_Y, train_Y_len = data.train.arrays
norms = {reduction: [] for reduction in ("mean", "d2l", "sum")}
for size in BATCH_SIZES:
    rows = rng.choice(len(train_X), size=size, replace=False)
    for reduction in norms:
        fn = MaskedSoftmaxCELoss(reduction)
        model.zero_grad()
        logits = model(train_X[rows], teacher_forcing_inputs(train_Y[rows], BOS), train_X_len[rows])
        fn(logits, train_Y[rows], train_Y_len[rows])
        model.backward(fn.backward())
        norms[reduction].append(clip_grad_norm(model.parameters(), math.inf))  # inf: measure, do not clip
model.zero_grad()
print("batch size  " + "  ".join(f"{reduction:>8}" for reduction in norms))
for i, size in enumerate(BATCH_SIZES):
    print(f"{size:>10}  " + "  ".join(f"{norms[reduction][i]:8.3f}" for reduction in norms))

figure = Figure(figsize=(7.2, 4.6), layout="constrained")
FigureCanvasAgg(figure)
ax = figure.subplots()
for reduction, values in norms.items():
    ax.loglog(BATCH_SIZES, values, marker="o", label=f'reduction="{reduction}"')
ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label=r"clipping threshold $\theta = 1$")
ax.set_xlabel("batch size N")
ax.set_xticks(BATCH_SIZES, [str(size) for size in BATCH_SIZES])
ax.set_xticks([], minor=True)
ax.set_ylabel("gradient norm before clipping")
ax.set_title("one untrained model, three reductions")
ax.grid(True, which="both", alpha=0.3)
figure.legend(loc="outside lower center", ncols=2)
show(save_figure(figure, "05_reduction_grad_norms.png", alt=(
    "Log-log plot of the global gradient norm of one untrained model against the batch size, for the reductions "
    "mean, d2l and sum, with the clipping threshold 1 as a dashed line. The mean stays level below the threshold; "
    "d2l and sum lie above it and grow with the batch.")))

# %% [markdown]
# The per-token mean keeps the norm roughly constant as the batch grows (a larger batch
# only averages more examples), while `"sum"` grows in proportion to the number of
# tokens and `"d2l"` in proportion to the number of sequences. With a threshold of 1,
# at the start of training every `"sum"` or `"d2l"` step is clipped, whatever the batch
# size: the gradient handed to the optimizer then has norm exactly $\theta$, and only its
# *direction* carries information, while a `"mean"` run is clipped only on its rare large
# gradients. This is
# why a published recipe is reproduced only with its exact reduction, clipping threshold
# and learning rate together (tutorial 8 reproduces d2l's, which uses `"d2l"`).
#
# ## Gradient check
#
# Before training, the two pieces are checked against finite differences in float64:
# the loss under each reduction, and a whole (tiny) plain encoder–decoder, whose
# backward runs through the output layer, the decoder steps, the context and into the
# encoder. The model's weights are enlarged so that every gradient is well above
# rounding noise.

# %%
check_rng = np.random.default_rng(1)
logits64 = check_rng.standard_normal((3, 4, 5))
labels, lens = check_rng.integers(0, 5, size=(3, 4)), np.array([4, 2, 1])
for reduction in ("mean", "sum", "d2l"):
    report = check_module(MaskedSoftmaxCELoss(reduction), {"logits": logits64, "labels": labels, "valid_lens": lens})
    print(f'MaskedSoftmaxCELoss("{reduction}")\n{report}\n')
    assert report.ok

tiny = build_seq2seq(6, 5, decoder="plain", cell="gru", embed_size=3, num_hiddens=4, num_layers=2, dropout=0.0,
                     seed=0, dtype="float64")
for _name, param in tiny.named_parameters():
    param.data *= 2.0
report = check_module(tiny, {"src": check_rng.integers(0, 6, size=(2, 3)), "tgt_in": check_rng.integers(0, 5, size=(2, 4)),
                             "src_valid_lens": np.array([3, 1])}, h=1e-3, order=4)
print("plain EncoderDecoder (2-layer GRU)\n", report, sep="")
assert report.ok

# %% [markdown]
# ## Training, and two ways of reading the trained model
#
# We train a one-layer GRU encoder–decoder without attention on
# the `numbers` task. After every epoch we run the test set through the model in two
# ways:
#
# * **teacher-forced**: the decoder reads the reference prefix, exactly as in training,
#   and at each position we check whether its most probable token,
#   $\arg\max_v p(v \mid y^*_{<t}, x)$, is the reference token $y^*_t$;
# * **free-running (greedy)**: the decoder reads its *own* previous outputs,
#   $\hat y_t = \arg\max_v p(v \mid \hat y_{<t}, x)$, as it must at test time
#   (`greedy_search_batch`; tutorial 7 is about better searches), and we compare
#   $\hat y_t$ with $y^*_t$ position by position.
#
# Up to a sequence's first mistake the two are identical, since the prefixes agree. In
# particular the first mistake is at the same position in both, and a sequence is
# reproduced exactly by greedy decoding if and only if every teacher-forced prediction
# is right: the *exact-match* rates must coincide. What differs is what happens *after*
# the first mistake: the teacher-forced decoder is put back on the reference path, the
# greedy one continues from its own error.

# %%
def position_correctness(model, X, X_len, Y, Y_len):
    """Per position, whether the teacher-forced and the greedy prediction equal the reference.

    Returns boolean arrays ``(N, T)``: teacher-forced correct, greedy correct, valid (t < len).
    """
    T = Y.shape[1]
    model.eval()
    with no_grad():
        forced = model(X, teacher_forcing_inputs(Y, BOS), X_len).argmax(axis=-1) == Y
    model.train()
    outputs = greedy_search_batch(model, X, X_len, bos_id=BOS, eos_id=EOS, max_len=T)
    free = np.full_like(Y, -1)  # -1 matches no token: a missing output token counts as wrong
    for i, tokens in enumerate(outputs):
        tokens = (tokens + [EOS])[:T]
        free[i, :len(tokens)] = tokens
    valid = np.arange(T)[None, :] < Y_len[:, None]
    return forced, free == Y, valid


def summarise(forced, greedy, valid):
    first = np.where(~forced & valid, np.arange(valid.shape[1]), valid.shape[1]).min(axis=1)
    after = valid & (np.arange(valid.shape[1])[None, :] > first[:, None])  # positions after the first mistake
    return {
        "exact (teacher-forced)": float((forced | ~valid).all(axis=1).mean()),
        "exact (greedy)": float((greedy | ~valid).all(axis=1).mean()),
        "token acc (teacher-forced)": float((forced & valid).sum() / valid.sum()),
        "token acc (greedy)": float((greedy & valid).sum() / valid.sum()),
        "after 1st mistake (teacher-forced)": float((forced & after).sum() / max(after.sum(), 1)),
        "after 1st mistake (greedy)": float((greedy & after).sum() / max(after.sum(), 1)),
        "positions after 1st mistake": int(after.sum()),
        "per position (teacher-forced)": (forced & valid).sum(axis=0) / np.maximum(valid.sum(axis=0), 1),
        "per position (greedy)": (greedy & valid).sum(axis=0) / np.maximum(valid.sum(axis=0), 1),
    }


model = build_seq2seq(len(src_vocab), len(tgt_vocab), decoder="plain", embed_size=32, num_hiddens=HIDDEN,
                      num_layers=1, dropout=0.0, seed=0)
evaluations = []


def evaluate_epoch(epoch, history):
    stats = summarise(*position_correctness(model, X_test, X_len_test, Y_test, Y_len_test))
    evaluations.append(stats)
    print(f"epoch {epoch + 1:2d}: train CE {history.token_ce[-1]:.3f} | exact match {stats['exact (greedy)']:.3f} | "
          f"token accuracy TF {stats['token acc (teacher-forced)']:.3f} greedy {stats['token acc (greedy)']:.3f} | "
          f"after 1st mistake TF {stats['after 1st mistake (teacher-forced)']:.3f} "
          f"greedy {stats['after 1st mistake (greedy)']:.3f} ({stats['positions after 1st mistake']} positions)")


history = train_seq2seq(model, data.train, tgt_vocab, Adam(model.parameters(), lr=LR), EPOCHS, clip=1.0,
                        progress=False, on_epoch_end=evaluate_epoch)
assert all(e["exact (teacher-forced)"] == e["exact (greedy)"] for e in evaluations)

# %% [markdown]
# The exact-match rates of the two readings agree at every epoch, as argued. The token
# accuracies do not: the free-running decoder is always below the teacher-forced one,
# and the gap is made almost entirely of the positions after a first mistake. There the
# teacher-forced decoder, handed the right prefix again, is usually right, while the
# greedy decoder, continuing from a prefix that training never showed it, is wrong much
# more often. The first figure shows where in the sequence this happens, at an early
# checkpoint (the model still makes many mistakes) and at the end of training.

# %%
early = 1  # the second epoch: the model still makes many mistakes
T = Y_test.shape[1]
counts = (np.arange(T)[None, :] < Y_len_test[:, None]).sum(axis=0)
shown = counts >= 20  # positions with too few test targets give noisy rates
positions = np.arange(1, T + 1)[shown]
figure = Figure(figsize=(7.2, 5.0), layout="constrained")
FigureCanvasAgg(figure)
ax = figure.subplots()
for index, color in ((early, "tab:orange"), (len(evaluations) - 1, "tab:blue")):
    stats = evaluations[index]
    ax.plot(positions, stats["per position (teacher-forced)"][shown], color=color, marker="o",
            label=f"epoch {index + 1}, teacher-forced")
    ax.plot(positions, stats["per position (greedy)"][shown], color=color, marker="s", linestyle="--",
            label=f"epoch {index + 1}, greedy")
ax.set_xlabel("target position t (1 = first token)")
ax.xaxis.set_major_locator(MaxNLocator(integer=True))
ax.set_ylabel("accuracy at position t")
ax.set_title("per-position accuracy on the test set")
ax.grid(True, alpha=0.3)
figure.legend(loc="outside lower center", ncols=2)
show(save_figure(figure, "05_accuracy_by_position.png", alt=(
    "Accuracy at each target position on the test set, teacher-forced (solid) and greedy (dashed), early in "
    "training and at its end. Early on, the greedy curve falls further below the teacher-forced one the later "
    "the position; at the end the curves lie close together.")))
gap = 100 * (evaluations[early]["per position (teacher-forced)"] - evaluations[early]["per position (greedy)"])[shown]
half = len(positions) // 2
print(f"epoch {early + 1}, greedy below teacher-forced by {gap[:half].mean():.0f} points on positions "
      f"{positions[0]}-{positions[half - 1]}, by {gap[half:].mean():.0f} points on positions "
      f"{positions[half]}-{positions[-1]}")

# %% [markdown]
# The teacher-forced curves do not fall with the position, while the greedy curves fall
# further below them the later the position (the gaps printed under the figure): a
# position late in the output has more earlier positions at which a first mistake can
# have happened, and after it the greedy decoder is running on its own errors. (The
# alternating pattern comes from the French: the separators `-` and words such as `cent`
# and `mille` at fixed places are easy, the digits' words are hard.) The second figure
# follows the tokens after a sequence's first mistake through training.

# %%
epochs = np.arange(1, len(evaluations) + 1)
after_forced = np.array([e["after 1st mistake (teacher-forced)"] for e in evaluations])
after_greedy = np.array([e["after 1st mistake (greedy)"] for e in evaluations])
exact = np.array([e["exact (greedy)"] for e in evaluations])
figure = Figure(figsize=(7.2, 5.0), layout="constrained")
FigureCanvasAgg(figure)
ax = figure.subplots()
ax.plot(epochs, after_forced, marker="o", label="after the first mistake, teacher-forced")
ax.plot(epochs, after_greedy, marker="s", linestyle="--", label="after the first mistake, greedy")
ax.plot(epochs, exact, marker="^", color="gray", label="exact match (both readings)")
ax.set_xlabel("epoch")
ax.xaxis.set_major_locator(MaxNLocator(integer=True))
ax.set_ylabel("accuracy")
ax.set_title("tokens after a sequence's first mistake")
ax.grid(True, alpha=0.3)
figure.legend(loc="outside lower center")
show(save_figure(figure, "05_after_first_mistake.png", alt=(
    "Accuracy on the tokens after a sequence's first mistake, teacher-forced and greedy, and the exact-match "
    "rate, against the epoch. The greedy curve lies below the teacher-forced one throughout and falls late in "
    "training, while the exact-match rate climbs.")))
forced_end, greedy_end, greedy_best = (round(100 * value) for value in (after_forced[-1], after_greedy[-1],
                                                                        after_greedy.max()))
print(f"epoch {len(evaluations)}: exact match {exact[-1]:.0%}; after a first mistake teacher-forced {forced_end}%, "
      f"greedy {greedy_end}%, {forced_end - greedy_end} points lower")
print(f"greedy after a first mistake: highest {greedy_best}% (epoch {np.argmax(after_greedy) + 1}), then down "
      f"{greedy_best - greedy_end} points by epoch {len(evaluations)}")

outputs = greedy_search_batch(model, X_test, X_len_test, bos_id=BOS, eos_id=EOS, max_len=T)
references = [Y_test[i, :Y_len_test[i] - 1].tolist() for i in range(len(Y_test))]  # without <eos>
wrong = [i for i, (out, ref) in enumerate(zip(outputs, references)) if out != ref]
wrong_length = sum(len(outputs[i]) != len(references[i]) for i in wrong)
print(f"final model: {len(wrong)} of {len(references)} greedy outputs are wrong, {wrong_length} of them "
      f"({wrong_length / max(len(wrong), 1):.0%}) with a wrong length")
for i in wrong[:6]:
    print(f"  {data.detokenize_source(X_test[i, :X_len_test[i] - 1]):45} reference {data.detokenize(references[i]):32} "
          f"greedy {data.detokenize(outputs[i])}")

# %% [markdown]
# The accuracy after a first mistake stays far lower for the greedy decoder than for the
# teacher-forced one, even when the exact-match rate is high: once derailed, the
# free-running model rarely recovers. Late in training the greedy curve even falls: the
# few mistakes left are mostly ones that change the length of the output (a word dropped
# or added; see the counts and examples printed under the figure), and a changed length
# shifts every later token out of place.
#
# This mismatch between training (always the reference prefix) and use (the model's own
# prefix) is called *exposure bias*. The remedies are to make mistakes rarer (a better
# model, attention: tutorial 6), to search for better outputs than the greedy one
# (tutorial 7), or to show the model its own predictions during training (*scheduled
# sampling*, `train_seq2seq(..., sampling_ratio=p)`; see the exercises).
#
# ## Summary
#
# * An encoder–decoder factorises $P(y \mid x)$ over output steps; the plain decoder sees
#   the source only through the encoder's final state.
# * Teacher forcing trains every step on the reference prefix: the decoder input is the
#   target shifted right behind `<bos>`.
# * Padding is masked out of the loss; the reduction (`mean`, `sum`, `none`, `d2l`)
#   only rescales the gradient, but that scale decides how often a fixed clipping
#   threshold acts.
# * Greedy decoding and teacher forcing agree up to the first mistake, so they share the
#   exact-match rate; after it, the free-running decoder continues from a prefix it never
#   saw in training and its accuracy drops well below the teacher-forced accuracy.
#
# ## Exercises
#
# 1. Prove the claim used above: greedy decoding outputs the reference $y^*$ (with its
#    `<eos>`) if and only if $\arg\max_v p(v \mid y^*_{<t}, x) = y^*_t$ for every $t$.
# 2. Show from the table of reductions that `"d2l"` equals `"sum"` divided by $T$, and
#    compute by how much `"mean"` and `"d2l"` differ for a batch of 64 targets with
#    average length 6 padded to $T = 12$. Which learning rate for SGD with `"mean"`
#    gives the same first step as SGD with `"d2l"` and learning rate 0.005?
# 3. Train the model above with `loss_fn=MaskedSoftmaxCELoss("sum")` and the same
#    Adam settings. Record `history.grad_norm` and compare it with the `"mean"` run:
#    how many steps were clipped in each? Does the final exact match change?
# 4. Train with scheduled sampling, `train_seq2seq(..., sampling_ratio=0.25)`, and redraw
#    the second figure. Does the greedy accuracy after a first mistake move closer to the
#    teacher-forced one?
# 5. Compute, for the final model, the accuracy at each position *counted from the
#    first mistake* (1, 2, 3 ... positions later) for both readings. Does the greedy
#    accuracy keep falling with the distance from the mistake, or does it recover?
# 6. Replace the plain decoder by `decoder="bahdanau"` (tutorial 6) and repeat the
#    experiment with the same number of epochs. Which of the curves change the most?
