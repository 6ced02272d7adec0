"""The variants set: its references against finite differences and torch, its solutions against its references,
its hand-out graded, and its references kept out of npseq's API and out of every tutorial."""
import pathlib

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from npseq import functional as F
from npseq.course import handout, sheet
from npseq.course.references import variants as R
from npseq.course.sets import variants as variants_set
from npseq.errors import InvalidValueError
from npseq.gradcheck import check_function, rel_error
from npseq.samples import normal

ROOT = pathlib.Path(__file__).resolve().parents[1]
TORCH_TOL = 1e-10
STENCIL = {"h": 1e-3, "order": 4}
"""The grader's finite differences."""
EXERCISES = variants_set.EXERCISES
NAMES = [exercise.name for exercise in EXERCISES]


def peephole_inputs(rng, n, d, hidden):
    return {"x": normal(rng, n, d), "prev_h": normal(rng, n, hidden), "prev_c": normal(rng, n, hidden),
            "Wx": normal(rng, d, 4 * hidden, scale=0.5), "Wh": normal(rng, hidden, 4 * hidden, scale=0.5),
            "b": normal(rng, 4 * hidden), "p_i": normal(rng, hidden, scale=0.3),
            "p_f": normal(rng, hidden, scale=0.3), "p_o": normal(rng, hidden, scale=0.3)}


def coupled_inputs(rng, n, d, hidden):
    return {"x": normal(rng, n, d), "prev_h": normal(rng, n, hidden), "prev_c": normal(rng, n, hidden),
            "Wx": normal(rng, d, 3 * hidden, scale=0.5), "Wh": normal(rng, hidden, 3 * hidden, scale=0.5),
            "b": normal(rng, 3 * hidden)}


def mgu_inputs(rng, n, d, hidden):
    return {"x": normal(rng, n, d), "prev_h": normal(rng, n, hidden),
            "Wx": normal(rng, d, 2 * hidden, scale=0.5), "Wh": normal(rng, hidden, 2 * hidden, scale=0.5),
            "b": normal(rng, 2 * hidden)}


def layer_norm_inputs(rng, n, d, hidden):
    return {"x": normal(rng, n, d), "prev_h": normal(rng, n, hidden), "Wx": normal(rng, d, hidden),
            "Wh": normal(rng, hidden, hidden), "gamma": 1 + normal(rng, hidden, scale=0.5),
            "beta": normal(rng, hidden, scale=0.5)}


CELLS = {
    "peephole": (R.peephole_lstm_step_forward, R.peephole_lstm_step_backward, peephole_inputs),
    "coupled": (R.coupled_lstm_step_forward, R.coupled_lstm_step_backward, coupled_inputs),
    "mgu": (R.minimal_gated_unit_step_forward, R.minimal_gated_unit_step_backward, mgu_inputs),
    "layer_norm": (R.layer_norm_rnn_step_forward, R.layer_norm_rnn_step_backward, layer_norm_inputs),
}
"""Each cell's forward, backward and inputs(rng, N, D, H); the backward's gradients are those of every input."""


# ------------------------------------------------------------ finite differences
@pytest.mark.parametrize("cell", CELLS)
def test_reference_backward_matches_finite_differences(cell):
    forward, backward, inputs = CELLS[cell]
    given = inputs(np.random.default_rng(0), 3, 4, 5)
    report = check_function(forward, backward, given, **STENCIL)
    assert report.ok and [row.name for row in report.rows] == list(given), report


@settings(max_examples=20, deadline=None)
@given(cell=st.sampled_from(sorted(CELLS)), n=st.integers(1, 3), d=st.integers(1, 3), hidden=st.integers(1, 3),
       seed=st.integers(0, 99))
def test_edge_shapes_pass_finite_differences(cell, n, d, hidden, seed):
    """N = 1, D = 1, H = 1. Layer norm gets 3 units at least (over fewer its gradient all but vanishes), and rows of
    pre-activations spread by 0.3 at least: closer ones make its derivatives too steep for a step of 1e-3."""
    forward, backward, inputs = CELLS[cell]
    hidden = max(hidden, 3) if cell == "layer_norm" else hidden
    given = inputs(np.random.default_rng(seed), n, d, hidden)
    if cell == "layer_norm":
        assume((given["x"] @ given["Wx"] + given["prev_h"] @ given["Wh"]).std(axis=1).min() >= 0.3)
    report = check_function(forward, backward, given, seed=seed, **STENCIL)
    assert report.ok, report


def test_layer_norm_eps_reaches_the_gradient():
    """A large eps is part of the function: finite differences see it, and the reference's gradients with it."""
    forward, backward, inputs = CELLS["layer_norm"]
    report = check_function(forward, backward, inputs(np.random.default_rng(1), 2, 3, 2), kwargs={"eps": 0.5},
                            **STENCIL)
    assert report.ok, report


def test_peepholes_change_the_cell():
    """Zero peepholes are npseq's LSTM exactly; nonzero ones are not."""
    rng = np.random.default_rng(2)
    inputs = peephole_inputs(rng, 2, 3, 4)
    lstm = F.lstm_step_forward(*(inputs[name] for name in ("x", "prev_h", "prev_c", "Wx", "Wh", "b")))
    zero = {**inputs, "p_i": np.zeros(4), "p_f": np.zeros(4), "p_o": np.zeros(4)}
    np.testing.assert_array_equal(R.peephole_lstm_step_forward(**zero)[0], lstm[0])
    np.testing.assert_array_equal(R.peephole_lstm_step_forward(**zero)[1], lstm[1])
    assert not np.allclose(R.peephole_lstm_step_forward(**inputs)[0], lstm[0])


def test_errors_name_the_argument():
    inputs = peephole_inputs(np.random.default_rng(3), 2, 3, 4)
    with pytest.raises(InvalidValueError, match=r"p_f: expected shape \(4,\), got \(3,\)"):
        R.peephole_lstm_step_forward(**{**inputs, "p_f": np.zeros(3)})
    with pytest.raises(InvalidValueError, match=r"Wx: expected shape \(3, 8\)"):
        R.minimal_gated_unit_step_forward(**{**mgu_inputs(np.random.default_rng(3), 2, 3, 4),
                                             "Wx": np.zeros((3, 12))})
    ln = layer_norm_inputs(np.random.default_rng(3), 2, 3, 4)
    with pytest.raises(InvalidValueError, match="eps: expected a real number >= 0"):
        R.layer_norm_rnn_step_forward(**ln, eps=-1.0)
    _, cache = R.layer_norm_rnn_step_forward(**ln)
    with pytest.raises(InvalidValueError, match=r"dnext_h: expected shape \(2, 4\)"):
        R.layer_norm_rnn_step_backward(np.zeros((4, 2)), cache)


# ------------------------------------------------------------------------- torch
def _torch_forward(torch, cell, t, eps=1e-5):
    """The cell's forward written again in torch ops, on ``t`` (the inputs as tensors): its outputs."""
    sig, tanh = torch.sigmoid, torch.tanh
    hidden = t["prev_h"].shape[1]
    if cell == "layer_norm":
        a = t["x"] @ t["Wx"] + t["prev_h"] @ t["Wh"]
        a_hat = torch.nn.functional.layer_norm(a, (hidden,), eps=eps)
        return (tanh(t["gamma"] * a_hat + t["beta"]),)
    a = t["x"] @ t["Wx"] + t["prev_h"] @ t["Wh"] + t["b"]
    blocks = torch.split(a, hidden, dim=1)
    if cell == "peephole":
        a_i, a_f, a_o, a_g = blocks
        i, f = sig(a_i + t["p_i"] * t["prev_c"]), sig(a_f + t["p_f"] * t["prev_c"])
        c = f * t["prev_c"] + i * tanh(a_g)
        return sig(a_o + t["p_o"] * c) * tanh(c), c
    if cell == "coupled":
        a_f, a_o, a_g = blocks
        f = sig(a_f)
        c = f * t["prev_c"] + (1 - f) * tanh(a_g)
        return sig(a_o) * tanh(c), c
    W_hf, W_hn = torch.split(t["Wh"], hidden, dim=1)
    a_f = t["x"] @ t["Wx"][:, :hidden] + t["prev_h"] @ W_hf + t["b"][:hidden]
    f = sig(a_f)
    n = tanh(t["x"] @ t["Wx"][:, hidden:] + (f * t["prev_h"]) @ W_hn + t["b"][hidden:])
    return ((1 - f) * t["prev_h"] + f * n,)


@pytest.mark.parametrize("shape", [(3, 4, 5), (1, 2, 3)], ids=["N3", "N1"])
@pytest.mark.parametrize("cell", CELLS)
def test_reference_matches_torch(cell, shape):
    torch = pytest.importorskip("torch")
    forward, backward, build = CELLS[cell]
    rng = np.random.default_rng(4)
    inputs = build(rng, *shape)
    *outputs, cache = forward(**inputs)
    douts = [rng.standard_normal(out.shape) for out in outputs]
    grads = backward(*douts, cache)

    t = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in inputs.items()}
    t_outputs = _torch_forward(torch, cell, t)
    sum((out * torch.tensor(dout)).sum() for out, dout in zip(t_outputs, douts)).backward()
    assert len(t_outputs) == len(outputs)
    for ours, theirs in zip(outputs, t_outputs):
        assert rel_error(ours, theirs.detach().numpy()) < TORCH_TOL
    for name, grad in zip(inputs, grads):
        assert rel_error(grad, t[name].grad.numpy()) < TORCH_TOL, name


# ------------------------------------------------------------------ the exercises
def test_the_set_is_four_cells_graded_against_the_course_references():
    assert NAMES == ["peephole_lstm_step_backward", "coupled_lstm_step_backward", "minimal_gated_unit_step_backward",
                     "layer_norm_rnn_step_backward"]
    assert sheet.names_of_sets(["variants"]) == NAMES  # its hand-out brings in no other set
    for exercise in EXERCISES:
        assert exercise.engine is getattr(R, exercise.name)
        assert exercise.forwards_module == "npseq.course.references.variants"
        assert all(exercise.grads[i] == "d" + name for case in exercise.cases for i, name in enumerate(case.wrt))
        assert 2 <= len(exercise.cases) <= 3
    imports = handout.forwards_import(EXERCISES)
    assert imports.startswith("from npseq.course.references.variants import (") and "npseq.functional" not in imports
