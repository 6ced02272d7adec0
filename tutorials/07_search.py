# %% [markdown]
# # 7. Search: greedy, beam and exhaustive decoding, length penalties, and BLEU
#
# A trained encoder–decoder does not output a sentence; it outputs, at every step, a
# distribution over the next token given the tokens so far. Turning those
# distributions into one output is a search problem: among all token sequences, find
# the one the model likes best. Greedy decoding (tutorial 5) takes the most probable
# token at each step, which is fast but short-sighted.
#
# The questions of this tutorial:
#
# 1. How far is greedy decoding from the best output, and how much of the gap does
#    beam search close? On a model with a vocabulary small enough to enumerate every
#    output, we can answer exactly.
# 2. "Best" by which score? The probability of a sequence only falls as it grows, so
#    an exact search favours short outputs; the length penalty $1/L^\alpha$ counters that.
# 3. How are outputs compared with references? BLEU, in its sentence form (d2l) and its
#    corpus form (papers).

# %%
import math

import numpy as np
from _common import FAST, code, save_figure, show
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from npseq.data import load_task, load_translation_data
from npseq.decode import (
    _ranked_candidates,
    beam_search,
    exhaustive_search,
    greedy_search,
    length_penalty_factor,
    sequence_score,
    translate,
)
from npseq.gradcheck import check_module
from npseq.metrics import bleu, corpus_bleu
from npseq.models import DEMO_SETTINGS, build_seq2seq
from npseq.optim import Adam
from npseq.train import train_seq2seq

# %% [markdown]
# ## Three searches, one objective
#
# For a source $x$ the model gives $\log p(y_t \mid y_{<t}, x)$ at each step, and an output
# $y = (y_1, \dots, y_L)$ has
#
# $$\log P(y \mid x) = \sum_{t=1}^{L} \log p(y_t \mid y_{<t}, x),$$
#
# where $L$ counts the generated tokens, `<eos>` included (an output cut at `max_len`
# without `<eos>` has $L$ = `max_len`). Over a vocabulary of $V$ tokens there are about
# $V^{L}$ outputs of length $L$, so the search must be approximate except for toy
# vocabularies.
#
# * **Greedy**: $y_t = \arg\max_v p(v \mid y_{<t}, x)$, one decoder call per step.
# * **Beam search** with beam size $k$: keep the $k$ prefixes with the highest
#   $\log P$; at each step extend each by every token ($kV$ candidates, one batched decoder
#   call) and keep the best $k$ again. A candidate ending in `<eos>` is finished and
#   leaves the beam. $k = 1$ is greedy.
# * **Exhaustive**: score every output up to `max_len` tokens; the exact optimum, and
#   the reference against which the other two are measured.
#
# Beam and exhaustive search rank finished outputs by the length-normalised score
#
# $$\operatorname{score}(y) = \frac{\log P(y \mid x)}{L^{\alpha}},$$
#
# d2l's form of the length penalty ($\alpha = 0$: plain $\log P$; npseq's default is
# $\alpha = 0.75$). Greedy search compares no outputs of different lengths, so it has no
# use for a penalty. npseq's greedy search is short enough to read in full; the score
# is two small functions:

# %%
print(code(greedy_search))
print(code(length_penalty_factor))
print(code(sequence_score))

# %% [markdown]
# Beam search reads as the algorithm. Each step runs the decoder once on the whole beam,
# ranks the $nV$ extensions by $\log P$ (`_ranked_candidates`, whose ranking runs where the
# model runs and whose best rows come back to the host), finishes the selected ones that end in
# `<eos>` or reach `max_len`, and keeps the others as the next beam, their decoder states
# gathered with `reorder_state`. The trace (`trace=True`, below) only watches: one line records
# each step.

# %%
print(code(beam_search))
print(code(_ranked_candidates))

# %% [markdown]
# ## A model small enough to search exhaustively
#
# The built-in `reverse` task with an alphabet of two letters and sources of 1 to 4
# tokens has exactly $2 + 4 + 8 + 16 = 30$ distinct sources. The target vocabulary has
# $V = 6$ tokens: `a`, `b`, `<eos>`, and `<unk>`, `<pad>`, `<bos>`, which the model learns never
# to produce but which the search must still consider. With `max_len = 6` there are at
# most $6^6 = 46{,}656$ outputs per source: exhaustive search is cheap.
#
# We train a small GRU encoder–decoder on all 30 pairs for only a few epochs, on
# purpose: a model that has learned the task perfectly puts nearly all its probability
# on one output, and every search finds it. A half-trained model is uncertain, which
# is where searches differ. First, its gradient check (the same architecture at tiny
# size, in float64):

# %%
data = load_task("reverse", batch_size=8, num_examples=30, min_len=1, max_len=4, alphabet="ab",
                 split=(1.0, 0.0, 0.0), seed=0)
src_vocab, tgt_vocab = data.src_vocab, data.tgt_vocab
V, MAX_LEN = len(tgt_vocab), 6
BOS, EOS = tgt_vocab["<bos>"], tgt_vocab["<eos>"]
print(f"{len(data.train_pairs)} pairs; target vocabulary (V = {V}): {tgt_vocab.to_tokens(list(range(V)))}")

check_rng = np.random.default_rng(1)
tiny = build_seq2seq(len(src_vocab), V, decoder="plain", embed_size=3, num_hiddens=4, num_layers=1, dropout=0.0,
                     seed=0, dtype="float64")
for param in tiny.parameters():
    param.data *= 2.0
report = check_module(tiny, {"src": check_rng.integers(0, len(src_vocab), size=(2, 3)),
                             "tgt_in": check_rng.integers(0, V, size=(2, 4)), "src_valid_lens": np.array([3, 2])},
                      h=1e-3, order=4)
print(report)
assert report.ok

model = build_seq2seq(len(src_vocab), V, decoder="plain", embed_size=8, num_hiddens=16, num_layers=1, dropout=0.0,
                      seed=0)
history = train_seq2seq(model, data.train, tgt_vocab, Adam(model.parameters(), lr=0.01), 10, progress=False)
print(f"after {len(history.token_ce)} epochs: cross-entropy {history.token_ce[-1]:.3f} nats per token "
      f"(uniform guessing: log 6 = {math.log(6):.3f})")

# %% [markdown]
# ## How often does each search find the best output?
#
# We first rank by $\log P$ alone ($\alpha = 0$), the quantity the model defines, and run
# every search on all 30 sources. `exhaustive_search` gives the optimum; for the others we
# count the sources on which they reach it.

# %%
sources = [np.array(src_vocab[src] + [src_vocab["<eos>"]]) for src, _ in data.train_pairs]
references = [" ".join(tgt) for _, tgt in data.train_pairs]
BEAMS = (2, 3, 4)


def run_searches(alpha):
    """Every search on every source: {name: [SearchResult, ...]}."""
    options = dict(bos_id=BOS, eos_id=EOS, max_len=MAX_LEN)
    results = {"greedy": [greedy_search(model, src, **options) for src in sources]}
    for k in BEAMS:
        results[f"beam k={k}"] = [beam_search(model, src, beam_size=k, alpha=alpha, **options) for src in sources]
    results["exhaustive"] = [exhaustive_search(model, src, alpha=alpha, **options) for src in sources]
    return results


def text(result):
    return " ".join(tgt_vocab.to_tokens(result.tokens)) or "(empty)"


results = run_searches(alpha=0.0)
optimum = np.array([r.log_prob for r in results["exhaustive"]])
print(f"{'source':10} " + " ".join(f"{name:>20}" for name in results))
for i in range(8):
    print(f"{' '.join(data.train_pairs[i][0]):10} "
          + " ".join(f"{text(results[name][i]):>11} ({results[name][i].log_prob:5.2f})" for name in results))
found = {name: float(np.mean(np.isclose([r.log_prob for r in rs], optimum))) for name, rs in results.items()}
gaps = {name: float(np.mean(optimum - [r.log_prob for r in rs])) for name, rs in results.items()}
for name in results:
    print(f"{name:>10}: finds the optimum on {found[name]:.0%} of the sources, mean log P below it {gaps[name]:.3f}")

# %% [markdown]
# Each cell shows an output and its $\log P$. Greedy decoding misses the best output on most
# sources, and widening the beam finds it more often, but even $k = 4$ misses some.
# Beam search is not even guaranteed to beat greedy decoding on a given source: the
# greedy prefix can fall out of a narrow beam when two other prefixes are momentarily
# more probable, and their continuations can turn out worse. The two figures show both
# effects over all 30 sources: how often each search finds the optimum, and how far
# below it each output falls.

# %%
names = list(results)
figure = Figure(figsize=(7.2, 4.2), layout="constrained")
FigureCanvasAgg(figure)
ax = figure.subplots()
ax.bar(names, [found[name] for name in names], color=["tab:red"] + ["tab:orange"] * len(BEAMS) + ["tab:green"])
ax.set_ylabel("share of the sources")
ax.set_ylim(0, 1.05)
ax.set_title(r"optimum found, ranking by $\log P$ ($\alpha = 0$), 30 sources")
ax.grid(True, axis="y", alpha=0.3)
show(save_figure(figure, "07_optimum_found.png", alt=(
    "Bar chart of the share of the 30 sources on which each search finds the output of highest log-probability: "
    "greedy decoding lowest, beams of 2, 3 and 4 higher as they widen, exhaustive search on all of them.")))

figure = Figure(figsize=(7.2, 5.4), layout="constrained")
FigureCanvasAgg(figure)
ax = figure.subplots()
for name, marker in (("greedy", "o"), (f"beam k={BEAMS[0]}", "s"), (f"beam k={BEAMS[-1]}", "^")):
    ax.scatter(optimum, [r.log_prob for r in results[name]], marker=marker, alpha=0.7, label=name)
span = [optimum.min() - 0.3, optimum.max() + 0.3]
ax.plot(span, span, color="black", linewidth=1, label="optimum (exhaustive)")
ax.set_xlabel(r"$\log P$ of the best output (exhaustive)")
ax.set_ylabel(r"$\log P$ of the output found")
ax.set_title("below the diagonal: a search error")
ax.grid(True, alpha=0.3)
figure.legend(loc="outside lower center", ncols=2)
show(save_figure(figure, "07_search_errors.png", alt=(
    "Scatter plot of the log-probability of the output each search found against that of the best output, one "
    "point per source for greedy decoding and beams of 2 and 4, with the diagonal of the optimum. Points below the "
    "diagonal are search errors; greedy decoding has the most of them.")))
misses = {name: round(100 * (1 - found[name])) for name in names}
# np.isclose, as for `found`: two searches add the same float32 terms in different orders.
beam_below_greedy = sum(any(beam.log_prob < greedy.log_prob and not np.isclose(beam.log_prob, greedy.log_prob)
                            for beam in beams)
                        for greedy, *beams in zip(results["greedy"], *(results[f"beam k={k}"] for k in BEAMS)))
print(f"optimum missed by greedy decoding on {misses['greedy']}% of the sources, by a beam of {BEAMS[-1]} on "
      f"{misses[f'beam k={BEAMS[-1]}']}% ({misses['greedy'] - misses[f'beam k={BEAMS[-1]}']} points fewer)")
print(f"a beam ends below greedy decoding on {beam_below_greedy} of the {len(sources)} sources")

# %% [markdown]
# ## Watching a beam
#
# `beam_search(..., trace=True)` records every step: the candidates ranked by $\log P$, the
# $k$ that were kept, the best few that were dropped, and at the end every finished
# hypothesis ranked by score. Here is the source on which a beam of 2 gains most over
# greedy decoding:

# %%
i = int(np.argmax([beam.log_prob - greedy.log_prob for beam, greedy in zip(results["beam k=2"], results["greedy"])]))
traced = beam_search(model, sources[i], bos_id=BOS, eos_id=EOS, max_len=MAX_LEN, beam_size=2, alpha=0.0,
                     trace=True, tgt_vocab=tgt_vocab)
print(f"source: {' '.join(data.train_pairs[i][0])}; greedy: {text(results['greedy'][i])} "
      f"(log P {results['greedy'][i].log_prob:.3f})\n")
print(traced.trace)

# %% [markdown]
# Greedy decoding follows a single prefix, extending it by its best token at every step.
# The beam also keeps a runner-up, and here a prefix that greedy decoding never
# considered finishes with a higher $\log P$ than greedy's output. The `dropped` rows
# show how close the other candidates came: a beam of 2 is a narrow window.
#
# ## The length penalty
#
# Every factor $p(y_t \mid y_{<t}, x)$ is at most 1, so each extra token lowers $\log P$: a
# long output pays for more tokens than a short one, and must be more probable token
# by token to compete with it. Ranked by $\log P$ alone, short outputs are favoured, and
# an exact search exploits that bias fully. Dividing by $L^\alpha$
# compares outputs by something closer to an average log-probability per token
# ($\alpha = 1$ is exactly the average), and $\alpha$ between 0 and 1 interpolates.
#
# To see it on one source we need the best output *of each length*. A beam wider than
# $V^{\text{max\_len}}$ never drops anything, so its trace lists every complete output
# (this is also why beam search with such a $k$ equals exhaustive search):

# %%
ALPHAS = (0.0, 0.5, 0.75, 1.0, 1.5)
ALPHA_GRID = np.linspace(0.0, 2.0, 9 if FAST else 17)
chosen = {float(a): [exhaustive_search(model, src, bos_id=BOS, eos_id=EOS, max_len=MAX_LEN, alpha=float(a)).length
                     for src in sources] for a in ALPHA_GRID}
# The source whose chosen length changes most across ALPHAS, the exponents of the next figure.
lengths_by_source = np.array([[exhaustive_search(model, src, bos_id=BOS, eos_id=EOS, max_len=MAX_LEN, alpha=a).length
                               for a in ALPHAS] for src in sources])
i = int(np.argmax([len(set(row)) for row in lengths_by_source]))
everything = beam_search(model, sources[i], bos_id=BOS, eos_id=EOS, max_len=MAX_LEN, beam_size=V ** MAX_LEN,
                         alpha=0.0, trace=True, tgt_vocab=tgt_vocab)
best = {}
for row in everything.trace.finished:
    if row.log_prob > best.get(row.length, (-math.inf,))[0]:
        best[row.length] = (row.log_prob, " ".join(row.tokens))
print(f"source {' '.join(data.train_pairs[i][0])!r} (reference {references[i]!r}): "
      f"{len(everything.trace.finished)} complete outputs; the best of each length:")
for length, (log_prob, tokens) in sorted(best.items()):
    print(f"  L = {length}: {tokens:28} log P = {log_prob:7.3f}   "
          + "  ".join(f"score(alpha={a:g}) = {sequence_score(log_prob, length, a):6.3f}" for a in ALPHAS))

Ls = np.array(sorted(best))
log_probs = np.array([best[L][0] for L in Ls])
figure = Figure(figsize=(7.2, 5.4), layout="constrained")
FigureCanvasAgg(figure)
ax = figure.subplots()
for a in ALPHAS:
    scores = log_probs / Ls ** a
    line, = ax.plot(Ls, scores, marker="o", label=rf"$\alpha = {a:g}$")
    ax.plot(Ls[np.argmax(scores)], scores.max(), marker="*", markersize=18, color=line.get_color())
ax.set_xlabel("output length L (tokens, <eos> included)")
ax.set_ylabel(r"best $\log P / L^{\alpha}$ of that length")
ax.set_title(f"one source ({' '.join(data.train_pairs[i][0])}); star = chosen length")
ax.grid(True, alpha=0.3)
figure.legend(loc="outside lower center", ncols=len(ALPHAS))
show(save_figure(figure, "07_length_penalty_one_source.png", alt=(
    "For one source, the best length-normalised score of each output length, one curve per length-penalty "
    "exponent alpha, with a star on the length each alpha chooses. The star moves to longer outputs as alpha "
    "grows.")))
reference_length = len(data.train_pairs[i][1]) + 1
length_least_alpha, length_largest_alpha = lengths_by_source[i][0], lengths_by_source[i][-1]
print(f"chosen length: {length_least_alpha} tokens with alpha = {ALPHAS[0]:g} "
      f"({reference_length - length_least_alpha} short of the reference's {reference_length}), "
      f"{length_largest_alpha} with alpha = {ALPHAS[-1]:g} ({length_largest_alpha - reference_length} past it)")

# %% [markdown]
# Each curve is one $\alpha$ and the star marks the length it selects. Very short outputs
# are improbable under any $\alpha$ (the model has learned that a source of four tokens
# needs more than an `<eos>`), but with $\alpha = 0$ the star stops short of the reference
# length; as $\alpha$ grows, long outputs are divided by more and the star moves right,
# past the reference length (the lengths printed under the figure). Over all 30 sources,
# the average length chosen by exact search rises with $\alpha$ and crosses the average
# length of the correct outputs:

# %%
mean_chosen = np.array([np.mean(chosen[float(a)]) for a in ALPHA_GRID])
mean_reference = np.mean([len(tgt) + 1 for _, tgt in data.train_pairs])
figure = Figure(figsize=(7.2, 4.8), layout="constrained")
FigureCanvasAgg(figure)
ax = figure.subplots()
ax.plot(ALPHA_GRID, mean_chosen, marker="o", label="exhaustive search")
ax.axhline(mean_reference, color="black", linestyle="--", label="reference outputs")
ax.set_xlabel(r"length-penalty exponent $\alpha$")
ax.set_ylabel("mean output length L")
ax.set_title(r"30 sources: longer outputs as $\alpha$ grows")
ax.grid(True, alpha=0.3)
ax.legend()
show(save_figure(figure, "07_length_penalty_mean_length.png", alt=(
    "The mean length of the outputs exact search chooses over the 30 sources against the length-penalty exponent "
    "alpha, with the mean reference length as a dashed line. The curve rises with alpha and crosses the line.")))
print(f"mean chosen length {100 * (1 - mean_chosen[0] / mean_reference):.0f}% below the references' with alpha = "
      f"{ALPHA_GRID[0]:g}, {100 * (mean_chosen[-1] / mean_reference - 1):.0f}% above with alpha = {ALPHA_GRID[-1]:g}")

# %% [markdown]
# $\alpha$ is a knob that trades the model's bias towards short outputs against a bias
# towards long ones, and it is tuned on held-out data.
#
# ## Better search, better outputs?
#
# Finding a higher-scoring output only helps if the model's scores are right. The
# references are known here (each source reversed), so we can count exact matches and
# compute BLEU (next section) for every search, at $\alpha = 0$ and at $\alpha = 0.75$:

# %%
for alpha in (0.0, 0.75):
    found_results = results if alpha == 0.0 else run_searches(alpha)
    print(f"alpha = {alpha}:")
    for name, rs in found_results.items():
        outputs = [" ".join(tgt_vocab.to_tokens(r.tokens)) for r in rs]
        exact = np.mean([out == ref for out, ref in zip(outputs, references)])
        sentence = np.mean([bleu(out, ref, k=2) for out, ref in zip(outputs, references)])
        print(f"  {name:>10}: exact match {exact:5.1%}, mean sentence BLEU (k=2) {sentence:.3f}, "
              f"corpus BLEU {corpus_bleu(outputs, references):5.1f}, mean length "
              f"{np.mean([r.length for r in rs]):.2f}")

# %% [markdown]
# With $\alpha = 0$ the exact search is the *worst* by every measure: it faithfully
# returns what this half-trained model scores highest, and those outputs are often
# wrong, and too short. Greedy decoding, which often misses the model's favourite,
# does better. This is the distinction between a *search error* (the search missed an
# output the model scores higher) and a *model error* (the model scores a wrong output
# higher than the right one): a better search removes only the first kind, and can
# expose more of the second. The length penalty moves the exact optimum to more
# reasonable lengths and narrows the gap, but with a half-trained model most errors
# are model errors, which no search repairs. (Corpus BLEU is 0 for the $\alpha = 0$
# exhaustive outputs because none of them has four tokens: see below.)
#
# ## BLEU
#
# BLEU compares an output with a reference by the n-grams they share. For each order
# $n$, the *clipped precision* $p_n$ is the number of output n-grams found in the
# reference (each reference n-gram usable as often as it occurs there) divided by the
# number of output n-grams. Precision alone rewards very short outputs, so a *brevity
# penalty* multiplies the score when the output is shorter than the reference. d2l's
# sentence BLEU, `npseq.metrics.bleu`, is
#
# $$\text{BLEU} = \exp\Big(\min\Big(0,\ 1 - \frac{\text{len}_{\text{label}}}{\text{len}_{\text{pred}}}\Big)\Big)
#   \prod_{n=1}^{k} p_n^{1/2^n},$$
#
# with weights $1/2^n$ that make higher orders count less. For the prediction
# `il est bon .` and the label `il est calme .` with $k = 2$: the unigrams `il`, `est`, `.` match
# ($p_1 = 3/4$), of the bigrams only `il est` does ($p_2 = 1/3$), the lengths are equal, so
# $\text{BLEU} = (3/4)^{1/2} (1/3)^{1/4} \approx 0.658$:

# %%
by_hand = (3 / 4) ** 0.5 * (1 / 3) ** 0.25
print(f"by hand {by_hand:.4f}; npseq.metrics.bleu {bleu('il est bon .', 'il est calme .', k=2):.4f}")
print(f"perfect match: {bleu('il est calme .', 'il est calme .', k=2):.3f}; "
      f"too short, 'il est .': {bleu('il est .', 'il est calme .', k=2):.3f} "
      f"(brevity penalty exp(1 - 4/3) = {math.exp(1 - 4 / 3):.3f})")

# %% [markdown]
# Papers report *corpus* BLEU instead (`npseq.metrics.corpus_bleu`, identical to
# sacreBLEU's default on tokenised text): the n-gram counts of all sentences are added
# up before any ratio is taken, orders 1 to 4 are weighted equally, the brevity penalty
# compares total lengths, and the scale is 0 to 100. It is not the average of sentence
# scores, and the two numbers cannot be compared:

# %%
hyps = ["va !", "j'ai perdu .", "il est bon .", "je suis chez moi ."]
refs = ["va !", "j'ai perdu .", "il est calme .", "je suis chez moi ."]
sentence_scores = [bleu(h, r, k=2) for h, r in zip(hyps, refs)]
print("sentence BLEU (k=2):", [round(s, 3) for s in sentence_scores], f"mean {np.mean(sentence_scores):.3f}")
print(f"corpus BLEU-4 of the same four pairs: {corpus_bleu(hyps, refs):.1f} (0-100 scale)")
print(f"corpus BLEU-4 of the first two pairs (no hypothesis of 4 tokens): {corpus_bleu(hyps[:2], refs[:2]):.1f}")

# %% [markdown]
# The last line is the edge case met above: two perfect translations, yet a score of 0.
# With no output of four tokens there is no 4-gram to count, the 4-gram precision is
# undefined, and corpus BLEU-4 is 0, as in sacreBLEU. That is why d2l scores its short
# sentences with sentence BLEU and $k = 2$.
#
# ## On a real model
#
# On a task with a realistic vocabulary, exhaustive search is out of reach, but greedy
# and beam search can be compared by their BLEU on a test set. We train a Bahdanau model
# on part of `numbers`, stopping before it is perfect, and decode the test set with
# each search (`npseq.decode.translate`, which `npseq translate` calls too):

# %%
corpus = load_translation_data("numbers", num_examples=3000, batch_size=128, seed=0)
real = build_seq2seq(len(corpus.src_vocab), len(corpus.tgt_vocab), seed=0, **DEMO_SETTINGS)
history = train_seq2seq(real, corpus.batches, corpus.tgt_vocab, Adam(real.parameters(), lr=0.003), 6, progress=False)
test = corpus.test_pairs[:100 if FAST else 300]
test_refs = [" ".join(tgt) for _, tgt in test]
print(f"trained: cross-entropy {history.token_ce[-1]:.3f}; decoding {len(test)} test sentences")
corpus_bleus, exact_matches = {}, {}
for beam, alpha in ((1, 0.0), (2, 0.75), (3, 0.0), (3, 0.75), (5, 0.75)):
    search = dict(method="beam", beam_size=beam, alpha=alpha) if beam > 1 else {}
    outputs = [" ".join(translate(real, corpus.text.detokenize_source(src), corpus.src_vocab, corpus.tgt_vocab,
                                  max(corpus.num_steps), task="numbers", **search).output_tokens)
               for src, _ in test]
    label = "greedy" if beam == 1 else f"beam k={beam}, alpha={alpha}"
    corpus_bleus[label] = corpus_bleu(outputs, test_refs)
    exact_matches[label] = round(100 * np.mean([out == ref for out, ref in zip(outputs, test_refs)]))
    print(f"  {label:24} corpus BLEU {corpus_bleus[label]:5.1f}, exact match {exact_matches[label]}%")
best_search = max(corpus_bleus, key=corpus_bleus.get)
print(f"the best search ({best_search}) gains {corpus_bleus[best_search] - corpus_bleus['greedy']:.1f} corpus BLEU "
      f"points and {exact_matches[best_search] - exact_matches['greedy']} exact-match points over greedy decoding")

# %% [markdown]
# Beam search helps, by the small margin of the last line: it repairs some of the outputs
# on which greedy decoding went wrong, and cannot repair what the model itself gets
# wrong. Real translation systems show the same picture: a beam of a handful of
# hypotheses gives a small gain over greedy decoding, and very wide beams can even lower
# BLEU, because they find more of the model's short, high-scoring mistakes (Koehn and
# Knowles, 2017).
#
# ## Summary
#
# * Greedy decoding picks the locally best token; beam search keeps $k$ prefixes;
#   exhaustive search, feasible only for tiny vocabularies, finds the exact optimum and
#   is what the others are tested against.
# * Search errors shrink as the beam widens, but a beam is not guaranteed to beat greedy
#   decoding on every input.
# * $\log P$ favours short outputs; the score $\log P / L^\alpha$ lengthens the chosen
#   output as $\alpha$ grows. An exact search only helps when the model's scores are right.
# * d2l's sentence BLEU (weights $1/2^n$, 0-1) and corpus BLEU-4 (sacreBLEU, 0-100) are
#   different numbers; the worked example gives 0.658.
#
# ## Exercises
#
# 1. Construct by hand a two-step distribution over $\{a, b, \text{<eos>}\}$ for which greedy
#    decoding returns a less probable output than a beam of 2, and one for which a beam
#    of 2 returns a less probable output than greedy decoding.
# 2. Count the decoder calls and the rows they process for greedy, beam ($k$) and
#    exhaustive search as functions of $V$, $k$ and `max_len`. Check against the model above
#    by timing each search.
# 3. Rerun the length-penalty experiment with `length_penalty="gnmt"`
#    ($\operatorname{lp}(L) = ((5 + L)/6)^\alpha$). Which $\alpha$ makes the mean chosen length
#    equal to the mean reference length, for each penalty?
# 4. Train the tiny model for 40 epochs instead of 10 and repeat the comparison of the
#    searches. What happens to the differences between them, and why?
# 5. Compute sentence BLEU for `il est bon .` against `il est calme .` with $k = 1, 2, 3, 4$
#    by hand, then with `bleu`. Why is the score 0 from $k = 3$ on, although three of the
#    four tokens match? What must a four-token prediction share with this label for $k = 4$
#    to score above 0, and why does corpus BLEU, which adds up the n-gram matches of all
#    sentences before dividing, rarely fall to 0 this way? (Read the docstring of `bleu`.)
# 6. Show with a two-sentence corpus that corpus BLEU is not the mean of sentence BLEUs,
#    even with equal weights: which sentence dominates the corpus score, and why?
