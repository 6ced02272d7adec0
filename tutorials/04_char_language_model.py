# %% [markdown]
# # 4. A character language model with truncated backpropagation through time
#
# We now have every piece: text as a stream of ids (tutorial 1), recurrent cells with
# hand-written, checked backward passes (tutorials 2 and 3). Training a language model
# on a stream of a few hundred thousand characters raises questions that the cells
# alone do not answer:
#
# 1. A stream has no natural sentences. How do we cut it into minibatches of shape
#    $(N, T)$, and what happens to the state between one batch and the next?
# 2. Backpropagating through the whole stream is impossible. What do we lose by
#    stopping the gradient after $T$ steps, and how much does $T$ matter?
# 3. Once trained, how do we turn next-character probabilities into text, and what
#    does the sampling temperature change?
#
# The model is `npseq.models.RNNLM`: an embedding, a GRU, a linear layer to the
# vocabulary. The corpus is the pydoc prose of tutorial 1, at the character level.

# %%
import time

import numpy as np
from _common import FAST, code, equations, save_figure, show
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

import npseq
from npseq.data import SeqDataLoader, load_corpus, seq_data_iter_random, seq_data_iter_sequential, split_corpus
from npseq.functional import softmax_forward
from npseq.gradcheck import check_module
from npseq.models import RNNLM, NGramLM
from npseq.optim import Adam
from npseq.train import predict, train_lm, train_lm_step

# Full mode: the whole corpus, and runs of about half a minute each on one core. Fast mode, which the book shows:
# about 10 s of training in all, enough for the curves below to show what the text says of them; half the batch
# size doubles the number of updates that its small corpus gives.
NUM_CHARS = 35_000 if FAST else None
HIDDEN = 128
EPOCHS = 5 if FAST else 8
BATCH_SIZE = 16 if FAST else 32
LR = 0.005

ids, vocab = load_corpus(level="char", max_tokens=NUM_CHARS)
train_ids, valid_ids = split_corpus(ids, 0.1)
print(f"{len(ids)} characters, |V| = {len(vocab)}; train {len(train_ids)}, validation {len(valid_ids)}")

# %% [markdown]
# ## Two ways to cut a stream into minibatches
#
# A batch is a pair $(X, Y)$ of integer arrays of shape $(N, T)$ with $Y$ equal to $X$
# shifted by one token: row $i$ of $Y$ holds, at every step, the token that follows the
# one in $X$. Let $M$ be the length of the stream. Both schemes start at a random offset
# $o \in \{0, \dots, T-1\}$, drawn anew every epoch, so that the cut points move and the
# model does not see the same $T$-character windows in every epoch.
#
# **Random partitioning** cuts the stream into non-overlapping windows of $T$ tokens,
# starting at $o, o + T, o + 2T, \dots$, shuffles the windows, and stacks $N$ of them per
# batch. Two consecutive batches, and the rows within a batch, hold unrelated pieces of
# text, so every batch must start from a zero state: the model only ever sees at most
# $T$ characters of context during training.
#
# **Sequential partitioning** lays the stream (from $o$) out as $N$ long rows of
# $L = \lfloor (M - T)/N \rfloor$ consecutive tokens and takes the batches as consecutive
# blocks of $T$ columns. Row $i$ of batch $b+1$ continues exactly where row $i$ of batch
# $b$ stopped, so the final state of one batch is the right initial state of the next:
# the context the model sees is unbounded, although each batch is still only $T$ long.
#
# A toy stream whose token ids are their positions (0, 1, 2, ...) makes the difference
# visible:

# %%
toy = np.arange(40)
for name, make in (("random", seq_data_iter_random), ("sequential", seq_data_iter_sequential)):
    print(f"--- {name} partitioning, N = 3, T = 4")
    for b, (X, _Y) in enumerate(make(toy, batch_size=3, num_steps=4, rng=0)):
        rows = "   ".join(" ".join(f"{v:2d}" for v in row) for row in X)
        print(f"batch {b}: X rows  {rows}    (Y = X + 1)")

# %% [markdown]
# In the sequential batches each row reads one continuous stretch of the stream, four
# tokens per batch: the first element of row $i$ in batch $b+1$ is the last element of
# row $i$ of $Y$ in batch $b$. In the random batches, neighbouring windows end up in
# different rows and batches. The picture below colours every position of the toy
# stream by the batch that reads it, and writes the row into the cell (the first few
# positions, before the random offset, and the last few are not read in this epoch).

# %%
def partition_map(make, length=40, batch_size=3, num_steps=4, seed=0):
    """For each stream position: (batch index, row) of the X that reads it, or (-1, -1) when unused."""
    batch_of, row_of = np.full(length, -1), np.full(length, -1)
    for b, (X, _) in enumerate(make(np.arange(length), batch_size, num_steps, seed)):
        for i, row in enumerate(X):
            batch_of[row], row_of[row] = b, i
    return batch_of, row_of


fig = Figure(figsize=(7.2, 3.8), layout="constrained")
FigureCanvasAgg(fig)
axes = fig.subplots(2, 1, sharex=True)
colours = np.array([[0.85, 0.85, 0.85, 1.0], [0.40, 0.60, 0.90, 1.0], [0.95, 0.65, 0.30, 1.0],
                    [0.45, 0.80, 0.45, 1.0]])
for ax, (name, make) in zip(axes, (("random", seq_data_iter_random), ("sequential", seq_data_iter_sequential))):
    batch_of, row_of = partition_map(make)
    ax.imshow(colours[batch_of + 1][None], aspect="auto")
    for position, (b, i) in enumerate(zip(batch_of, row_of)):
        ax.text(position, 0, "-" if b < 0 else str(i), ha="center", va="center")
    ax.set_yticks([])
    ax.set_title(f"{name} partitioning")
axes[1].set_xticks(range(0, 40, 4))
axes[1].set_xlabel("position in the stream; in each cell, the row that reads it")
fig.legend([Patch(color=colour) for colour in colours], ["not read", "batch 0", "batch 1", "batch 2"],
           loc="outside upper center", ncols=4)
show(save_figure(fig, "04_partitions.png", alt="Two strips of the 40 positions of a toy stream, for random and for "
                 "sequential partitioning with N = 3 and T = 4, each position coloured by the batch that reads it "
                 "and labelled with the row. In the random strip the batches and rows are shuffled; in the "
                 "sequential one each row reads one continuous stretch, moving on by four positions from batch "
                 "to batch."))

# %% [markdown]
# ## Truncated backpropagation through time
#
# With sequential batches the state flows forward across batch boundaries, but the
# gradient does not flow back across them. For batch $b$, covering steps
# $t = bT + 1, \dots, (b+1)T$ of each row, the loss is the mean cross-entropy
#
# $$L_b = -\frac{1}{NT} \sum_{n} \sum_{t = bT+1}^{(b+1)T} \log p_\theta(x_{n,t+1} \mid s_{n,t}),$$
#
# and the state $s_{bT}$ that the batch starts from depends on the parameters $\theta$
# through all earlier batches. The exact gradient would contain the term
# $\frac{\partial L_b}{\partial s_{bT}} \frac{\partial s_{bT}}{\partial \theta}$, a backward pass through
# the whole row so far. Truncated BPTT drops it: $s_{bT}$ is treated as a constant input
# (it is *detached*), so each update costs $O(T)$ time and memory whatever the length of
# the stream. The consequence is that a gradient never tells the model to keep
# information for more than $T$ steps. It may still *use* older information that
# happens to survive in the state, but it is not trained to keep it.
#
# In npseq the detached state is simply the array that `forward` returned: arrays
# carry no history, so each batch's backward stops at its own initial state. One
# training step:

# %%
print(code(train_lm_step))

# %% [markdown]
# `train_lm` loops over the batches and hands the final state from one step to the next
# when the partition is sequential, and `None` (zeros) when it is random:

# %%
print(equations(train_lm))

# %% [markdown]
# ## A gradient check of the whole model
#
# The model's backward returns $\partial L / \partial s_0$, the gradient with respect to the
# initial state: precisely the quantity truncated BPTT throws away at the batch boundary.
# Checking it, together with every parameter from the embedding through the GRU to the
# output layer, on a tiny float64 model:

# %%
tiny = RNNLM(vocab_size=7, num_hiddens=4, cell="gru", embed_size=3, rng=0, dtype="float64")
X_tiny = np.array([[1, 2, 3, 6], [4, 5, 6, 0]])
report = check_module(tiny, {"X": X_tiny, "state": np.random.default_rng(0).standard_normal((1, 2, 4))})
print(report)
assert report.ok

# %% [markdown]
# ## Experiment: partitioning and truncation length
#
# Four GRU language models that differ in one thing each: random or sequential
# partitioning, and a truncation length of $T = 5$ or $T = 35$ steps. Everything else is
# shared: the seed, the hidden size, Adam with learning rate 0.005, clipping at global
# norm 1, the batch size, the number of epochs (all printed below), and the evaluation,
# which reads the validation text as 16 continuous rows with the state carried across
# chunks (so all four are scored on the same predictions with the same context). Each
# epoch passes over the same number of training characters, so $T = 5$ makes seven times
# as many updates per epoch as $T = 35$.
#
# As a reference, the character trigram model of tutorial 1 on the same split.

# %%
trigram_ppl = NGramLM(3, 0.1, len(vocab)).fit(train_ids).perplexity(valid_ids)
print(f"trigram (add-k, k = 0.1) validation perplexity: {trigram_ppl:.2f}")
print(f"GRU, H = {HIDDEN}; Adam, learning rate {LR}; batch size {BATCH_SIZE}; {EPOCHS} epochs")

runs = {}
for partition in ("random", "sequential"):
    for num_steps in (5, 35):
        model = RNNLM(len(vocab), HIDDEN, cell="gru", rng=0)
        loader = SeqDataLoader(train_ids, BATCH_SIZE, num_steps, partition=partition, seed=0)
        start = time.perf_counter()
        history = train_lm(model, loader, Adam(model.parameters(), lr=LR), EPOCHS, clip=1.0, valid_ids=valid_ids,
                           eval_num_steps=35, eval_batch_size=16, progress=False)
        runs[partition, num_steps] = (model, history)
        print(f"{partition:>10}, T = {num_steps:2d}: {len(loader):4d} updates per epoch, "
              f"{time.perf_counter() - start:5.1f} s, train PPL {history.train_ppl[-1]:.2f}, "
              f"validation PPL {history.valid_ppl[-1]:.2f}")

# %%
fig = Figure(figsize=(7.2, 7.6), layout="constrained")
FigureCanvasAgg(fig)
axes = fig.subplots(2, 1, sharex=True, sharey=True)
epochs = np.arange(1, EPOCHS + 1)
for (partition, num_steps), (_, history) in runs.items():
    style = dict(color="C0" if partition == "random" else "C3", linestyle="-" if num_steps == 35 else "--",
                 marker="o", markersize=3, label=f"{partition}, T = {num_steps}")
    axes[0].plot(epochs, history.train_ppl, **style)
    axes[1].plot(epochs, history.valid_ppl, **style)
axes[1].axhline(trigram_ppl, color="grey", linestyle=":", label=f"character trigram ({trigram_ppl:.2f})")
axes[0].set_title("training perplexity (during the epoch)")
axes[1].set_title("validation perplexity (after the epoch)")
for ax in axes:
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    ax.set_ylabel("perplexity")
axes[1].set_xlabel("epoch")
fig.legend(*axes[1].get_legend_handles_labels(), loc="outside upper center", ncols=3,
           title=f"GRU language models, H = {HIDDEN}")
show(save_figure(fig, "04_perplexity_curves.png", alt="Perplexity against the epoch for four GRU language models, "
                 "random or sequential partitioning with truncation T = 5 or 35: the training perplexity above, "
                 "the validation perplexity below, where a dotted line marks the character trigram model's. All "
                 "four end below that line, random T = 5 well above the other three, sequential T = 5 above both "
                 "T = 35 models."))

# %% [markdown]
# The numbers behind what the curves show, one line per claim below:

# %%
valid = {key: history.valid_ppl[-1] for key, (_, history) in runs.items()}
train = {key: history.train_ppl[-1] for key, (_, history) in runs.items()}
first_epoch = {key: history.train_ppl[0] for key, (_, history) in runs.items()}


def below(a, b):
    """How far perplexity ``a`` is below ``b``, in % of ``b``, as an integer."""
    return round(100 * (1 - a / b))


def above(a, b):
    """How far perplexity ``a`` is above ``b``, in % of ``b``, as an integer."""
    return round(100 * (a / b - 1))


worst = max(valid, key=valid.get)
print(f"all four end below the trigram: the worst, {worst[0]}, T = {worst[1]}, ends at {valid[worst]:.2f}, "
      f"{below(valid[worst], trigram_ppl)}% below the trigram's {trigram_ppl:.2f}")
print(f"random T = 5 stays far behind: its validation perplexity ends at {valid['random', 5]:.2f}, "
      f"{above(valid['random', 5], valid['random', 35])}% above random T = 35's {valid['random', 35]:.2f}")
print(f"random T = 5's training perplexity ends at {train['random', 5]:.2f}, "
      f"{above(train['random', 5], train['random', 35])}% above random T = 35's {train['random', 35]:.2f}")
runner_up = min((key for key in runs if key != ("sequential", 5)), key=first_epoch.get)
print(f"sequential T = 5 falls fastest in epoch 1: its training perplexity over that epoch is "
      f"{first_epoch['sequential', 5]:.2f}, {below(first_epoch['sequential', 5], first_epoch[runner_up])}% below "
      f"the next lowest, {runner_up[0]} T = {runner_up[1]}'s {first_epoch[runner_up]:.2f}")
print(f"sequential T = 5 ends clearly worse: its validation perplexity ends at {valid['sequential', 5]:.2f}, "
      f"{above(valid['sequential', 5], valid['sequential', 35])}% above sequential T = 35's "
      f"{valid['sequential', 35]:.2f}")
low, high = sorted((valid['random', 35], valid['sequential', 35]))
print(f"random and sequential T = 35 end close: validation perplexity {valid['random', 35]:.2f} and "
      f"{valid['sequential', 35]:.2f}, the lower {100 * low / high:.1f}% of the higher")
print(f"sequential T = 35 has the lower training perplexity: it ends at {train['sequential', 35]:.2f}, "
      f"{below(train['sequential', 35], train['random', 35])}% below random T = 35's {train['random', 35]:.2f}")

# %% [markdown]
# What the curves show:
#
# * **All four end below the trigram model**: a recurrent state summarises far more than
#   the last two characters.
# * **With random partitioning, $T$ is the context length.** The $T = 5$ model never saw
#   more than five characters of context in training, and it stays far behind: it is, in
#   effect, a smooth 6-gram model. Its training perplexity is also high for the same
#   reason: every window starts from a zero state, so the first characters of every
#   window are guessed almost blind.
# * **With sequential partitioning, the state carries the context across batches**, so
#   even $T = 5$ sees long contexts in the forward pass, and its training perplexity falls
#   fastest in the first epoch (seven times as many updates). But its gradient never
#   reaches more than five steps back: its validation perplexity levels off within a few
#   epochs and ends clearly worse than with $T = 35$. What truncation removes is the
#   training signal for long dependencies, not the dependencies themselves.
# * **Random vs sequential at $T = 35$** end close. Sequential has the lower training
#   perplexity (it always has context; random windows start blind), while random, whose
#   batches are reshuffled every epoch, generalises as well or slightly better here.
#   Thirty-five characters, about six words, cover most of what this small model can use.
#
# ## Sampling, with a temperature
#
# A language model gives, after any prefix, a distribution over the next character,
# $p = \operatorname{softmax}(z)$ with logits $z$. To generate text we draw a character from it,
# feed it back, and repeat (`npseq.train.predict`). The *temperature* $\tau$ rescales the
# logits before the softmax,
#
# $$p_\tau(v) = \frac{\exp(z_v / \tau)}{\sum_{u} \exp(z_u / \tau)} .$$
#
# $\tau = 1$ samples the model's own distribution; $\tau < 1$ sharpens it towards the most
# likely characters ($\tau \to 0$ is greedy decoding, always the argmax); $\tau > 1$
# flattens it towards uniform. The figure shows the effect on one prediction.

# %%
best = min(runs, key=lambda key: runs[key][1].valid_ppl[-1])
model = runs[best][0]
print(f"sampling from the {best[0]}, T = {best[1]} model (best validation perplexity)")
prefix = "the value of "
with npseq.no_grad():
    logits, _ = model.eval()(np.array([vocab[list(prefix)]]))
z = logits[0, -1].astype(np.float64)
order = np.argsort(-z)[:12]
fig = Figure(figsize=(7.2, 4.6), layout="constrained")
FigureCanvasAgg(fig)
ax = fig.subplots()
bar_width = 0.27
for offset, (tau, colour) in enumerate(zip((0.5, 1.0, 1.5), ("C2", "C0", "C1"))):
    p, _ = softmax_forward(z / tau)
    ax.bar(np.arange(len(order)) + (offset - 1) * bar_width, p[order], bar_width, color=colour,
           label=rf"$\tau = {tau}$: largest p {p[order[0]]:.2f}, entropy {-(p * np.log(p)).sum():.2f} nats")
ax.set_xticks(range(len(order)), [repr(c)[1:-1] if c != " " else "␣" for c in vocab.to_tokens(order.tolist())])
ax.set_xlabel(f"the {len(order)} most likely next characters")
ax.set_ylabel(f"p(next char | {prefix!r})")
fig.legend(loc="outside upper center")
show(save_figure(fig, "04_temperature.png", alt="The probabilities of the 12 most likely characters after the "
                 "prefix 'the value of ', as bars side by side for the temperatures 0.5, 1 and 1.5: the lower the "
                 "temperature, the more probability goes to the first few characters; the higher, the flatter the "
                 "distribution and the larger its entropy."))

# %%
print("greedy   :", repr(predict(model, "the ", 160, vocab)))
for tau in (0.5, 1.0, 1.5):
    print(f"tau = {tau}:", repr(predict(model, "the ", 160, vocab, temperature=tau, rng=1)))

# %% [markdown]
# Greedy decoding soon falls into a loop: the single most likely continuation of a
# common phrase leads back to the same phrase. At $\tau = 0.5$ the text is made of real,
# frequent words in plausible order, with little variety. At $\tau = 1$ it is what the
# model really believes: mostly real words, some invented ones, punctuation in roughly
# the right places. At $\tau = 1.5$ the rare characters get enough mass to be drawn
# often, and the words fall apart.
#
# ## Summary
#
# * A stream is cut into $(N, T)$ batches either as shuffled windows (random: the state
#   restarts at every batch) or as $N$ parallel continuous rows (sequential: the state is
#   carried from batch to batch).
# * Truncated BPTT carries the state forward but stops the gradient at the batch
#   boundary; the gradient check shows the discarded term, $\partial L / \partial s_0$, is
#   computed correctly and then simply not used.
# * With random batches, $T$ caps the context; with sequential batches, $T$ caps how far
#   back the model learns to remember. Both cost perplexity when $T$ is short.
# * The temperature trades fidelity to frequent patterns ($\tau < 1$) for variety ($\tau > 1$).
#
# ## Exercises
#
# 1. Compute the number of batches per epoch of both partitions for $M = 10\,000$, $N = 32$,
#    $T = 35$ and check your answer with `len(SeqDataLoader(...))`. Why is it the same for
#    every random offset?
# 2. Why is it harmless, if wasteful, to reset the state between sequential batches, but
#    harmful to carry it between random ones? (`train_lm` refuses a `partition` argument
#    that disagrees with the loader's own.)
# 3. Give the sequential $T = 5$ and $T = 35$ models the same number of *updates* rather
#    than the same number of epochs. Which one wins now, and by how much?
# 4. Evaluate the random $T = 5$ model on the validation text with `eval_num_steps=5` and
#    a zero state at every chunk (write the loop, or use `evaluate_perplexity` on
#    windows). Is it closer to its training perplexity? What does that say about the
#    mismatch between its training and our evaluation?
# 5. Replace the GRU by `cell="rnn"` and by `cell="lstm"` (same hidden size). Which trains
#    fastest per second of wall time, and which reaches the lowest validation perplexity?
# 6. Show that as $\tau \to 0$ sampling becomes greedy decoding, and that as $\tau \to \infty$
#    the perplexity of $p_\tau$ on any text tends to $|V|$.
