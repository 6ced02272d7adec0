# %% [markdown]
# # 0. Sequence models before text: autoregression and k-step-ahead prediction
#
# Before tokens, vocabularies and language models, the central questions of sequence
# modelling can be asked about a plain series of numbers $x_1, x_2, \dots, x_T$:
#
# 1. How do we predict $x_t$ from what came before it, when "what came before" grows
#    with $t$?
# 2. How good is such a predictor one step ahead, where it always sees real data?
# 3. What happens when it has to look further ahead, and must feed on its own
#    predictions because the real values are not there yet?
#
# The third question returns, in another form, in every later tutorial: a language
# model that generates text and a decoder that translates both read their own previous
# outputs. Here the effect is easy to see, because the truth is a sine wave.
#
# Run this file as a script (`python tutorials/00_sequence_models.py`) or open it as a
# notebook (jupytext, VS Code). The whole of it runs in a few seconds, so `NPSEQ_FAST=1`
# changes nothing here: the numbers in the text are the ones a test run prints.

# %%
import numpy as np
from _common import code, equations, save_figure, show
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from npseq import no_grad
from npseq.data import BatchIterator, k_step_predictions, lag_features, noisy_sine
from npseq.functional import mse_loss_backward, mse_loss_forward, relu_backward, relu_forward
from npseq.gradcheck import check_module
from npseq.nn import RNN, Linear, Module, ReLU
from npseq.optim import Adam

# %% [markdown]
# ## Autoregressive models and the Markov assumption
#
# By the chain rule of probability, any distribution over a sequence factorises into
# predictions of the next value from the whole past:
#
# $$P(x_1, \dots, x_T) = \prod_{t=1}^{T} P(x_t \mid x_{t-1}, \dots, x_1).$$
#
# A model of $P(x_t \mid x_{t-1}, \dots, x_1)$ that regresses the series on its own past is
# called *autoregressive*. Its difficulty is that the conditioning set grows with $t$.
# There are two ways out, and this tutorial tries one of each:
#
# * **A fixed window (the Markov assumption).** Assume that only the last $\tau$ values
#   matter, $P(x_t \mid x_{t-1}, \dots, x_1) = P(x_t \mid x_{t-1}, \dots, x_{t-\tau})$. Every
#   example then has the same number of inputs, and any regressor on $\mathbb{R}^\tau$ will
#   do: here a small multilayer perceptron (MLP). With $\tau = 1$ this is a first-order
#   Markov chain; the n-gram models of tutorial 1 make the same assumption with
#   $\tau = n - 1$.
# * **A summary of the past (a latent state).** Keep a state $h_t$ that is updated by
#   every new value, $h_t = g(h_{t-1}, x_t)$, and predict $\hat x_{t+1}$ from $h_t$. This is a
#   recurrent network, the subject of tutorials 2 to 4.
#
# The data is the toy series of *Dive into Deep Learning*'s first sequence chapter: a
# slow sine wave observed through Gaussian noise,
#
# $$x_t = \sin(0.01\, t) + \epsilon_t, \qquad \epsilon_t \sim \mathcal{N}(0, 0.2^2), \qquad t = 1, \dots, 1000.$$
#
# One period lasts $2\pi / 0.01 \approx 628$ steps, so 1000 steps show about one and a
# half periods. `noisy_sine` draws the noise from a seeded generator and also returns
# the clean signal, which no model ever sees but which we can plot.

# %%
print(equations(noisy_sine))
T, TAU, NUM_TRAIN = 1000, 4, 600
series = noisy_sine(T, noise=0.2, seed=0)
x = series.x.astype(np.float32)  # the models train in float32, npseq's default
print(f"T = {T}: x[:6] = {np.round(x[:6], 3)}")

fig = Figure(figsize=(7.2, 3.4), layout="constrained")
FigureCanvasAgg(fig)
ax = fig.subplots()
ax.plot(series.time, series.x, linewidth=0.8, label="observed $x_t$")
ax.plot(series.time, series.signal, "k", linewidth=1.2, label=r"signal $\sin(0.01\,t)$")
ax.axvline(NUM_TRAIN + TAU, color="grey", linestyle=":", label="end of training")
ax.set_xlabel("time $t$")
ax.set_ylabel("$x_t$")
ax.set_xlim(1, T)
fig.legend(loc="outside upper center", ncols=3)
show(save_figure(fig, "00_series.png", alt="The noisy series x_t against time t from 1 to 1000, scattered around "
                 "a slow sine wave drawn in black; a dotted vertical line after t = 600 marks the end of the "
                 "training examples."))

# %% [markdown]
# ## From a series to a regression data set
#
# Under the Markov assumption each position $t > \tau$ gives one example: the window
# $(x_{t-\tau}, \dots, x_{t-1})$ as features and $x_t$ as the label. `lag_features` builds all
# $T - \tau$ of them at once; column $j$ of the feature matrix is the series shifted by $j$:

# %%
print(code(lag_features))
tiny = lag_features(np.arange(6.0), 3)
print("on 0, 1, ..., 5 with tau = 3:\n", tiny.features, "->", tiny.labels)

data = lag_features(x, TAU)
train_features, train_labels = data.features[:NUM_TRAIN], data.labels[:NUM_TRAIN]
print(f"{len(data.labels)} examples of {TAU} features; the first {NUM_TRAIN} train, the other "
      f"{len(data.labels) - NUM_TRAIN} are held out")

# %% [markdown]
# The split is by time, not at random: the held-out examples all come after the
# training ones, as the future would. A random split would put, next to most test
# windows, a training window that overlaps it in three of its four values.
#
# ## The MLP: a regressor on the window
#
# The first model is d2l's: one hidden layer of 10 ReLU units and a linear output,
#
# $$\hat x_t = \operatorname{relu}(w_t W_1 + b_1)\, W_2 + b_2, \qquad w_t = (x_{t-\tau}, \dots, x_{t-1}) \in \mathbb{R}^{1 \times \tau},$$
#
# trained with the squared loss. The ReLU and the loss are forward/backward pairs like
# every other layer in npseq:

# %%
for function in (relu_forward, relu_backward, mse_loss_forward, mse_loss_backward):
    print(code(function))

# %% [markdown]
# The model is built from npseq's `Linear` and `ReLU` modules. Its `backward` runs the
# modules' backwards in the reverse order of the forward, each one popping the cache
# its forward pushed:

# %%
class MLP(Module):
    """Window ``(N, tau)`` -> prediction ``(N,)``: Linear -> ReLU -> Linear."""

    def __init__(self, tau, hidden, *, rng, dtype=None):
        super().__init__()
        self.hidden = Linear(tau, hidden, rng=rng, dtype=dtype)
        self.relu = ReLU()
        self.out = Linear(hidden, 1, rng=rng, dtype=dtype)

    def forward(self, windows):
        return self.out(self.relu(self.hidden(windows)))[:, 0]

    def backward(self, dpred):
        return self.hidden.backward(self.relu.backward(self.out.backward(dpred[:, None])))


# %% [markdown]
# ## The RNN beside it
#
# The recurrent twin reads the *same* window, one value per step: an `RNN` with input
# size 1 runs over $x_{t-\tau}, \dots, x_{t-1}$, and a linear head maps its last state to the
# prediction,
#
# $$h_s = \tanh(x_{t-\tau+s-1} W_x + h_{s-1} W_h + b), \quad s = 1, \dots, \tau, \qquad \hat x_t = h_\tau W_o + b_o.$$
#
# We could instead run one RNN over the whole series and predict $x_{t+1}$ from every
# $h_t$, which is how the language models of tutorial 4 work. Reading the same windows
# keeps everything but the architecture equal: the same examples, the same batches, the
# same loss, and the same `k_step_predictions` below, which only needs a function from
# windows to predictions. What differs is how the window is combined: the MLP sees the
# four values side by side, the RNN folds them in one at a time with shared weights.

# %%
class WindowRNN(Module):
    """Window ``(N, tau)`` -> prediction ``(N,)``: an RNN over the window's values, a Linear head on its last state."""

    def __init__(self, tau, hidden, *, rng, dtype=None):
        super().__init__()
        self.tau = tau
        self.rnn = RNN(1, hidden, rng=rng, dtype=dtype)
        self.head = Linear(hidden, 1, rng=rng, dtype=dtype)

    def forward(self, windows):
        outputs, _ = self.rnn(windows[:, :, None])  # (N, tau, 1) -> (N, tau, H)
        return self.head(outputs[:, -1])[:, 0]

    def backward(self, dpred):
        dlast = self.head.backward(dpred[:, None])
        doutputs = np.zeros((dlast.shape[0], self.tau, dlast.shape[1]), dtype=dlast.dtype)
        doutputs[:, -1] = dlast  # only the last state feeds the head
        dwindows, _ = self.rnn.backward(doutputs)
        return dwindows[:, :, 0]


# %% [markdown]
# Before training anything, a finite-difference check of both models on small float64
# copies: the gradient of the input window and of every parameter.

# %%
check_windows = np.random.default_rng(1).standard_normal((5, TAU))
for name, model in (("MLP", MLP(TAU, 3, rng=0, dtype="float64")), ("WindowRNN", WindowRNN(TAU, 3, rng=0, dtype="float64"))):
    report = check_module(model, {"windows": check_windows})
    print(name, "\n", report, "\n", sep="")
    assert report.ok

# %% [markdown]
# ## Training
#
# d2l's settings: minibatches of 16 examples, Adam with learning rate 0.01, 5 epochs.
# One step is forward, loss, backward, update:
#
# $$L = \frac{1}{B} \sum_{i=1}^{B} (\hat x_i - x_i)^2, \qquad \theta \leftarrow \operatorname{Adam}(\theta, \nabla_\theta L).$$
#
# After every epoch we also measure the loss on the held-out examples (no caches are
# kept under `no_grad`).

# %%
HIDDEN, BATCH_SIZE, LR, EPOCHS = 10, 16, 0.01, 5


def predictor(model):
    """The model as a function from windows ``(M, tau)`` to predictions ``(M,)``, without caches."""
    def predict(windows):
        with no_grad():
            return model(windows.astype(np.float32))
    return predict


def mse(pred, target):
    """The mean squared error in float64 (the predictions are float32, the clean signal float64)."""
    return float(mse_loss_forward(np.asarray(pred, dtype=np.float64), np.asarray(target, dtype=np.float64))[0])


def train(model, epochs, seed=0):
    optimizer = Adam(model.parameters(), lr=LR)
    batches = BatchIterator((train_features, train_labels), BATCH_SIZE, shuffle=True, seed=seed)
    step_losses, held_out = [], []
    for _ in range(epochs):
        for windows, labels in batches:
            model.zero_grad()
            loss, cache = mse_loss_forward(model(windows), labels)
            model.backward(mse_loss_backward(1.0, cache))
            optimizer.step()
            step_losses.append(float(loss))
        held_out.append(mse(predictor(model)(data.features[NUM_TRAIN:]), data.labels[NUM_TRAIN:]))
    return step_losses, held_out


models = {"MLP": MLP(TAU, HIDDEN, rng=0), "RNN": WindowRNN(TAU, HIDDEN, rng=0)}
histories = {name: train(model, EPOCHS) for name, model in models.items()}
for name, model in models.items():
    size = sum(p.data.size for p in model.parameters())
    print(f"{name}: {size} parameters; held-out MSE after each epoch:",
          " ".join(f"{value:.4f}" for value in histories[name][1]))
print(f"the noise alone costs sigma^2 = {0.2 ** 2:.4f}: no model can beat that on average")

fig = Figure(figsize=(7.2, 4.2), layout="constrained")
FigureCanvasAgg(fig)
ax = fig.subplots()
steps_per_epoch = -(-NUM_TRAIN // BATCH_SIZE)
colours = dict(zip(histories, ("C0", "C1")))
# The legend fills its columns in drawing order: the batch losses (and the noise floor), then the held-out errors.
for name, (step_losses, _) in histories.items():
    ax.plot(np.arange(1, len(step_losses) + 1) / steps_per_epoch, step_losses, color=colours[name], linewidth=0.7,
            alpha=0.6, label=f"{name}: training batches")
ax.axhline(0.04, color="black", linestyle="--", linewidth=1, label=r"noise variance $\sigma^2 = 0.04$")
for name, (_, held_out) in histories.items():
    ax.plot(np.arange(1, len(held_out) + 1), held_out, "o-", color=colours[name], label=f"{name}: held out")
ax.set_yscale("log")
ax.set_xlabel("epoch")
ax.set_ylabel("mean squared error")
fig.legend(loc="outside upper center", ncols=2)
ax.grid(True, which="both", alpha=0.3)
show(save_figure(fig, "00_training.png", alt="Mean squared error against the epoch on a log scale, for the MLP "
                 "and the RNN: the batch losses fall in the first epoch and then scatter widely, and the held-out "
                 "errors stay a little above the dashed noise variance 0.04."))

# %% [markdown]
# Both models reach a held-out error not far above $\sigma^2 = 0.04$ after the first
# epoch and then wander around it: the noise is a floor. Even a model that knew the
# signal exactly would pay $\mathbb{E}[(\sin(0.01\,t) - x_t)^2] = \sigma^2$ on every
# example, because $\epsilon_t$ is independent of everything before it. The batch losses
# (thin lines) scatter by a factor of ten for the same reason: 16 squared noise values
# make a noisy mean.

# %% [markdown]
# ## One step ahead
#
# A one-step-ahead prediction $\hat x_t$ uses the *observed* $x_{t-\tau}, \dots, x_{t-1}$: the
# model always stands on real data, and an error at one step does not carry over to the
# next.

# %%
one_step = {name: predictor(model)(data.features) for name, model in models.items()}
fig = Figure(figsize=(7.2, 3.8), layout="constrained")
FigureCanvasAgg(fig)
ax = fig.subplots()
ax.plot(series.time, series.x, color="lightgrey", linewidth=0.8, label="observed $x_t$")
ax.plot(series.time, series.signal, "k", linewidth=1, label="signal")
for name, pred in one_step.items():
    ax.plot(series.time[TAU:], pred, linewidth=1, label=f"{name}: one-step-ahead $\\hat x_t$")
    print(f"{name}: one-step MSE against the observations {mse(pred, series.x[TAU:]):.4f}, "
          f"against the clean signal {mse(pred, series.signal[TAU:]):.4f}")
ax.axvline(NUM_TRAIN + TAU, color="grey", linestyle=":")
ax.set_xlabel("time $t$")
ax.set_ylabel("$x_t$")
ax.set_xlim(1, T)
fig.legend(loc="outside upper center", ncols=2)
show(save_figure(fig, "00_one_step.png", alt="The one-step-ahead predictions of the MLP and the RNN against time, "
                 "over the noisy observations in grey and the sine wave in black: both follow the wave closely, "
                 "before and after the dotted line that ends the training examples."))

# %% [markdown]
# One step ahead both models follow the wave, on the held-out part (right of the dotted
# line) as well as on the training part. Measured against the observations their error
# is the noise floor plus a little; measured against the clean signal, which they never
# saw, it is well *below* $\sigma^2$. A prediction from four noisy values is less noisy
# than one observation: the models have learnt to average. Averaging is most of what a
# window of four can teach. Over four steps the sine moves by at most
# $4 \times 0.01 = 0.04$ while each value carries noise of standard deviation 0.2, so the
# window says where the wave *is* far better than where it is *going*.

# %% [markdown]
# ## k steps ahead
#
# Standing at time $t - 1$ with observations up to $x_{t-1}$, the forecast of $x_{t+k-1}$
# needs the values in between, which have not been observed. The model supplies them
# itself: predict $\hat x_t$, append it to the window, predict $\hat x_{t+1}$ from
# $(x_{t-\tau+1}, \dots, x_{t-1}, \hat x_t)$, and so on,
#
# $$\hat x_{s} = f(\tilde x_{s-\tau}, \dots, \tilde x_{s-1}), \qquad
# \tilde x_{r} = \begin{cases} x_r & r < t \text{ (observed)} \\ \hat x_r & r \ge t \text{ (predicted)} \end{cases}$$
#
# so the $k$-step-ahead prediction is the model applied $k$ times to its own outputs.
# After $\tau$ steps the window holds predictions only. `k_step_predictions` does this
# for every starting point at once: a matrix of columns whose first $\tau$ are the
# series and every further one is the model applied to the $\tau$ columns before it.

# %%
print(code(k_step_predictions))
K_MAX, STEPS = 64, (1, 4, 16, 64)
forecasts = {name: k_step_predictions(predictor(model), x, TAU, K_MAX) for name, model in models.items()}

fig = Figure(figsize=(7.2, 6.6), layout="constrained")
FigureCanvasAgg(fig)
axes = fig.subplots(2, 1, sharex=True)
for ax, (name, forecast) in zip(axes, forecasts.items()):
    ax.plot(series.time, series.x, color="lightgrey", linewidth=0.8, label="observed $x_t$")
    ax.plot(series.time, series.signal, "k", linewidth=1, label="signal")
    for k in STEPS:
        ax.plot(series.time[forecast.target_slice(k)], forecast.predictions[k - 1], linewidth=1.1,
                label=f"{k} step{'s' if k > 1 else ''} ahead")
    ax.axvline(NUM_TRAIN + TAU, color="grey", linestyle=":")
    ax.set_ylim(-1.7, 2.2)
    ax.set_ylabel("$x_t$")
    ax.set_title(f"{name}: predictions k steps ahead, fed on its own outputs")
fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=3)
axes[1].set_xlabel("time $t$")
axes[1].set_xlim(1, T)
show(save_figure(fig, "00_k_step.png", alt="Two panels, the MLP above and the RNN below, of the predictions 1, 4, "
                 "16 and 64 steps ahead against time, over the observations and the sine wave: the 1- and 4-step "
                 "curves follow the wave, the 16-step ones stray from it, and the 64-step ones sit on a few flat "
                 "levels and jump between them."))
signal_variance = series.signal.var()
for name, forecast in forecasts.items():
    shares = [mse(forecast.predictions[k - 1], series.signal[forecast.target_slice(k)]) / signal_variance
              for k in STEPS]
    print(f"{name}: error against the signal, in % of the signal's variance: "
          + ", ".join(f"k = {k}: {share:.0%}" for k, share in zip(STEPS, shares)))

# %% [markdown]
# The 1-step and 4-step predictions still follow the wave. At 16 steps they drift away
# from it (the MLP overshoots the crests, the RNN turns over too early), and at 64 steps
# they no longer follow it at all: they sit on a few constant levels and jump from one
# to another where the starting point moves across some boundary. The lines printed
# under the figure say the same in numbers: the error against the signal is a few per
# cent of the signal's variance at $k = 1$ and $k = 4$, and at $k = 64$ it is about as
# large as the variance or larger, as large as forecasting nothing but the mean would
# make it. Nothing about the model changed between the curves; only how many of its
# inputs were its own outputs.

# %% [markdown]
# How the error grows with the horizon, for every $k$ from 1 to 64, measured against the
# observations and against the clean signal:

# %%
horizons = np.arange(1, K_MAX + 1)
fig = Figure(figsize=(7.2, 4.6), layout="constrained")
FigureCanvasAgg(fig)
ax = fig.subplots()
for name, forecast in forecasts.items():
    errors = np.array([mse(forecast.predictions[k - 1], series.x[forecast.target_slice(k)]) for k in horizons])
    to_signal = np.array([mse(forecast.predictions[k - 1], series.signal[forecast.target_slice(k)])
                          for k in horizons])
    line, = ax.plot(horizons, errors, label=f"{name}: against the observations")
    ax.plot(horizons, to_signal, "--", color=line.get_color(), label=f"{name}: against the signal")
    print(f"{name}: MSE against the observations at k = " + ", ".join(f"{k}: {errors[k - 1]:.3f}" for k in STEPS))
ax.axhline(0.04, color="black", linestyle=":", linewidth=1)
ax.text(K_MAX, 0.04, r"$\sigma^2$", ha="right", va="bottom")
ax.axvline(TAU, color="grey", linestyle=":", linewidth=1)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("horizon $k$ (steps ahead)")
ax.set_ylabel("mean squared error")
fig.legend(loc="outside upper center", ncols=2)
ax.grid(True, which="both", alpha=0.3)
show(save_figure(fig, "00_error_vs_k.png", alt="Mean squared error of the MLP and the RNN against the horizon k "
                 "from 1 to 64, both axes logarithmic, measured against the observations (solid) and against the "
                 "signal (dashed), with the noise variance as a dotted line: every curve rises with k, slowly up "
                 "to k = 4 and steeply after it."))

# %% [markdown]
# ## Why the errors accumulate
#
# A one-step prediction pays for one error: the model's own. A $k$-step prediction pays
# for that error plus what the earlier $k - 1$ errors do to it, because each of them sits
# in the window it was computed from. Three things make that worse than a simple sum:
#
# * **The errors are passed through the model.** If a small change $\delta$ in an
#   input moves the output by about $a\,\delta$, the error made at step 1 is carried
#   into step 2 scaled by $a$, into step 3 scaled again, and so on: a product of
#   factors, like the gradients through time of tutorial 2, that grows geometrically
#   in any direction where they exceed 1.
# * **The inputs stop looking like the training data.** The models were trained on
#   windows of observations, each value with its noise. Their own predictions are
#   smooth, so from $k > \tau = 4$ on they read windows of a kind they never saw in
#   training, and nothing in the loss ever asked them to do well there. The decoders of
#   tutorial 5, trained with teacher forcing and run on their own outputs, meet the
#   same mismatch.
# * **The window does not hold what the long run needs.** As we saw, four noisy values
#   fix the level of the wave and hardly its slope. Fed on itself, a model that has
#   learnt "about the average of the last few values" continues a level, not a wave.
#
# The last point explains the flat stretches. Feed each model constant windows
# $(c, c, c, c)$ and look for the levels it continues unchanged, $f(c, \dots, c) = c$:

# %%
levels = np.linspace(-2.5, 2.5, 5001).astype(np.float32)
for name, model in models.items():
    drift = predictor(model)(np.repeat(levels[:, None], TAU, axis=1)) - levels
    fixed = levels[np.flatnonzero(np.diff(np.sign(drift)) != 0)]
    print(f"{name}: constant windows it continues unchanged near c = {np.round(fixed, 2)}")

# %% [markdown]
# Each model has three such levels: one near 0, which repels (there the output moves
# further from $c$ than the input was), and one on either side, which attract: the
# 64-step curves above sit on them or are on their way. Which one a forecast falls into
# depends on where its starting window was, hence the jumps.
#
# ## The MLP and the RNN
#
# With the same data, loss, optimiser and window, the two differ only in how they
# combine the four values. One step ahead the MLP is a little more accurate here (its
# error against the signal is lower), and both are close to the noise floor. Far ahead
# the RNN does better (lower error at $k = 64$), not because it forecasts the wave
# (neither does) but because of where it stops: its $\tanh$ state saturates, so its
# outer levels lie near $\pm 1$, inside the range of the data, while the MLP's ReLU units
# extrapolate linearly and its upper level lies outside anything it was trained on. The
# order can change with the seed and the number of epochs (exercise 2); that neither model
# forecasts 64 steps does not.
#
# An RNN can do more than this. Here it reads only the same four values as the MLP,
# starting from a zero state at every window. Run over the whole series instead, its
# state could carry the phase of the wave from far back, which a window of four cannot
# hold; that is the setting of the language models in tutorial 4.
#
# ## Summary
#
# * An autoregressive model predicts the next value from the past; under a Markov
#   assumption of order $\tau$ that past is a fixed window, and prediction becomes
#   regression on `lag_features`.
# * One step ahead, a model always reads real observations, and its error stays near
#   the noise floor.
# * $k$ steps ahead it reads its own outputs. Their errors are propagated through the
#   model, its inputs drift away from anything it was trained on, and what the window
#   cannot hold (here, the slope) is lost for good: the forecasts settle on the model's
#   fixed points.
# * Every later tutorial that generates (sampling from a language model, decoding a
#   translation) feeds a model on its own outputs and meets the same effect.

# %% [markdown]
# ## Exercises
#
# 1. Train d2l's newer baseline, a linear model $\hat x_t = w_t W + b$ (a single `Linear(TAU, 1)`),
#    with the same loop. Write its $k$-step predictions as powers of a $\tau \times \tau$
#    companion matrix, and relate the long-run behaviour of the forecasts to that
#    matrix's eigenvalues.
# 2. Rerun the training with seeds 1 to 5 (the `rng` of both models and the `seed` of the
#    batches). Which conclusions above hold for every seed, and which numbers change?
# 3. Make the window longer, $\tau = 16$ and $\tau = 64$ (keep `K_MAX` fitting in the
#    series). Does the one-step error change? The 64-step error? Explain both with the
#    argument about level and slope.
# 4. Set `noise=0.0` and train again. How far ahead do the forecasts now follow the wave,
#    and why does removing the noise help the $k$-step predictions so much more than the
#    one-step ones?
# 5. Train on the forecast itself: unroll the model for $K = 4$ steps on its own outputs
#    (as `k_step_predictions` does) and put the squared loss on all four predictions.
#    Write the backward of the unrolled chain by hand (each step's input gradient flows
#    into the earlier steps' outputs) and check it with `check_module`. Does the
#    16-step error improve?
# 6. Run the RNN over the whole training series at once (one sequence of 600 steps,
#    predicting $x_{t+1}$ from every state $h_t$), then forecast by feeding its outputs
#    back one step at a time. Compare its 64-step forecasts with the window RNN's.
