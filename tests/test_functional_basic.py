"""Affine, embedding, activations, dropout, softmax and losses: values, gradients, edge cases, errors."""
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from npseq import functional as F
from npseq.gradcheck import check_function, compare, numerical_gradient
from npseq.samples import valid_mask


def rng_for(seed):
    return np.random.default_rng(seed)


# ----------------------------------------------------------------- affine
@given(n=st.integers(1, 4), d1=st.integers(1, 3), d2=st.integers(1, 3), m=st.integers(1, 4),
       seed=st.integers(0, 2**32 - 1))
def test_affine_gradients(n, d1, d2, m, seed):
    rng = rng_for(seed)
    x = rng.standard_normal((n, d1, d2))
    w = rng.standard_normal((d1 * d2, m))
    b = rng.standard_normal(m)
    report = check_function(F.affine_forward, F.affine_backward, {"x": x, "w": w, "b": b}, seed=seed)
    assert report.ok, report


def test_affine_values_and_no_bias():
    x = np.arange(6.0).reshape(2, 3)
    w = np.ones((3, 2))
    out, cache = F.affine_forward(x, w, np.array([1.0, -1.0]))
    np.testing.assert_array_equal(out, [[4.0, 2.0], [13.0, 11.0]])
    out, cache = F.affine_forward(x, w, None)
    dx, dw, db = F.affine_backward(np.ones((2, 2)), cache)
    assert db is None and dw.shape == (3, 2)


@given(leading=st.lists(st.integers(1, 3), min_size=0, max_size=3), d=st.integers(1, 4), m=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_project_and_its_weight_gradient_over_every_leading_axis(leading, d, m, seed):
    """``project`` is ``x @ w`` row by row for any leading axes (none included), and ``project_weight_grad`` with
    ``dx = dy w^T`` is its backward, to finite differences."""
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((*leading, d)), rng.standard_normal((d, m))
    assert np.allclose(F.project(x, w), np.einsum("...d,dm->...m", x, w), rtol=1e-12, atol=1e-12)
    report = check_function(lambda x, w: (F.project(x, w), (x, w)),
                            lambda dy, cache: (F.project(dy, cache[1].T), F.project_weight_grad(cache[0], dy)),
                            {"x": x, "w": w}, seed=seed)
    assert report.ok, report


@given(n=st.integers(1, 3), t=st.integers(1, 4), d=st.integers(1, 3), m=st.integers(1, 3),
       seed=st.integers(0, 2**32 - 1))
def test_temporal_affine_gradients(n, t, d, m, seed):
    rng = rng_for(seed)
    inputs = {"x": rng.standard_normal((n, t, d)), "w": rng.standard_normal((d, m)),
              "b": rng.standard_normal(m)}
    report = check_function(F.temporal_affine_forward, F.temporal_affine_backward, inputs, seed=seed)
    assert report.ok, report


# ------------------------------------------------------------- embedding
@given(n=st.integers(1, 3), t=st.integers(1, 4), v=st.integers(1, 5), d=st.integers(1, 3),
       seed=st.integers(0, 2**32 - 1))
def test_word_embedding_gradient_accumulates_repeated_ids(n, t, v, d, seed):
    rng = rng_for(seed)
    x = rng.integers(0, v, size=(n, t))
    W = rng.standard_normal((v, d))
    report = check_function(F.word_embedding_forward, F.word_embedding_backward,
                            {"x": x, "W": W}, grad_names=["W"], seed=seed)
    assert report.ok, report


def test_word_embedding_looks_up_rows():
    W = np.arange(12.0).reshape(4, 3)
    out, _ = F.word_embedding_forward(np.array([[3, 0]]), W)
    np.testing.assert_array_equal(out, [[W[3], W[0]]])


# ------------------------------------------------------------ activations
@pytest.mark.parametrize("pair", [(F.tanh_forward, F.tanh_backward), (F.sigmoid_forward, F.sigmoid_backward),
                                  (F.softmax_forward, F.softmax_backward),
                                  (F.log_softmax_forward, F.log_softmax_backward), (F.relu_forward, F.relu_backward)],
                         ids=["tanh", "sigmoid", "softmax", "log_softmax", "relu"])
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2**32 - 1))
def test_activation_gradients(pair, shape, seed):
    x = rng_for(seed).standard_normal(shape)  # unsaturated; extremes are tested separately
    report = check_function(*pair, {"x": x}, seed=seed)
    assert report.ok, report


def test_relu_values_and_its_gradient_mask():
    x = np.array([[-2.0, 0.0, 3.0], [0.5, -0.1, -7.0]])
    out, cache = F.relu_forward(x)
    np.testing.assert_array_equal(out, [[0.0, 0.0, 3.0], [0.5, 0.0, 0.0]])
    # the subgradient at exactly 0 is 0: only strictly positive inputs pass the gradient on
    np.testing.assert_array_equal(F.relu_backward(np.full_like(x, 5.0), cache), [[0, 0, 5], [5, 0, 0]])


def test_sigmoid_is_stable_and_exact_at_the_extremes():
    x = np.array([-1e4, -745.0, -30.0, 0.0, 30.0, 1e4])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s, _ = F.sigmoid_forward(x)
        s32, _ = F.sigmoid_forward(x.astype(np.float32))
    assert np.all(np.isfinite(s)) and s32.dtype == np.float32
    assert s[0] == 0.0 and s[-1] == 1.0 and s[3] == 0.5
    assert s32[0] == 0.0 and s32[-1] == 1.0 and s32[3] == 0.5
    # sigma = (1 + tanh(x/2)) / 2: absolute error of a few ulps of 1 against the exact formula
    grid = np.concatenate([x, np.linspace(-40.0, 40.0, 2001)])
    exact = np.where(grid >= 0, 1 / (1 + np.exp(-np.abs(grid))), np.exp(-np.abs(grid)) / (1 + np.exp(-np.abs(grid))))
    assert np.abs(F.sigmoid(grid) - exact).max() < 1e-15


def test_softmax_and_log_softmax_are_stable_for_huge_logits():
    x = np.array([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p, _ = F.softmax_forward(x)
        logp, _ = F.log_softmax_forward(x)
    e = np.exp(np.array([0.0, -1.0]))
    np.testing.assert_allclose(p[0, :2], e / e.sum(), rtol=1e-14)
    assert p[0, 2] == 0.0
    np.testing.assert_allclose(p[1], [1 / 3] * 3, rtol=1e-15)
    np.testing.assert_allclose(logp[0, :2], np.log(e / e.sum()), rtol=1e-14)
    np.testing.assert_allclose(logp[0, 2], -2e4 - np.log(e.sum()), rtol=1e-14)


# ---------------------------------------------------------------- dropout
def test_dropout_gradient_uses_the_cached_mask():
    rng = rng_for(0)
    x = rng.standard_normal((4, 5))
    mask_rng_seed = 7

    def forward(x):
        return F.dropout_forward(x, 0.3, np.random.default_rng(mask_rng_seed))

    report = check_function(forward, F.dropout_backward, {"x": x})
    assert report.ok, report


def test_dropout_is_inverted_and_the_identity_outside_training():
    x = np.ones((200, 500), dtype=np.float32)
    out, cache = F.dropout_forward(x, 0.25, np.random.default_rng(1))
    assert out.dtype == np.float32
    kept = out != 0
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.01
    np.testing.assert_array_equal(F.dropout_backward(np.ones_like(x), cache), out)
    same, cache = F.dropout_forward(x, 0.25, np.random.default_rng(1), train=False)
    assert same is x and F.dropout_backward(x, cache) is x
    with pytest.raises(ValueError, match=r"p: expected a drop probability in \[0, 1\), got 1.0"):
        F.dropout_forward(x, 1.0, np.random.default_rng(1))


def test_dropout_mask_is_reproducible_from_the_seed():
    x = np.ones((3, 4))
    a, _ = F.dropout_forward(x, 0.5, np.random.default_rng(3))
    b, _ = F.dropout_forward(x, 0.5, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------- losses
@given(n=st.integers(1, 4), c=st.integers(1, 5), offset=st.sampled_from([0.0, 100.0, -100.0]),
       seed=st.integers(0, 2**32 - 1))
def test_softmax_loss_gradient(n, c, offset, seed):
    # A common offset makes the logits large without saturating the softmax.
    rng = rng_for(seed)
    x = rng.standard_normal((n, c)) + offset
    y = rng.integers(0, c, size=n)
    loss, dx = F.softmax_loss(x, y)
    numeric = numerical_gradient(lambda _: F.softmax_loss(x, y)[0], x)
    row = compare("x", dx, numeric)
    assert row.ok, row


def test_softmax_loss_sanity_value():
    rng = rng_for(0)
    loss, _ = F.softmax_loss(0.001 * rng.standard_normal((500, 10)), rng.integers(0, 10, 500))
    assert abs(loss - np.log(10)) < 0.01


@given(n=st.integers(1, 3), t=st.integers(1, 4), v=st.integers(1, 5), seed=st.integers(0, 2**32 - 1),
       mask_kind=st.sampled_from(["random", "all", "one", "none"]))
def test_temporal_softmax_loss_gradient(n, t, v, seed, mask_kind):
    rng = rng_for(seed)
    x = rng.standard_normal((n, t, v))
    y = rng.integers(0, v, size=(n, t))
    mask = {"random": rng.random((n, t)) > 0.5, "all": np.ones((n, t), bool),
            "none": np.zeros((n, t), bool), "one": np.arange(t)[None, :].repeat(n, 0) == 0}[mask_kind]
    loss, dx = F.temporal_softmax_loss(x, y, mask)
    numeric = numerical_gradient(lambda _: F.temporal_softmax_loss(x, y, mask)[0], x)
    row = compare("x", dx, numeric)
    assert row.ok, row
    if mask_kind == "none":
        assert loss == 0.0 and not dx.any()


def _sanity_loss(n, t, v, p, seed):
    rng = rng_for(seed)
    x = 0.001 * rng.standard_normal((n, t, v))
    y = rng.integers(0, v, size=(n, t))
    mask = rng.random((n, t)) <= p
    return F.temporal_softmax_loss(x, y, mask)[0]


def test_temporal_softmax_loss_classic_sanity_values():
    # Near-uniform scores: each valid step costs log(V); the loss sums T steps and averages N.
    assert abs(_sanity_loss(100, 1, 10, 1.0, 0) - 2.3) < 0.05
    assert abs(_sanity_loss(100, 10, 10, 1.0, 1) - 23.0) < 0.5
    assert abs(_sanity_loss(5000, 10, 10, 0.1, 2) - 2.3) < 0.1


def test_temporal_softmax_loss_huge_logits_stay_finite():
    x = np.zeros((1, 2, 3))
    x[0, :, 0] = 1e4
    loss, dx = F.temporal_softmax_loss(x, np.array([[0, 1]]), np.array([[1, 1]]))
    assert np.isclose(loss, 1e4) and np.all(np.isfinite(dx))


# --------------------------------------------------------- masked softmax
@given(n=st.integers(1, 3), q=st.integers(1, 3), k=st.integers(1, 5), per_query=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_masked_softmax_gradient_and_invariants(n, q, k, per_query, seed):
    rng = rng_for(seed)
    scores = rng.standard_normal((n, q, k))  # unsaturated: large scores are tested below
    valid_lens = rng.integers(0, k + 1, size=(n, q) if per_query else (n,))
    report = check_function(F.masked_softmax, F.masked_softmax_backward,
                            {"scores": scores, "valid_lens": valid_lens}, seed=seed)
    assert report.ok, report
    weights, _ = F.masked_softmax(scores, valid_lens)
    lens = np.broadcast_to(valid_lens if per_query else valid_lens[:, None], (n, q))
    masked = ~valid_mask(lens, k)
    assert np.all(weights[masked] == 0.0)
    np.testing.assert_allclose(weights.sum(-1), (lens > 0).astype(float), rtol=1e-12)


def test_masked_softmax_empty_rows_huge_scores_and_no_mask():
    scores = np.array([[[1e4, -1e4, 5.0]], [[-1e4, -1e4, 1e4]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weights, cache = F.masked_softmax(scores, np.array([2, 0]))
        dscores = F.masked_softmax_backward(np.ones_like(weights), cache)
    np.testing.assert_array_equal(weights, [[[1.0, 0.0, 0.0]], [[0.0, 0.0, 0.0]]])
    np.testing.assert_array_equal(dscores[1], 0.0)
    # All valid scores far below zero must not collapse to an all-zero row.
    weights, _ = F.masked_softmax(np.full((1, 1, 3), -1e4), np.array([2]))
    np.testing.assert_allclose(weights, [[[0.5, 0.5, 0.0]]])
    full, _ = F.masked_softmax(scores[:1], None)
    plain, _ = F.softmax_forward(scores[:1])
    np.testing.assert_allclose(full, plain)


# ------------------------------------------------------------------ dtypes
def test_float32_stays_float32():
    rng = rng_for(0)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    b = np.zeros(5, np.float32)
    out, cache = F.temporal_affine_forward(x, w, b)
    assert out.dtype == np.float32 and all(g.dtype == np.float32 for g in F.temporal_affine_backward(out, cache))
    loss, dx = F.temporal_softmax_loss(out, np.zeros((2, 3), int), np.ones((2, 3), bool))
    assert dx.dtype == np.float32
    weights, cache = F.masked_softmax(x, np.array([1, 2]))
    assert weights.dtype == np.float32 and F.masked_softmax_backward(weights, cache).dtype == np.float32
    for forward in (F.tanh_forward, F.sigmoid_forward, F.softmax_forward, F.log_softmax_forward, F.relu_forward):
        assert forward(x)[0].dtype == np.float32
    out, cache = F.relu_forward(x)
    assert F.relu_backward(out, cache).dtype == np.float32


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("call, error, message", [
    (lambda: F.temporal_affine_forward(np.zeros((2, 3)), np.zeros((3, 4)), np.zeros(4)),
     ValueError, r"x: expected a 3-d array \(N, T, D\), got shape \(2, 3\)"),
    (lambda: F.temporal_affine_forward(np.zeros((2, 3, 5)), np.zeros((3, 4)), np.zeros(4)),
     ValueError, r"x: expected shape \(\*, \*, 3\), got \(2, 3, 5\)"),
    (lambda: F.affine_forward(np.zeros((2, 5)), np.zeros((3, 4)), np.zeros(4)),
     ValueError, r"x: expected 3 features per example \(rows of w\), got shape \(2, 5\) with 5"),
    (lambda: F.affine_forward(np.zeros((2, 3)), np.zeros((3, 4)), np.zeros(3)),
     ValueError, r"b: expected shape \(4,\), got \(3,\)"),
    (lambda: F.word_embedding_forward(np.array([[0, 7]]), np.zeros((5, 2))),
     IndexError, r"x: expected token ids \(vocabulary of 5\) in \[0, 4\], got 7"),
    (lambda: F.word_embedding_forward(np.array([[-1, 0]]), np.zeros((5, 2))),
     IndexError, r"x: expected token ids \(vocabulary of 5\) in \[0, 4\], got -1"),
    (lambda: F.word_embedding_forward(np.array([[0.0, 1.0]]), np.zeros((5, 2))),
     TypeError, r"x: expected an integer array, got dtype float64"),
    (lambda: F.softmax_loss(np.zeros((2, 3)), np.array([0.0, 1.0])),
     TypeError, r"y: expected an integer array, got dtype float64"),
    (lambda: F.softmax_loss(np.zeros((2, 3)), np.array([0, 3])),
     IndexError, r"y: expected class labels in \[0, 2\], got 3"),
    (lambda: F.temporal_softmax_loss(np.zeros((2, 3, 4)), np.zeros((2, 3)), np.ones((2, 3))),
     TypeError, r"y: expected an integer array, got dtype float64"),
    (lambda: F.temporal_softmax_loss(np.zeros((2, 3, 4)), np.zeros((2, 3), int), np.ones((3, 2))),
     ValueError, r"mask: expected shape \(2, 3\), got \(3, 2\)"),
    (lambda: F.temporal_softmax_loss(np.zeros((2, 3, 4)), np.zeros((3, 2), int), np.ones((2, 3))),
     ValueError, r"y: expected shape \(2, 3\), got \(3, 2\)"),
    (lambda: F.masked_softmax(np.zeros((2, 3)), np.array([1, 2])),
     ValueError, r"scores: expected a 3-d array \(N, Q, K\), got shape \(2, 3\)"),
    (lambda: F.masked_softmax(np.zeros((2, 1, 3)), np.array([1, 2, 3])),
     ValueError, r"valid_lens: expected shape \(2,\) or \(2, 1\), got \(3,\)"),
    (lambda: F.masked_softmax(np.zeros((2, 1, 3)), np.array([1, 4])),
     IndexError, r"valid_lens: expected lengths in \[0, 3\], got 4"),
    (lambda: F.masked_softmax(np.zeros((2, 1, 3)), np.array([1.0, 2.0])),
     TypeError, r"valid_lens: expected an integer array, got dtype float64"),
    (lambda: F.tanh_forward([1.0, 2.0]), TypeError, r"x: expected an array, got list"),
    (lambda: F.relu_forward(np.array([1, -2])), TypeError, r"x: expected a floating-point array, got dtype int64"),
])
def test_bad_input_names_argument_expected_and_given(call, error, message):
    with pytest.raises(error, match=message):
        call()
