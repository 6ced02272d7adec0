"""The checker itself: it must catch and locate a wrong backward, and refuse coarse inputs."""
import numpy as np
import pytest

from npseq import functional as F
from npseq import nn
from npseq.gradcheck import check_function, check_module, numerical_gradient, rel_error


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
