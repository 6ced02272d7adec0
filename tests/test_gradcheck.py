"""The checker itself: it must catch and locate a wrong backward, and refuse coarse inputs."""
import re

import numpy as np
import pytest

from npseq import functional as F
from npseq import nn
from npseq.gradcheck import check_function, check_module, first_wrong_step, numerical_gradient, rel_error, step_report


def affine_backward_with_planted_bug(dout, cache):
    """The real backward, except one element of dw has the wrong sign."""
    dx, dw, db = F.affine_backward(dout, cache)
    dw = dw.copy()
    dw[2, 1] = -dw[2, 1]
    return dx, dw, db


def test_planted_bug_is_caught_and_located():
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((4, 3)), "w": rng.standard_normal((3, 5)), "b": rng.standard_normal(5)}
    report = check_function(F.affine_forward, affine_backward_with_planted_bug, inputs)
    assert not report.ok
    assert report["x"].ok and report["b"].ok
    wrong = report["w"]
    assert not wrong.ok and wrong.worst_index == (2, 1)
    assert wrong.analytic_value == pytest.approx(-wrong.numeric_value)
    table = str(report)
    assert "w       3x5    " in table and "[2, 1]" in table and "FAIL" in table
    assert "1 of 3 tensors disagree" in table


def test_correct_backward_passes_and_prints_a_table():
    rng = np.random.default_rng(1)
    inputs = {"x": rng.standard_normal((2, 3, 4)), "w": rng.standard_normal((4, 2)), "b": rng.standard_normal(2)}
    report = check_function(F.temporal_affine_forward, F.temporal_affine_backward, inputs)
    assert report.ok and report.max_rel_error < 1e-8
    header = str(report).splitlines()[0].split()
    assert header == ["tensor", "shape", "max", "rel", "error", "worst", "at", "analytic", "numeric", "verdict"]


def test_a_failing_row_prints_its_two_values_differently():
    # A backward rounded to float32 fails at 1e-7 although both values agree to six decimals: its table row must
    # not show the learner two equal numbers.
    rng = np.random.default_rng(3)
    inputs = {"x": rng.standard_normal((2, 3)), "w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}

    def backward_in_float32(dout, cache):
        dx, dw, db = F.affine_backward(dout, cache)
        return dx.astype(np.float32), dw, db

    report = check_function(F.affine_forward, backward_in_float32, inputs, tol=1e-10)
    row = report["x"]
    assert not row.ok
    line = next(line for line in str(report).splitlines() if line.startswith("x "))
    analytic, numeric = re.findall(r"[+-]\d\.\d+e[+-]\d+", line)
    assert analytic != numeric, line
    assert float(analytic) == pytest.approx(row.analytic_value, rel=1e-6), line


def test_wrong_gradient_shape_is_a_failure_not_a_crash():
    rng = np.random.default_rng(2)
    inputs = {"x": rng.standard_normal((2, 3)), "w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}

    def backward_wrong_shape(dout, cache):
        dx, dw, db = F.affine_backward(dout, cache)
        return dx, dw.T, db

    report = check_function(F.affine_forward, backward_wrong_shape, inputs)
    assert not report["w"].ok and "backward gave shape (2, 3), expected (3, 2)" in str(report)


def test_planted_bug_in_a_module_names_the_parameter():
    class LeakyLinear(nn.Linear):
        def backward(self, dy):
            dx = super().backward(dy)
            self.b.grad[0] += 1.0  # the planted bug
            return dx

    layer = LeakyLinear(3, 2, rng=0, dtype=np.float64)
    report = check_module(layer, {"x": np.random.default_rng(3).standard_normal((4, 3))})
    assert [row.name for row in report.rows] == ["x", "W", "b"]
    assert report["x"].ok and report["W"].ok and not report["b"].ok
    assert report["b"].worst_index == (0,)


def test_numerical_gradient_of_a_known_function():
    x = np.array([1.0, -2.0, 3.0])
    grad = numerical_gradient(lambda v: float((v ** 3).sum()), x)
    np.testing.assert_allclose(grad, 3 * x ** 2, rtol=1e-9)
    np.testing.assert_array_equal(x, [1.0, -2.0, 3.0])  # restored exactly


def test_numerical_gradient_refuses_float32():
    with pytest.raises(TypeError, match="x: expected a float64 array .* got dtype float32"):
        numerical_gradient(lambda v: float(v.sum()), np.ones(3, np.float32))


def test_rel_error_is_the_cs231n_measure():
    assert rel_error(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 0.0
    assert rel_error(np.array([1.0]), np.array([3.0])) == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"b: expected shape \(2,\) \(the shape of a\), got \(3,\)"):
        rel_error(np.zeros(2), np.zeros(3))


def _rnn_backward_planted(corrupt):
    """npseq's rnn_backward loop with ``corrupt(t, g, dprev_h) -> (g, dprev_h)`` applied at each step."""
    def backward(dh, cache):
        delta, dxs, dWx, dWh, db = np.zeros_like(cache.h_last), [], 0, 0, 0
        for t in reversed(range(dh.shape[1])):
            m = cache.mask[:, t, None]
            g = delta + m * dh[:, t]
            g, _ = corrupt(t, g, None)
            dx_t, dprev_h, dWx_t, dWh_t, db_t = F.rnn_step_backward(m * g, cache.steps[t])
            _, dprev_h = corrupt(t, None, dprev_h)
            delta = dprev_h + (1 - m) * g
            dxs.insert(0, dx_t)
            dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
        return np.stack(dxs, axis=1), delta, dWx, dWh, db
    return backward


def _rnn_inputs(seed=0, n=2, t=6, d=3, h=4):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((n, t, d)), "h0": rng.standard_normal((n, h)),
            "Wx": 0.5 * rng.standard_normal((d, h)), "Wh": 0.5 * rng.standard_normal((h, h)),
            "b": rng.standard_normal(h)}


def test_a_sequence_gradient_reports_the_first_wrong_step_walking_back():
    def wrong_step_3(t, g, dprev_h):  # step 3 scales its own gradient: dx is wrong at t = 3, 2, 1, 0
        return (g * 1.5 if g is not None and t == 3 else g), dprev_h

    def wrong_hand_back_from_3(t, g, dprev_h):  # only what step 3 hands back is wrong: dx wrong at t < 3
        return g, (-dprev_h if dprev_h is not None and t == 3 else dprev_h)

    for corrupt, step in ((wrong_step_3, 3), (wrong_hand_back_from_3, 2)):
        report = check_function(F.rnn_forward, _rnn_backward_planted(corrupt), _rnn_inputs(),
                                ["x", "h0", "Wx", "Wh", "b"], time_axes={"x": 1})
        row = report["x"]
        assert not row.ok and (row.first_wrong_step, row.num_steps) == (step, 6)
        assert report["h0"].first_wrong_step is None  # no time axis named: no step report
        assert f"first wrong at t={step} (of 0..5, walking back from t=5" in report.table()
    assert step_report(2, 6) == ("first wrong at t=2 (of 0..5, walking back from t=5; t=5..3 agree): the error "
                                 "enters at the step that handles t=2, or in the gradient that step t=3 hands back "
                                 "to it")
    assert step_report(5, 6).startswith("first wrong at t=5 (of 0..5), the last step")
    correct = check_function(F.rnn_forward, F.rnn_backward, _rnn_inputs(), ["x", "h0", "Wx", "Wh", "b"],
                             time_axes={"x": 1})
    assert correct.ok and correct["x"].first_wrong_step is None


def test_first_wrong_step_finds_nan_and_needs_equal_shapes():
    reference = np.ones((2, 5, 3))
    analytic = reference.copy()
    assert first_wrong_step(analytic, reference) is None
    analytic[1, 1, 2] = np.nan
    analytic[0, 0, 0] = 7.0
    assert first_wrong_step(analytic, reference) == 1
    assert first_wrong_step(analytic.transpose(1, 0, 2), reference.transpose(1, 0, 2), time_axis=0) == 1
    with pytest.raises(ValueError, match=r"reference: expected shape \(2, 5, 3\)"):
        first_wrong_step(analytic, reference[:, :4])


def test_step_report_says_which_side_of_the_step_the_error_comes_from():
    assert step_report(2, 6, "own").endswith("the error enters at step t=2 itself (it stays wrong with no upstream "
                                             "gradient after t=2)")
    assert step_report(2, 6, "handed back").endswith("the error enters in the gradient that step t=3 hands back "
                                                     "to t=2 (with no upstream gradient after t=2, t=2 is right)")
    with pytest.raises(ValueError, match=r"source: expected None or one of \('own', 'handed back'\), got 'x'"):
        step_report(2, 6, "x")
