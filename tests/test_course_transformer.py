"""The transformer set: its one composition of its own (npseq's residual-norm backward with the feed-forward block as
the sub-layer) against finite differences and torch, its cases clear of ReLU's kink and of nearly constant rows,
its solutions against its engines, its hand-out documented and graded."""
import pathlib
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npseq import functional as F
from npseq.course import handout, sheet
from npseq.course.cases import transformer as cases
from npseq.course.references import transformer as R
from npseq.course.sets import transformer as transformer_set
from npseq.gradcheck import check_function, rel_error

ROOT = pathlib.Path(__file__).resolve().parents[1]
TORCH_TOL = 1e-10
STENCIL = {"h": 1e-3, "order": 4}
"""The grader's finite differences."""
STENCIL_REACH = 2e-3
"""The farthest the stencil moves an input."""
EXERCISES = transformer_set.EXERCISES
NAMES = [exercise.name for exercise in EXERCISES]
HANDOUT = sheet.names_of_sets(["transformer"])
"""The set with what it builds on."""
GRADIENTS = ("dx", "dW1", "db1", "dW2", "db2", "dgamma", "dbeta")


def sublayer_inputs(rng, shape, hidden):
    """Inputs of the feed-forward sub-layer, drawn again until they keep the cases' margins (no pre-activation near
    ReLU's kink, no normalised row nearly constant)."""
    dim = shape[-1]
    while True:
        inputs = {"x": rng.standard_normal(shape), "W1": 0.5 * rng.standard_normal((dim, hidden)),
                  "b1": rng.standard_normal(hidden), "W2": 0.5 * rng.standard_normal((hidden, dim)),
                  "b2": rng.standard_normal(dim), "gamma": 1 + 0.5 * rng.standard_normal(dim),
                  "beta": rng.standard_normal(dim)}
        if cases.clear_for_the_sublayer(inputs):
            return inputs


def _sublayer(eps):
    def forward(x, W1, b1, W2, b2, gamma, beta):
        return R.feed_forward_sublayer_forward(x, W1, b1, W2, b2, gamma, beta, eps)
    return forward


# ------------------------------------------------------------ finite differences
@pytest.mark.parametrize("shape, hidden, eps", [((2, 3, 4), 5, 1e-5), ((1, 1, 3), 2, 0.5), ((4, 3), 6, 1e-5)],
                         ids=["N=2 T=3", "N=1 T=1 eps=0.5", "2-d"])
def test_the_sublayer_engine_matches_finite_differences(shape, hidden, eps):
    inputs = sublayer_inputs(np.random.default_rng(0), shape, hidden)
    report = check_function(_sublayer(eps), R.feed_forward_sublayer_backward, inputs, **STENCIL)
    assert report.ok and [row.name for row in report.rows] == list(inputs), report


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 2), t=st.integers(1, 3), dim=st.integers(3, 5), hidden=st.integers(1, 4),
       seed=st.integers(0, 999))
def test_the_sublayer_engine_on_edge_shapes(n, t, dim, hidden, seed):
    """N = 1, T = 1, one hidden unit. (D = 2 is left out: a layer norm of two features is +-1 whatever its input,
    so every gradient below it is 0 but for rounding, which relative errors cannot judge.)"""
    inputs = sublayer_inputs(np.random.default_rng(seed), (n, t, dim), hidden)
    report = check_function(_sublayer(1e-5), R.feed_forward_sublayer_backward, inputs, **STENCIL)
    assert report.ok, report


# ------------------------------------------------------------------------- torch
@pytest.mark.parametrize("shape, eps", [((2, 3, 4), 1e-5), ((1, 2, 3), 0.5)])
def test_the_sublayer_engine_matches_torch(shape, eps):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    inputs = sublayer_inputs(rng, shape, 5)
    dy = rng.standard_normal(shape)
    y, cache = R.feed_forward_sublayer_forward(**inputs, eps=eps)
    grads = dict(zip(GRADIENTS, R.feed_forward_sublayer_backward(dy, cache)))
    t = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in inputs.items()}
    f = torch.relu(t["x"] @ t["W1"] + t["b1"]) @ t["W2"] + t["b2"]
    t_y = torch.nn.functional.layer_norm(t["x"] + f, (shape[-1],), t["gamma"], t["beta"], eps)
    (t_y * torch.tensor(dy)).sum().backward()
    assert rel_error(y, t_y.detach().numpy()) < TORCH_TOL
    for name, value in t.items():
        assert rel_error(grads[f"d{name}"], value.grad.numpy()) < TORCH_TOL, name


# ------------------------------------------------------------------ the exercises
def test_the_set_is_five_exercises_easiest_first_each_on_the_learners_own():
    assert NAMES == ["scaled_dot_product_attention_backward", "layer_norm_backward", "feed_forward_backward",
                     "multihead_attention_backward", "residual_norm_backward"]
    assert HANDOUT == ["masked_softmax_backward"] + NAMES  # the classic set's masked softmax comes along
    assert [exercise.builds_on for exercise in EXERCISES] == [
        ("masked_softmax_backward",), (), (), ("scaled_dot_product_attention_backward",),
        ("layer_norm_backward", "feed_forward_backward")]
    for exercise in EXERCISES:
        assert 2 <= len(exercise.cases) <= 3
        if exercise.name != "multihead_attention_backward":  # its dict of gradients is laid out by MULTIHEAD_GRADED
            assert all(exercise.grads == tuple("d" + name for name in case.wrt) for case in exercise.cases)
    assert "from npseq.functional import (" in handout.forwards_import(EXERCISES)


def test_the_hints_name_the_learners_functions_not_numbers():
    """A hand-out numbers its exercises itself (the set alone, or after others), so a docstring cannot."""
    for exercise in EXERCISES:
        assert not re.search(r"exercise \d", exercise.docstring), exercise.name
        for name in exercise.builds_on:
            assert f"your {name}" in exercise.docstring, (exercise.name, name)


RELU_CASES = [(exercise.name, case) for exercise in EXERCISES for case in exercise.cases
              if exercise.name in ("feed_forward_backward", "residual_norm_backward") and "GELU" not in case.label]


@pytest.mark.parametrize("name, case", RELU_CASES, ids=[f"{name}: {case.label}" for name, case in RELU_CASES])
def test_no_stencil_step_crosses_relus_kink(name, case):
    """In the sheet's numbers and in students' variants, every pre-activation lies farther from 0 than the
    stencil can move it (a step on x moves it by |W1| times the step, on W1 by |x| times, on b1 by the step)."""
    for variant in range(4):
        inputs = case.make_inputs(variant)
        reach = STENCIL_REACH * max(1.0, np.abs(inputs["x"]).max(), np.abs(inputs["W1"]).max())
        pre = inputs["x"] @ inputs["W1"] + inputs["b1"]
        assert np.abs(pre).min() > cases.RELU_MARGIN > 5 * reach, (variant, np.abs(pre).min(), reach)


NORM_CASES = [(exercise.name, case) for exercise in EXERCISES for case in exercise.cases
              if exercise.name in ("layer_norm_backward", "residual_norm_backward")]


@pytest.mark.parametrize("name, case", NORM_CASES, ids=[f"{name}: {case.label}" for name, case in NORM_CASES])
def test_every_normalised_row_spreads_enough(name, case):
    """A row whose values nearly coincide would bend the layer norm past what the grader's stencil resolves."""
    for variant in range(4):
        inputs = case.make_inputs(variant)
        *_, cache = case.forward(**inputs)
        norm = cache.norm if name == "residual_norm_backward" else cache
        spread = np.sqrt(1 / norm.inv_sigma ** 2 - inputs["eps"])  # the rows' standard deviations
        assert spread.min() > cases.SPREAD_MARGIN, (variant, spread.min())


def test_a_nearly_constant_row_is_what_the_spread_margin_keeps_out():
    """Without the margin a correct backward can fail the grader: a row of x + FFN(x) spread 0.05 does."""
    rng = np.random.default_rng(4)
    inputs = sublayer_inputs(rng, (1, 1, 4), 3)
    ffn, _ = F.feed_forward_forward(*(inputs[name] for name in ("x", "W1", "b1", "W2", "b2")))
    inputs["b2"] = inputs["b2"] - (inputs["x"] + ffn)[0, 0] + 0.05 * np.array([1.0, -1.0, 1.0, -1.0])
    assert not cases.clear_for_the_sublayer(inputs) and cases.clear_of_the_kink(inputs)
    report = check_function(_sublayer(1e-5), R.feed_forward_sublayer_backward, inputs, **STENCIL)
    assert not report.ok


def _fields(cache, prefix=""):
    """``cache.queries``, ``cache.attention.scale``, ...: every field of a cache and of the caches it nests (but
    the fields of a softmax's, an activation's and an unused dropout's, which the docstrings describe in words)."""
    for field in cache._fields:
        yield f"{prefix}{field}"
        value = getattr(cache, field)
        if hasattr(value, "_fields") and field not in ("softmax", "act", "dropout"):
            yield from _fields(value, f"{prefix}{field}.")


@pytest.mark.parametrize("exercise", EXERCISES, ids=NAMES)
def test_the_skeleton_documents_every_cache_field(exercise):
    documented = handout.skeleton_source(exercise).split("raise NotImplementedError")[0]
    for case in exercise.cases:
        cache = case.forward(**case.make_inputs())[-1]
        nested = () if exercise.name != "residual_norm_backward" else ("sublayer", "norm")  # the learner's own
        for field in _fields(cache):
            if not field.startswith(tuple(f"{name}." for name in nested)):
                assert f"cache.{field}" in documented, (exercise.name, field)


# ------------------------------------------------------------ a helper graded on the shapes its callers hand it
def _graded_with(tmp_path, right: str, wrong: str, only: str):
    from npseq.course import grade_file

    solved = handout.solutions(handout.chosen_exercises([only]))
    assert solved.count(right) == 1, right
    path = tmp_path / "learner.py"
    path.write_text(solved.replace(right, wrong))
    return grade_file(path, only=[only])


def test_a_softmax_backward_summed_over_axis_2_is_named_by_the_attention_that_hands_it_heads(tmp_path):
    # It passed its own (N, Q, K) cases and sent the learner to scaled dot-product attention. Its own cases stay its
    # contract (a classic-set learner's einsum over 'nqk' is right there), so it is not scored on the heads' shapes;
    # run on them when its caller fails, it is named as the one at fault.
    report = _graded_with(tmp_path, "(dweights * a).sum(axis=-1, keepdims=True)",
                          "(dweights * a).sum(axis=2, keepdims=True)", "multihead_attention_backward")
    softmax, attention = report["masked_softmax_backward"], report["scaled_dot_product_attention_backward"]
    assert softmax.status == "correct" and attention.status == "incorrect"
    heads = "heads (N=2, h=3, Q=4, K=5), causal mask and padded keys"
    assert (f"your masked_softmax_backward, correct on its own cases, is wrong on the shapes "
            f"scaled_dot_product_attention_backward hands it ({heads}: dscores: some elements): fix it there first"
            ) in attention.note
    assert (f"wrong on the shapes scaled_dot_product_attention_backward hands it ({heads}: dscores: some elements), "
            "which its own cases do not have (not scored here)") in softmax.note


def test_a_wrong_caller_of_a_helper_right_on_its_shapes_is_told_the_mistake_is_its_own(tmp_path):
    report = _graded_with(tmp_path, "dS = masked_softmax_backward(dA, cache.softmax) * cache.scale",
                          "dS = masked_softmax_backward(dA, cache.softmax)", "scaled_dot_product_attention_backward")
    softmax, attention = report["masked_softmax_backward"], report["scaled_dot_product_attention_backward"]
    assert softmax.status == "correct" and "wrong on the shapes" not in softmax.note
    assert attention.status == "incorrect"
    assert ("your masked_softmax_backward is right on the shapes scaled_dot_product_attention_backward hands it "
            "too: the mistake is here") in attention.note
    assert "note: " in attention.section()


# ------------------------------------------------------------ heads named
MERGE = "    return x.transpose(0, 2, 1, 3).reshape(n, t, heads * d)"


@pytest.mark.slow
@pytest.mark.parametrize("wrong, diagnosis, sentence", [
    ("    return x.transpose(0, 2, 3, 1).reshape(n, t, heads * d)", "dW_q: heads and their width swapped",
     "laid out as (width, heads) where (heads, width) is due"),
    ("    return x[:, ::-1].transpose(0, 2, 1, 3).reshape(n, t, heads * d)", "dW_q: heads in another order",
     "heads are each right but in another order (yours 0 is npseq's 1, yours 1 is npseq's 0)"),
], ids=["merged as (d, h)", "heads merged in reverse"])
def test_a_mistake_in_merging_heads_names_the_layout(tmp_path, wrong, diagnosis, sentence):
    report = _graded_with(tmp_path, MERGE, wrong, "multihead_attention_backward")
    attention = report["multihead_attention_backward"]
    assert diagnosis in attention.diagnoses()
    two_heads = [row for row in attention.rows if row.case.startswith("2 heads") and row.tensor == "dW_q"]
    assert two_heads and sentence in two_heads[0].problem, two_heads[0].problem


def test_a_mistake_in_one_head_names_that_head(tmp_path):
    report = _graded_with(tmp_path, MERGE, "    x = x.copy()\n    x[:, -1] *= 2\n" + MERGE,
                          "multihead_attention_backward")
    diagnoses = report["multihead_attention_backward"].diagnoses()
    assert "dW_q: head 1" in diagnoses and "dW_q: head 2" in diagnoses  # the last head: of 2, of 3
    row = next(row for row in report["multihead_attention_backward"].rows
               if row.case.startswith("3 heads") and row.tensor == "dW_q")
    assert "wrong in head 2 of 0..2 (each head's block: 2 of the 6 along axis -1)" in row.problem
