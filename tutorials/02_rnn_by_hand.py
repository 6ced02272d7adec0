# %% [markdown]
# # 2. The recurrent network by hand: forward, backpropagation through time, clipping
#
# An n-gram model (tutorial 1) forgets everything older than $n-1$ tokens, and its
# table of counts grows exponentially with $n$. A recurrent network instead keeps a
# fixed-size *state* $h_t$ that it updates at every step, so in principle its
# prediction can depend on the whole history at a constant cost per token.
#
# This tutorial answers three questions:
#
# 1. What exactly does one step compute, and what does its backward compute?
# 2. How does the gradient of a loss at step $T$ reach step $1$ (backpropagation
#    through time, BPTT), and why does it shrink or grow geometrically on the way?
# 3. What does gradient clipping do about the growth?

# %%
import numpy as np
from _common import FAST, code, equations, save_figure, show

from npseq.functional import fast_recurrent, rnn_backward, rnn_forward, rnn_step_backward, rnn_step_forward
from npseq.gradcheck import check_function, check_module, rel_error
from npseq.nn import RNN
from npseq.optim import clip_grad_norm
from npseq.viz import plot_grad_norms

rng = np.random.default_rng(0)

# %% [markdown]
# ## The forward pass
#
# npseq uses row vectors, batch first. With a batch of $N$ inputs $x_t \in \mathbb{R}^{N \times D}$
# and states $h_t \in \mathbb{R}^{N \times H}$, one step of the vanilla (Elman) RNN is
#
# $$a_t = x_t W_x + h_{t-1} W_h + b, \qquad h_t = \tanh(a_t),$$
#
# with $W_x \in \mathbb{R}^{D \times H}$, $W_h \in \mathbb{R}^{H \times H}$, $b \in \mathbb{R}^{H}$
# shared by all steps. Over a sequence $x \in \mathbb{R}^{N \times T \times D}$ the step is
# applied for $t = 1, \dots, T$ from a given $h_0$. A language model then reads each
# $h_t$ through an output layer, $z_t = h_t W_o + b_o$, and pays the cross-entropy
# $\ell_t = -\log \operatorname{softmax}(z_t)_{x_{t+1}}$; for the backward pass all we
# need from that head is the gradient $\partial \ell_t / \partial h_t$ it sends down.
#
# The step is those two equations, one line each (here and below, npseq's code is
# printed as it stands in its file, docstring aside: one call checks the arguments,
# `xp` is the array module, NumPy or CuPy, and the rest is the maths):

# %%
print(code(rnn_step_forward))

# %% [markdown]
# Over a sequence, `rnn_forward` calls the step at every $t$. It also takes optional
# `valid_lens`: in a batch of sentences of different lengths, the steps past a sentence's
# end are padding, and there the state is carried over unchanged and the output is zero,
# $h_t = m_t \tilde h_t + (1 - m_t) h_{t-1}$ and $y_t = m_t \tilde h_t$ with $m_t = 1$ at a real
# token and $0$ at padding. Without `valid_lens` every $m_t = 1$:

# %%
print(code(rnn_forward))

# %% [markdown]
# That loop is the *reference*: the code to read. The layers of `npseq.nn` run a twin of
# it, `npseq.functional.fast_recurrent.rnn_sequence_forward`, which computes the same numbers
# arranged for speed: the input projections $x_t W_x$ of all $T$ steps in one matrix
# product before the loop (they do not depend on the state), every state in one
# preallocated array, in-place updates. The test suite holds the twin equal to the
# reference to $10^{-12}$. Both, and a loop of our own over `rnn_step_forward`, must give the
# same states:

# %%
N, T, D, H = 3, 5, 4, 6
x = rng.standard_normal((N, T, D))
h0 = rng.standard_normal((N, H))
Wx, Wh, b = 0.5 * rng.standard_normal((D, H)), 0.5 * rng.standard_normal((H, H)), 0.1 * rng.standard_normal(H)

h_seq, cache = rnn_forward(x, h0, Wx, Wh, b)
h_fast, fast_cache = fast_recurrent.rnn_sequence_forward(x, h0, Wx, Wh, b)
h, step_caches, looped = h0, [], []
for t in range(T):
    h, step_cache = rnn_step_forward(x[:, t], h, Wx, Wh, b)
    step_caches.append(step_cache)
    looped.append(h)
print("states:", h_seq.shape, " max |rnn_forward - loop of steps| =", np.abs(h_seq - np.stack(looped, 1)).max())
print("                    max |fast twin - rnn_forward|    =", np.abs(h_fast - h_seq).max())
print("the cache is a named tuple:", type(cache).__name__, cache._fields,
      "with one", type(cache.steps[0]).__name__, cache.steps[0]._fields, "per step")

# %% [markdown]
# ## The backward of one step
#
# Let $dh_t = \partial L / \partial h_t$ be the gradient arriving at the output of the
# step. Since $\tanh'(a) = 1 - \tanh^2(a)$ we never need $a_t$ itself, only $h_t$:
#
# $$da_t = dh_t \odot (1 - h_t \odot h_t).$$
#
# The pre-activation is linear in everything else, so each gradient is a product with
# $da_t$ (shapes in brackets):
#
# $$\begin{aligned}
#   dx_t &= da_t W_x^\top\ [N \times D], & dh_{t-1} &= da_t W_h^\top\ [N \times H], \\
#   dW_x &= x_t^\top da_t\ [D \times H], & dW_h &= h_{t-1}^\top da_t\ [H \times H], \qquad
#   db = \textstyle\sum_n da_{t,n}\ [H].
# \end{aligned}$$
#
# A useful check of any such formula: each weight gradient has the shape of its
# weight, and a sum over the batch appears exactly where the weight is shared by
# the batch. npseq's step backward is those five products:

# %%
print(code(rnn_step_backward))

# %% [markdown]
# ## Backpropagation through time
#
# The loss of a sequence is a sum over steps, $L = \sum_{t=1}^{T} \ell_t(h_t)$. The state
# $h_t$ influences $L$ in two ways: directly, through $\ell_t$, and through every later
# state, via $h_{t+1}$. Writing $g_t = \partial L / \partial h_t$ for the *total* gradient
# at $h_t$ and $dh_t = \partial \ell_t / \partial h_t$ for the direct part, the chain rule gives
# the backward recurrence
#
# $$g_T = dh_T, \qquad g_t = dh_t + \underbrace{\big(g_{t+1} \odot (1 - h_{t+1}^2)\big)}_{da_{t+1}} W_h^\top
#   \quad (t = T-1, \dots, 1),$$
#
# and $\partial L / \partial h_0 = da_1 W_h^\top$. It runs backwards in time, one step
# backward per step, each fed with $g_t$ in place of $dh_t$. Because the weights are
# shared by all steps, their gradients are the sums of the per-step ones:
#
# $$dW_x = \sum_{t} x_t^\top da_t, \qquad dW_h = \sum_{t} h_{t-1}^\top da_t, \qquad db = \sum_{t}\sum_n da_{t,n}.$$
#
# That is all of BPTT. Unrolling the recurrence shows where the trouble comes from. With
# $D_j = \operatorname{diag}(1 - h_j^2)$ (per example), the part of $g_t$ that comes from the
# loss at a later step $s$ is
#
# $$g_t \ni dh_s \, D_s W_h^\top \, D_{s-1} W_h^\top \cdots D_{t+1} W_h^\top,$$
#
# a product of $s - t$ Jacobians. Since $0 < \tanh' \le 1$, its norm is at most
# $\|dh_s\| \, \sigma_{\max}(W_h)^{s-t}$: if the largest singular value of $W_h$ is below 1,
# the contribution of a loss $s - t$ steps away *vanishes* geometrically, and the
# network cannot learn dependencies that long. If $W_h$ is large and the units are not
# saturated, the product can instead *explode* geometrically.
#
# Here is BPTT written with npseq's step backward, checked against `rnn_backward` (the
# reference, the same loop with padding) and against the fast twin that the layers run,
# which splits it into a loop for the data gradients and one matrix product per weight
# after it ($dW_h = \sum_t h_{t-1}^\top da_t$ is one product of $(H, T N)$ by $(T N, H)$):

# %%
dh = rng.standard_normal((N, T, H))  # dh_t: the direct gradient of every state
grads = {"dx": np.zeros_like(x), "dWx": np.zeros_like(Wx), "dWh": np.zeros_like(Wh), "db": np.zeros_like(b)}
g_next = np.zeros((N, H))  # the gradient arriving from step t+1 (none after the last step)
for t in reversed(range(T)):
    dx_t, g_next, dWx_t, dWh_t, db_t = rnn_step_backward(dh[:, t] + g_next, step_caches[t])
    grads["dx"][:, t] = dx_t
    grads["dWx"] += dWx_t
    grads["dWh"] += dWh_t
    grads["db"] += db_t
dx, dh0, dWx, dWh, db = rnn_backward(dh, cache)
fast = fast_recurrent.rnn_sequence_backward_data(dh, fast_cache)
fast_weights = fast_recurrent.rnn_sequence_backward_weights([fast_cache], [fast.dA])
for name, mine, theirs, twin in (("dx", grads["dx"], dx, fast.dx), ("dh0", g_next, dh0, fast.dh0),
                                 ("dWx", grads["dWx"], dWx, fast_weights[0]),
                                 ("dWh", grads["dWh"], dWh, fast_weights[1]), ("db", grads["db"], db, fast_weights[2])):
    print(f"{name:>4}: relative error of the hand loop to rnn_backward {rel_error(mine, theirs):.1e}, "
          f"to the fast twin {rel_error(mine, twin):.1e}")

# %% [markdown]
# `rnn_backward` states the same recurrence, with the mask $m_t$ for padded steps (a
# padded step passes its gradient $g_t$ straight back to $h_{t-1}$, since it passed the state
# through unchanged), and its code is that loop:

# %%
print(equations(rnn_backward))
print(code(rnn_backward))

# %% [markdown]
# ## Gradient checks
#
# Agreement between two hand-written versions proves little if both share a mistake.
# The independent referee is the centred finite difference. For an array-valued
# function the check reduces it to the scalar $\sum \text{out} \odot d\text{out}$ with a random
# upstream $d\text{out}$, whose gradient is exactly what the backward computes from that
# $d\text{out}$. In float64, a correct backward agrees to $10^{-9}$ or better; the threshold
# is $10^{-7}$.

# %%
step_report = check_function(rnn_step_forward, rnn_step_backward,
                             {"x": x[:, 0], "prev_h": h0, "Wx": Wx, "Wh": Wh, "b": b})
print("rnn_step_forward / rnn_step_backward\n", step_report, sep="")
seq_report = check_function(rnn_forward, rnn_backward, {"x": x, "h0": h0, "Wx": Wx, "Wh": Wh, "b": b})
print("\nrnn_forward / rnn_backward\n", seq_report, sep="")
assert step_report.ok and seq_report.ok

# %% [markdown]
# The layer `npseq.nn.RNN` wraps those functions, with stacked layers and parameters
# that accumulate their gradients; `check_module` perturbs every parameter too. A
# two-layer network checks the gradient flowing from one layer into the one below:

# %%
layer = RNN(D, H, num_layers=2, rng=0, dtype="float64")
module_report = check_module(layer, {"x": x[:, :3], "state": rng.standard_normal((2, N, H))})
print(module_report)
assert module_report.ok

# %% [markdown]
# ## Vanishing and exploding gradients, measured
#
# To see the geometric behaviour, take a long sequence ($T = 100$), put the loss on
# the *last* state only ($dh_t = 0$ for $t < T$), and record $\|g_t\| = \|\partial L / \partial h_t\|$
# at every step (`record_step_norms`). We control the recurrent weights directly:
# $W_h = \sigma Q$ with $Q$ a random orthogonal matrix, so all singular values of $W_h$
# equal $\sigma$. The inputs and $W_x$ stay the same for every $\sigma$.

# %%
T_LONG = 100
N_EXP, D_EXP, H_EXP = (4, 8, 16) if FAST else (16, 8, 32)
SCALES = (0.5, 1.0, 1.5, 2.0)
x_long = 0.5 * rng.standard_normal((N_EXP, T_LONG, D_EXP))
Q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((H_EXP, H_EXP)))
d_last = np.zeros((N_EXP, T_LONG, H_EXP))
d_last[:, -1] = rng.standard_normal((N_EXP, H_EXP)) / np.sqrt(N_EXP * H_EXP)  # ||dh_T|| about 1

norms, layers = {}, {}
for sigma in SCALES:
    rnn = RNN(D_EXP, H_EXP, rng=0, dtype="float64")
    rnn.Wh_l0.data[...] = sigma * Q
    rnn.record_step_norms = True
    outputs, _ = rnn(x_long)
    rnn.backward(d_last)
    step_norms = rnn.step_grad_norms[0, 0]  # (T,): ||g_t|| over the batch, in time order
    norms[rf"$\sigma = {sigma}$"] = step_norms
    layers[sigma] = rnn
    print(f"sigma = {sigma}: mean |h_t| = {np.abs(outputs).mean():.2f}, ||g_T|| = {step_norms[-1]:.2f}, "
          f"||g_1|| = {step_norms[0]:.2e}")

_, fig = plot_grad_norms(norms, None, return_figure=True,
                         title=r"$\|\partial L/\partial h_t\|$, loss at $t = T$ only, $W_h = \sigma Q$")
show(save_figure(fig, "02_grad_norms_through_time.png", alt="The norm of the gradient of the loss with respect to "
                 "the state h_t against the time step t, on a log scale, for W_h = sigma Q with sigma 0.5, 1, 1.5 "
                 "and 2. Going back in time from the loss at the right end, the curves are close to straight "
                 "lines: they fall steeply for sigma 0.5 and more gently for 1, and rise for 2 and, more slowly, "
                 "for 1.5."))

# %% [markdown]
# (The plot counts steps from 0, so the loss sits at the right end, $t = 99$.) On the
# log scale the curves are close to straight lines, as the product of Jacobians
# predicts: the slope is the average log-gain per step. For $\sigma = 0.5$ the gradient
# loses about a factor of two per step and is below $10^{-30}$ after 100 steps: the first
# inputs have, for all practical purposes, no influence on the update. Even
# $\sigma = 1$ decays, because $\tanh' < 1$ as soon as the states are not exactly zero.
# For $\sigma = 2$ the gradient grows as it travels back, by about six orders of
# magnitude, although the forward pass is perfectly tame (the states are bounded by
# $\tanh$); $\sigma = 1.5$ grows too, more slowly. The saturation of $\tanh$ limits the
# growth (the gain per step is $\sigma$ times an average $\tanh'$ below 1, and larger
# $\sigma$ drives the states further into saturation) but does not stop it.
#
# ## Gradient clipping
#
# Vanishing gradients need a change of architecture (tutorial 3). Exploding ones have
# a cheap remedy: before the update, rescale all gradients together whenever their
# global norm exceeds a threshold $\theta$,
#
# $$n = \sqrt{\textstyle\sum_i \|g_i\|^2}, \qquad g_i \leftarrow \min\Big(1, \frac{\theta}{n}\Big) g_i .$$
#
# The direction of the step is kept; only its length is capped, so one unlucky batch
# cannot throw the weights far away. npseq's version:

# %%
print(equations(clip_grad_norm))

# %% [markdown]
# Applied to the parameters of the $\sigma = 2$ network above (whose gradients the
# backward pass just filled), it returns the norm before clipping, and afterwards the
# norm is $\theta$ while the direction is unchanged (cosine 1):

# %%
exploding = layers[2.0]
params = list(exploding.parameters())
before = np.concatenate([p.grad.ravel() for p in params])
norm_before = clip_grad_norm(params, max_norm=1.0)
after = np.concatenate([p.grad.ravel() for p in params])
cosine = before @ after / (np.linalg.norm(before) * np.linalg.norm(after))
print(f"global norm before clipping {norm_before:.3e}, after {np.linalg.norm(after):.6f}, cosine {cosine:.12f}")
gentle = layers[0.5]
print(f"the sigma = 0.5 network's norm {clip_grad_norm(list(gentle.parameters()), 100.0):.3f} "
      f"is below a threshold of 100, so its gradients are left alone")

# %% [markdown]
# Clipping is a safety rail, not a cure: it caps the size of the step, but the
# gradient of a loss far in the future is still dominated by the nearby steps, and the
# clipped direction is still the one the exploding product chose. The training loops
# of npseq (`train_lm`, `train_seq2seq`) clip to a global norm of 1 by default and
# record the norm before clipping in their history, so a run can be inspected for
# explosions after the fact.
#
# ## Summary
#
# * One RNN step is $h_t = \tanh(x_t W_x + h_{t-1} W_h + b)$; its backward is one
#   elementwise product ($\tanh'$) and five matrix products.
# * BPTT runs the step backward from the last step to the first, adding the gradient that
#   comes from the future to the direct one, and sums the weight gradients over steps.
# * The gradient reaching a state $k$ steps back is a product of $k$ Jacobians, so it
#   shrinks or grows geometrically; the recorded norms show straight lines on a log scale.
# * Clipping the global norm caps exploding updates without changing their direction.
#
# ## Exercises
#
# 1. Derive $dW_h$ for the step by writing $a = h_{t-1} W_h$ elementwise,
#    $a_{nj} = \sum_i h_{ni} (W_h)_{ij}$, and check that it matches $h_{t-1}^\top da$, shape included.
# 2. Change the hand-written BPTT loop above to stop after $k$ steps back from each loss
#    (truncated BPTT). For which $k$ is $dW_h$ within 1 % of the full gradient when
#    $\sigma = 0.5$? When $\sigma = 1.5$?
# 3. In the experiment, put the loss on every step ($dh_t \neq 0$ for all $t$) instead of
#    the last one. How do the curves change, and why does $\sigma = 0.5$ no longer
#    reach $10^{-30}$?
# 4. Replace $\tanh$ by the identity (a linear RNN) in your head: what is $\|g_1\|$
#    exactly, as a function of $\sigma$ and $T$? Compare with the measured slopes.
# 5. Introduce a bug in a copy of `rnn_step_backward`: use `Wh` in place of `Wh.T` for
#    `dprev_h`, and run `check_function` on it. Which rows of the report fail, and why do
#    the others pass? Run your hand-written BPTT loop with the buggy step against
#    `rnn_backward`: which gradients are wrong now, and why more of them?
# 6. Clip each gradient element to $[-c, c]$ instead (`npseq.optim.clip_grad_value`). Show
#    with the $\sigma = 2$ gradients that this changes the direction of the update.
