"""The attention set: its references against finite differences, torch and npseq's own layers, its cases clear of
local-p's window edges, its solutions against its engines, its hand-out graded, its references kept out of the API."""
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npseq import functional as F
from npseq.course import handout, sheet
from npseq.course.cases import attention as cases
from npseq.course.references import attention as R
from npseq.course.sets import attention as attention_set
from npseq.errors import InvalidIndexError, InvalidValueError
from npseq.gradcheck import check_function, rel_error
from npseq.nn import LocalAttention
from npseq.samples import normal

ROOT = pathlib.Path(__file__).resolve().parents[1]
TORCH_TOL = 1e-10
STENCIL = {"h": 1e-3, "order": 4}
"""The grader's finite differences."""
EXERCISES = attention_set.EXERCISES
NAMES = [exercise.name for exercise in EXERCISES]
HANDOUT = sheet.names_of_sets(["attention"])
"""The set with what it builds on."""


def local_p_inputs(rng, n, q, k, dq=3, dk=4, dv=2, hidden=3):
    return {"queries": normal(rng, n, q, dq), "keys": normal(rng, n, k, dk), "values": normal(rng, n, k, dv),
            "W": normal(rng, dq, dk, scale=0.5), "Wp": normal(rng, dq, hidden, scale=0.5),
            "vp": normal(rng, hidden, scale=1.5)}


def local_p_clear_inputs(rng, n, q, k, lens, half_width, **sizes):
    """local-p inputs whose predicted positions stay clear of the window's edges (the cases' own rule)."""
    while True:
        inputs = local_p_inputs(rng, n, q, k, **sizes)
        if cases.clear_of_window_edges({**inputs, "source_lens": lens, "half_width": half_width}):
            return inputs


def _local_p(lens, half_width):
    def forward(queries, keys, values, W, Wp, vp):
        context, _, cache = R.local_p_attention_forward(queries, keys, values, W, Wp, vp, lens, half_width)
        return context, cache
    return forward


def masked_inputs(rng, n, q, k, d=3, dv=2):
    return {"queries": normal(rng, n, q, d), "keys": normal(rng, n, k, d), "values": normal(rng, n, k, dv)}


def _masked(valid_lens, causal):
    def forward(queries, keys, values):
        return R.masked_dot_attention_forward(queries, keys, values, valid_lens, causal)
    return forward


# ------------------------------------------------------------ finite differences
@pytest.mark.parametrize("lens, half_width", [([6, 3], 2), ([6, 0], 1), ([2, 6], 3)],
                         ids=["clipped", "empty-sentence", "wide"])
def test_local_p_reference_matches_finite_differences(lens, half_width):
    lens = np.array(lens)
    inputs = local_p_clear_inputs(np.random.default_rng(0), 2, 3, 6, lens, half_width)
    report = check_function(_local_p(lens, half_width), R.local_p_attention_backward, inputs, **STENCIL)
    assert report.ok and [row.name for row in report.rows] == list(inputs), report


@pytest.mark.parametrize("valid_lens, causal, with_dweights", [
    (None, True, False), ([4, 2, 0], True, True), ([[4, 1, 3, 0], [2, 4, 4, 1], [1, 1, 1, 1]], True, False),
    ([3, 0, 4], False, True)], ids=["causal", "padding+causal", "per-query", "padding"])
def test_masked_dot_reference_matches_finite_differences(valid_lens, causal, with_dweights):
    valid_lens = None if valid_lens is None else np.array(valid_lens)
    inputs = masked_inputs(np.random.default_rng(1), 3, 4, 4)
    forward = _masked(valid_lens, causal)
    if with_dweights:
        report = check_function(forward, lambda dc, dw, cache: R.masked_dot_attention_backward(dc, cache, dw),
                                inputs, **STENCIL)
    else:
        def context_only(*args):
            context, _, cache = forward(*args)
            return context, cache
        report = check_function(context_only, R.masked_dot_attention_backward, inputs, **STENCIL)
    assert report.ok, report


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 2), q=st.integers(1, 3), k=st.integers(1, 5), half_width=st.integers(1, 3),
       data=st.data())
def test_local_p_edge_shapes_pass_finite_differences(n, q, k, half_width, data):
    """N = 1, one query, one key, sentences of any length from 0 to K."""
    lens = np.array(data.draw(st.lists(st.integers(0, k), min_size=n, max_size=n)))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    inputs = local_p_clear_inputs(rng, n, q, k, lens, half_width, dq=2, dk=2, dv=2, hidden=2)
    report = check_function(_local_p(lens, half_width), R.local_p_attention_backward, inputs, **STENCIL)
    assert report.ok, report


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 2), q=st.integers(1, 4), k=st.integers(1, 4), causal=st.booleans(), data=st.data())
def test_masked_dot_edge_shapes_pass_finite_differences(n, q, k, causal, data):
    lens = np.array(data.draw(st.lists(st.lists(st.integers(0, k), min_size=q, max_size=q), min_size=n,
                                       max_size=n)))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    report = check_function(_masked(lens, causal), lambda dc, dw, cache: R.masked_dot_attention_backward(dc, cache, dw),
                            masked_inputs(rng, n, q, k, d=2, dv=2), **STENCIL)
    assert report.ok, report


# ----------------------------------------------------------- npseq's own pieces
def test_local_p_is_npseqs_local_attention_layer():
    """The composition is the layer's local-p with the general score, forward and backward."""
    rng = np.random.default_rng(2)
    lens = np.array([6, 4])
    inputs = local_p_inputs(rng, 2, 3, 6)
    layer = LocalAttention(3, 4, mode="local-p", score="general", half_width=2, num_hiddens=3, dtype=np.float64)
    for name in ("W", "Wp", "vp"):
        getattr(layer, name).data = inputs[name]
    context, _, cache = R.local_p_attention_forward(*inputs.values(), lens, 2)
    np.testing.assert_allclose(layer(inputs["queries"], inputs["keys"], inputs["values"], lens), context, rtol=1e-14)
    dcontext = rng.standard_normal(context.shape)
    dqueries, dkeys, dvalues, dW, dWp, dvp = R.local_p_attention_backward(dcontext, cache)
    for ours, theirs in zip((dqueries, dkeys, dvalues, dW, dWp, dvp),
                            (*layer.backward(dcontext), layer.W.grad, layer.Wp.grad, layer.vp.grad)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-15)


def test_masked_dot_is_scaled_dot_product_attention_on_scaled_queries():
    """Unscaled scores of q are the scaled ones of q sqrt(d); the combined mask is attention_mask's."""
    rng = np.random.default_rng(3)
    inputs = masked_inputs(rng, 2, 4, 5, d=4)
    lens = np.array([[5, 2, 3, 0], [1, 5, 5, 4]])
    context, weights, cache = R.masked_dot_attention_forward(*inputs.values(), lens, causal=True)
    np.testing.assert_array_equal(cache.mask, F.attention_mask(4, 5, lens, causal=True))
    queries = inputs["queries"] * 2.0  # sqrt(d), d = 4
    out, theirs, sdpa_cache = F.scaled_dot_product_attention_forward(queries, inputs["keys"], inputs["values"], lens,
                                                                     causal=True)
    np.testing.assert_allclose(context, out, rtol=1e-13)
    np.testing.assert_allclose(weights, theirs, rtol=1e-13, atol=1e-16)
    assert (weights[~cache.mask] == 0).all() and (context[0, 3] == 0).all()  # query 3 of example 0 sees no key
    dcontext, dweights = rng.standard_normal(context.shape), rng.standard_normal(weights.shape)
    dq, dk, dv = R.masked_dot_attention_backward(dcontext, cache, dweights)
    dq_s, dk_s, dv_s = F.scaled_dot_product_attention_backward(dcontext, sdpa_cache, dweights)
    for ours, theirs in ((dq, dq_s * 2.0), (dk, dk_s), (dv, dv_s)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def test_errors_name_the_argument():
    rng = np.random.default_rng(4)
    inputs = local_p_inputs(rng, 2, 1, 4)
    with pytest.raises(InvalidIndexError, match=r"source_lens: expected lengths in \[0, 4\]"):
        R.local_p_attention_forward(*inputs.values(), np.array([5, 1]), 1)
    with pytest.raises(InvalidValueError, match="half_width: expected a positive int, got 0"):
        R.local_p_attention_forward(*inputs.values(), np.array([4, 1]), 0)
    with pytest.raises(InvalidValueError, match=r"values: expected shape \(2, 4, \*\)"):
        R.local_p_attention_forward(*{**inputs, "values": np.zeros((2, 3, 2))}.values(), np.array([4, 1]), 1)
    _, _, cache = R.local_p_attention_forward(*inputs.values(), np.array([4, 1]), 1)
    with pytest.raises(InvalidValueError, match=r"dcontext: expected shape \(2, 1, 2\)"):
        R.local_p_attention_backward(np.zeros((2, 1, 3)), cache)
    masked = masked_inputs(rng, 2, 3, 4)
    with pytest.raises(InvalidValueError, match="keys: expected feature size 3"):
        R.masked_dot_attention_forward(masked["queries"], np.zeros((2, 4, 2)), masked["values"])
    _, _, cache = R.masked_dot_attention_forward(*masked.values(), np.array([4, 2]))
    with pytest.raises(InvalidValueError, match=r"dweights: expected shape \(2, 3, 4\)"):
        R.masked_dot_attention_backward(np.zeros((2, 3, 2)), cache, np.zeros((2, 4, 3)))


# ------------------------------------------------------------------------- torch
def _torch_softmax_where(torch, scores, mask):
    """Softmax over the keys where ``mask`` holds, exactly 0 elsewhere and on a row with no key (torch gives NaN)."""
    mask = torch.as_tensor(np.broadcast_to(mask, tuple(scores.shape)).copy())
    empty = ~mask.any(dim=-1, keepdim=True)
    masked = torch.where(mask, scores, torch.tensor(-torch.inf, dtype=scores.dtype))
    return torch.softmax(torch.where(empty, torch.zeros_like(scores), masked), dim=-1) * mask


def _torch_grads(torch, inputs, outputs, douts):
    t = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in inputs.items()}
    t_outputs = outputs(t)
    sum((out * torch.tensor(dout)).sum() for out, dout in zip(t_outputs, douts)).backward()
    return t_outputs, [t[name].grad.numpy() for name in inputs]


def test_score_functions_match_torch():
    """npseq's general and concat score pairs, the engines of the first two exercises."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    general = {"queries": normal(rng, 2, 3, 3), "keys": normal(rng, 2, 4, 5), "W": normal(rng, 3, 5)}
    concat = {"queries": normal(rng, 2, 3, 3), "keys": normal(rng, 2, 4, 5), "Wq": normal(rng, 3, 4, scale=0.5),
              "Wk": normal(rng, 5, 4, scale=0.5), "wv": normal(rng, 4)}
    pairs = ((F.general_scores_forward, F.general_scores_backward, general,
              lambda t: (t["queries"] @ t["W"] @ t["keys"].transpose(1, 2),)),
             (F.concat_scores_forward, F.concat_scores_backward, concat,
              lambda t: (torch.tanh((t["queries"] @ t["Wq"])[:, :, None] + (t["keys"] @ t["Wk"])[:, None])
                         @ t["wv"],)))
    for forward, backward, inputs, torch_forward in pairs:
        scores, cache = forward(**inputs)
        dscores = rng.standard_normal(scores.shape)
        (t_scores,), theirs = _torch_grads(torch, inputs, torch_forward, [dscores])
        assert rel_error(scores, t_scores.detach().numpy()) < TORCH_TOL
        for name, ours, grad in zip(inputs, backward(dscores, cache), theirs):
            assert rel_error(ours, grad) < TORCH_TOL, name


@pytest.mark.parametrize("lens, half_width", [([6, 3], 2), ([1, 0], 1)], ids=["clipped", "short-and-empty"])
def test_local_p_matches_torch(lens, half_width):
    torch = pytest.importorskip("torch")
    lens = np.array(lens)
    rng = np.random.default_rng(6)
    inputs = local_p_inputs(rng, 2, 3, 6)
    context, weights, cache = R.local_p_attention_forward(*inputs.values(), lens, half_width)
    window = F.local_window(cache.pooling.centers, lens, 6, half_width)  # piecewise constant: no gradient
    sigma = half_width / 2

    def outputs(t):
        scores = t["queries"] @ t["W"] @ t["keys"].transpose(1, 2)
        centers = torch.tensor(lens, dtype=torch.float64)[:, None] * torch.sigmoid(
            torch.tanh(t["queries"] @ t["Wp"]) @ t["vp"])
        distance = torch.arange(6, dtype=torch.float64) - centers[:, :, None]
        a = _torch_softmax_where(torch, scores, window) * torch.exp(-distance ** 2 / (2 * sigma ** 2))
        return a @ t["values"], a

    dcontext = rng.standard_normal(context.shape)
    (t_context, t_weights), theirs = _torch_grads(torch, inputs, outputs, [dcontext])
    assert rel_error(context, t_context.detach().numpy()) < TORCH_TOL
    assert rel_error(weights, t_weights.detach().numpy()) < TORCH_TOL
    for name, ours, grad in zip(inputs, R.local_p_attention_backward(dcontext, cache), theirs):
        assert rel_error(ours, grad) < TORCH_TOL, name


@pytest.mark.parametrize("valid_lens, causal", [([4, 2, 0], True), ([[1, 4, 3, 2], [0, 2, 4, 4], [4, 4, 4, 4]], False)],
                         ids=["padding+causal", "per-query"])
def test_masked_dot_matches_torch(valid_lens, causal):
    torch = pytest.importorskip("torch")
    valid_lens = np.array(valid_lens)
    rng = np.random.default_rng(7)
    inputs = masked_inputs(rng, 3, 4, 4)
    context, weights, cache = R.masked_dot_attention_forward(*inputs.values(), valid_lens, causal)

    def outputs(t):
        a = _torch_softmax_where(torch, t["queries"] @ t["keys"].transpose(1, 2), cache.mask)
        return a @ t["values"], a

    douts = [rng.standard_normal(context.shape), rng.standard_normal(weights.shape)]
    (t_context, t_weights), theirs = _torch_grads(torch, inputs, outputs, douts)
    assert rel_error(context, t_context.detach().numpy()) < TORCH_TOL
    assert rel_error(weights, t_weights.detach().numpy()) < TORCH_TOL
    for name, ours, grad in zip(inputs, R.masked_dot_attention_backward(douts[0], cache, douts[1]), theirs):
        assert rel_error(ours, grad) < TORCH_TOL, name


# ------------------------------------------------------------------ the exercises
def test_the_set_is_four_exercises_on_npseqs_pairs_and_the_course_references():
    assert NAMES == ["general_scores_backward", "concat_scores_backward", "local_p_attention_backward",
                     "masked_dot_attention_backward"]
    assert HANDOUT == ["masked_softmax_backward"] + NAMES  # the classic set's masked softmax comes along
    engines = [F.general_scores_backward, F.concat_scores_backward, R.local_p_attention_backward,
               R.masked_dot_attention_backward]
    assert [exercise.engine for exercise in EXERCISES] == engines
    assert [exercise.builds_on for exercise in EXERCISES] == [
        (), (), ("masked_softmax_backward", "general_scores_backward"), ("masked_softmax_backward",)]
    for exercise in EXERCISES:
        assert all(exercise.grads[i] == "d" + name for case in exercise.cases for i, name in enumerate(case.wrt))
        assert 2 <= len(exercise.cases) <= 3
    imports = handout.forwards_import(EXERCISES)
    assert "from npseq.course.references.attention import (" in imports


LOCAL_P = sheet.EXERCISE_BY_NAME["local_p_attention_backward"]


@pytest.mark.parametrize("variant", range(4))
@pytest.mark.parametrize("case", LOCAL_P.cases, ids=[f"case{i}" for i in range(1, len(LOCAL_P.cases) + 1)])
def test_no_stencil_step_moves_a_key_in_or_out_of_a_window(case, variant):
    """Every element of what moves the positions (the queries, Wp, vp), moved by the grader's +-1e-3 and +-2e-3,
    leaves every window as it was, in the sheet's numbers and in students' variants: the finite differences never
    see a jump."""
    inputs = case.make_inputs(variant)
    lens, half_width, num_keys = inputs["source_lens"], inputs["half_width"], inputs["keys"].shape[1]

    def window():
        centers, _ = F.predictive_position_forward(inputs["queries"], inputs["Wp"], inputs["vp"], lens)
        return F.local_window(centers, lens, num_keys, half_width)

    unmoved = window()
    for name in ("queries", "Wp", "vp"):
        array = inputs[name]
        for index in np.ndindex(array.shape):
            kept = array[index]
            for step in (-2e-3, -1e-3, 1e-3, 2e-3):
                array[index] = kept + step
                assert (window() == unmoved).all(), (case.label, variant, name, index, step)
            array[index] = kept
