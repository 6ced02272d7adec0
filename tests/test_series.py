"""The synthetic series, its lag features and k-step-ahead predictions (npseq.data.series)."""
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from npseq.data import KStepPredictions, k_step_predictions, lag_features, noisy_sine


# ------------------------------------------------------------ noisy_sine
def test_noisy_sine_is_a_sine_plus_seeded_noise():
    series = noisy_sine(1000, noise=0.2, seed=3)
    assert series.time.shape == series.signal.shape == series.x.shape == (1000,)
    assert series.x.dtype == np.float64
    np.testing.assert_array_equal(series.time, np.arange(1, 1001))
    np.testing.assert_allclose(series.signal, np.sin(0.01 * np.arange(1, 1001)), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(series.x, series.signal + 0.2 * np.random.default_rng(3).standard_normal(1000))
    residual = series.x - series.signal
    assert 0.18 < residual.std() < 0.22 and abs(residual.mean()) < 0.03


def test_noisy_sine_seeds_reproduce_and_differ():
    np.testing.assert_array_equal(noisy_sine(50, seed=7).x, noisy_sine(50, seed=7).x)
    np.testing.assert_array_equal(noisy_sine(50, seed=7).x, noisy_sine(50, seed=np.random.default_rng(7)).x)
    assert not np.array_equal(noisy_sine(50, seed=7).x, noisy_sine(50, seed=8).x)
    np.testing.assert_array_equal(noisy_sine(20, noise=0.0).x, np.sin(0.01 * np.arange(1, 21)))
    np.testing.assert_allclose(noisy_sine(20, noise=0.0, frequency=0.5).x, np.sin(0.5 * np.arange(1, 21)))


# ----------------------------------------------------------- lag_features
def test_lag_features_by_hand():
    x = np.array([10.0, 11.0, 12.0, 13.0, 14.0])
    data = lag_features(x, 2)
    np.testing.assert_array_equal(data.features, [[10, 11], [11, 12], [12, 13]])
    np.testing.assert_array_equal(data.labels, [12, 13, 14])
    features, labels = lag_features(x, 4)  # a named record still unpacks
    np.testing.assert_array_equal(features, [[10, 11, 12, 13]])
    np.testing.assert_array_equal(labels, [14])


def test_lag_features_are_copies_in_the_series_dtype():
    x = np.arange(6, dtype=np.float32)
    data = lag_features(x, 3)
    assert data.features.dtype == data.labels.dtype == np.float32
    data.labels[0] = -1
    data.features[0, 0] = -1
    assert x[3] == 3 and x[0] == 0


@given(num_points=st.integers(2, 40), tau=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_lag_features_shapes_and_alignment(num_points, tau, seed):
    assume(num_points > tau)  # shorter series are refused, see the bad-argument test
    x = np.random.default_rng(seed).standard_normal(num_points)
    data = lag_features(x, tau)
    assert data.features.shape == (num_points - tau, tau) and data.labels.shape == (num_points - tau,)
    for i in range(num_points - tau):
        np.testing.assert_array_equal(data.features[i], x[i:i + tau])
        assert data.labels[i] == x[i + tau]


# ------------------------------------------------------ k_step_predictions
def test_exact_model_of_a_line_predicts_every_horizon_exactly():
    # x_t = 2 t + 1 satisfies x_t = 2 x_{t-1} - x_{t-2}: a model that knows it continues the line forever,
    # so every row must equal its targets; an off-by-one in the indexing would shift them by 2.
    x = 2.0 * np.arange(30) + 1.0
    result = k_step_predictions(lambda w: 2 * w[:, -1] - w[:, -2], x, tau=3, k_max=5)
    assert isinstance(result, KStepPredictions)
    assert result.predictions.shape == (5, 30 - 3 - 5 + 1)
    for k in range(1, 6):
        np.testing.assert_array_equal(result.predictions[k - 1], x[result.target_slice(k)])
    assert result.target_slice(1) == slice(3, 26) and result.target_slice(5) == slice(7, 30)


def test_one_step_uses_only_observations_and_later_steps_feed_back_predictions():
    x = np.arange(12.0)
    seen = []

    def predict(windows):
        seen.append(windows.copy())
        return np.full(len(windows), -1.0)  # recognisable: never a value of x

    result = k_step_predictions(predict, x, tau=4, k_max=3)
    num_windows = 12 - 4 - 3 + 1
    assert len(seen) == 3 and all(w.shape == (num_windows, 4) for w in seen)
    np.testing.assert_array_equal(seen[0], lag_features(x, 4).features[:num_windows])  # k = 1: observations only
    np.testing.assert_array_equal(seen[1][:, :3], seen[0][:, 1:])  # shifted by one step ...
    np.testing.assert_array_equal(seen[1][:, 3], -1.0)  # ... with the first prediction as newest value
    np.testing.assert_array_equal(seen[2][:, 2:], -1.0)
    np.testing.assert_array_equal(result.predictions, -1.0)


def test_one_step_predictions_do_not_depend_on_their_own_targets():
    x = noisy_sine(40, seed=1).x
    changed = x.copy()
    changed[10] += 100.0
    weights = np.array([0.1, 0.2, 0.3, 0.4])
    before = k_step_predictions(lambda w: w @ weights, x, 4, 1).predictions[0]
    after = k_step_predictions(lambda w: w @ weights, changed, 4, 1).predictions[0]
    differs = np.flatnonzero(before != after)
    # x[10] is in the windows that start at 7, 8, 9, 10, which predict x[11], ..., x[14]: never x[10] itself
    np.testing.assert_array_equal(differs, [7, 8, 9, 10])


def test_predictions_of_shape_m_by_1_are_accepted():
    x = np.linspace(0, 1, 20)
    result = k_step_predictions(lambda w: w[:, -1:], x, 2, 3)
    np.testing.assert_array_equal(result.predictions[2], x[1:1 + 16])


@given(num_points=st.integers(2, 30), tau=st.integers(1, 5), k_max=st.integers(1, 6))
def test_shapes_over_small_sizes(num_points, tau, k_max):
    x = np.random.default_rng(num_points).standard_normal(num_points)
    if num_points < tau + k_max:
        with pytest.raises(ValueError, match=rf"x: expected at least tau \+ k_max = {tau + k_max} values"):
            k_step_predictions(lambda w: w.mean(axis=1), x, tau, k_max)
        return
    result = k_step_predictions(lambda w: w.mean(axis=1), x, tau, k_max)
    num_windows = num_points - tau - k_max + 1
    assert result.predictions.shape == (k_max, num_windows)
    for k in range(1, k_max + 1):
        assert x[result.target_slice(k)].shape == (num_windows,)
    np.testing.assert_allclose(result.predictions[0], lag_features(x, tau).features[:num_windows].mean(axis=1))


# -------------------------------------------------------------- bad input
@pytest.mark.parametrize("call, error, message", [
    (lambda: noisy_sine(0), ValueError, r"num_points: expected a positive int, got 0"),
    (lambda: noisy_sine(10.0), TypeError, r"num_points: expected a positive int, got float 10.0"),
    (lambda: noisy_sine(10, noise=-0.1), ValueError, r"noise: expected a real number >= 0 and finite, got -0.1"),
    (lambda: noisy_sine(10, frequency=float("inf")), ValueError, r"frequency: expected a real number that is finite"),
    (lambda: noisy_sine(10, seed="a"), TypeError, r"rng: expected a numpy.random.Generator, an int seed or None"),
    (lambda: lag_features(np.arange(5), 2), TypeError, r"x: expected a floating-point array, got dtype int64"),
    (lambda: lag_features(np.zeros((5, 1)), 2), ValueError, r"x: expected a 1-d array \(T,\), got shape \(5, 1\)"),
    (lambda: lag_features(np.zeros(5), 0), ValueError, r"tau: expected a positive int, got 0"),
    (lambda: lag_features(np.zeros(4), 4), ValueError,
     r"x: expected more than tau = 4 values \(one window and its label\), got 4"),
    (lambda: k_step_predictions(None, np.zeros(9), 4, 2), TypeError, r"predict: expected a callable"),
    (lambda: k_step_predictions(lambda w: w, np.zeros(9), 4, 0), ValueError, r"k_max: expected a positive int, got 0"),
    (lambda: k_step_predictions(lambda w: w, np.zeros(9), 4, 2), ValueError,
     r"predict: expected predictions of shape \(4,\) or \(4, 1\) for windows \(4, 4\), got \(4, 4\)"),
    (lambda: k_step_predictions(lambda w: w.sum(1), np.zeros(9), 4, 2).target_slice(3), ValueError,
     r"k: expected a positive int up to 2, got 3"),
])
def test_bad_arguments_name_the_argument_the_expected_and_the_given(call, error, message):
    with pytest.raises(error, match=message):
        call()
