# %% [markdown]
# # 9. Beyond recurrence: the Transformer, every backward by hand
#
# Read this after tutorial 7 (search). The Bahdanau decoder of tutorial 6 attends once per step,
# from a recurrent state that carries everything else. The Transformer (Vaswani et al., 2017) drops
# the recurrence: every position attends to every other position, in several heads at once, in a
# stack of blocks, and the order of the tokens enters only through a table of positions added to
# the embeddings. Training then has no loop over time steps at all.
#
# The questions of this tutorial:
#
# 1. What does one head compute, and what is the backward of softmax attention? We derive it and
#    check it against finite differences.
# 2. What is the backward of layer normalisation, the other new piece of the block?
# 3. How do heads, a residual connection and a feed-forward network make a block, and how does the
#    decoder decode one token at a time with cached keys and values, yet train on a whole target?
# 4. What does each head of each block look at on `reverse` and `dates`, and how does the
#    Transformer compare with the Bahdanau GRU in accuracy and speed?

# %%
import time

import numpy as np
from _common import COLUMN_PX, DPI, FAST, code, save_figure, show

import npseq
from npseq.decode import head_attention, translate
from npseq.functional import layer_norm_backward, layer_norm_forward
from npseq.functional.pooling import masked_pooling_backward, masked_pooling_forward
from npseq.functional.scores import scaled_dot_scores_backward, scaled_dot_scores_forward
from npseq.functional.transformer import (
    scaled_dot_product_attention_backward,
    scaled_dot_product_attention_forward,
)
from npseq.gradcheck import check_function, check_module
from npseq.models import Transformer
from npseq.nn import TransformerDecoderBlock, TransformerEncoderBlock
from npseq.runs import TranslationRun, demo_epochs, demo_settings
from npseq.viz import AXIS_LABELS, show_attention_grid, show_heatmaps

rng = np.random.default_rng(0)
COLUMN_INCHES = COLUMN_PX / DPI  # the book's text column: the widest a figure may be and still show at its own size

# %% [markdown]
# ## One head
#
# A head compares every query $q_i$ with every key $k_j$ by a scaled dot product, turns each row
# of scores into weights with a softmax, and averages the values:
#
# $$S = \frac{Q K^\top}{\sqrt d}, \qquad A = \operatorname{softmax}_{\text{rows}}(S), \qquad O = A V.$$
#
# Padding and the causal mask set scores to $-\infty$ before the softmax, so masked weights are
# exactly 0. npseq writes a head as the two pairs that every attention of tutorial 6 is made of:
# the scaled dot score, then the masked pooling, with the mask of the padding and the causal
# condition. Here is the forward, as code, then its two parts:

# %%
for function in (scaled_dot_product_attention_forward, scaled_dot_scores_forward, masked_pooling_forward):
    print(code(function))

# %% [markdown]
# ## The backward of softmax attention
#
# Walk the three equations back. $O = AV$ is a product, so $dV = A^\top dO$ and $dA = dO\,V^\top$.
# For one row $a = \operatorname{softmax}(s)$ the Jacobian is
# $\partial a_k / \partial s_j = a_k([k = j] - a_j)$, so
#
# $$ds_j = \sum_k dA_k\, a_k ([k=j] - a_j) = a_j \Bigl(dA_j - \sum_k dA_k a_k\Bigr),$$
#
# one elementwise product and one row sum, never the $T_k \times T_k$ Jacobian. A masked weight is
# 0, so its score gets no gradient. Finally $S = QK^\top/\sqrt d$ gives $dQ = dS\,K/\sqrt d$ and
# $dK = dS^\top Q/\sqrt d$. A consequence: each row of $dS$ sums to 0, because a softmax does not
# see a shift of its scores. The code, the pooling's backward then the score's:

# %%
for function in (scaled_dot_product_attention_backward, masked_pooling_backward, scaled_dot_scores_backward):
    print(code(function))

# %% [markdown]
# Checked against centred finite differences in float64, with two heads, padding and the causal
# mask (the check also feeds an upstream gradient into the weights themselves):

# %%
def attention_backward_with_weights(dout, dweights, cache):
    return scaled_dot_product_attention_backward(dout, cache, dweights)


report = check_function(scaled_dot_product_attention_forward, attention_backward_with_weights,
                        {"queries": rng.standard_normal((2, 2, 4, 3)), "keys": rng.standard_normal((2, 2, 4, 3)),
                         "values": rng.standard_normal((2, 2, 4, 2)), "valid_lens": np.array([4, 2])},
                        kwargs={"causal": True})
print(report)

# %% [markdown]
# ## The backward of layer normalisation
#
# Each position's feature vector $x \in \mathbb R^D$ is standardised, then scaled and shifted:
# $\hat x = (x - \mu)/\sigma$, $y = \gamma \odot \hat x + \beta$, with $\mu$ and $\sigma^2$ the
# vector's mean and (biased) variance plus $\epsilon$. Then $d\gamma = \sum \hat x \odot dy$,
# $d\beta = \sum dy$ over all positions, and with $g = \gamma \odot dy$, because $\mu$ and $\sigma$
# both depend on every $x_i$,
#
# $$dx = \frac{1}{\sigma}\Bigl(g - \overline{g} - \hat x\, \overline{g \odot \hat x}\Bigr),$$
#
# where the bar is the mean over the $D$ features: the gradient loses its mean and its component
# along $\hat x$, the two directions the normalisation removes.

# %%
print(code(layer_norm_backward))
print(check_function(layer_norm_forward, layer_norm_backward,
                     {"x": rng.standard_normal((2, 3, 5)), "gamma": rng.standard_normal(5),
                      "beta": rng.standard_normal(5)}))

# %% [markdown]
# ## From heads to blocks
#
# Multi-head attention projects queries, keys and values ($\hat Q = QW_q + b_q$, ...), cuts the
# projected features into $h$ blocks of $D/h$, runs one head on each, and mixes the heads' outputs
# side by side with $W_o$. An encoder block wraps self-attention and a position-wise feed-forward
# network $\max(0, xW_1 + b_1)W_2 + b_2$ each in a residual connection with layer normalisation,
# $\operatorname{LN}(x + F(x))$. A decoder block adds cross-attention to the encoder's outputs between
# the two, and its self-attention is causal. Every gradient of both blocks, checked (the key bias is
# left out: its true gradient is 0, as the row sums above show):

# %%
encoder_block = TransformerEncoderBlock(8, 16, 2, rng=1, dtype="float64")
report = check_module(encoder_block, {"x": rng.standard_normal((2, 4, 8)), "valid_lens": np.array([4, 2])},
                      h=1e-4, order=4)
checked = [row for row in report.rows if "b_k" not in row.name]
print(f"encoder block: {sum(row.ok for row in checked)} of {len(checked)} tensors agree, worst relative error "
      f"{max(row.max_rel_error for row in checked):.1e}; the key bias's gradient: "
      f"{np.abs(encoder_block.self_attention.b_k.grad).max():.0e}")
decoder_block = TransformerDecoderBlock(8, 16, 2, rng=2, dtype="float64")
report = check_module(decoder_block, {"x": rng.standard_normal((2, 3, 8)), "enc_outputs": rng.standard_normal((2, 4, 8)),
                                      "enc_valid_lens": np.array([4, 2])}, h=1e-4, order=4)
print(f"decoder block: worst relative error {max(r.max_rel_error for r in report.rows if 'b_k' not in r.name):.1e}")

# %% [markdown]
# ## Training on a whole target, decoding one token at a time
#
# The causal mask lets target position $t$ see positions $0..t$ only, so the teacher-forced forward
# over all $T$ positions computes exactly what $T$ decoding steps compute. A step does not redo the
# prefix: each decoder block keeps the projected keys and values of the positions decoded so far
# and appends one row per step, so step $t$ costs one query against $t$ cached keys. Beam search
# reorders these caches with its surviving hypotheses. The two ways agree to rounding:

# %%
model = Transformer(9, 8, num_hiddens=8, ffn_num_hiddens=16, num_heads=2, num_layers=2, dropout=0.0, rng=3,
                    dtype="float64")
src, tgt_in, lens = rng.integers(0, 9, (3, 5)), rng.integers(0, 8, (3, 4)), np.array([5, 3, 2])
with npseq.no_grad():
    logits = model(src, tgt_in, lens)
    state = model.encode(src, lens)
    steps = []
    for t in range(tgt_in.shape[1]):
        step_logits, state, _ = model.decoder.step(tgt_in[:, t], state)
        steps.append(step_logits)
print(f"largest difference, steps vs one forward: {np.abs(np.stack(steps, axis=1) - logits).max():.1e}")
print(f"cached keys of block 1 after {state.step} steps: {state.blocks[0].self_attention.keys.shape} "
      f"(N, heads, steps, D/heads)")

# %% [markdown]
# ## Bahdanau vs Transformer on `reverse` and `dates`
#
# Both translators train on the built-in tasks as `npseq demo` trains them (`--model rnn` and
# `--model transformer`): the Bahdanau GRU, and a Transformer of 2 blocks with 4 heads and model
# size 32, each with its own epochs and learning rate (`npseq.runs.demo_settings`). We compare
# held-out exact match (greedy), training time and speed. (Fast mode trains on 8000 pairs for
# fewer epochs: enough for the maps below to show their patterns, but its times and exact
# matches are not the full run's.)

# %%
TASKS = ("reverse", "dates")
FAST_EPOCHS = {("reverse", "bahdanau"): 5, ("reverse", "transformer"): 6, ("dates", "bahdanau"): 3,
               ("dates", "transformer"): 8}


def train(task, kind):
    settings = demo_settings(task, "transformer" if kind == "transformer" else "rnn")
    epochs = demo_epochs(task, "transformer" if kind == "transformer" else "rnn")
    if FAST:
        settings.update(num_examples=8000)
        epochs = FAST_EPOCHS[task, kind]
    run = TranslationRun.start(task=task, **settings)
    start = time.perf_counter()
    run.train(epochs, progress=False)
    seconds = time.perf_counter() - start
    return run, epochs, seconds, run.history.tokens_per_s[-1], run.evaluate().exact_match


results = {}
print(f"{'task':<8} {'model':<12} {'epochs':>6} {'train s':>8} {'tokens/s':>9} {'exact match':>12}")
for task in TASKS:
    for kind in ("bahdanau", "transformer"):
        results[task, kind] = train(task, kind)
        _, epochs, seconds, speed, exact = results[task, kind]
        print(f"{task:<8} {kind:<12} {epochs:>6} {seconds:>8.1f} {speed:>9.0f} {exact:>12.1%}")

# %% [markdown]
# ## What each head looks at
#
# For one held-out example per task, the cross-attention of every head in every decoder block
# (one figure per block, its four heads two by two), then the Bahdanau decoder's single map;
# then the encoder's self-attention, every head of every block, which the Bahdanau model has no
# counterpart of. The search keeps only the last block's heads averaged (the map
# `npseq translate --attention-png` draws); `decode.head_attention` recovers every head by
# running the decoder's teacher-forced forward on the search's own output, which equals the
# steps it took.

# %%
ALIGNMENT = {"reverse": "weight on the reversal or one position to its right",
             "dates": "weight of the year's output digits on the source's year"}
EXAMPLE = {"reverse": "a sequence to reverse", "dates": "a date"}
# What the heads of a block show, for the alt texts: (task, whether it is the last block) -> the pattern.
HEAD_PATTERN = {("reverse", False): "their weight lies mostly off the anti-diagonal that the last block's heads draw",
                ("reverse", True): "each head draws the anti-diagonal",
                ("dates", False): "the heads split the work between them",
                ("dates", True): "the heads split the work between them"}
BAHDANAU_ALT = {
    "reverse": "The Bahdanau decoder's attention on a sequence to reverse (source tokens across, output tokens "
               "down): one anti-diagonal.",
    "dates": "The Bahdanau decoder's attention on a date (source characters across, output characters down): the "
             "output's year, month and day each read the source's year, month and day.",
}


def draw_heads(name, maps, source_tokens, row_tokens, suptitle, alt, labels=AXIS_LABELS):
    """Show one block's heads ``maps`` (heads, rows, source positions) as the figure ``name``."""
    panels = [(weights, source_tokens, row_tokens, f"head {head + 1}") for head, weights in enumerate(maps)]
    # Two heads a row: four would leave the tokens too narrow to read in the book's column.
    _, figure = show_attention_grid(panels, None, ncols=2, max_width=COLUMN_INCHES, suptitle=suptitle,
                                    labels=labels, return_figure=True)
    path = save_figure(figure, name, alt=alt)
    show(path)


def alignment_weight(task, source, outputs):
    """The measure of a map (outputs x source positions) that says how much of it follows ``task``'s alignment."""
    if task == "reverse":  # output t reads source position S - 1 - t, or the one after it (S tokens, then <eos>)
        tokens = len(source) - 1
        return lambda weights: float(np.mean([weights[t, tokens - 1 - t:tokens + 1 - t].sum()
                                              for t in range(tokens)]))
    start = next(i for i in range(len(source) - 3) if source[i:i + 4] == outputs[:4])  # dates: the year's digits
    return lambda weights: float(weights[:4, start:start + 4].sum(axis=1).mean())


for task in TASKS:
    run = results[task, "transformer"][0]
    model, data = run.model, run.corpus
    sentence = data.text.detokenize_source(data.test_pairs[0][0])
    src_len, max_len = data.num_steps
    translation = translate(model, sentence, data.src_vocab, data.tgt_vocab, max_len, task=task,
                            src_max_len=src_len)
    every = head_attention(model, translation, data.src_vocab, data.tgt_vocab)
    maps = every.cross
    blocks, heads = maps.shape[:2]
    for block in range(blocks):
        draw_heads(f"09_transformer_heads_{task}_block{block + 1}.png", maps[block], translation.source_tokens,
                   translation.attention_rows, f"Transformer cross-attention, block {block + 1} of {blocks}",
                   f"The cross-attention of the {heads} heads of the Transformer's decoder block {block + 1} on "
                   f"{EXAMPLE[task]} (source tokens across, output tokens down), one map per head: "
                   f"{HEAD_PATTERN[task, block == blocks - 1]}.")
    bahdanau = results[task, "bahdanau"][0].model
    rnn = translate(bahdanau, sentence, data.src_vocab, data.tgt_vocab, max_len, task=task, src_max_len=src_len)
    _, figure = show_heatmaps(rnn.result.attention, rnn.source_tokens, rnn.attention_rows,
                              None, title=f"Bahdanau: {sentence}",
                              max_width=COLUMN_INCHES, return_figure=True)
    path = save_figure(figure, f"09_bahdanau_{task}.png", alt=BAHDANAU_ALT[task])
    show(path)
    # The encoder's self-attention: what each source position reads while the source is encoded.
    for block in range(blocks):
        draw_heads(f"09_transformer_encoder_heads_{task}_block{block + 1}.png", every.encoder[block],
                   translation.source_tokens, translation.source_tokens,
                   f"Transformer encoder self-attention, block {block + 1} of {blocks}",
                   f"The self-attention of the {heads} heads of the Transformer's encoder block {block + 1} on "
                   f"{EXAMPLE[task]}: what each source position (down) reads of the source (across), one map "
                   f"per head.", labels=("keys: source positions", "queries: source positions"))
    print(f"{task}: {sentence!r} -> Transformer {translation.text!r}, Bahdanau {rnn.text!r}")
    measure = alignment_weight(task, translation.source_tokens, translation.attention_rows)
    single = alignment_weight(task, rnn.source_tokens, rnn.attention_rows)(rnn.result.attention)
    print(f"  {ALIGNMENT[task]}: Bahdanau {single:.0%}, the last block's heads averaged "
          f"{measure(maps[-1].mean(axis=0)):.0%}")
    for block in range(blocks):
        print(f"  block {block + 1}, heads 1-{heads}: "
              + ", ".join(f"{measure(maps[block, head]):.0%}" for head in range(heads)))

# %% [markdown]
# ## What to look for
#
# * The Bahdanau decoder draws one alignment: on `reverse` an anti-diagonal, on `dates` a jump from
#   the year to the month to the day. Its recurrent state carries the rest, so one map is the whole
#   story. The lines printed under the maps measure it: the weight on the anti-diagonal (the exact
#   reversal or one position to its right) for `reverse`, the weight the year's four output digits
#   put on the source's year for `dates`, for Bahdanau's map, the last block's heads averaged, and
#   each head.
# * The Transformer spreads the work over heads and blocks, and the heads need not agree. On
#   `reverse` above, the first block's heads are diffuse (one parks its weight on `<eos>`) and each
#   of the second block's draws the anti-diagonal; their average is as sharp as Bahdanau's map. On
#   `dates` the heads split the work, and the year is read less cleanly by the average of the last
#   block than by Bahdanau's single map. In the
#   trained demo model on `numbers` (`npseq demo --model transformer` writes `attention_heads.png`),
#   the heads of the second block each draw a sharp alignment between French and English words,
#   while those of the first block are more diffuse, some reading a word ahead or parking their
#   weight on `<eos>` (a place to put attention when a head has nothing to add). The average of the
#   last block's heads is what search keeps, and it looks like a Bahdanau map.
# * The encoder's heads have no Bahdanau counterpart. In the demo model on `reverse`, the first
#   block's are diffuse, and in the second block three of the four heads send the attention of the
#   later source positions to `<eos>`, one of them keeping the early positions on themselves. One
#   reading: a position learns where the sequence ends, which is what reversing needs to know.
# * Speed: a Transformer's training step has no loop over time steps, but at model size 32 the
#   per-step work is small either way: compare the tokens per second in the table above, which
#   depend on the machine (its cores, and how many BLAS threads each product gets) as much as on
#   the model. `benchmarks/bench_transformer.py` compares npseq's Transformer with a torch twin.
# * Positions are all a Transformer knows of order, so their scale matters. npseq draws the
#   embeddings from $\mathcal N(0, 1/D)$ and multiplies them by $\sqrt D$ (Vaswani et al.'s code),
#   which makes them as large as the sinusoids. With d2l's $\mathcal N(0, 1)$ the scaled embeddings
#   would be $\sqrt D$ times larger than the positions they are added to (exercise 6 measures what
#   that costs on `reverse`, a task that copies by position).
#
# ## Exercises
#
# 1. Derive $dK$ of one head by hand for a single query and two keys, and check it against
#    `scaled_dot_product_attention_backward`.
# 2. Show that the rows of $dS$ sum to zero, and use it to explain why `b_k`'s gradient vanishes.
# 3. Train with `norm="pre"` (`Transformer(..., norm="pre")`) and compare the loss curves of the
#    first epoch with post-norm at a learning rate of 0.01.
# 4. Remove the positional encoding (set `model.encoder.embedder.positions[...] = 0` and the
#    decoder's) and retrain on `reverse`: what happens to the exact match, and why?
# 5. Beam search reorders every block's key and value caches at each step. Count the arrays moved
#    per step for `L` blocks and compare with re-running the decoder on the whole prefix.
# 6. Draw the Transformer's embeddings from $\mathcal N(0, 1)$, as d2l does, instead of
#    $\mathcal N(0, 1/D)$ (multiply `model.encoder.embedder.embedding.W.data` and the decoder's by
#    $\sqrt D$ before training), train on `reverse` for the demo's epochs and compare the exact match
#    after each epoch with the model above. Then train both at Adam's learning rates 0.003 and
#    0.005, without a schedule: does the exact match still rise steadily from epoch to epoch?
