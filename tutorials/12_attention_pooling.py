# %% [markdown]
# # 12. Attention pooling: Nadaraya-Watson kernel regression
#
# Tutorial 6 met attention inside a translator, where the scores were learned together
# with everything else and the weights were judged by the translations. This tutorial
# goes back to where the idea is simplest, a statistician's answer from 1964 to a
# regression problem: to predict $y$ at a new point $x$, average the observed targets
# $y_i$, giving more weight to those whose inputs $x_i$ lie close to $x$. Nothing in it
# has to be learned, and yet it is attention pooling exactly; one learned number added
# to it shows what training does to attention weights.
#
# The questions of this tutorial:
#
# 1. What do *queries*, *keys* and *values* stand for, and what does attention pooling pool?
# 2. How much better than a plain average of the targets is an average weighted by a
#    kernel, on d2l's noisy curve?
# 3. What changes, in the predictions and in the weights, when the kernel's width is
#    learned, and why must each training point then be predicted from the others?
#
# The data and the training have d2l's sizes, 50 points and 5 steps, and the whole file
# runs in a few seconds, so `NPSEQ_FAST=1` changes nothing here: the numbers in the text
# are the ones any run prints.

# %%
import numpy as np
from _common import COLUMN_PX, DPI, code, equations, save_figure, show
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from npseq.functional import gaussian_scores_forward, nadaraya_watson_backward, nadaraya_watson_forward
from npseq.gradcheck import check_function, rel_error
from npseq.nn import Parameter
from npseq.optim import SGD
from npseq.viz import show_heatmaps

COLUMN_INCHES = COLUMN_PX / DPI  # the book's text column: the widest a figure may be

# %% [markdown]
# ## Attention cues: queries, keys and values
#
# Psychologists tell apart two reasons for where our eyes go. Some things draw the eye by
# themselves, a red cup among grey papers, whatever we were doing; the cue is in the
# scene. Other times we look for something because of what we intend, the next word
# while reading, a book when we mean to read; the cue is in us. d2l calls the first kind
# *nonvolitional* cues and the second *volitional* ones.
#
# Attention mechanisms write both kinds down. Each item of the input comes as a pair: a
# **key**, how the item presents itself (its nonvolitional cue), and a **value**, what it
# contributes when it is attended to. The **query** is the volitional cue, what the
# computation is looking for now. *Attention pooling* compares the query with every key,
# turns the comparisons into weights that are positive and sum to 1, and returns the
# weighted average of the values. A layer that pools without a query, an average or a
# fully connected layer, treats the input the same way whatever is sought; the query is
# what makes the pooling attention.
#
# In tutorial 6 the query was the decoder's state and the keys and values the encoder's
# states. Here all three are single numbers on a line: the query is a point $x$ where a
# prediction is wanted, the keys are the training inputs $x_i$ and the values their
# targets $y_i$.
#
# ## The data
#
# d2l's regression problem: a smooth function plus Gaussian noise of standard deviation 0.5,
#
# $$y_i = f(x_i) + \epsilon_i, \qquad f(x) = 2 \sin x + x^{0.8}, \qquad \epsilon_i \sim \mathcal{N}(0, 0.5^2),$$
#
# at 50 inputs drawn uniformly from $[0, 5)$ and sorted. (Sorting changes no prediction;
# it makes the weight maps below readable, since neighbouring rows and columns are then
# neighbouring points.) The predictions are made at 50 test queries $0, 0.1, \dots, 4.9$,
# where the noise-free $f$ is known, and a model's *fit error* is its mean squared distance
# from $f$ there.

# %%
rng = np.random.default_rng(12)
NUM_TRAIN = 50


def f(x):
    return 2 * np.sin(x) + x ** 0.8


x_train = np.sort(rng.uniform(0, 5, NUM_TRAIN))
y_train = f(x_train) + rng.normal(0.0, 0.5, NUM_TRAIN)
x_test = np.arange(0, 5, 0.1)
y_truth = f(x_test)


def fit_error(predictions):
    """Mean squared distance from the noise-free f at the test queries."""
    return float(np.mean((predictions - y_truth) ** 2))


print(f"{NUM_TRAIN} training points with x from {x_train.min():.2f} to {x_train.max():.2f}, "
      f"{len(x_test)} test queries from 0 to {x_test[-1]:.1f}")
print(f"the noise of this sample: mean squared {np.mean((y_train - f(x_train)) ** 2):.3f} (expected 0.25)")

# %% [markdown]
# ## Average pooling: a pool without a query
#
# The simplest estimator ignores $x$ and predicts the mean of the targets everywhere,
# $\hat f(x) = \frac1n \sum_i y_i$. Written as attention, every key gets the same weight
# $1/n$ whatever the query. That is what a softmax gives when all scores are equal, and
# the Gaussian score below, $-w^2 (x - x_i)^2 / 2$, gives equal scores at $w = 0$: average
# pooling is Nadaraya-Watson regression with an infinitely wide kernel.

# %%
queries, keys, values = x_test[None], x_train[None], y_train[None]  # one example: 50 queries sharing 50 keys
average, _ = nadaraya_watson_forward(queries, keys, values, np.array(0.0))
print(f"w = 0 predicts the mean of the targets, {y_train.mean():.3f}, at every query:",
      np.allclose(average, y_train.mean()))
fit = {"average pooling": fit_error(average[0])}
print(f"fit error of average pooling: {fit['average pooling']:.3f}")

# %% [markdown]
# ## Non-parametric attention pooling
#
# Nadaraya (1964) and Watson (1964) weighted each target by a *kernel* $\kappa$ of the
# distance between its input and the query, normalised over the training points:
#
# $$\hat f(x) = \sum_{i=1}^{n} \frac{\kappa(x - x_i)}{\sum_{j=1}^{n} \kappa(x - x_j)}\, y_i .$$
#
# The weights are positive and sum to 1: this is attention pooling, with the kernel as the
# comparison of query and key. With the Gaussian kernel
# $\kappa(u) = \exp(-u^2/2) / \sqrt{2\pi}$ the constant cancels and the weights are a
# softmax over scores $-(x - x_i)^2 / 2$,
#
# $$\begin{aligned}
#   \alpha_i(x) &= \operatorname{softmax}_i\Bigl(-\frac{(x - x_i)^2}{2}\Bigr)
#   = \frac{\exp\bigl(-(x - x_i)^2 / 2\bigr)}{\sum_j \exp\bigl(-(x - x_j)^2 / 2\bigr)}, \\
#   \hat f(x) &= \sum_i \alpha_i(x)\, y_i .
# \end{aligned}$$
#
# The nearer a key is to the query, the more its value counts. The estimator is called
# *non-parametric*: nothing is fitted, the training pairs themselves are the model, and
# with enough data (and a kernel that narrows at the right rate as the data grow) it
# converges to the true function.
#
# In npseq it is a score function followed by the attention pooling of tutorial 6: the
# Gaussian score of `npseq.functional.scores` on features of size 1, then
# `attention_pooling_forward` over every key. `nadaraya_watson_forward` takes queries of
# shape $(N,)$, each with its own row of keys, or $(N, Q)$, $Q$ queries sharing their
# example's keys, as the 50 test queries share the 50 training points here. The width
# $w$ of the next section is $1$ when it is not given:

# %%
print(equations(gaussian_scores_forward))
print(code(gaussian_scores_forward))
print(code(nadaraya_watson_forward))

# %%
kernel_predictions, kernel_cache = nadaraya_watson_forward(queries, keys, values)
kernel_weights = kernel_cache.weights[0]  # (50 queries, 50 keys)
gaussian = np.exp(-(x_test[:, None] - x_train[None, :]) ** 2 / 2)
print("the weights are the Gaussian kernel, normalised:",
      np.allclose(kernel_weights, gaussian / gaussian.sum(axis=1, keepdims=True)))
print(f"every row of weights sums to 1: largest deviation {np.abs(kernel_weights.sum(axis=1) - 1).max():.1e}")
fit["non-parametric"] = fit_error(kernel_predictions[0])
print(f"fit error of the non-parametric kernel regression: {fit['non-parametric']:.3f} "
      f"({1 - fit['non-parametric'] / fit['average pooling']:.0%} lower than average pooling)")
peak = int(np.argmax(y_truth))
gap = np.abs(kernel_predictions[0] - y_truth)
print(f"at the maximum of f, x = {x_test[peak]:.1f} where f = {y_truth[peak]:.2f}, it predicts "
      f"{kernel_predictions[0, peak]:.2f}; its largest gap to f is {gap.max():.2f}, at x = {x_test[gap.argmax()]:.1f}")


def draw_fits(curves, name, alt):
    """The training points, f, and each model's predictions at the test queries."""
    fig = Figure(figsize=(7.2, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.plot(x_train, y_train, "o", color="grey", alpha=0.6, label="training points $(x_i, y_i)$")
    ax.plot(x_test, y_truth, "k", linewidth=1.2, label="truth $f(x)$")
    for label, (predictions, style) in curves.items():
        ax.plot(x_test, predictions, **style, label=label)
    ax.set_xlabel("$x$")
    ax.set_ylabel("$y$")
    fig.legend(loc="outside upper center", ncols=2)
    show(save_figure(fig, name, alt=alt))


CURVES = {"average pooling": (average[0], dict(linestyle="--", color="C1")),
          "non-parametric ($w = 1$)": (kernel_predictions[0], dict(color="C0", linewidth=2))}
draw_fits(CURVES, "12_kernel_regression.png",
          alt="The noisy training points, the curve 2 sin x + x^0.8 they come from, the flat line of average pooling "
              "and the non-parametric kernel regression, which rises and falls with the curve but far less: it "
              "stays well below the peak and starts high above the curve at x = 0.")

# %% [markdown]
# Average pooling (dashed) is one flat line at the mean of the targets, with a fit error of
# 0.885. The kernel regression (blue) rises and falls where $f$ does and cuts the error by
# 45%, to 0.491, but it is far too flat. At the maximum of $f$, $x = 1.9$ where $f = 3.56$,
# it predicts 2.82, and its largest gap to $f$, 2.26, lies at the left edge, $x = 0$. A
# Gaussian of standard deviation 1 is wide next to the bends of $f$, so every prediction
# averages targets from well up and down the slope; and at an edge all the keys lie on one
# side of the query, so the average is pulled towards the interior.
#
# The weights say the same. Each row of the map below is one test query's weights over the
# 50 training inputs (both sorted, so that nearness shows as closeness to the diagonal). Two
# numbers measure how concentrated a row is: the share of its weight on the 3 keys nearest
# to the query, and its *effective number of keys* $1 / \sum_i \alpha_i^2$, which is $m$ for
# weights spread evenly over $m$ keys and 1 for a single key.

# %%
TICK_EVERY = 10  # a label on every tenth row and column: fifty would overlap
query_labels = [f"{x:.1f}" if i % TICK_EVERY == 0 else "" for i, x in enumerate(x_test)]
key_labels = [f"{x:.2f}" if i % TICK_EVERY == 0 else "" for i, x in enumerate(x_train)]
nearest = np.argsort(np.abs(x_test[:, None] - x_train[None, :]), axis=1)[:, :3]


def draw_weights(weights, title, name, alt):
    """One model's attention weights at the test queries (rows) over the training inputs (columns)."""
    _, figure = show_heatmaps(weights, key_labels, query_labels, None, title=title, max_width=0.8 * COLUMN_INCHES,
                              labels=("keys: training inputs $x_i$", "queries: test inputs $x$"), return_figure=True)
    show(save_figure(figure, name, alt=alt))


def concentration(name, weights):
    """How much of a query's weight its 3 nearest keys hold, and over how many keys the weight spreads."""
    on_nearest = weights[np.arange(len(x_test))[:, None], nearest].sum(axis=1).mean()
    effective = np.mean(1 / np.sum(weights ** 2, axis=1))
    print(f"{name}: the 3 nearest keys hold {on_nearest:.0%} of a query's weight on average; "
          f"the weights spread over about {effective:.1f} keys; the largest weight is {weights.max():.2f}")


draw_weights(kernel_weights, "non-parametric, $w = 1$", "12_weights_nonparametric.png",
             alt="The attention weights of the non-parametric kernel regression, test queries down and training "
                 "inputs across: a broad band along the diagonal, about half the keys wide, darkest in the top "
                 "left and bottom right corners.")
concentration("non-parametric", kernel_weights)

# %% [markdown]
# A broad band along the diagonal: every query spreads its weight over much of the training
# set. On average the 3 nearest keys hold only 15% of it, the weights spread over about 27.7
# keys, more than half of the 50, and the largest weight in the map is 0.08. The band is
# darkest in the corners, at the edges of the data, where all the keys lie on one side of the
# query and fewer of them share its weight. That is the flat curve above, seen from the inside.

# %% [markdown]
# ## Parametric attention pooling: learning the width
#
# The width of the kernel was fixed at 1. d2l makes it a parameter: a scalar $w$ multiplies
# the distance before it is squared,
#
# $$\alpha_i(x) = \operatorname{softmax}_i\Bigl(-\frac{\bigl((x - x_i)\, w\bigr)^2}{2}\Bigr),$$
#
# a Gaussian of standard deviation $1/|w|$: a larger $|w|$ narrows the kernel, and the
# prediction then rests on fewer, nearer points. $w = 1$ is the kernel above, $w = 0$ is
# average pooling.
#
# **What the model is trained to predict.** The loss is d2l's, the sum of squared errors at
# the training points, $L = \sum_i (\hat f(x_i) - y_i)^2$. If each point counted among its
# own keys, the loss would have a trivial minimum: as $w \to \infty$ the weight of the
# nearest key, the point itself, tends to 1 and $\hat f(x_i) \to y_i$, so the loss falls to
# zero by copying the noise. So each training point is predicted from the *other* 49:
# query $x_i$, keys $x_j$ and values $y_j$ for $j \ne i$. In npseq's layout the queries are
# $(50,)$ and each has its own row of 49 keys and 49 values, $(50, 49)$.

# %%
others = ~np.eye(NUM_TRAIN, dtype=bool)  # row i: every training point but the i-th
loo_keys = np.broadcast_to(x_train, (NUM_TRAIN, NUM_TRAIN))[others].reshape(NUM_TRAIN, NUM_TRAIN - 1)
loo_values = np.broadcast_to(y_train, (NUM_TRAIN, NUM_TRAIN))[others].reshape(NUM_TRAIN, NUM_TRAIN - 1)
print(f"queries {x_train.shape}, keys {loo_keys.shape}, values {loo_values.shape}; "
      f"row 0 leaves out x_0 = {x_train[0]:.3f}: its keys start {np.round(loo_keys[0, :3], 3)}")

# %% [markdown]
# ### The gradient of the width, by hand
#
# Training needs $\partial L / \partial w$. Going back from the loss one step at a time,
# with $\delta_{ik} = x_i - x_k$ the distance from query $i$ to its key $k$ and
# $s_{ik} = -w^2 \delta_{ik}^2 / 2$ the score:
#
# 1. **Loss to predictions.** With $p_i = \hat f(x_i)$ the prediction at training point $i$,
#    $dp_i = \partial L / \partial p_i = 2 (p_i - y_i)$.
# 2. **Predictions to weights.** $p_i = \sum_k \alpha_{ik} y_k$ is linear in the weights:
#    $d\alpha_{ik} = dp_i\, y_k$.
# 3. **Weights to scores, the softmax.** As in tutorial 6,
#    $ds_{ik} = \alpha_{ik}\bigl(d\alpha_{ik} - \sum_j \alpha_{ij}\, d\alpha_{ij}\bigr)$, and with step 2
#    the sum is $dp_i\, p_i$:
#
#    $$ds_{ik} = \alpha_{ik}\, dp_i\, (y_k - p_i).$$
#
# 4. **Scores to the width.** $\partial s_{ik} / \partial w = -w\, \delta_{ik}^2$, and $w$ is in every score:
#
#    $$\frac{\partial L}{\partial w} = -w \sum_i dp_i \sum_k \alpha_{ik}\, (y_k - p_i)\, \delta_{ik}^2 .$$
#
# The inner sum is a covariance under the attention weights: between a key's value, measured
# from the prediction, and its squared distance from the query. It says whether the far keys
# pull the prediction up or down. Raising $w$ moves weight from the far keys to the near ones,
# and the gradient asks whether that move brings $p_i$ closer to $y_i$. Two consequences
# can be read off: the gradient is zero at $w = 0$ (average pooling is a stationary point, and
# training started at exactly $w = 0$ would never move; d2l starts $w$ at a random number in
# $[0, 1)$), and it is odd in $w$, since $w$ and $-w$ are the same model.
#
# The same steps, for queries, keys and values as well, are `nadaraya_watson_backward`: the
# pooling's backward (steps 2 and 3), then the Gaussian score's (step 4).

# %%
print(equations(nadaraya_watson_backward))
print(code(nadaraya_watson_backward))


def loss_and_gradient(w):
    """d2l's leave-one-out loss, the sum of squared errors, and the gradients of its inputs and of w."""
    predictions, cache = nadaraya_watson_forward(x_train, loo_keys, loo_values, w)
    residuals = predictions - y_train
    return float(np.sum(residuals ** 2)), nadaraya_watson_backward(2 * residuals, cache), cache


w_check = np.array(1.3)
loss, grads, cache = loss_and_gradient(w_check)
alpha = cache.weights  # (50, 49)
p = np.sum(alpha * loo_values, axis=1)
dp = 2 * (p - y_train)  # step 1
delta2 = (x_train[:, None] - loo_keys) ** 2
by_hand = -w_check * np.sum(dp * np.sum(alpha * (loo_values - p[:, None]) * delta2, axis=1))  # steps 2 to 4
h = 1e-5
numeric = (loss_and_gradient(np.array(1.3 + h))[0] - loss_and_gradient(np.array(1.3 - h))[0]) / (2 * h)
print(f"dL/dw at w = 1.3: the formula {by_hand:.6f}, nadaraya_watson_backward {float(grads.dw):.6f}, "
      f"finite differences {numeric:.6f}")
print(f"relative error against finite differences: formula {rel_error(by_hand, numeric):.1e}, "
      f"backward {rel_error(grads.dw, numeric):.1e}")

# %% [markdown]
# The finite difference above moves $w$ alone. `check_function` moves every input, one entry at
# a time: the 50 queries, the $50 \times 49$ keys and values and the width, and compares each
# gradient with its own finite difference. The gradients of the keys span 11 orders of
# magnitude, since a key far from its query has almost no weight; the smallest are below what
# the rounding of a step $h = 10^{-5}$ resolves to 7 digits, and a fourth-order stencil with
# $h = 10^{-3}$ (as npseq's registry uses for its deepest models) is exact to far better than that:

# %%
magnitudes = np.abs(grads.dkeys)
print(f"the gradients of the keys at w = 1.3 span {np.log10(magnitudes.max() / magnitudes.min()):.0f} orders of "
      f"magnitude, from {magnitudes.max():.1e} down to {magnitudes.min():.0e}")
report = check_function(nadaraya_watson_forward, nadaraya_watson_backward,
                        {"queries": x_train, "keys": loo_keys, "values": loo_values, "w": w_check}, h=1e-3, order=4)
print(report)
assert report.ok

# %% [markdown]
# ### Training
#
# As in d2l: $w$ starts uniform in $[0, 1)$, and 5 steps of plain SGD with learning rate 0.5
# follow the gradient of the loss summed over all 50 points (one batch holds them all).
# `Parameter` and `SGD` are npseq's; each step is $w \leftarrow w - 0.5\, \partial L / \partial w$.

# %%
w = Parameter(np.array(rng.uniform()))
optimizer = SGD([w], lr=0.5)
print(f"w starts at {float(w.data):.3f}")
for epoch in range(5):
    optimizer.zero_grad()
    loss, grads, _ = loss_and_gradient(w.data)
    if epoch == 0:
        first_loss = loss
    w.grad += grads.dw
    optimizer.step()
    print(f"epoch {epoch + 1}, loss {loss:.6f}, dL/dw {float(grads.dw):.3f}, w {float(w.data):.3f}")
learned = w.data
final_loss = loss_and_gradient(learned)[0]
print(f"the loss fell by {1 - final_loss / first_loss:.0%} in 5 steps, to {final_loss:.3f}")
print(f"learned w = {float(learned):.2f}: a Gaussian of standard deviation 1/w = {1 / float(learned):.3f}, about "
      f"the mean spacing of the training inputs, {np.diff(x_train).mean():.3f}")
widths = np.linspace(0.05, 20, 400)
best = widths[int(np.argmin([loss_and_gradient(np.array(width))[0] for width in widths]))]
print(f"on a grid of w from 0.05 to 20 the leave-one-out loss is lowest at w = {best:.2f}, "
      f"where it is {loss_and_gradient(np.array(best))[0]:.3f}")

# %% [markdown]
# The first step takes $w$ from 0.860 to 11.767. At $w = 0.86$ the kernel is far too wide,
# the loss falls steeply as it narrows, and a learning rate of 0.5 on a loss *summed* over 50
# points makes that a long step, past the minimum. The four steps after it come back only a
# little, to 11.30, and the loss, 57% lower than at the start, ends at 12.878. A grid over $w$
# shows where the minimum lies: $w = 6.25$, where the loss is 11.865. The leave-one-out loss
# is the *cross-validation* error of the kernel's width, and its minimum is the width that
# leave-one-out cross-validation would choose; five steps of SGD overshoot it and stop on the
# narrow side.
#
# How the three models predict at the test queries:

# %%
param_predictions, param_cache = nadaraya_watson_forward(queries, keys, values, learned)
param_weights = param_cache.weights[0]
fit["parametric"] = fit_error(param_predictions[0])
print("fit error: " + ", ".join(f"{name} {error:.3f}" for name, error in fit.items())
      + f" ({1 - fit['parametric'] / fit['non-parametric']:.0%} lower than the non-parametric)")
print(f"fit error at the best width of the grid, w = {best:.2f}: "
      f"{fit_error(nadaraya_watson_forward(queries, keys, values, np.array(best))[0][0]):.3f}")
CURVES[f"parametric (learned $w = {float(learned):.2f}$)"] = (param_predictions[0], dict(color="C3", linewidth=2))
draw_fits(CURVES, "12_fits.png",
          alt="The training points, the curve f, average pooling, the non-parametric kernel regression and the "
              "parametric one with the learned width: the parametric curve follows f up to its peak and down "
              "to its trough, but jaggedly, with small bumps where neighbouring noisy points pull it.")

# %% [markdown]
# The parametric curve (red) follows $f$ where the non-parametric one could not, up to the
# peak and down to the edges, and its fit error is 0.109, 78% lower than the non-parametric
# 0.491. It is also jagged, as d2l observes: with a kernel about as wide as the gap between
# neighbouring inputs (standard deviation 0.088, mean spacing 0.096), each prediction rests on
# a few noisy targets, and their noise shows through as bumps. The width that cross-validation
# picks, $w = 6.25$, sits between the two and fits better than either, with a fit error of
# 0.077: too wide a kernel flattens $f$, too narrow a one copies the noise.
#
# In the weights, the learned width shows as a narrow diagonal:

# %%
draw_weights(param_weights, f"parametric, $w = {float(learned):.2f}$", "12_weights_parametric.png",
             alt="The attention weights of the parametric kernel regression, test queries down and training inputs "
                 "across: a narrow dark diagonal, a few keys wide, with grey corners at the top right and the "
                 "bottom left.")
concentration("parametric", param_weights)
underflow = param_weights == 0
distances = np.abs(x_test[:, None] - x_train[None, :])
scores, _ = gaussian_scores_forward(x_test[None, :, None], x_train[None, :, None], learned)
below_best = scores[0].max(axis=1, keepdims=True) - scores[0]
print(f"weights exactly 0 in float64: {underflow.mean():.0%} of the map, for keys {distances[underflow].min():.2f} "
      f"or more from their query; the farthest key with a positive weight is {distances[~underflow].max():.2f} away")
print(f"the zero weights' scores lie {below_best[underflow].min():.0f} or more below their row's largest; "
      f"the smallest positive float64 is {np.nextafter(0.0, 1.0):.0e}")

# %% [markdown]
# The band is now a few keys wide: the 3 nearest keys hold 86% of a query's weight on average,
# the weights spread over about 3.4 keys instead of 27.7, and the largest weight is 0.89. The
# grey corners are not masked keys, as grey was in tutorial 6: nothing here is masked. They
# are weights too small for float64: the keys 3.41 or more from their query score 744 or more
# below their row's largest, and $e^{-744}$ lies at the very bottom of float64's range, whose
# smallest positive number is 5e-324; after the softmax's exponential and division those
# weights, 11% of the map, round to exactly 0. Training the width did what training
# does to any attention: it made the weights pick the keys that matter, here by distance alone.
#
# ## Summary
#
# * Attention pooling is a weighted average of values, with weights from comparing a query
#   with keys; the query, what is being looked for, is what sets it apart from pooling
#   that treats every input alike.
# * Nadaraya-Watson kernel regression is attention pooling with the query a test input, the
#   keys the training inputs and the values their targets; the Gaussian kernel makes the
#   weights a softmax over negative squared distances.
# * In npseq it is one score function (`gaussian_scores_forward`) followed by the pooling of
#   every other attention (`attention_pooling_forward`), and its backward is theirs, in reverse.
# * A learned width $w$ turns it into a parametric model. Trained on the training points
#   themselves, each point must be left out of its own keys, or the loss is minimised by
#   copying the noise; the leave-one-out loss is then the cross-validation error of the width.
# * Too wide a kernel flattens the function, too narrow a one copies the noise: d2l's five
#   steps of SGD narrow the kernel past the cross-validated width, and the fit, far better
#   than at $w = 1$, turns jagged.
#
# ## Exercises
#
# 1. Show from the formula for $\partial L / \partial w$ that average pooling, $w = 0$, is a stationary
#    point of the loss. Start the training at $w = 0$, then at $w = 10^{-3}$ and $10^{-6}$: how does
#    the number of steps before $w$ first exceeds 1 grow as the start shrinks? Explain it with
#    the gradient near $w = 0$, to first order in $w$.
# 2. Train without leaving each point out (its own key and value included). Print the loss
#    and $w$ for 50 epochs and explain where $w$ goes, with the limit of the weights as
#    $w \to \infty$. What happens to the fit error against $f$?
# 3. Leave-one-out training is cross-validation of the kernel's width. Draw the
#    leave-one-out loss against $w$ on a grid (the curve whose minimum is printed above)
#    and mark the 5 steps of SGD on it. Would a smaller learning rate, or more steps, end
#    nearer the minimum?
# 4. Draw 500 and then 2,000 training points instead of 50 (same $f$, same noise) and train
#    again. How do the learned width $1/|w|$ and the fit errors of the non-parametric and the
#    parametric model change? Why should the best width shrink as the data grow?
# 5. Replace the Gaussian kernel by Epanechnikov's, $\kappa(u) = \max(0, 1 - u^2)$. Its score,
#    $\log \kappa$, is $-\infty$ outside $|u| < 1$: write the weights with
#    `masked_pooling_forward` of tutorial 6, the mask saying which keys lie within the
#    kernel. What does the model predict at a query with no training point within
#    distance 1, and what does npseq's masked softmax return there?
# 6. Give each query and key two features and a width per feature, the score
#    $-\sum_d (w_d\, \delta_d)^2 / 2$. Write its forward and backward after
#    `gaussian_scores_forward` and check them with `check_function`.
