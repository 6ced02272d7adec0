"""The cells conditioned on a vector (npseq.functional.conditioned), both modes: finite differences with
padding, the closed forms of dv and dW_v, edge shapes and saturating values, and the registry entries."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from recurrent_cases import GATES, KINDS

from npseq import functional as F
from npseq.errors import InvalidValueError
from npseq.gradcheck import check_function
from npseq.gradient_checks import REGISTRY, run_checks
from npseq.samples import normal


def problem(kind, mode, N, T, D, Fv, H, seed, scale=0.5):
    """The forward's positional inputs by name, in the order of its signature."""
    rng = np.random.default_rng(seed)
    width = GATES[kind] * H
    inputs = {"x": normal(rng, N, T, D), "v": normal(rng, N, Fv)}
    if mode == "every_step":
        inputs.update(h0=normal(rng, N, H, scale=scale), Wx=normal(rng, D, width, scale=scale),
                      Wh=normal(rng, H, width, scale=scale), Wv=normal(rng, Fv, width, scale=scale))
    else:
        inputs.update(Wv=normal(rng, Fv, H, scale=scale), bv=normal(rng, H, scale=scale),
                      Wx=normal(rng, D, width, scale=scale), Wh=normal(rng, H, width, scale=scale))
    if kind == "gru":
        inputs.update(bx=normal(rng, width, scale=scale), bh=normal(rng, width, scale=scale))
    else:
        inputs.update(b=normal(rng, width, scale=scale))
    return inputs


def pair(kind, mode):
    return getattr(F, f"{kind}_{mode}_forward"), getattr(F, f"{kind}_{mode}_backward")


def options(kind, reset_after, lens):
    return dict(reset_after=reset_after, valid_lens=lens) if kind == "gru" else dict(valid_lens=lens)


CASES = [(kind, reset_after, mode) for kind, reset_after in KINDS for mode in ("every_step", "first_step")]


@pytest.mark.parametrize("kind,reset_after,mode", CASES)
def test_finite_differences_with_padding(kind, reset_after, mode):
    inputs = problem(kind, mode, N=3, T=4, D=2, Fv=5, H=3, seed=1)
    report = check_function(*pair(kind, mode), inputs, kwargs=options(kind, reset_after, np.array([4, 1, 0])),
                            time_axes={"x": 1})
    assert report.ok, report


@pytest.mark.parametrize("kind,reset_after", KINDS)
def test_every_step_equals_the_plain_cell_with_the_term_in_its_bias(kind, reset_after):
    """With one sequence the term v W_v is a bias: the plain cell with b + v W_v gives the same outputs,
    and dv = (sum of the bias gradient) W_v^T."""
    inputs = problem(kind, "every_step", N=1, T=3, D=2, Fv=4, H=3, seed=2)
    forward, backward = pair(kind, "every_step")
    out, cache = forward(*inputs.values(), **options(kind, reset_after, None))
    term = (inputs["v"] @ inputs["Wv"])[0]
    plain = dict(x=inputs["x"], h0=inputs["h0"], Wx=inputs["Wx"], Wh=inputs["Wh"])
    dh = np.random.default_rng(3).standard_normal(out.shape)
    if kind == "gru":
        ref_out, ref_cache = F.gru_forward(*plain.values(), inputs["bx"] + term, inputs["bh"], reset_after)
        dbias = F.gru_backward(dh, ref_cache)[4]
    else:
        ref_out, ref_cache = getattr(F, f"{kind}_forward")(*plain.values(), inputs["b"] + term)
        dbias = getattr(F, f"{kind}_backward")(dh, ref_cache)[4]
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)
    grads = backward(dh, cache)
    np.testing.assert_allclose(grads.dv, (dbias @ inputs["Wv"].T)[None], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads.dWv, inputs["v"].T @ dbias[None], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind,reset_after", KINDS)
def test_first_step_starts_from_the_projected_features(kind, reset_after):
    inputs = problem(kind, "first_step", N=2, T=3, D=2, Fv=4, H=3, seed=4)
    out, cache = pair(kind, "first_step")[0](*inputs.values(), **options(kind, reset_after, None))
    h0 = inputs["v"] @ inputs["Wv"] + inputs["bv"]
    rest = {k: val for k, val in inputs.items() if k not in ("x", "v", "Wv", "bv")}
    if kind == "gru":
        ref_out, _ = F.gru_forward(inputs["x"], h0, *rest.values(), reset_after)
    else:
        ref_out, _ = getattr(F, f"{kind}_forward")(inputs["x"], h0, *rest.values())
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind,reset_after", KINDS)
def test_padded_steps_add_nothing_to_dv(kind, reset_after):
    inputs = problem(kind, "every_step", N=2, T=4, D=2, Fv=3, H=3, seed=5)
    lens = np.array([4, 2])
    out, cache = pair(kind, "every_step")[0](*inputs.values(), **options(kind, reset_after, lens))
    dh = np.random.default_rng(6).standard_normal(out.shape)
    dxv, _, dWxv, *_ = (F.gru_backward if kind == "gru" else getattr(F, f"{kind}_backward"))(dh, cache.inner)
    joint = F.split_conditioning(dxv, dWxv, 2)
    assert np.all(joint.dv_steps[1, 2:] == 0)
    np.testing.assert_allclose(joint.dv_steps.sum(axis=1), joint.dv, rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(case=st.sampled_from(CASES), N=st.integers(1, 3), T=st.integers(1, 3), seed=st.integers(0, 99),
       all_padding=st.booleans())
def test_edge_shapes_pass_finite_differences(case, N, T, seed, all_padding):
    """N = 1, T = 1 and every step padded."""
    kind, reset_after, mode = case
    inputs = problem(kind, mode, N=N, T=T, D=2, Fv=3, H=2, seed=seed)
    lens = np.zeros(N, dtype=int) if all_padding else np.random.default_rng(seed).integers(0, T + 1, size=N)
    report = check_function(*pair(kind, mode), inputs, kwargs=options(kind, reset_after, lens))
    assert report.ok, report
    if all_padding:
        forward, backward = pair(kind, mode)
        grads = backward(np.ones((N, T, 2)), forward(*inputs.values(), **options(kind, reset_after, lens))[1])
        assert np.all(grads.dx == 0) and np.all(grads.dWx == 0)
        if mode == "every_step":
            assert np.all(grads.dv == 0) and np.all(grads.dWv == 0)


@settings(max_examples=25, deadline=None)
@given(case=st.sampled_from(CASES), N=st.integers(1, 3), T=st.integers(1, 4), seed=st.integers(0, 99))
def test_large_values_saturate_without_overflow(case, N, T, seed):
    """Weights 30 times larger: the gates saturate, and the outputs and every gradient stay finite.
    (Finite differences are not asked here: saturated gradients are tiny and their relative error is noise.)"""
    kind, reset_after, mode = case
    inputs = problem(kind, mode, N=N, T=T, D=2, Fv=3, H=2, seed=seed, scale=30.0)
    inputs["v"] = 30.0 * inputs["v"]
    forward, backward = pair(kind, mode)
    out, cache = forward(*inputs.values(), **options(kind, reset_after, None))
    assert np.all(np.isfinite(out))
    for grad in backward(np.random.default_rng(seed).standard_normal(out.shape), cache):
        assert np.all(np.isfinite(grad))


def test_errors_name_the_argument():
    inputs = problem("rnn", "every_step", N=2, T=3, D=2, Fv=4, H=3, seed=0)
    with pytest.raises(InvalidValueError, match="Wv"):
        F.rnn_every_step_forward(*{**inputs, "Wv": np.ones((5, 3))}.values())
    with pytest.raises(InvalidValueError, match="v"):
        F.rnn_every_step_forward(*{**inputs, "v": np.ones((3, 4))}.values())
    first = problem("lstm", "first_step", N=2, T=3, D=2, Fv=4, H=3, seed=0)
    with pytest.raises(InvalidValueError, match="Wv"):
        F.lstm_first_step_forward(*{**first, "Wv": np.ones((5, 3))}.values())


def test_the_registry_lists_both_modes_of_every_cell_and_they_pass():
    names = [name for name in REGISTRY if name.startswith("conditioned ")]
    order = list(REGISTRY)
    assert len(names) == 8
    # appended after the older checks, so that those keep their inputs
    assert min(order.index(name) for name in names) > order.index("EncoderDecoder (luong local-p, window 2, gru)")
    for name, report in run_checks(names):
        assert report.ok, (name, report)
