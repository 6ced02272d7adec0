"""Nadaraya-Watson kernel regression and its Gaussian score (d2l 10.2, tutorial 12).

* the Gaussian score pair and the regression (both query layouts, with and without the width ``w``)
  against finite differences in float64, and on hypothesis-drawn edge shapes (one example, one
  query, one key);
* the non-parametric form is the kernel-weighted average written out, its weights sum to 1, and it
  is the parametric form at ``w = 1``; the two query layouts agree;
* values and every gradient equal PyTorch autograd on d2l's own formula, where torch is installed.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from optional_tools import require

from npseq.functional import (
    NadarayaWatsonGrads,
    gaussian_scores_backward,
    gaussian_scores_forward,
    nadaraya_watson_backward,
    nadaraya_watson_forward,
)
from npseq.gradcheck import check_function, rel_error
from npseq.gradient_checks import run_checks
from npseq.samples import normal as _normal


def regression_inputs(seed, n=3, q=None, k=5, parametric=True, span=5.0):
    """Points on ``[0, span)`` (d2l's interval by default), queries ``(n,)`` or ``(n, q)``, and a width of 1.7."""
    rng = np.random.default_rng(seed)
    inputs = {"queries": rng.uniform(0, span, (n,) if q is None else (n, q)), "keys": rng.uniform(0, span, (n, k)),
              "values": _normal(rng, n, k)}
    if parametric:
        inputs["w"] = np.array(1.7)
    return inputs


def without_dw(grads):
    """The non-parametric backward as check_function counts it: no gradient for the absent w."""
    assert grads.dw is None
    return grads[:3]


# ---------------------------------------------------------------- finite differences
def test_gaussian_score_gradients():
    rng = np.random.default_rng(0)
    inputs = {"queries": _normal(rng, 2, 3, 2), "keys": _normal(rng, 2, 4, 2), "w": np.array(0.8)}
    report = check_function(gaussian_scores_forward, gaussian_scores_backward, inputs)
    assert report.ok, report


@pytest.mark.parametrize("q", [None, 4], ids=["one query each", "Q queries"])
@pytest.mark.parametrize("parametric", [True, False], ids=["parametric", "non-parametric"])
def test_regression_gradients(q, parametric):
    inputs = regression_inputs(1, q=q, parametric=parametric)
    backward = nadaraya_watson_backward if parametric else lambda d, cache: without_dw(
        nadaraya_watson_backward(d, cache))
    report = check_function(nadaraya_watson_forward, backward, inputs)
    assert report.ok, report
    assert report.max_rel_error < 1e-7


def test_the_registered_checks_pass():
    reports = dict(run_checks(["gaussian_scores", "nadaraya_watson (parametric, one query per example)"]))
    assert all(report.ok for report in reports.values()), reports


@st.composite
def edge_case(draw):
    n, k = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    q = draw(st.one_of(st.none(), st.integers(1, 3)))
    return n, q, k, draw(st.booleans()), draw(st.integers(0, 2**16))


@given(edge_case())
def test_edge_shapes(case):
    n, q, k, parametric, seed = case
    # Within 1.5 of each other no weight is below e^-3.3 of another: a key 5 away can hold a weight of 1e-5,
    # whose gradients finite differences cannot resolve to 7 digits (the check would fail, not the backward).
    inputs = regression_inputs(seed, n, q, k, parametric, span=1.5)
    predictions, cache = nadaraya_watson_forward(*inputs.values())
    shape = inputs["queries"].shape
    assert predictions.shape == shape and cache.weights.shape == shape + (k,)
    np.testing.assert_allclose(cache.weights.sum(-1), 1.0, rtol=1e-12)
    grads = nadaraya_watson_backward(np.ones(shape), cache)
    if k == 1:  # one key takes all the weight, wherever it lies: only its value matters
        np.testing.assert_allclose(predictions, np.broadcast_to(inputs["values"], (n, q or 1)).reshape(shape))
        assert not grads.dqueries.any() and not grads.dkeys.any() and (not parametric or grads.dw == 0)
    backward = nadaraya_watson_backward if parametric else lambda d, c: without_dw(nadaraya_watson_backward(d, c))
    report = check_function(nadaraya_watson_forward, backward, inputs)
    assert report.ok, report


# ---------------------------------------------------------------- what the regression is
def test_non_parametric_is_the_kernel_weighted_average():
    inputs = regression_inputs(2, n=4, q=6, k=7, parametric=False)
    x, xi, yi = inputs["queries"], inputs["keys"], inputs["values"]
    kernel = np.exp(-(x[:, :, None] - xi[:, None, :]) ** 2 / 2)
    expected = (kernel * yi[:, None, :]).sum(-1) / kernel.sum(-1)
    predictions, cache = nadaraya_watson_forward(x, xi, yi)
    np.testing.assert_allclose(predictions, expected, rtol=1e-12)
    np.testing.assert_allclose(cache.weights, kernel / kernel.sum(-1, keepdims=True), rtol=1e-12)
    assert (cache.weights > 0).all()
    np.testing.assert_allclose(cache.weights.sum(-1), 1.0, rtol=1e-12)


def test_non_parametric_is_the_parametric_form_at_width_one():
    inputs = regression_inputs(3, q=2, parametric=False)
    plain, plain_cache = nadaraya_watson_forward(*inputs.values())
    one, one_cache = nadaraya_watson_forward(*inputs.values(), np.array(1.0))
    np.testing.assert_array_equal(plain, one)
    dpredictions = np.random.default_rng(3).standard_normal(plain.shape)
    for got, want in zip(nadaraya_watson_backward(dpredictions, plain_cache)[:3],
                         nadaraya_watson_backward(dpredictions, one_cache)[:3]):
        np.testing.assert_array_equal(got, want)


def test_a_wider_width_narrows_the_kernel():
    """A larger w puts more weight on the nearest key, and in the limit predicts its value."""
    inputs = regression_inputs(4, n=1, q=3, k=6, parametric=False)
    nearest = np.abs(inputs["queries"][0][:, None] - inputs["keys"][0][None, :]).argmin(-1)
    shares = [nadaraya_watson_forward(*inputs.values(), np.array(w))[1].weights[0, np.arange(3), nearest]
              for w in (0.5, 2.0, 50.0)]
    assert (shares[0] < shares[1]).all() and (shares[1] < shares[2]).all()
    sharp, _ = nadaraya_watson_forward(*inputs.values(), np.array(1e3))
    np.testing.assert_allclose(sharp[0], inputs["values"][0][nearest])


def test_both_query_layouts_agree():
    """d2l's test grid: every query with its own copy of the keys ``(N,)``, or all sharing one row ``(1, Q)``."""
    inputs = regression_inputs(5, n=1, q=6, k=8)
    queries, keys, values, w = inputs.values()
    shared, shared_cache = nadaraya_watson_forward(queries, keys, values, w)
    tiled_keys, tiled_values = np.repeat(keys, 6, axis=0), np.repeat(values, 6, axis=0)
    each, each_cache = nadaraya_watson_forward(queries[0], tiled_keys, tiled_values, w)
    np.testing.assert_allclose(each, shared[0], rtol=1e-13)
    np.testing.assert_allclose(each_cache.weights, shared_cache.weights[0], rtol=1e-13)
    dpredictions = np.random.default_rng(5).standard_normal(6)
    grads_shared = nadaraya_watson_backward(dpredictions[None], shared_cache)
    grads_each = nadaraya_watson_backward(dpredictions, each_cache)
    np.testing.assert_allclose(grads_each.dqueries, grads_shared.dqueries[0], rtol=1e-12)
    np.testing.assert_allclose(grads_each.dkeys.sum(0), grads_shared.dkeys[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grads_each.dvalues.sum(0), grads_shared.dvalues[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grads_each.dw, grads_shared.dw, rtol=1e-12)


def test_the_gradients_are_a_named_record_and_float32_stays_float32():
    inputs = {name: value.astype(np.float32) for name, value in regression_inputs(6, q=2).items()}
    predictions, cache = nadaraya_watson_forward(*inputs.values())
    grads = nadaraya_watson_backward(np.ones_like(predictions), cache)
    assert isinstance(grads, NadarayaWatsonGrads) and grads._fields == ("dqueries", "dkeys", "dvalues", "dw")
    assert predictions.dtype == cache.weights.dtype == np.float32
    assert all(grad.dtype == np.float32 for grad in grads)
    assert np.shape(grads.dw) == ()


@pytest.mark.parametrize("change, message", [
    (dict(queries=np.zeros((2, 3, 1))), r"queries: expected a 1-d array \(N,\) \(one query per example\) or a "
                                        r"2-d array \(N, Q\), got shape \(2, 3, 1\)"),
    (dict(queries=np.zeros(2, dtype=int)), r"queries: expected a floating-point array, got dtype int64"),
    (dict(keys=np.zeros((3, 5))), r"keys: expected batch size 2 \(that of queries\), got shape \(3, 5\)"),
    (dict(keys=np.zeros((2, 0)), values=np.zeros((2, 0))), r"keys: expected at least one key \(K >= 1\)"),
    (dict(keys=np.zeros((2, 5), np.float32)), r"keys: expected dtype float64 \(the dtype of queries\)"),
    (dict(values=np.zeros((2, 4))), r"values: expected shape \(2, 5\) \(one value per key\), got \(2, 4\)"),
    (dict(w=np.array([1.0])), r"w: expected a 0-d array \(a scalar width, shape \(\)\), got shape \(1,\)"),
    (dict(w=1.0), r"w: expected an array, got float"),
])
def test_errors_name_the_argument(change, message):
    inputs = dict(regression_inputs(7, n=2), **change)
    with pytest.raises((ValueError, TypeError), match=message):
        nadaraya_watson_forward(*inputs.values())


def test_backward_errors_name_the_argument():
    predictions, cache = nadaraya_watson_forward(*regression_inputs(8, n=2, q=3).values())
    with pytest.raises(ValueError, match=r"dpredictions: expected shape \(2, 3\), got \(2,\)"):
        nadaraya_watson_backward(np.ones(2), cache)
    with pytest.raises(ValueError, match=r"keys: expected feature size 2 \(that of queries; a distance"):
        gaussian_scores_forward(np.zeros((1, 2, 2)), np.zeros((1, 3, 1)), np.array(1.0))


# ---------------------------------------------------------------- torch
@pytest.mark.parametrize("q", [None, 4], ids=["one query each", "Q queries"])
@pytest.mark.parametrize("parametric", [True, False], ids=["parametric", "non-parametric"])
def test_torch_parity(q, parametric):
    """d2l's NWKernelRegression.forward, with autograd, on the same numbers."""
    torch = require("torch")
    inputs = regression_inputs(9, n=3, q=q, k=6, parametric=parametric)
    tensors = {name: torch.tensor(value, requires_grad=True) for name, value in inputs.items()}
    grid = tensors["queries"] if q else tensors["queries"][:, None]
    width = tensors["w"] if parametric else 1.0
    t_weights = torch.softmax(-((grid[:, :, None] - tensors["keys"][:, None, :]) * width) ** 2 / 2, dim=-1)
    t_predictions = (t_weights @ tensors["values"][:, :, None])[..., 0].reshape(inputs["queries"].shape)
    dpredictions = np.random.default_rng(9).standard_normal(inputs["queries"].shape)
    (t_predictions * torch.tensor(dpredictions)).sum().backward()

    predictions, cache = nadaraya_watson_forward(*inputs.values())
    grads = nadaraya_watson_backward(dpredictions, cache)
    assert rel_error(predictions, t_predictions.detach().numpy()) < 1e-10
    assert rel_error(cache.weights, t_weights.detach().numpy().reshape(cache.weights.shape)) < 1e-10
    for name, grad in zip(("queries", "keys", "values", "w"), grads):
        if name in tensors:
            assert rel_error(np.asarray(grad), tensors[name].grad.numpy()) < 1e-10, name
