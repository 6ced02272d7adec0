# %% [markdown]
# # 3. Gates: the GRU and the LSTM
#
# Tutorial 2 ended with a diagnosis: in a vanilla RNN the gradient that reaches a state
# $k$ steps back is a product of $k$ Jacobians $\operatorname{diag}(\tanh') W_h^\top$, so it
# shrinks or grows geometrically, and the network has no say in the matter once $W_h$
# is fixed. Gated cells change the question. They add a path from $h_{t-1}$ (or a cell
# state $c_{t-1}$) to the next step whose gain is an elementwise number between 0 and 1,
# computed from the current input and state. The cell can then decide, unit by unit
# and step by step, to keep what it holds (gain near 1) or to overwrite it (gain near 0).
#
# This tutorial writes out the two standard gated cells, the GRU (in both of its
# published forms) and the LSTM, summarises their backward passes, checks them, and
# measures how far back the gradient reaches compared with the vanilla RNN.

# %%
import numpy as np
from _common import FAST, code, equations, save_figure, show
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from npseq.functional import (
    gru_backward,
    gru_forward,
    gru_step_backward,
    gru_step_forward,
    lstm_backward,
    lstm_forward,
    lstm_step_backward,
    lstm_step_forward,
    sigmoid,
)
from npseq.gradcheck import check_function, check_module
from npseq.nn import GRU, LSTM, RNN

rng = np.random.default_rng(0)


# %% [markdown]
# ## The GRU
#
# Gate order in npseq is $[r, z, n]$: the weights $W_x \in \mathbb{R}^{D \times 3H}$,
# $W_h \in \mathbb{R}^{H \times 3H}$ and the biases $b_x, b_h \in \mathbb{R}^{3H}$ hold one block of
# $H$ columns per gate. With $h = h_{t-1}$,
#
# $$r = \sigma(x W_{xr} + b_{xr} + h W_{hr} + b_{hr}), \qquad z = \sigma(x W_{xz} + b_{xz} + h W_{hz} + b_{hz}),$$
#
# the *reset* gate $r$ decides how much of the old state enters the candidate $n$, and
# the *update* gate $z$ interpolates between keeping the old state and taking the
# candidate:
#
# $$h_t = (1 - z) \odot n + z \odot h.$$
#
# For the candidate there are two published forms, and they are different functions,
# not two ways of writing the same one:
#
# * reset before (Cho et al. 2014):
#
#   $$n = \tanh\big(x W_{xn} + b_{xn} + (r \odot h) W_{hn} + b_{hn}\big),$$
#
# * reset after (cuDNN, PyTorch, Keras):
#
#   $$n = \tanh\big(x W_{xn} + b_{xn} + r \odot (h W_{hn} + b_{hn})\big).$$
#
# `gru_step_forward` implements both (`reset_after=False` is the textbook form), one line
# per equation; `r_`, `z_`, `n_` name the three column blocks of the weights:

# %%
print(equations(gru_step_forward))
print(code(gru_step_forward))

# %% [markdown]
# ### Why cuDNN resets after the product
#
# Look at what each form must compute in sequence at every step. With reset before,
# the product $(r \odot h) W_{hn}$ needs $r$, and $r$ needs the product $h W_{hr}$; so each
# step has two matrix products, one waiting for the other (and a sigmoid) to finish.
# With reset after, the three gate products of $h$, namely $h W_{hr}$, $h W_{hz}$, $h W_{hn}$,
# no longer depend on $r$: they are the three column blocks of *one* product
# $h W_h$ of shape $(N, H) \times (H, 3H)$, computed as soon as $h_{t-1}$ is known, and
# everything after it is elementwise. One large matrix product per step followed by a
# single fused elementwise kernel is what a GPU does best, and it is the form cuDNN
# implements (the input products $x_t W_x$ of all steps are, in both forms, one big
# product before the loop).
#
# The price is a second bias: $b_{hn}$ sits inside $r \odot (\cdot)$ and can no longer be
# merged with $b_{xn}$. That is why PyTorch's GRU has both `bias_ih` and `bias_hh`, and why
# npseq's GRU keeps `bx` and `bh` apart.
#
# Let us verify the claim: rebuild a reset-after step from a single product `h @ Wh` and
# compare it with `gru_step_forward`. Then feed the same weights to the other variant
# to see that the two really differ.

# %%
N, D, H = 3, 4, 5
x = rng.standard_normal((N, D))
h = rng.standard_normal((N, H))
Wx, Wh = 0.5 * rng.standard_normal((D, 3 * H)), 0.5 * rng.standard_normal((H, 3 * H))
bx, bh = 0.1 * rng.standard_normal(3 * H), 0.1 * rng.standard_normal(3 * H)

hW = h @ Wh + bh          # the one product of the step, all three gates: (N, 3H)
xW = x @ Wx + bx          # independent of the state: for a sequence, done for all steps at once
r = sigmoid(xW[:, :H] + hW[:, :H])
z = sigmoid(xW[:, H:2 * H] + hW[:, H:2 * H])
n = np.tanh(xW[:, 2 * H:] + r * hW[:, 2 * H:])
by_hand = (1 - z) * n + z * h

after, _ = gru_step_forward(x, h, Wx, Wh, bx, bh, reset_after=True)
before, _ = gru_step_forward(x, h, Wx, Wh, bx, bh, reset_after=False)
print("reset after, from one product: max difference to gru_step_forward", np.abs(by_hand - after).max())
print("same weights, reset before vs after: max difference", np.abs(before - after).max())

# %% [markdown]
# ## The LSTM
#
# The LSTM keeps two states: the hidden state $h_t$ (its output) and a cell state
# $c_t$ (its memory). Gate order in npseq is $[i, f, o, g]$, one product for all four:
#
# $$\begin{aligned}
#   a &= x W_x + h_{t-1} W_h + b = [a_i, a_f, a_o, a_g], \\
#   i, f, o &= \sigma(a_i), \sigma(a_f), \sigma(a_o), \qquad g = \tanh(a_g), \\
#   c_t &= f \odot c_{t-1} + i \odot g, \qquad h_t = o \odot \tanh(c_t).
# \end{aligned}$$
#
# The input gate $i$ admits the candidate $g$, the forget gate $f$ keeps the old memory
# and the output gate $o$ decides how much of the memory is shown. The memory update
# is the heart of the design: along the cell path,
#
# $$\frac{\partial c_t}{\partial c_{t-1}} = \operatorname{diag}(f_t) \quad (\text{plus terms through the gates}),$$
#
# no matrix product and no squashing function: the gain from one step to the next is
# the forget gate itself. When $f \approx 1$ the gradient flows back through many steps
# unchanged. The GRU has the same structure in its update:
# $\partial h_t / \partial h_{t-1} \ni \operatorname{diag}(z_t)$.

# %%
print(equations(lstm_step_forward))
print(code(lstm_step_forward))

# %% [markdown]
# ## Every tensor of one step, with its shape
#
# A shape is the first check of any formula. Here is every tensor that one step reads,
# computes and returns, forward and backward, for $N = 3$ examples, $D = 4$ input
# features and $H = 5$ hidden units (so $3H = 15$ and $4H = 20$; every size is different,
# so each column can be traced back to its letter). The table is built from the arrays
# themselves, and the cell asserts that each one has the shape written next to it.

# %%
N_TAB, D_TAB, H_TAB = 3, 4, 5
SIZES = {"N": N_TAB, "D": D_TAB, "H": H_TAB, "3H": 3 * H_TAB, "4H": 4 * H_TAB}


def shape_table(title, rows):
    """Print ``(name, array, layout, meaning)`` rows; assert each array has the layout's shape."""
    print(f"{title}\n{'tensor':<9} {'layout':<8} {'shape':<8} meaning")
    for name, array, layout, meaning in rows:
        expected = tuple(SIZES[part] for part in layout.strip("()").replace(" ", "").split(",") if part)
        assert array.shape == expected, (name, array.shape, layout)
        print(f"{name:<9} {layout:<8} {str(array.shape):<8} {meaning}")
    print()


t_rng = np.random.default_rng(1)
tx, th, tc = (t_rng.standard_normal(shape) for shape in [(N_TAB, D_TAB), (N_TAB, H_TAB), (N_TAB, H_TAB)])
gWx, gWh = t_rng.standard_normal((D_TAB, 3 * H_TAB)), t_rng.standard_normal((H_TAB, 3 * H_TAB))
gbx, gbh = t_rng.standard_normal(3 * H_TAB), t_rng.standard_normal(3 * H_TAB)
g_next, g_cache = gru_step_forward(tx, th, gWx, gWh, gbx, gbh, reset_after=True)
g_grads = gru_step_backward(np.ones_like(g_next), g_cache)
shape_table("GRU step (reset after)", [
    ("x", tx, "(N, D)", "input of this step"),
    ("prev_h", th, "(N, H)", "previous state h"),
    ("Wx", gWx, "(D, 3H)", "input weights, blocks [r, z, n]"),
    ("Wh", gWh, "(H, 3H)", "recurrent weights, blocks [r, z, n]"),
    ("bx, bh", gbx, "(3H)", "the two biases"),
    ("r", g_cache.r, "(N, H)", "reset gate"),
    ("z", g_cache.z, "(N, H)", "update gate"),
    ("hn", g_cache.hn, "(N, H)", "h W_hn + b_hn, what r scales"),
    ("n", g_cache.n, "(N, H)", "candidate state"),
    ("next_h", g_next, "(N, H)", "(1 - z) n + z h"),
    ("dx", g_grads[0], "(N, D)", "backward: gradient of x"),
    ("dprev_h", g_grads[1], "(N, H)", "backward: gradient of h"),
    ("dWx", g_grads[2], "(D, 3H)", "backward: the shape of Wx, as every weight gradient"),
    ("dWh", g_grads[3], "(H, 3H)", "backward"),
    ("dbx, dbh", g_grads[4], "(3H)", "backward: summed over the batch"),
])
lWx, lWh, lb = t_rng.standard_normal((D_TAB, 4 * H_TAB)), t_rng.standard_normal((H_TAB, 4 * H_TAB)), \
    t_rng.standard_normal(4 * H_TAB)
l_h, l_c, l_cache = lstm_step_forward(tx, th, tc, lWx, lWh, lb)
l_grads = lstm_step_backward(np.ones_like(l_h), np.ones_like(l_c), l_cache)
shape_table("LSTM step", [
    ("x", tx, "(N, D)", "input of this step"),
    ("prev_h", th, "(N, H)", "previous hidden state"),
    ("prev_c", tc, "(N, H)", "previous cell state"),
    ("Wx", lWx, "(D, 4H)", "input weights, blocks [i, f, o, g]"),
    ("Wh", lWh, "(H, 4H)", "recurrent weights, blocks [i, f, o, g]"),
    ("b", lb, "(4H)", "bias"),
    ("i, f, o", l_cache.i, "(N, H)", "input, forget and output gates"),
    ("g", l_cache.g, "(N, H)", "candidate cell"),
    ("next_c", l_c, "(N, H)", "f c + i g"),
    ("tanh_c", l_cache.tanh_c, "(N, H)", "tanh(next_c), kept for the backward"),
    ("next_h", l_h, "(N, H)", "o tanh(next_c)"),
    ("dx", l_grads[0], "(N, D)", "backward"),
    ("dprev_h", l_grads[1], "(N, H)", "backward"),
    ("dprev_c", l_grads[2], "(N, H)", "backward: dc f, the memory path"),
    ("dWx", l_grads[3], "(D, 4H)", "backward"),
    ("dWh", l_grads[4], "(H, 4H)", "backward"),
    ("db", l_grads[5], "(4H)", "backward: summed over the batch"),
])

# %% [markdown]
# ## The backward passes, in summary
#
# Both backwards follow the recipe of tutorial 2: go through the forward equations
# in reverse, multiply by the local derivative of each nonlinearity
# ($\sigma' = \sigma(1 - \sigma)$, $\tanh' = 1 - \tanh^2$, both computed from the stored
# activations), and finish with the same three products as the vanilla RNN,
# $dx = da W_x^\top$, $dh_{t-1} \mathrel{+}= da W_h^\top$, $dW = (\text{input})^\top da$, on the
# stacked pre-activation gradients $da$.
#
# **LSTM.** The gradient reaching the cell state has two sources, the next cell state
# and the output $h_t = o \odot \tanh(c_t)$:
# $dc = dc_{t} + dh_t \odot o \odot (1 - \tanh^2 c_t)$. Each gate's pre-activation gradient is
# then $dc$ (or $dh_t$ for $o$) times the other factor of its product times its own
# derivative, e.g. $da_f = dc \odot c_{t-1} \odot f(1 - f)$, and the memory passes
# $dc_{t-1} = dc \odot f$ to the previous step.
#
# **GRU.** With $h_t = n + z \odot (h - n)$: $dn = dh_t \odot (1 - z)$, $da_z = dh_t \odot (h - n) \odot z(1-z)$,
# and $h$ receives $dh_t \odot z$ directly. The two variants differ only in the reset gate.
# Before: the input of $W_{hn}$ is $\rho = r \odot h$, so $d\rho = da_n W_{hn}^\top$ splits into
# $dr = d\rho \odot h$ and a contribution $d\rho \odot r$ to $dh$. After: $r$ scales
# $\eta = h W_{hn} + b_{hn}$, so $dr = da_n \odot \eta$, and the hidden-side pre-activation
# gradient is $[da_r, da_z, da_n \odot r]$, which again meets $W_h$ in one product.
#
# The docstrings give every line, and the code follows them one line each:

# %%
print(equations(lstm_step_backward))
print(code(lstm_step_backward))
print(equations(gru_step_backward))
print(code(gru_step_backward))

# %% [markdown]
# ## Gradient checks
#
# Every backward above, against centred finite differences in float64: the step
# functions, the whole-sequence functions (which also check the gradient that flows
# from step to step), and a stacked LSTM layer with its `(h, c)` state. The inputs
# are moderate in size so that no gate saturates (a saturated sigmoid has a gradient
# too small for finite differences to resolve, whatever the backward).

# %%
T = 4
xs = rng.standard_normal((N, T, D))
reports = {}
for reset_after in (False, True):
    reports[f"gru_step (reset_after={reset_after})"] = check_function(
        gru_step_forward, gru_step_backward, {"x": x, "prev_h": h, "Wx": Wx, "Wh": Wh, "bx": bx, "bh": bh},
        kwargs={"reset_after": reset_after})
    reports[f"gru_forward (reset_after={reset_after})"] = check_function(
        gru_forward, gru_backward, {"x": xs, "h0": h, "Wx": Wx, "Wh": Wh, "bx": bx, "bh": bh},
        kwargs={"reset_after": reset_after})
W4x, W4h = 0.5 * rng.standard_normal((D, 4 * H)), 0.5 * rng.standard_normal((H, 4 * H))
b4 = 0.1 * rng.standard_normal(4 * H)
reports["lstm_step"] = check_function(lstm_step_forward, lstm_step_backward,
                                      {"x": x, "prev_h": h, "prev_c": rng.standard_normal((N, H)),
                                       "Wx": W4x, "Wh": W4h, "b": b4})
reports["lstm_forward"] = check_function(lstm_forward, lstm_backward, {"x": xs, "h0": h, "Wx": W4x, "Wh": W4h, "b": b4})
reports["nn.LSTM, 2 layers"] = check_module(LSTM(D, H, num_layers=2, rng=0, dtype="float64"),
                                            {"x": xs[:, :3], "state": (rng.standard_normal((2, N, H)),
                                                                       rng.standard_normal((2, N, H)))})
for name, report in reports.items():
    print(f"--- {name}\n{report}\n")
assert all(report.ok for report in reports.values())

# %% [markdown]
# ## How far back does the gradient reach?
#
# The same measurement as in tutorial 2, now for the three cells side by side: a
# sequence of $T = 50$ steps, the loss on the last state only, and the norm of
# $g_t = \partial L / \partial h_t$ at every step. All three layers get the same inputs, the
# same hidden size, the same upstream gradient and npseq's default initialisation
# (every weight and bias uniform in $\pm 1/\sqrt{H}$).
#
# We run the comparison twice. First at the default initialisation. Then with the
# gates biased towards remembering: $+2$ on the bias of the GRU's update gate $z$
# (so $z \approx \sigma(2) \approx 0.88$ and the state is mostly kept) and $+2$ on the bias of the
# LSTM's forget gate $f$ (the classic trick of Gers et al. 2000 and Jozefowicz et al. 2015,
# usually with $+1$). The vanilla RNN has no gate to bias; it is drawn in both panels as
# the reference.

# %%
T_FLOW = 50
N_FLOW, D_FLOW, H_FLOW = (4, 8, 16) if FAST else (16, 16, 64)
x_flow = rng.standard_normal((N_FLOW, T_FLOW, D_FLOW))
d_last = np.zeros((N_FLOW, T_FLOW, H_FLOW))
d_last[:, -1] = rng.standard_normal((N_FLOW, H_FLOW)) / np.sqrt(N_FLOW * H_FLOW)


def make(cell):
    kinds = {"RNN": RNN, "GRU": lambda *a, **k: GRU(*a, reset_after=True, **k), "LSTM": LSTM}
    return kinds[cell](D_FLOW, H_FLOW, rng=1, dtype="float64")


def remember(layer, cell, shift=2.0):
    """Bias the gate that keeps the state: z (block 1 of the GRU's bx), f (block 1 of the LSTM's b)."""
    if cell == "GRU":
        layer.bx_l0.data[H_FLOW:2 * H_FLOW] += shift
    elif cell == "LSTM":
        layer.b_l0.data[H_FLOW:2 * H_FLOW] += shift


def step_norms(layer):
    layer.record_step_norms = True
    layer(x_flow)
    layer.backward(d_last)
    return layer.step_grad_norms[0, 0]


flow = {}
for setting in ("default", "remember"):
    for cell in ("RNN", "GRU", "LSTM"):
        layer = make(cell)
        if setting == "remember":
            remember(layer, cell)
        flow[setting, cell] = step_norms(layer)
print(f"{'setting':<9} {'cell':<5} {'||g_T||':>8} {'||g_T-10||':>11} {'||g_T-25||':>11} {'||g_1||':>9}")
for (setting, cell), norms in flow.items():
    print(f"{setting:<9} {cell:<5} {norms[-1]:>8.3f} {norms[-11]:>11.2e} {norms[-26]:>11.2e} {norms[0]:>9.2e}")

# %%
fig = Figure(figsize=(7.2, 7.6), layout="constrained")
FigureCanvasAgg(fig)
axes = fig.subplots(2, 1, sharex=True, sharey=True)
titles = {"default": "default initialisation",
          "remember": "gate biases +2 (GRU update $z$, LSTM forget $f$)"}
for ax, setting in zip(axes, ("default", "remember")):
    for cell, colour in (("RNN", "C0"), ("GRU", "C1"), ("LSTM", "C2")):
        ax.semilogy(range(T_FLOW), flow[setting, cell], color=colour, marker="o", markersize=2.5, label=cell)
    ax.set_title(titles[setting])
    ax.set_ylabel(r"$\|\partial L / \partial h_t\|$")
    ax.grid(True, which="both", alpha=0.3)
axes[1].set_xlabel(f"time step $t$ (loss at $t = {T_FLOW - 1}$)")
fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=3,
           title=f"gradient flow over {T_FLOW} steps, H = {H_FLOW}")
show(save_figure(fig, "03_gradient_flow_rnn_gru_lstm.png", alt="The norm of the gradient with respect to the "
                 "state h_t against the time step t, on a log scale, for a vanilla RNN, a GRU and an LSTM, at the "
                 "default initialisation above and with the gates biased to remember below. Above, all three "
                 "curves fall steadily back in time; below, the GRU and LSTM curves fall only slowly while the "
                 "RNN's falls as steeply as before."))

# %% [markdown]
# What the two panels say:
#
# * **At the default initialisation the gates do not rescue the gradient by
#   themselves.** All three curves fall geometrically. The gated cells fall more slowly
#   than the RNN, but their gates start near $\sigma(0) = 0.5$, so the carry path halves the
#   gradient at every step: after 50 steps that is a factor of about $10^{-15}$ on that path
#   alone. Gates make long memory *possible*, not automatic.
# * **With the gates biased towards remembering, the gradient survives the 50 steps**:
#   the GRU and LSTM curves lose about two orders of magnitude over the 50 steps, the
#   RNN's about fourteen. The carry path now has a gain near 1 per step, and it is
#   elementwise: no $W_h$ product, no $\tanh'$ squashing on the way. During training, the
#   network sets these gains itself, per unit and per step, from the data.
# * The LSTM curve drops once, at the last step, before it flattens: the loss sees
#   $h_T = o \odot \tanh(c_T)$, so the gradient has to pass the output gate and $\tanh'$ to
#   enter the memory path, and only then rides the forget gates back in time.
# * The gradient never explodes through the carry path: its gain is a sigmoid, at most 1.
#   (It can still grow through the other paths, which is why the training loops clip.)
#
# ## Summary
#
# * The GRU interpolates between the old state and a candidate with an update gate;
#   the LSTM keeps a separate memory cell updated by forget and input gates.
# * The GRU's reset-after form makes all of a step's products of $h$ one matrix product
#   computed before $r$ is known, which is why cuDNN, PyTorch and Keras use it; it needs
#   a separate bias $b_{hn}$.
# * Their backward passes are the chain rule through elementwise products and one set
#   of matrix products per step, and every piece passes a finite-difference check.
# * The gradient reaching far-back steps depends on the gate values: with gates near 0.5
#   it still vanishes, with gates biased to remember it survives 50 steps.
#
# ## Exercises
#
# 1. Show that the two GRU variants coincide when $r = 1$ everywhere (the bias $b_{hn}$
#    included). For $r < 1$, what does $r$ scale in each variant, and how does that treat
#    $b_{hn}$: with $r = 0$, which variant still adds $b_{hn}$ to the candidate?
# 2. Derive $da_r$ for the reset-before GRU by hand and compare with the docstring of
#    `gru_step_backward`. Then derive it for reset after.
# 3. Count the floating-point operations of one GRU step in each variant. Are they
#    different? If not, where does the speed advantage of reset after come from?
# 4. In the experiment, vary the forget-gate bias of the LSTM over $0, 1, 2, 4$ and plot
#    $\|g_1\|$ against the bias. Predict the slope of each curve from $\sigma(b_f)$ before
#    running it.
# 5. The LSTM measurement above is $\partial L / \partial h_t$. Record the gradient of the
#    cell state $c_t$ instead (write a loop over `lstm_step_forward` and `lstm_step_backward`).
#    Which of the two decays more slowly, and why?
# 6. Set $z = 1$ for every unit of a GRU (a huge bias). What does the layer compute, what
#    is $\partial L / \partial h_1$, and why can it still not learn anything?
