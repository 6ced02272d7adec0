"""A synthetic time series and autoregressive features: sequence models before text.

The setting of d2l's first sequence chapter: one long series of real numbers, a
model that predicts the next value from the last :math:`\\tau` ones (a Markov
assumption of order :math:`\\tau`), and the question of what happens when the
model has to continue the series from its own predictions::

    noisy_sine --x (T,)--> lag_features --features (T - tau, tau), labels (T - tau,)--> a regressor
    k_step_predictions(predict, x, tau, k_max) --(k_max, M)--> 1-, 2-, ..., k_max-step-ahead predictions

Everything here runs on the host and returns NumPy arrays.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .. import backend
from .._checks import as_rng, check_count, check_float_array, check_ndim, check_real
from ..errors import InvalidTypeError, InvalidValueError

__all__ = ["KStepPredictions", "LagFeatures", "NoisySine", "k_step_predictions", "lag_features", "noisy_sine"]


class NoisySine(NamedTuple):
    time: Any    # (T,) float64: the time steps 1, 2, ..., T
    signal: Any  # (T,) float64: the noise-free sin(frequency * t)
    x: Any       # (T,) float64: the observed series, signal plus noise


class LagFeatures(NamedTuple):
    features: Any  # (T - tau, tau): row i is the window x[i], ..., x[i + tau - 1]
    labels: Any    # (T - tau,): labels[i] = x[i + tau], the value after the window


class KStepPredictions(NamedTuple):
    predictions: Any  # (k_max, M): predictions[k - 1, m] is the k-step-ahead prediction of x[m + tau + k - 1]
    tau: int

    def target_slice(self, k: int) -> slice:
        """The positions in ``x`` that row ``k - 1`` predicts: ``x[target_slice(k)]`` lines up with
        ``predictions[k - 1]`` (both of length ``M``)."""
        k_max, num_windows = self.predictions.shape
        k = check_count("k", k, 1, maximum=k_max)
        start = self.tau + k - 1
        return slice(start, start + num_windows)


def noisy_sine(num_points: int = 1000, noise: float = 0.2, frequency: float = 0.01, seed=0) -> NoisySine:
    """d2l's toy series: a sine wave observed through Gaussian noise.

    .. math::
        x_t = \\sin(\\omega t) + \\epsilon_t, \\qquad \\epsilon_t \\sim \\mathcal{N}(0, \\sigma^2),
        \\qquad t = 1, \\dots, T

    with :math:`T` = ``num_points``, :math:`\\sigma` = ``noise`` and :math:`\\omega` =
    ``frequency`` (0.01: one period every :math:`2\\pi / 0.01 \\approx 628` steps). The
    noise is drawn as ``noise * rng.standard_normal(T)`` from ``as_rng(seed)``, so one
    seed always gives the same series.

    Args:
        num_points: :math:`T \\ge 1`.
        noise: :math:`\\sigma \\ge 0` (0 gives the clean sine).
        frequency: :math:`\\omega`, a finite real number.
        seed: an int seed or a ``numpy.random.Generator``.

    Returns:
        A :class:`NoisySine` of three float64 arrays ``(T,)``: ``time``, ``signal``, ``x``.
    """
    num_points = check_count("num_points", num_points, 1)
    noise = check_real("noise", noise, ">= 0 and finite", lambda v: 0.0 <= v < float("inf"))
    frequency = check_real("frequency", frequency, "that is finite", lambda v: abs(v) < float("inf"))
    rng = as_rng(seed)
    np = backend.numpy
    time = np.arange(1, num_points + 1, dtype=np.float64)
    signal = np.sin(frequency * time)
    return NoisySine(time, signal, signal + noise * rng.standard_normal(num_points))


def _check_series(x):
    check_float_array("x", x)
    check_ndim("x", x, 1, "(T,)")


def lag_features(x, tau: int) -> LagFeatures:
    """The autoregressive examples of a series: each window of ``tau`` values and the value after it.

    .. math::
        \\text{features}_{i} = (x_i, x_{i+1}, \\dots, x_{i+\\tau-1}), \\qquad
        \\text{labels}_i = x_{i+\\tau}, \\qquad i = 0, \\dots, T - \\tau - 1

    (0-based positions in ``x``). Column ``j`` of ``features`` is ``x[j : T - tau + j]``,
    so the model sees the oldest value first.

    Args:
        x: ``(T,)`` float series, ``T > tau``.
        tau: the window length :math:`\\tau \\ge 1`.

    Returns:
        A :class:`LagFeatures`: ``features`` ``(T - tau, tau)`` and ``labels`` ``(T - tau,)``,
        new arrays in ``x``'s dtype.
    """
    _check_series(x)
    tau = check_count("tau", tau, 1)
    num_points = x.shape[0]
    if num_points <= tau:
        raise InvalidValueError(f"x: expected more than tau = {tau} values (one window and its label), "
                                f"got {num_points}")
    np = backend.numpy
    features = np.stack([x[j:num_points - tau + j] for j in range(tau)], axis=1)
    return LagFeatures(features, x[tau:].copy())


def k_step_predictions(predict: Callable, x, tau: int, k_max: int) -> KStepPredictions:
    """Predictions 1, 2, ..., ``k_max`` steps ahead, feeding the model its own outputs (d2l's ``k_step_pred``).

    Take :math:`M = T - \\tau - k_{\\max} + 1` starting points :math:`m = 0, \\dots, M-1`.
    Columns :math:`c_0, \\dots, c_{\\tau-1}` are observations, :math:`c_j = x[j : j + M]`;
    every further column is a prediction made from the :math:`\\tau` columns before it:

    .. math::
        c_{\\tau + i} = f(c_i, c_{i+1}, \\dots, c_{i+\\tau-1}), \\qquad i = 0, \\dots, k_{\\max} - 1

    so :math:`c_{\\tau + k - 1}[m]` predicts :math:`x_{m + \\tau + k - 1}` from the
    observations :math:`x_m, \\dots, x_{m+\\tau-1}` alone, after :math:`k - 1` predictions
    of its own. For :math:`k = 1` that is the one-step-ahead prediction from observed
    values only; from :math:`k > \\tau` on the model no longer sees any observation.

    Args:
        predict: the model :math:`f`, called ``k_max`` times with a host float array
            ``(M, tau)`` of windows (oldest value first) and returning ``(M,)`` or ``(M, 1)``
            predictions (a NumPy or CuPy array).
        x: ``(T,)`` float series, ``T >= tau + k_max``.
        tau: the window length :math:`\\tau \\ge 1`.
        k_max: the longest horizon, :math:`k_{\\max} \\ge 1`.

    Returns:
        A :class:`KStepPredictions`: ``predictions`` ``(k_max, M)`` on the host, row ``k - 1``
        the ``k``-step-ahead predictions; ``x[result.target_slice(k)]`` are their targets.
    """
    if not callable(predict):
        raise InvalidTypeError(f"predict: expected a callable (M, tau) -> (M,), got {type(predict).__name__}")
    _check_series(x)
    tau = check_count("tau", tau, 1)
    k_max = check_count("k_max", k_max, 1)
    num_points = x.shape[0]
    if num_points < tau + k_max:
        raise InvalidValueError(f"x: expected at least tau + k_max = {tau + k_max} values, got {num_points}")
    np = backend.numpy
    num_windows = num_points - tau - k_max + 1
    columns = [x[j:j + num_windows] for j in range(tau)]
    for i in range(k_max):
        window = np.stack(columns[i:i + tau], axis=1)
        columns.append(_prediction_column(predict(window), num_windows, tau))
    return KStepPredictions(np.stack(columns[tau:]), tau)


def _prediction_column(output, num_windows: int, tau: int):
    """``predict``'s output ``(M,)`` or ``(M, 1)`` as a host array ``(M,)``; an error for any other shape."""
    output = backend.to_numpy(output)
    if tuple(output.shape) not in ((num_windows,), (num_windows, 1)):
        raise InvalidValueError(f"predict: expected predictions of shape ({num_windows},) or ({num_windows}, 1) "
                                f"for windows ({num_windows}, {tau}), got {tuple(output.shape)}")
    return output.reshape(num_windows)
