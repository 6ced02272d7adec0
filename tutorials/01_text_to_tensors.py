# %% [markdown]
# # 1. From text to tensors, and what counting alone achieves
#
# A language model gives a probability to every sequence of tokens. Before we build
# one out of recurrent cells, two practical questions need an answer:
#
# 1. How does a string become arrays of integers, and integers become vectors that a
#    network can differentiate through?
# 2. How good is a model that does nothing but count which tokens follow which? Its
#    score is the bar every recurrent model in the later tutorials has to clear.
#
# The text throughout is the English prose of Python's own documentation
# (`pydoc_data.topics`, shipped with every CPython), so nothing is downloaded and every
# machine with the same Python version sees the same characters.
#
# Run this file as a script (`python tutorials/01_text_to_tensors.py`) or open it as a
# notebook (jupytext, VS Code). `NPSEQ_FAST=1` shrinks the corpus so that it runs in
# a couple of seconds.

# %%
import collections
import math

import numpy as np
from _common import FAST, code, equations, save_figure, show
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from npseq.data import Vocab, load_corpus, preprocess_lm, pydoc_text, split_corpus, tokenize_lm
from npseq.functional import (
    masked_softmax_ce_backward,
    masked_softmax_ce_forward,
    word_embedding_backward,
    word_embedding_forward,
)
from npseq.gradcheck import check_function
from npseq.metrics import perplexity
from npseq.models import NGramLM

MAX_CHARS = 40_000 if FAST else None  # None: the whole corpus (about 280 000 characters)
text = pydoc_text()[:MAX_CHARS]
print(f"{len(text)} characters; the first 300:\n{text[:300]}")

# %% [markdown]
# ## Normalisation and tokens
#
# A model can only predict symbols it has a slot for, so we first shrink the alphabet.
# `preprocess_lm` lower-cases the text and replaces everything outside 26 letters, the
# space and 11 punctuation marks by a space (digits included), then squeezes runs of
# spaces. A *token* is then either one character (`level="char"`) or a word or a
# punctuation mark (`level="word"`).
#
# The choice trades vocabulary size against sequence length: characters give a tiny
# vocabulary ($|V| \approx 40$) but long sequences, words a short sequence over a
# large vocabulary in which many words are seen only once.

# %%
print(equations(preprocess_lm))
sample = 'The "with" statement: it\'s used to wrap a block (PEP 343).'
clean = preprocess_lm(sample)
print(repr(clean))
print(tokenize_lm(clean, "word"))
print(tokenize_lm(clean, "char")[:20], "...")

# %% [markdown]
# ## A vocabulary with a deterministic order
#
# A `Vocab` maps each token type to an integer id. Id 0 is always `'<unk>'`, the
# bucket for tokens the vocabulary does not know; then come the tokens by decreasing
# count. Ties are broken by the token itself (code-point order), not by the order in
# which tokens were first seen: reshuffling the lines of a corpus must not renumber
# the vocabulary, or a saved model would silently read the wrong embeddings.

# %%
tie = Vocab([["b", "a", "c"], ["c", "a", "b"]])
print("two orders of the same lines give", tie.idx_to_token, "and",
      Vocab([["c", "a", "b"], ["b", "a", "c"]]).idx_to_token)

char_ids, char_vocab = load_corpus(text=text, level="char")
word_ids, word_vocab = load_corpus(text=text, level="word")
print(f"char level: {len(char_ids)} tokens, |V| = {len(char_vocab)}: {''.join(char_vocab.idx_to_token[1:])!r}")
print(f"word level: {len(word_ids)} tokens, |V| = {len(word_vocab)}")
print("ten most frequent words:", word_vocab.token_freqs[:10])
print("ids of 'the list is empty':", word_vocab[tokenize_lm("the list is empty", "word")])
print("and back:", word_vocab.to_tokens(word_vocab[["the", "list", "is", "empty"]]))

# %% [markdown]
# ## From ids to vectors: the embedding lookup
#
# An id is a name, not a quantity: id 7 is not "more" than id 3. The classic encoding
# is the one-hot vector $e_v \in \{0,1\}^{|V|}$, and a linear layer applied to it,
# $e_v^\top W$, just selects row $v$ of $W \in \mathbb{R}^{|V| \times D}$. An embedding
# layer does that selection directly, without building the one-hot matrix:
#
# $$\text{out}_{nt} = W_{x_{nt}}, \qquad x \in \{0,\dots,|V|-1\}^{N \times T},\quad \text{out} \in \mathbb{R}^{N \times T \times D}.$$
#
# Its backward is the transpose of a selection, a *scatter-add*: every position where
# token $v$ occurs sends its gradient to row $v$, and repeated tokens accumulate,
#
# $$\frac{\partial L}{\partial W_v} = \sum_{(n,t):\, x_{nt} = v} \frac{\partial L}{\partial\, \text{out}_{nt}}.$$
#
# Writing `dW[x] += dout` with fancy indexing would be a bug here: NumPy applies the
# assignment once per *distinct* index, so a token seen twice would get one gradient.
# Here is npseq's pair:

# %%
print(code(word_embedding_forward))
print(code(word_embedding_backward))

# %% [markdown]
# A gradient check compares that backward with centred finite differences,
# $\partial f / \partial W_{ij} \approx (f(W + h e_{ij}) - f(W - h e_{ij})) / 2h$, on a
# batch where some ids repeat (that is exactly where a wrong scatter would show). The
# table lists, per tensor, the largest relative error and where it occurs.

# %%
rng = np.random.default_rng(0)
ids_batch = np.array([[3, 1, 3, 0], [2, 3, 3, 4]])  # id 3 appears four times
W = rng.standard_normal((5, 3))
report = check_function(word_embedding_forward, word_embedding_backward, {"x": ids_batch, "W": W})
print(report)
assert report.ok

# %% [markdown]
# ## How frequencies are distributed: Zipf's law
#
# Count every word and sort the counts in decreasing order. Zipf's law says the
# count of the word of rank $r$ falls off like a power of the rank,
#
# $$f(r) \approx \frac{C}{r^{\alpha}}, \qquad \log f(r) \approx \log C - \alpha \log r,$$
#
# so frequency against rank is a straight line on log-log axes, with $\alpha$ near 1 for
# words of natural text. Pairs and triples of consecutive words (bigrams, trigrams)
# follow a similar line with a smaller slope: there are far more distinct ones, and
# most of them occur once. That long tail is the problem of counting models: most
# trigrams a model will meet at test time were never seen in training.

# %%
words = word_vocab.to_tokens(word_ids.tolist())
ngram_counts = {n: collections.Counter(zip(*(words[i:] for i in range(n)))) for n in (1, 2, 3)}
freqs = {n: np.array(sorted(c.values(), reverse=True), dtype=float) for n, c in ngram_counts.items()}
for n, f in freqs.items():
    singletons = (f == 1).sum() / len(f)
    print(f"{n}-grams: {len(f):6d} distinct, {singletons:5.1%} of them seen once")

# the slope of the unigram line, fitted over the middle ranks (the head and the tail of singletons bend away)
ranks = np.arange(1, len(freqs[1]) + 1)
middle = (ranks >= 10) & (ranks <= min(1000, len(ranks) // 2))
slope, intercept = np.polyfit(np.log(ranks[middle]), np.log(freqs[1][middle]), 1)
print(f"fitted Zipf exponent alpha = {-slope:.2f}")

# %%
fig = Figure(figsize=(7.2, 4.8), layout="constrained")
FigureCanvasAgg(fig)
ax = fig.subplots()
for n, label in ((1, "unigrams (words)"), (2, "bigrams"), (3, "trigrams")):
    ax.loglog(np.arange(1, len(freqs[n]) + 1), freqs[n], label=label)
ax.loglog(ranks[middle], np.exp(intercept) * ranks[middle] ** slope, "k--", linewidth=1,
          label=rf"fit $f \propto r^{{-{-slope:.2f}}}$")
ax.set_xlabel("rank $r$ (most frequent first)")
ax.set_ylabel("count $f(r)$")
ax.set_title("Zipf's law on the pydoc prose")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
show(save_figure(fig, "01_zipf.png", alt="Count against rank on log-log axes for the words, bigrams and trigrams "
                 "of the pydoc prose: the word curve is close to a straight line, matched by a dashed fitted power "
                 "law over the middle ranks, and the bigram and trigram curves are flatter, with long tails of "
                 "n-grams seen once."))

# %% [markdown]
# ## Language models and perplexity
#
# By the chain rule, any distribution over sequences factorises into next-token
# predictions:
#
# $$P(x_1, \dots, x_M) = \prod_{t=1}^{M} P(x_t \mid x_1, \dots, x_{t-1}).$$
#
# An **n-gram model** keeps only the last $n-1$ tokens of the history (a Markov
# assumption of order $n-1$) and estimates each conditional by counting. Raw counts
# give probability 0 to every continuation never seen in training, and a single zero
# makes the whole test sequence impossible. **Add-k smoothing** pretends every
# n-gram was seen $k$ extra times:
#
# $$P(w \mid \text{ctx}) = \frac{c(\text{ctx}, w) + k}{c(\text{ctx}) + k\,|V|}.$$
#
# Large $k$ pulls every prediction towards the uniform $1/|V|$; small $k$ trusts the
# counts. npseq's `NGramLM` implements exactly this:

# %%
print(equations(NGramLM))

# %% [markdown]
# To score a model on held-out text $x_1 \dots x_M$ we average the negative
# log-likelihood of each token given what precedes it and exponentiate:
#
# $$\text{PPL} = \exp\Big(-\frac{1}{M}\sum_{t=1}^{M} \log P(x_t \mid x_{<t})\Big).$$
#
# Two reference points make the number readable. A perfect model ($P = 1$ for each
# actual token) has $\text{PPL} = 1$. The uniform model, $P = 1/|V|$ for every token,
# has $-\log P = \log |V|$ at every step, so $\text{PPL} = \exp(\log |V|) = |V|$.
# Perplexity is therefore an *effective number of choices*: a model with perplexity 6
# is, on average, as unsure as if it picked among 6 equally likely tokens. And
# since $\log \text{PPL}$ is the mean cross-entropy, minimising the cross-entropy
# loss of a network is minimising its perplexity.
#
# The held-out text is the last 10 % of the corpus (a contiguous block: a random
# split of a stream would put neighbouring characters on both sides). A huge $k$
# makes the add-k model uniform, which checks the $|V|$ claim:

# %%
char_train, char_valid = split_corpus(char_ids, 0.1)
word_train, word_valid = split_corpus(word_ids, 0.1)
uniform = NGramLM(1, 1e12, len(char_vocab)).fit(char_train)
print(f"uniform model: perplexity {uniform.perplexity(char_valid):.4f}, |V| = {len(char_vocab)}")
print(f"npseq.metrics.perplexity(M log V, M) = {perplexity(1000 * math.log(len(char_vocab)), 1000):.4f}")

# %% [markdown]
# Cross-entropy is also what the recurrent models of the next tutorials minimise, so
# let us check the gradient of npseq's masked softmax cross-entropy, the loss whose
# exponential is the perplexity: for logits $z$ and target $y$ at a valid position,
# $\partial L / \partial z_v = (\operatorname{softmax}(z)_v - [v = y]) / \#\text{tokens}$.

# %%
logits = rng.standard_normal((2, 4, 6))
labels = rng.integers(0, 6, size=(2, 4))
report = check_function(masked_softmax_ce_forward, masked_softmax_ce_backward,
                        {"logits": logits, "labels": labels, "valid_lens": np.array([4, 2])},
                        kwargs={"reduction": "mean"})
print(report)
assert report.ok

# %% [markdown]
# ## Unigram, bigram and trigram perplexities
#
# The smoothing constant $k$ is a hyperparameter, so it must not be chosen on the
# validation text we report. We carve a development set off the end of the *training*
# part, pick $k$ from a grid there, refit on the whole training part, and only then
# score the validation text.

# %%
K_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)


def tuned(order, train, vocab_size):
    fit_part, dev_part = split_corpus(train, 0.1)
    dev = {k: NGramLM(order, k, vocab_size).fit(fit_part).perplexity(dev_part) for k in K_GRID}
    best = min(dev, key=dev.get)
    return NGramLM(order, best, vocab_size).fit(train), dev


rows, dev_curves = [], {}
for level, train, valid, vocab in (("char", char_train, char_valid, char_vocab),
                                   ("word", word_train, word_valid, word_vocab)):
    for order, name in ((1, "unigram"), (2, "bigram"), (3, "trigram")):
        model, dev_curves[level, order] = tuned(order, train, len(vocab))
        rows.append((level, name, model.k, model.perplexity(train), model.perplexity(valid), len(vocab)))
print(f"{'level':<5} {'model':<8} {'k':>6} {'train PPL':>10} {'valid PPL':>10} {'|V|':>6}")
for level, name, k, train_ppl, valid_ppl, size in rows:
    print(f"{level:<5} {name:<8} {k:>6g} {train_ppl:>10.2f} {valid_ppl:>10.2f} {size:>6}")

# %% [markdown]
# Read the table row by row:
#
# * At the character level every extra token of context helps a lot: the unigram model
#   knows only letter frequencies, the trigram model already knows that `q` is followed
#   by `u` and that `th` is usually followed by `e`. The gap between training and
#   validation perplexity stays small because with $|V| \approx 40$ most trigrams are
#   seen many times.
# * At the word level the trigram is *worse* than the bigram on the validation text
#   although it is far better on the training text: it has memorised rare trigrams,
#   and most validation trigrams are new (the Zipf tail above), so for most positions
#   it falls back on a context it has never seen and predicts almost uniformly over
#   thousands of words. The best $k$ shrinks with the order, because higher orders
#   rest on the counts of rarer events. (Backing off to the bigram, or interpolating
#   the orders, is the classic repair; see the exercises.)
# * Character and word perplexities are not comparable: one is per character, the
#   other per word (a word is about five characters plus a space).
#
# The development curves show the trade-off that $k$ controls:

# %%
fig = Figure(figsize=(7.2, 7.6), layout="constrained")
FigureCanvasAgg(fig)
axes = fig.subplots(2, 1, sharex=True)
for ax, level in zip(axes, ("char", "word")):
    for order, name in ((1, "unigram"), (2, "bigram"), (3, "trigram")):
        curve = dev_curves[level, order]
        ax.semilogx(list(curve), list(curve.values()), marker="o", label=name)
    ax.set_ylabel("development perplexity")
    ax.set_title(f"{level} level")
    if level == "word":
        ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=3)
axes[1].set_xlabel("pseudo-count $k$")
show(save_figure(fig, "01_add_k.png", alt="Perplexity on the development set against the pseudo-count k of add-k "
                 "smoothing, for the unigram, bigram and trigram models, at the character level above and the "
                 "word level below: the character curves are nearly flat up to k = 1, while the word bigram and "
                 "trigram curves have a clear minimum, the trigram's further left, and the word unigram curve falls "
                 "towards the largest k."))

# %% [markdown]
# At the character level $k$ hardly matters: most contexts were seen hundreds of times,
# and a pseudo-count of 1 is noise next to that (only the trigram, whose contexts are
# rarer, starts to suffer above $k = 1$). At the word level the bigram and trigram
# curves each have a clear minimum: to its right the pseudo-counts drown the real ones
# (towards the uniform perplexity $|V|$, the last column of the table), to its left
# unseen continuations get so little mass that each one costs a lot. The higher the
# order, the further left the minimum. The unigram curve instead falls almost all the way
# to the largest $k$ of the grid (its best $k$ in the table is one of the two largest):
# its only context is seen once per training word, thousands of times, so the
# pseudo-counts start to drown the real counts only at the right end of the grid.
#
# ## What a perplexity of about 6 sounds like
#
# Sampling from the character trigram model, one character at a time from
# $P(\cdot \mid \text{last two characters})$, shows what it has learnt: plausible
# syllables and frequent short words, no sense beyond a few letters.

# %%
trigram = next(NGramLM(3, r[2], len(char_vocab)).fit(char_train) for r in rows if r[:2] == ("char", "trigram"))
sample_rng = np.random.default_rng(1)
generated = list(char_vocab[list("the ")])
for _ in range(160):
    p = trigram.probs(generated)
    generated.append(int(sample_rng.choice(len(p), p=p)))
print("".join(char_vocab.to_tokens(generated)))

# %% [markdown]
# ## Summary
#
# * Text becomes a stream of integer ids through normalisation, tokenisation and a
#   vocabulary whose order depends only on the counts and the tokens themselves.
# * Ids become vectors through an embedding lookup, whose backward is a scatter-add.
# * Perplexity is the exponential of the mean cross-entropy; uniform guessing over
#   $|V|$ tokens scores $|V|$.
# * Counting with a short context is a strong baseline at the character level and a
#   weak one at the word level, because of the long tail of rare n-grams.
#
# ## Exercises
#
# 1. Show that for any $k > 0$ the add-k probabilities $P(\cdot \mid \text{ctx})$ sum to 1,
#    also for a context never seen in training. What does the model predict there?
# 2. Fit a 4-gram and a 5-gram character model (tune $k$ on the development set).
#    Where does the validation perplexity stop improving, and why does the training
#    perplexity keep falling?
# 3. Zipf's law for characters: plot character frequency against rank on log-log axes.
#    Is it a straight line? Why would one not expect it to be?
# 4. Replace fancy-index assignment in an embedding backward (`dW[x] += dout`) and run the
#    gradient check above. Which rows fail, and what is the relative error there?
# 5. A model assigns probability 0.5 to the correct token at half of the positions
#    and 0.05 at the other half. Compute its perplexity by hand, then with
#    `npseq.metrics.perplexity`.
# 6. The word-level vocabulary maps every word to an id, even those seen once. Build it
#    with `min_freq=2` (rare words become `'<unk>'`) and refit the bigram model. Why does
#    the perplexity go down, and why is the comparison with the previous number unfair?
# 7. Interpolate the word-level models,
#    $P(w \mid u, v) = \lambda_3 P_3(w \mid u, v) + \lambda_2 P_2(w \mid v) + \lambda_1 P_1(w)$ with
#    $\lambda_1 + \lambda_2 + \lambda_3 = 1$ (use `NGramLM.probs`), choosing the $\lambda$s on
#    the development set. Does the interpolated model beat the bigram on the validation text?
