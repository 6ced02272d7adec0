"""Masked sequence cross-entropy: every reduction's value and gradient, padding invariance, errors."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from optional_tools import require

from npseq import functional as F
from npseq import nn
from npseq.gradcheck import compare, numerical_gradient
from npseq.samples import valid_mask


def batch(seed, n=3, t=4, v=5):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, t, v)), rng.integers(0, v, size=(n, t)),
            rng.integers(0, t + 1, size=n))


def direct_token_nll(logits, labels):
    """-log softmax picked at the label, one token at a time."""
    n, t, _ = logits.shape
    out = np.zeros((n, t))
    for i in range(n):
        for j in range(t):
            z = logits[i, j]
            out[i, j] = np.log(np.exp(z - z.max()).sum()) + z.max() - z[labels[i, j]]
    return out


@pytest.mark.parametrize("reduction", F.REDUCTIONS)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 3), t=st.integers(1, 4), v=st.integers(1, 4))
def test_gradient_of_every_reduction(reduction, seed, n, t, v):
    logits, labels, lens = batch(seed, n, t, v)
    dloss = np.random.default_rng(seed + 1).standard_normal(n) if reduction == "none" else np.float64(1.0)
    loss, cache = F.masked_softmax_ce_forward(logits, labels, lens, reduction)
    dlogits = F.masked_softmax_ce_backward(dloss, cache)
    numeric = numerical_gradient(lambda _: F.masked_softmax_ce_forward(logits, labels, lens, reduction)[0],
                                 logits, df=dloss)
    row = compare("logits", dlogits, numeric)
    assert row.ok, row


@pytest.mark.parametrize("reduction", F.REDUCTIONS)
def test_values_match_the_direct_formulas(reduction):
    logits, labels, lens = batch(0, n=4, t=5)
    lens[0] = 0
    mask = valid_mask(lens, 5)
    per_token = direct_token_nll(logits, labels) * mask
    expected = {"mean": per_token.sum() / mask.sum(), "sum": per_token.sum(),
                "none": per_token.sum(1), "d2l": per_token.mean(1).sum()}[reduction]
    loss, _ = F.masked_softmax_ce_forward(logits, labels, lens, reduction)
    np.testing.assert_allclose(loss, expected, rtol=1e-13)
    fn = nn.MaskedSoftmaxCELoss(reduction)
    fn(logits, labels, lens)
    assert fn.num_tokens == mask.sum()
    np.testing.assert_allclose(fn.nll_sum, per_token.sum(), rtol=1e-13)


def test_d2l_metric_is_per_token_cross_entropy_over_num_steps():
    logits, labels, lens = batch(3, n=6, t=10, v=7)
    fn = nn.MaskedSoftmaxCELoss("d2l")
    objective = fn(logits, labels, lens)
    per_token_ce = fn.nll_sum / fn.num_tokens
    np.testing.assert_allclose(objective / fn.num_tokens, per_token_ce / 10, rtol=1e-13)


@given(seed=st.integers(0, 2**32 - 1), extra=st.integers(1, 3), reduction=st.sampled_from(["mean", "sum", "none"]))
def test_padding_never_changes_loss_or_gradient(seed, extra, reduction):
    logits, labels, lens = batch(seed)
    rng = np.random.default_rng(seed)
    padded_logits = np.concatenate([logits, rng.standard_normal((3, extra, 5)) * 50], axis=1)
    padded_labels = np.concatenate([labels, rng.integers(0, 5, size=(3, extra))], axis=1)
    loss, cache = F.masked_softmax_ce_forward(logits, labels, lens, reduction)
    padded_loss, padded_cache = F.masked_softmax_ce_forward(padded_logits, padded_labels, lens, reduction)
    np.testing.assert_allclose(padded_loss, loss, rtol=1e-13)
    dloss = np.ones(3) if reduction == "none" else 1.0
    grad = F.masked_softmax_ce_backward(dloss, padded_cache)
    np.testing.assert_allclose(grad[:, :4], F.masked_softmax_ce_backward(dloss, cache), rtol=1e-13)
    assert not grad[:, 4:].any()


def test_no_valid_token_gives_zero_loss_and_gradient():
    logits, labels, _ = batch(1)
    fn = nn.MaskedSoftmaxCELoss()
    loss = fn(logits, labels, np.zeros(3, int))
    assert loss == 0.0 and not fn.backward().any()


def test_huge_logits_stay_finite_and_float32_stays_float32():
    logits = np.zeros((1, 2, 3), np.float32)
    logits[0, :, 0] = 1e4
    fn = nn.MaskedSoftmaxCELoss()
    loss = fn(logits, np.array([[0, 1]]), np.array([2]))
    dlogits = fn.backward()
    assert loss.dtype == dlogits.dtype == np.float32
    np.testing.assert_allclose(loss, 5e3, rtol=1e-6)
    assert np.all(np.isfinite(dlogits))


def test_parity_with_torch_cross_entropy():
    torch = require("torch")
    logits, labels, lens = batch(5, n=4, t=6, v=7)
    mask = torch.tensor(valid_mask(lens, 6))
    z = torch.tensor(logits, requires_grad=True)
    per_token = torch.nn.functional.cross_entropy(z.permute(0, 2, 1), torch.tensor(labels), reduction="none")
    (per_token * mask).sum().backward()
    fn = nn.MaskedSoftmaxCELoss("sum")
    loss = fn(logits, labels, lens)
    np.testing.assert_allclose(loss, (per_token * mask).sum().item(), rtol=1e-13)
    np.testing.assert_allclose(fn.backward(), z.grad.numpy(), atol=1e-13)


@pytest.mark.parametrize("call, error, message", [
    (lambda: nn.MaskedSoftmaxCELoss("avg"), ValueError,
     r"reduction: expected one of \('mean', 'sum', 'none', 'd2l'\), got 'avg'"),
    (lambda: nn.MaskedSoftmaxCELoss()(np.zeros((2, 3, 4)), np.zeros((2, 3)), np.array([1, 2])),
     TypeError, r"labels: expected an integer array, got dtype float64"),
    (lambda: nn.MaskedSoftmaxCELoss()(np.zeros((2, 3, 4)), np.zeros((2, 3), int), np.array([1, 4])),
     IndexError, r"valid_lens: expected lengths in \[0, 3\], got 4"),
    (lambda: nn.MaskedSoftmaxCELoss()(np.zeros((2, 3, 4)), np.full((2, 3), 4), np.array([1, 2])),
     IndexError, r"labels: expected token ids in \[0, 3\], got 4"),
    (lambda: nn.MaskedSoftmaxCELoss()(np.zeros((2, 3, 4)), np.zeros((2, 3), int), np.array([1])),
     ValueError, r"valid_lens: expected shape \(2,\), got \(1,\)"),
])
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "d2l"])
def test_the_loss_cache_carries_the_summed_nll_whatever_the_reduction(reduction):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4, 5))
    labels = rng.integers(0, 5, size=(3, 4))
    valid_lens = np.array([4, 2, 0])
    nll = -np.log(np.take_along_axis(np.exp(logits) / np.exp(logits).sum(-1, keepdims=True), labels[..., None], -1))
    expected = sum(nll[n, :valid_lens[n], 0].sum() for n in range(3))
    _, cache = F.masked_softmax_ce_forward(logits, labels, valid_lens, reduction)
    assert float(cache.nll_sum) == pytest.approx(expected, rel=1e-12)


# ------------------------------------------------------------- squared loss
@given(seed=st.integers(0, 2**32 - 1), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_mse_gradient_matches_finite_differences(seed, shape):
    rng = np.random.default_rng(seed)
    pred, target = rng.standard_normal(shape), rng.standard_normal(shape)
    dloss = rng.standard_normal()
    _, cache = F.mse_loss_forward(pred, target)
    numeric = numerical_gradient(lambda _: F.mse_loss_forward(pred, target)[0], pred, df=np.float64(dloss))
    row = compare("pred", F.mse_loss_backward(dloss, cache), numeric)
    assert row.ok, row


def test_mse_value_is_the_mean_of_squared_differences_without_a_half():
    pred = np.array([[1.0, 2.0], [3.0, -1.0]])
    target = np.array([[1.0, 0.0], [0.0, 1.0]])
    loss, cache = F.mse_loss_forward(pred, target)
    assert float(loss) == (0 + 4 + 9 + 4) / 4
    np.testing.assert_array_equal(F.mse_loss_backward(1.0, cache), 2 * (pred - target) / 4)


def test_mse_float32_stays_float32():
    pred = np.ones((3, 2), np.float32)
    loss, cache = F.mse_loss_forward(pred, np.zeros((3, 2), np.float32))
    assert loss.dtype == np.float32 and F.mse_loss_backward(1.0, cache).dtype == np.float32


@pytest.mark.parametrize("call, error, message", [
    (lambda: F.mse_loss_forward(np.zeros((3, 1)), np.zeros(3)), ValueError,
     r"target: expected shape \(3, 1\), got \(3,\)"),
    (lambda: F.mse_loss_forward(np.zeros(3), np.zeros(3, int)), TypeError,
     r"target: expected a floating-point array, got dtype int64"),
    (lambda: F.mse_loss_forward(np.zeros(0), np.zeros(0)), ValueError,
     r"pred: expected at least one element, got shape \(0,\)"),
    (lambda: F.mse_loss_backward(np.ones(2), F.mse_loss_forward(np.zeros(2), np.ones(2))[1]), ValueError,
     r"dloss: expected shape \(\), got \(2,\)"),
])
def test_mse_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
