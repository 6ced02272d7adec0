# %% [markdown]
# # 11. Deep and bidirectional recurrent networks
#
# A recurrent layer of tutorials 2 and 3 has one state per step, and it reads the sequence in one
# direction. There are two classic ways to give a recurrent network more room without making that
# state wider:
#
# * **stack** layers, so that each step is computed by several cells, one above the other, each
#   reading the outputs of the one below (a *deep* RNN);
# * run a second layer over the sequence **backwards** and put the two side by side, so that the
#   output at a step has seen the whole sequence, before and after it (a *bidirectional* RNN).
#
# This tutorial answers four questions:
#
# 1. What does a stacked layer compute, and along which paths does its gradient travel?
# 2. Where does that gradient fade first: back in time, or down the layers?
# 3. What does a bidirectional layer compute, with padded batches, and how does its backward split?
# 4. Where does reading the future help, and where is it cheating?

# %%
import time

import numpy as np
from _common import FAST, code, equations, save_figure, show
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from npseq.data import BatchIterator, SeqDataLoader, load_corpus, load_task, split_corpus
from npseq.decode import evaluate_translations
from npseq.functional import (
    bidirectional_backward,
    bidirectional_forward,
    reverse_sequences,
    rnn_step_backward,
    rnn_step_forward,
    stacked_backward,
    stacked_forward,
)
from npseq.gradcheck import check_function, rel_error
from npseq.models import DEMO_SETTINGS, RNNLM, build_seq2seq
from npseq.nn import GRU, RNN, Embedding, Linear, Module, make_rnn
from npseq.optim import Adam
from npseq.train import evaluate_perplexity, predict, train_lm, train_seq2seq

rng = np.random.default_rng(0)

# %% [markdown]
# ## Deep RNNs: one cell per layer and step
#
# Number the layers $l = 1, \dots, L$ and let layer 0 be the input, $H_t^{(0)} = X_t$. Layer $l$
# computes its state at step $t$ from its own state one step earlier and from the state of the
# layer below *at the same step*:
#
# $$H_t^{(l)} = f_l\big(H_{t-1}^{(l)},\ H_t^{(l-1)}\big), \qquad l = 1, \dots, L,$$
#
# and only the top layer feeds the output, $O_t = H_t^{(L)} W_o + b_o$. For the vanilla cell,
#
# $$H_t^{(l)} = \tanh\big(H_t^{(l-1)} W_x^{(l)} + H_{t-1}^{(l)} W_h^{(l)} + b^{(l)}\big),$$
#
# where every layer has weights of its own: $W_x^{(1)}$ is $D \times H$ and reads the inputs,
# $W_x^{(l)}$ for $l > 1$ is $H \times H$ and reads the layer below. The state of the whole stack is
# one $H$-vector per layer, an array $(L, N, H)$. The GRU and the LSTM stack the same way, with
# their gates inside each $f_l$.
#
# The states form a grid, layers by steps, and $H_t^{(l)}$ needs its left neighbour
# $H_{t-1}^{(l)}$ and its lower neighbour $H_t^{(l-1)}$. Any order that visits the grid with
# those two first gives the same numbers. `stacked_forward` (in `npseq.functional.deep`) goes
# layer by layer: the whole sequence through layer 1, then through layer 2, each a single call of
# the cell's sequence function of tutorials 2 and 3. Its docstring and code:

# %%
print(equations(stacked_forward))
print(code(stacked_forward))

# %% [markdown]
# ($M^{(l)}$ is a dropout mask between layers, all ones unless asked for; it comes at the end of
# this part.) The other order, step by step with all layers at each step, is how a stack must
# run when the inputs arrive one at a time (a decoder, a stream). Written with the vanilla step
# of tutorial 2, it gives the same states:

# %%
N, T, D, H, L = 3, 5, 4, 6, 2
x = rng.standard_normal((N, T, D))
h0 = 0.5 * rng.standard_normal((L, N, H))
params = [(0.5 * rng.standard_normal((D if layer == 0 else H, H)), 0.5 * rng.standard_normal((H, H)),
           0.1 * rng.standard_normal(H)) for layer in range(L)]  # (Wx, Wh, b) of layers 1 and 2

state = list(h0)
top = np.zeros((N, T, H))
step_caches = [[None] * T for _ in range(L)]  # step_caches[l][t]: what the backward of (t, l) needs
for t in range(T):
    below = x[:, t]  # H_t^(0) = X_t
    for layer in range(L):
        state[layer], step_caches[layer][t] = rnn_step_forward(below, state[layer], *params[layer])
        below = state[layer]
    top[:, t] = below

y, cache = stacked_forward(x, h0, params, "rnn")
print(f"outputs {y.shape}: max |step by step - stacked_forward| = {np.abs(top - y).max():.1e}")
print(f"final states {cache.h_last.shape}: max difference {np.abs(np.stack(state) - cache.h_last).max():.1e}")

# %% [markdown]
# ## The backward of a stacked layer
#
# Let $G_t^{(l)} = \partial L / \partial H_t^{(l)}$ be the total gradient at a state. $H_t^{(l)}$
# is read by exactly two cells: the one to its right, $(t+1, l)$, and the one above it,
# $(t, l+1)$. So its gradient is the sum of what those two send back:
#
# $$\begin{aligned}
#   G_t^{(l)} &= \underbrace{U_t^{(l)}}_{\text{from above, step } t}
#   + \underbrace{G_{t+1}^{(l)} \frac{\partial H_{t+1}^{(l)}}{\partial H_t^{(l)}}}_{\text{from step } t+1
#   \text{, same layer}}, \\
#   U_t^{(L)} &= dY_t, \qquad
#   U_t^{(l)} = G_t^{(l+1)} \frac{\partial H_t^{(l+1)}}{\partial H_t^{(l)}}.
# \end{aligned}$$
#
# In the vanilla cell both products are those of tutorial 2: with $dA = G \odot (1 - H^2)$ the
# gradient of a cell's pre-activation, the cell sends $dA\, W_h^\top$ to the left and
# $dA\, W_x^\top$ down (for the bottom layer, "down" is $dX_t$). Each weight collects its gradient
# from the cells of its own layer only, $dW_x^{(l)} = \sum_t H_t^{(l-1)\top} dA_t^{(l)}$.
#
# Here is that backward by hand, in the step-by-step order: walk $t$ from $T$ down to 1 and, at
# each step, from the top layer down; every cell adds its two incoming gradients and runs the step
# backward of tutorial 2.

# %%
dy = rng.standard_normal((N, T, H))  # dY_t, the gradient of the top layer's outputs
from_next = [np.zeros((N, H)) for _ in range(L)]  # per layer: what step t+1 sends back to step t
dparams = [[np.zeros_like(w) for w in weights] for weights in params]
dx = np.zeros_like(x)
for t in reversed(range(T)):
    from_above = dy[:, t]  # U_t^(L)
    for layer in reversed(range(L)):
        total = from_above + from_next[layer]  # G_t^(l): the sum of both sources
        from_above, from_next[layer], *dw = rnn_step_backward(total, step_caches[layer][t])
        for grad, part in zip(dparams[layer], dw):
            grad += part
    dx[:, t] = from_above  # what the bottom layer sends down: dX_t

grads = stacked_backward(dy, cache)
print(f"relative error of the hand loop to stacked_backward: dx {rel_error(dx, grads.dx):.1e}, "
      f"dh0 {rel_error(np.stack(from_next), grads.dh0):.1e}")
for layer in range(L):
    print(f"  layer {layer + 1}: " + ", ".join(f"{name} {rel_error(mine, theirs):.1e}" for name, mine, theirs
                                              in zip(("dWx", "dWh", "db"), dparams[layer], grads.dparams[layer])))

# %% [markdown]
# The two agree to the last bit: every cell's backward is the same call on the same numbers, and
# every weight's sum runs over the steps in the same order. `stacked_backward` visits the cells in
# the other order, layer by layer from the top: the top layer runs its whole backpropagation
# through time (which adds the gradient from the next step, as in tutorial 2), and the input
# gradient it returns, one per step, is $U^{(l)}$ for the layer below. That order is possible
# because $U_t^{(l)}$ needs nothing from layer $l$ itself:

# %%
print(equations(stacked_backward))
print(code(stacked_backward))

# %% [markdown]
# Two more referees: centred finite differences in float64 (every weight of both layers, the
# inputs and the initial states, with random upstream gradients on the outputs and on the final
# states), and npseq's layer `nn.RNN(num_layers=2)` given the same weights, which runs the fast
# twins of tutorial 2.

# %%
def forward(x, h0, Wx1, Wh1, b1, Wx2, Wh2, b2):
    y, cache = stacked_forward(x, h0, [(Wx1, Wh1, b1), (Wx2, Wh2, b2)], "rnn")
    return y, cache.h_last, cache


def backward(dy, dh_last, cache):
    grads = stacked_backward(dy, cache, dh_last)
    return (grads.dx, grads.dh0, *grads.dparams[0], *grads.dparams[1])


inputs = {"x": x, "h0": h0, **{f"{name}{layer + 1}": weight for layer in range(L)
                                for name, weight in zip(("Wx", "Wh", "b"), params[layer])}}
report = check_function(forward, backward, inputs)
print(report)
assert report.ok

layer = RNN(D, H, num_layers=L, rng=0, dtype="float64")
for index, weights in enumerate(params):
    for name, weight in zip(("Wx", "Wh", "b"), weights):
        getattr(layer, f"{name}_l{index}").data[...] = weight
out, final = layer(x, h0)
dx_layer, dh0_layer = layer.backward(dy)
differences = {"outputs": np.abs(out - y).max(), "final states": np.abs(final - cache.h_last).max(),
               "dx": np.abs(dx_layer - grads.dx).max(), "dh0": np.abs(dh0_layer - grads.dh0).max(),
               "weights": max(np.abs(getattr(layer, f"{name}_l{index}").grad - grad).max()
                              for index, group in enumerate(grads.dparams) for name, grad in zip(("Wx", "Wh", "b"), group))}
print("nn.RNN(num_layers=2) against stacked_forward/backward, max |difference|: "
      + ", ".join(f"{name} {value:.1e}" for name, value in differences.items()))

# %% [markdown]
# ## Where the gradient fades: steps against layers
#
# In one layer, tutorial 2 found the gradient shrinking geometrically as it travels back in time,
# one Jacobian per step. In a stack it also travels *down*, one Jacobian per layer, and a state
# receives the sum over every path from the loss to it that moves left or down one cell at a
# time. To see what each direction costs, we put the loss on the top layer's last state only and
# record $\|G_t^{(l)}\|$ for every layer and step (`record_step_norms`, as in tutorials 2 and 3),
# in three 4-layer stacks at npseq's default initialisation: vanilla RNN layers, GRU layers, and GRU
# layers whose update gates are biased to keep the state (the $+2$ on the bias of $z$ of tutorial 3,
# in every layer).

# %%
GRID_LAYERS, GRID_STEPS, GRID_N, GRID_D, GRID_H = 4, 30, 8, 16, 32
x_grid = rng.standard_normal((GRID_N, GRID_STEPS, GRID_D))
d_last = np.zeros((GRID_N, GRID_STEPS, GRID_H))
d_last[:, -1] = rng.standard_normal((GRID_N, GRID_H)) / np.sqrt(GRID_N * GRID_H)  # ||dY_T|| about 1


def gradient_grid(stack):
    """||G_t^(l)|| of every layer and step, (L, T), for the loss on the top layer's last state."""
    stack.record_step_norms = True
    stack(x_grid)
    stack.backward(d_last)
    return np.array([stack.step_grad_norms[layer, 0] for layer in range(GRID_LAYERS)])


remembering = GRU(GRID_D, GRID_H, num_layers=GRID_LAYERS, reset_after=True, rng=1, dtype="float64")
for index in range(GRID_LAYERS):
    getattr(remembering, f"bx_l{index}").data[GRID_H:2 * GRID_H] += 2.0  # the update gate z: block 1 of bx
grids = {
    "RNN": gradient_grid(RNN(GRID_D, GRID_H, num_layers=GRID_LAYERS, rng=1, dtype="float64")),
    "GRU": gradient_grid(GRU(GRID_D, GRID_H, num_layers=GRID_LAYERS, reset_after=True, rng=1, dtype="float64")),
    "GRU, z biased +2": gradient_grid(remembering),
}
for name, grid in grids.items():
    per_step = (grid[-1, -1] / grid[-1, 0]) ** (1 / (GRID_STEPS - 1))  # along the top row, back in time
    per_layer = (grid[-1, -1] / grid[0, -1]) ** (1 / (GRID_LAYERS - 1))  # down the last column
    lowest = np.unravel_index(grid.argmin(), grid.shape)  # (layer, step) of the smallest norm
    print(f"{name}: per step back in the top layer the norm shrinks {per_step:.2f} times, per layer down at the "
          f"last step {per_layer:.2f} times, so one layer down costs as much as {np.log(per_layer) / np.log(per_step):.1f} "
          f"steps back; the smallest gradient, {grid.min():.1e}, reaches layer {lowest[0] + 1} at step {lowest[1] + 1}; at "
          f"step 1 the bottom layer gets {grid[0, 0] / grid[-1, 0]:.0%} of the top layer's")

# %%
figure = Figure(figsize=(7.2, 7.6), layout="constrained")
FigureCanvasAgg(figure)
axes = figure.subplots(3, 1, sharex=True)
low = min(np.log10(grid).min() for grid in grids.values())
for ax, (name, grid) in zip(axes, grids.items()):
    image = ax.imshow(np.log10(grid), origin="lower", aspect="auto", cmap="viridis", vmin=low, vmax=0.0,
                      extent=(0.5, GRID_STEPS + 0.5, 0.5, GRID_LAYERS + 0.5))
    ax.set_yticks(range(1, GRID_LAYERS + 1))
    ax.set_ylabel("layer $l$")
    ax.set_title(name)
axes[-1].set_xlabel(f"step $t$ (the loss reads the top layer at $t = {GRID_STEPS}$)")
figure.colorbar(image, ax=axes, label=r"$\log_{10} \|\partial L / \partial H_t^{(l)}\|$")
show(save_figure(figure, "11_gradient_grid.png", alt=(
    "Three heat maps of the log norm of the gradient reaching each state of a 4-layer stack, layers up the side "
    "and 30 steps along the bottom, with the loss at the top layer's last step: vanilla RNN layers, GRU layers, "
    "and GRU layers whose update gates are biased to keep the state. In the first two the colour darkens "
    "mostly towards the left, back in time; in the third the top row stays bright across all 30 steps while "
    "the bottom layers near the loss are the darkest cells.")))

# %% [markdown]
# Read each panel from its top right corner, where the loss enters (the lines printed above give
# the numbers):
#
# * **Vanilla RNN.** A step back in time and a layer down cost about the same factor: both pass one
#   weight matrix and one $\tanh'$. There are many more steps than layers, so time is where the
#   gradient vanishes: the smallest value of the grid is in the first step. Far back in time the
#   lower layers are no darker than the top one, and even brighter: more paths lead there, one
#   for each way of ordering the moves to the left and down.
# * **GRU.** Back in time the update gate carries part of the gradient past $W_h$ (the term
#   $z \odot h_{t-1}$ of tutorial 3), and a step costs less than a layer, whose path always crosses
#   $W_x$. Over 30 steps and 4 layers, time still costs the most, and the smallest value is again
#   in the first step.
# * **GRU with its update gates biased towards keeping the state.** The top row now stays bright
#   across all 30 steps: the gradient survives the trip back in time, as in tutorial 3. But the
#   same gate closes the way down. A layer reads the one below only through its candidate $n$,
#   which enters the state with the factor $1 - z$, small when $z$ is near 1: every layer down now
#   costs as much as tens of steps back, and the darkest cell is the bottom layer at the loss's
#   own step. The update gate trades depth for time: it keeps a layer's own memory, and in doing
#   so shields the state from its input, the layer below.
#
# ## Dropout between layers
#
# A deep RNN is easily overfitted, and the usual regulariser (Zaremba et al., 2014) drops units
# on the connections *between* layers only, never along time: the recurrence $H_{t-1}^{(l)} \to
# H_t^{(l)}$ must carry memory over many steps, and a fresh mask at every step would erase it.
# `stacked_forward(..., dropout=p, rng=...)` multiplies each layer's outputs but the top's by an
# inverted-dropout mask $M^{(l)}$ (entries $0$ with probability $p$, $1/(1-p)$ otherwise, drawn from
# the generator it is given: no global random state), and `stacked_backward` multiplies the
# gradient on its way down by the same mask. In `npseq.nn` the layers draw their masks in
# training mode only; with the same generator they draw the same masks:

# %%
layer = GRU(D, H, num_layers=3, dropout=0.5, reset_after=True, rng=3, dtype="float64")
gru_params = [tuple(getattr(layer, f"{name}_l{index}").data for name in ("Wx", "Wh", "bx", "bh"))
              for index in range(3)]
masks = np.random.default_rng(5)
layer.dropout_rng = np.random.default_rng(5)
y_drop, drop_cache = stacked_forward(x, None, gru_params, "gru", reset_after=True, dropout=0.5, rng=masks)
print("dropped between layers 1-2 and 2-3:", ", ".join(f"{(m.mask == 0).mean():.0%}" for m in drop_cache.dropouts),
      "of the units; the top layer's outputs are never dropped")
out_drop, _ = layer(x)
print(f"nn.GRU(num_layers=3, dropout=0.5) in training mode, same generator: max |difference| "
      f"{np.abs(out_drop - y_drop).max():.1e}")
layer.eval()
out_eval, _ = layer(x)
y_eval, _ = stacked_forward(x, None, gru_params, "gru", reset_after=True)
print(f"in eval mode it drops nothing: max |difference| to dropout=0 {np.abs(out_eval - y_eval).max():.1e}")

# %% [markdown]
# ## Bidirectional RNNs
#
# Read left to right, $H_t$ summarises $X_1, \dots, X_t$ and nothing after. When the whole input is
# known before any output is due (a sentence to translate, words to tag), what follows a position
# is as informative as what precedes it. A bidirectional layer runs two independent recurrences,
# each with weights of its own, one forwards and one backwards in time,
#
# $$H_t^{\rightarrow} = f^{\rightarrow}\big(H_{t-1}^{\rightarrow}, X_t\big) \ (t = 1, \dots, T), \qquad
#   H_t^{\leftarrow} = f^{\leftarrow}\big(H_{t+1}^{\leftarrow}, X_t\big) \ (t = T, \dots, 1),$$
#
# and puts their states side by side, $Y_t = [H_t^{\rightarrow}; H_t^{\leftarrow}]$: $2H$ features
# that summarise the whole sequence as seen from step $t$. (It is the idea of the forward–backward
# algorithm of hidden Markov models: one pass collects each position's past, the other its
# future.) A layer stacked above reads those $2H$ features, so its $W_x$ has $2H$ rows.
#
# With padding, "backwards from $T$" would start a short sequence on its padding. The reverse
# direction must start at each sequence's own last token: npseq reverses each sequence *within
# its valid length* $\ell$, $\operatorname{rev}(a)_t = a_{\ell + 1 - t}$ for $t \le \ell$, leaves the
# padding where it is, runs the ordinary forward recurrence over $\operatorname{rev}(X)$ and reverses
# its outputs back (PyTorch's packed sequences do the same). On a toy batch whose entries are their
# own positions:

# %%
positions = np.tile(np.arange(1.0, 7.0), (3, 1))[:, :, None]  # (N, T, 1): every step holds its position
toy_lens = np.array([6, 4, 1])
for row, length in zip(reverse_sequences(positions, toy_lens)[..., 0], toy_lens):
    print(f"valid length {length}: the reverse direction reads positions {row.astype(int).tolist()}")
print(code(bidirectional_forward))

# %% [markdown]
# The backward splits the incoming gradient between the two halves of $Y$. The forward direction
# runs its backpropagation through time as usual, from step $T$ down to 1. The reverse direction
# ran over $\operatorname{rev}(X)$, so its backward runs over $\operatorname{rev}(dY^{\leftarrow})$, in
# its own time order: from what was its last step (step 1 of the sequence) back to its first
# (step $\ell$). Both directions read $X_t$, so $dX_t$ is the sum of what they send back, once the
# reverse direction's is put back in order:

# %%
print(equations(bidirectional_backward))
print(code(bidirectional_backward))

# %% [markdown]
# The checks, on a padded batch with an empty sequence and one of a single step: finite
# differences through a bidirectional GRU, and `nn.GRU(bidirectional=True)` given the same weights.

# %%
lens = np.array([5, 1, 0])
bi_layer = GRU(D, H, bidirectional=True, reset_after=True, rng=4, dtype="float64")
names = [[f"{name}_l0{suffix}" for name in ("Wx", "Wh", "bx", "bh")] for suffix in ("", "_reverse")]
bi_params = [tuple(getattr(bi_layer, name).data for name in group) for group in names]


def bi_forward(x, h0, *weights):
    y, cache = bidirectional_forward(x, h0, (weights[:4], weights[4:]), "gru", lens, reset_after=True)
    return y, cache.h_last, cache


def bi_backward(dy, dh_last, cache):
    grads = bidirectional_backward(dy, cache, dh_last)
    return (grads.dx, grads.dh0, *grads.dparams[0], *grads.dparams[1])


bi_h0 = 0.5 * rng.standard_normal((2, N, H))
weights = {name: weight for group, values in zip(names, bi_params) for name, weight in zip(group, values)}
report = check_function(bi_forward, bi_backward, {"x": x, "h0": bi_h0, **weights})
print(report)
assert report.ok
y_bi, bi_cache = bidirectional_forward(x, bi_h0, bi_params, "gru", lens, reset_after=True)
dy_bi = rng.standard_normal(y_bi.shape)
bi_grads = bidirectional_backward(dy_bi, bi_cache)
out_bi, final_bi = bi_layer(x, bi_h0, valid_lens=lens)
dx_bi, _ = bi_layer.backward(dy_bi)
print(f"nn.GRU(bidirectional=True) against bidirectional_forward/backward, max |difference|: outputs "
      f"{np.abs(out_bi - y_bi).max():.1e}, final states {np.abs(final_bi - bi_cache.h_last).max():.1e}, "
      f"dx {np.abs(dx_bi - bi_grads.dx).max():.1e}")

# %% [markdown]
# A bidirectional layer has a price beyond its doubled cost: its output at step $t$ depends on the
# whole sequence, so none of its outputs exists before the last input has been read. That is no
# obstacle when the input is complete before the work starts. It rules the layer out wherever the
# future is exactly what is missing, as in predicting the next token.
#
# ## A language model that reads the answer
#
# A language model is trained to predict $x_{t+1}$ from its output at step $t$. In a bidirectional
# layer, the reverse direction's state at step $t$ has read $x_T, \dots, x_{t+1}, x_t$: the answer
# is among its inputs, one step back in its own order. Under teacher forcing, every training
# window hands the model the characters it must predict, and the easiest solution is to copy.
# When it generates, there is no future to read: each new character goes in alone, the reverse
# direction sees that one character, and the copy has nothing to copy.
#
# npseq's `RNNLM` runs one direction; its bidirectional twin takes ten lines, the same embedding
# and output layer around `nn.GRU(bidirectional=True)` (the output layer reads $2H$ features).
# Both train with `train_lm` on windows of the character corpus of tutorial 4, each window from a
# zero state, with the same seed, optimizer and number of epochs, and both are scored on the
# validation text in two ways with `evaluate_perplexity`: in windows of the training length (the
# teacher-forced loss, what training reports), and one character at a time with the state carried
# over, which is how the models generate.

# %%
class BidirectionalLM(Module):
    """RNNLM's layout around a bidirectional GRU: embedding, both directions, a linear layer from [H→; H←]."""

    def __init__(self, vocab_size, num_hiddens, *, rng):
        super().__init__()
        self.vocab_size = vocab_size  # train_lm checks the ids against it
        self.embedding = Embedding(vocab_size, num_hiddens, rng=rng)
        self.rnn = make_rnn("gru", num_hiddens, num_hiddens, 1, 0.0, True, rng, None)
        self.dense = Linear(2 * num_hiddens, vocab_size, rng=rng)

    def forward(self, X, state=None):
        outputs, state = self.rnn(self.embedding(X), state)
        return self.dense(outputs), state

    def backward(self, dlogits, dstate=None):
        dembedded, dstate0 = self.rnn.backward(self.dense.backward(dlogits), dstate)
        self.embedding.backward(dembedded)
        return dstate0


LM_CHARS, LM_EPOCHS, LM_HIDDEN = (35_000, 2, 64) if FAST else (None, 4, 128)
LM_STEPS, LM_BATCH = 35, 32
ids, vocab = load_corpus(level="char", max_tokens=LM_CHARS)
train_ids, valid_ids = split_corpus(ids, 0.1)
print(f"{len(ids)} characters, |V| = {len(vocab)}; GRU, H = {LM_HIDDEN}; windows of {LM_STEPS} characters, "
      f"{LM_BATCH} a batch, {LM_EPOCHS} epochs")
language_models = {"unidirectional": RNNLM(len(vocab), LM_HIDDEN, cell="gru", rng=0),
                   "bidirectional": BidirectionalLM(len(vocab), LM_HIDDEN, rng=np.random.default_rng(0))}
scores = {}
for name, model in language_models.items():
    start = time.perf_counter()
    history = train_lm(model, SeqDataLoader(train_ids, LM_BATCH, LM_STEPS, partition="random", seed=0),
                       Adam(model.parameters(), lr=0.005), LM_EPOCHS, clip=1.0, progress=False)
    scores[name] = (evaluate_perplexity(model, valid_ids, LM_STEPS, 16), evaluate_perplexity(model, valid_ids, 1, 16))
    size = sum(p.data.size for p in model.parameters())
    print(f"{name:>14}: {size} parameters, trained in {time.perf_counter() - start:.1f} s, training perplexity "
          f"{history.train_ppl[-1]:.2f}; validation perplexity teacher-forced {scores[name][0]:.2f}, one character at "
          f"a time {scores[name][1]:.2f}")

(uni_forced, uni_alone), (bi_forced, bi_alone) = scores["unidirectional"], scores["bidirectional"]
print(f"bidirectional LM: teacher-forced perplexity {bi_forced:.2f}, unidirectional {uni_forced:.2f}: "
      f"the bidirectional one's is {1 - bi_forced / uni_forced:.0%} below")
print(f"read one character at a time, as it generates, the bidirectional LM's perplexity is {bi_alone:.2f}: "
      f"{bi_alone / uni_alone:.1f} times the unidirectional LM's {uni_alone:.2f}, and {bi_alone / len(vocab):.0%} of "
      f"uniform guessing's {len(vocab)}")
for name, model in language_models.items():
    print(f"--- {name}\n  greedy : {predict(model, 'the ', 80, vocab)!r}\n"
          f"  tau = 1: {predict(model, 'the ', 80, vocab, temperature=1.0, rng=1)!r}")

# %% [markdown]
# The teacher-forced perplexity of the bidirectional model is far below the unidirectional one's
# and close to the floor of 1, which no model of this size reaches on this text by understanding
# it. Read the way it must generate, one character at a time, the same model is several times
# worse than the unidirectional one, and worse even than guessing uniformly among the characters.
# Its samples show what it learnt: greedy decoding falls into a loop of two letters, and sampling
# gives next to no words. The unidirectional model, with fewer parameters, loops too when greedy,
# but it samples word-like strings between spaces and punctuation. A per-token loss under teacher
# forcing measures how well a model predicts what it was shown; only when the model cannot see
# its targets does it measure what the model will do on its own.
#
# ## Where a bidirectional layer belongs: the encoder
#
# A translator reads the whole source before it writes a word, so its encoder may read both ways.
# With `build_seq2seq(..., bidirectional=True)` the encoder's outputs have $2H$ features, and they
# are the keys and values that the decoder's attention reads; its final states, the forward
# direction's at the last token and the reverse direction's at the first, go through a
# `StateBridge`, $s_0 = \tanh([h^{\rightarrow}; h^{\leftarrow}] W_b + b_b)$, to start the decoder.
#
# The built-in task `reverse` asks for the source backwards. With attention, the $t$-th output is
# the source token at position $\ell + 1 - t$, so the decoder's query must find the key that is
# $t$ positions from the *end* of the source. A one-direction encoder's output at position $s$
# has read $s$ tokens and knows nothing of how many follow; the reverse direction's has read
# exactly those that follow. We train the Bahdanau translator of `npseq demo` twice, with a
# one-direction and with a bidirectional GRU encoder, on the same batches from the same seed, and
# measure the exact match on the test pairs after every epoch.

# %%
MT_EXAMPLES, MT_EPOCHS, MT_LR = (3000, 6, 0.003) if FAST else (None, 6, 0.003)
corpus = load_task("reverse", batch_size=64, num_examples=MT_EXAMPLES, seed=0)
print(f"reverse: {len(corpus.train_pairs)} training pairs, {len(corpus.test_pairs)} test pairs, "
      f"e.g. {' '.join(corpus.test_pairs[0][0])} -> {' '.join(corpus.test_pairs[0][1])}")


def train_translator(bidirectional):
    """The demo's Bahdanau translator with a one-direction or a bidirectional encoder: exact match per epoch."""
    model = build_seq2seq(len(corpus.src_vocab), len(corpus.tgt_vocab), seed=0,
                          **dict(DEMO_SETTINGS, bidirectional=bidirectional))
    curve = []

    def record(epoch, history):
        curve.append(evaluate_translations(model, corpus.test_pairs, corpus.src_vocab, corpus.tgt_vocab,
                                           src_len=corpus.num_steps[0], max_len=max(corpus.num_steps)).exact_match)

    batches = BatchIterator(corpus.train.arrays, corpus.train.batch_size, seed=0)
    train_seq2seq(model, batches, corpus.tgt_vocab, Adam(model.parameters(), lr=MT_LR), MT_EPOCHS, clip=1.0,
                  progress=False, on_epoch_end=record)
    return model, np.array(curve)


curves = {}
for name, bidirectional in (("one-direction", False), ("bidirectional", True)):
    start = time.perf_counter()
    model, curves[name] = train_translator(bidirectional)
    print(f"{name:>13} encoder, {sum(p.data.size for p in model.parameters())} parameters, "
          f"{time.perf_counter() - start:.1f} s: exact match after each epoch "
          + ", ".join(f"{value:.1%}" for value in curves[name]))


def first_epoch_at(curve, level=0.9):
    """The first epoch (from 1) whose exact match is at least ``level``; one past the last when none is."""
    reached = np.flatnonzero(curve >= level)
    return int(reached[0]) + 1 if reached.size else len(curve) + 1


one_way, both_ways = curves["one-direction"], curves["bidirectional"]
print(f"averaged over the {MT_EPOCHS} epochs, exact match: bidirectional {both_ways.mean():.1%}, one-direction "
      f"{one_way.mean():.1%}, {100 * (both_ways.mean() - one_way.mean()):.1f} points higher")
first = {name: first_epoch_at(curve) for name, curve in curves.items()}
shown = {name: str(epoch) if epoch <= MT_EPOCHS else f"none of the {MT_EPOCHS}" for name, epoch in first.items()}
lead = first["one-direction"] - first["bidirectional"]
print(f"first epoch at 90% exact match or more: bidirectional {shown['bidirectional']}, one-direction "
      f"{shown['one-direction']}; the bidirectional encoder is {lead} epoch{'s' if lead != 1 else ''} ahead"
      + (" or more" if first["one-direction"] > MT_EPOCHS else ""))

figure = Figure(figsize=(7.2, 4.2), layout="constrained")
FigureCanvasAgg(figure)
ax = figure.subplots()
epochs = np.arange(1, MT_EPOCHS + 1)
for (name, curve), marker in zip(curves.items(), ("s", "o")):
    ax.plot(epochs, 100 * curve, marker=marker, label=f"{name} encoder")
ax.set_xlabel("epoch")
ax.set_ylabel("exact match on the test pairs (%)")
ax.set_xticks(epochs)
ax.set_ylim(0, 100)
ax.grid(True, alpha=0.3)
ax.legend(loc="lower right")
ax.set_title("Bahdanau translator on the task reverse")
show(save_figure(figure, "11_bidirectional_encoder.png", alt=(
    "Exact match on the test pairs of the task reverse after each epoch, for the same attention translator "
    "with a one-direction encoder and with a bidirectional encoder: the bidirectional curve climbs to "
    "its plateau in fewer epochs and lies above the other one at most epochs.")))

# %% [markdown]
# The bidirectional encoder gets there in fewer epochs (the lines above give both curves and the
# first epoch at which each reaches 90%): half of each of its keys has read the source from its
# end, which is where a reversal counts from. It also has more parameters, twice the encoder's
# recurrent weights and the bridge; the last exercise asks how much of its lead that buys. This
# is the bidirectional layer's place: wherever the whole input is available before the output
# starts (encoders, taggers, filling in a blank), and never where the output at step $t$ must
# not depend on what comes after it.

# %% [markdown]
# ## Summary
#
# * A deep RNN stacks layers: $H_t^{(l)} = f_l(H_{t-1}^{(l)}, H_t^{(l-1)})$, each layer with its own
#   weights and state. Its states form a grid of layers by steps, and any order that computes a
#   state after its left and lower neighbours gives the same numbers.
# * The gradient reaching a state is the sum of what the layer above sends at the same step and
#   what the next step of the same layer sends back. Layer by layer, this is one backpropagation
#   through time per layer, each fed with the input gradient of the layer above.
# * Summed over every path from the loss, the gradient fades both back in time and down the
#   layers. An update gate set to keep a layer's state carries it far back in time and, with the
#   same factor, shuts the way down to the layer below.
# * Dropout goes between layers only, with one explicit generator; the recurrence is left intact.
# * A bidirectional layer runs a second recurrence backwards, over each sequence reversed within
#   its own length, and concatenates the two states; its backward splits the gradient in two,
#   runs each direction backward in its own time order and adds the input gradients.
# * Every output of a bidirectional layer depends on the whole input. That is right for an
#   encoder, whose input is complete, and wrong for a language model: under teacher forcing it
#   reads the answer, and what it generates shows it has learnt nothing it can use.
#
# ## Exercises
#
# 1. Count the parameters of a stacked bidirectional GRU with $L$ layers, $D$ inputs and $H$ hidden
#    units, with npseq's two biases per layer and direction, and check your formula against
#    `npseq.nn.make_rnn_parameters`.
# 2. Rewrite the hand-written backward of the stacked layer with the loops the other way round
#    (layers outside, steps inside) and check it against `stacked_backward`. Which intermediate
#    gradients does each order have to keep at once, and how many numbers is that for $L$ layers,
#    $T$ steps, $N$ sequences and $H$ units?
# 3. In the grid experiment, put the loss on every step of the top layer instead of the last one.
#    Which row of the grid is now the darkest, and which column? Explain with the two sources of
#    $G_t^{(l)}$.
# 4. Add a residual connection to a copy of `stacked_forward`: layer $l + 1$ reads
#    $H_t^{(l)} + H_t^{(l-1)}$ (for $l \ge 1$, with equal sizes). Derive the change to the backward,
#    write it in a copy of `stacked_backward`, check it with finite differences, and draw the grid
#    of the GRU with biased update gates again: how much does a layer down cost now?
# 5. Turn the cheating language model into an honest fill-in-the-blank model: predict $x_t$ from
#    the forward state at $t - 1$ and the reverse state at $t + 1$. Which outputs of the
#    bidirectional layer does the output layer read now, and what is its perplexity on the
#    validation text? Why can it still not generate text?
# 6. Give the bidirectional encoder of the translator fewer hidden units than the one-direction
#    encoder, so that both have about as many parameters. Is it still ahead on `reverse`? Then
#    train both with the plain decoder (`decoder="plain"`), whose only view of the source is the
#    bridged final state: is the bidirectional encoder still ahead? What does a reversal need
#    from that one state, and what does each encoder put into it?
