"""Tests of the reference cells, npseq.functional.recurrent: finite differences, CS231n reference
values, padding properties, NumPy's dtype promotion and PyTorch parity. (The fast path's parity
with these cells is in test_fast_recurrent_parity.py.)"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optional_tools import require
from recurrent_cases import GATES, KINDS, make_params, random_problem

from npseq.functional.activations import sigmoid
from npseq.functional.recurrent import (
    GRUResetAfterStepCache,
    GRUStepCache,
    gru_backward,
    gru_forward,
    gru_step_backward,
    gru_step_forward,
    lstm_backward,
    lstm_forward,
    lstm_step_backward,
    lstm_step_forward,
    rnn_backward,
    rnn_forward,
    rnn_step_backward,
    rnn_step_forward,
)
from npseq.gradcheck import check_function


# The reference sequence pairs in one shape: forward(...) -> (h, h_last, c_last or None, cache),
# backward(...) -> (dx, dh0, dparams...). The LSTM starts from a zero cell (CS231n).
def seq_forward(kind, x, h0, params, valid_lens=None, reset_after=False):
    p = list(params.values())
    if kind == "rnn":
        h, cache = rnn_forward(x, h0, *p, valid_lens)
    elif kind == "lstm":
        h, cache = lstm_forward(x, h0, *p, valid_lens)
        return h, cache.h_last, cache.c_last, cache
    else:
        h, cache = gru_forward(x, h0, *p, reset_after, valid_lens)
    return h, cache.h_last, None, cache


def seq_backward(kind, dh, dh_last, dc_last, cache):
    if kind == "rnn":
        return rnn_backward(dh, cache, dh_last)
    if kind == "lstm":
        return lstm_backward(dh, cache, dh_last, dc_last)
    return gru_backward(dh, cache, dh_last)


# ------------------------------------------------------------ (a) finite differences
def test_rnn_step_gradcheck():
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((4, 5)), "prev_h": rng.standard_normal((4, 6)),
              **make_params("rnn", 5, 6, rng)}
    report = check_function(rnn_step_forward, rnn_step_backward, inputs)
    assert report.ok, report


def test_lstm_step_gradcheck():
    rng = np.random.default_rng(1)
    inputs = {"x": rng.standard_normal((4, 5)), "prev_h": rng.standard_normal((4, 6)),
              "prev_c": rng.standard_normal((4, 6)), **make_params("lstm", 5, 6, rng)}
    report = check_function(lstm_step_forward, lstm_step_backward, inputs)
    assert report.ok, report


@pytest.mark.parametrize("reset_after", [False, True])
def test_gru_step_gradcheck(reset_after):
    rng = np.random.default_rng(2)
    inputs = {"x": rng.standard_normal((4, 5)), "prev_h": rng.standard_normal((4, 6)),
              **make_params("gru", 5, 6, rng)}
    report = check_function(gru_step_forward, gru_step_backward, inputs,
                            kwargs={"reset_after": reset_after})
    assert report.ok, report


LENS = [None, np.array([3, 0, 4, 1]), np.array([4, 4, 4, 4])]  # T = 4: padded (incl. 0 and T), all full


def _seq_gradcheck(kind, lens, reset_after=False):
    """Check every input gradient with upstream gradients on the outputs and the final state(s)."""
    N, T, D, H = 4, 4, 3, 3
    x, h0, _, params = random_problem(kind, N, T, D, H, seed=3)
    inputs = {"x": x, "h0": h0, **params}
    names = list(inputs)

    def forward(*args):
        values = dict(zip(names, args))
        h, h_last, c_last, cache = seq_forward(kind, values["x"], values["h0"],
                                               {name: values[name] for name in params}, lens, reset_after)
        return (h, h_last, c_last, cache) if kind == "lstm" else (h, h_last, cache)

    def backward(*args):
        if kind == "lstm":
            dh, dh_last, dc_last, cache = args
        else:
            (dh, dh_last, cache), dc_last = args, None
        return seq_backward(kind, dh, dh_last, dc_last, cache)

    return check_function(forward, backward, inputs)


@pytest.mark.parametrize("lens", LENS, ids=["no-lens", "padded", "full"])
@pytest.mark.parametrize("kind,reset_after", KINDS)
def test_sequence_gradcheck_with_final_state_grads(kind, reset_after, lens):
    report = _seq_gradcheck(kind, lens, reset_after)
    assert report.ok, report


@pytest.mark.parametrize("kind,reset_after", [("rnn", False), ("gru", False), ("gru", True)])
def test_sequence_gradcheck_cs231n_signature(kind, reset_after):
    x, h0, _, params = random_problem(kind, 3, 5, 4, 3, seed=4)
    if kind == "rnn":
        report = check_function(rnn_forward, rnn_backward, {"x": x, "h0": h0, **params})
    else:
        report = check_function(gru_forward, gru_backward, {"x": x, "h0": h0, **params},
                                kwargs={"reset_after": reset_after})
    assert report.ok, report


def test_lstm_forward_backward_gradcheck():
    x, h0, _, params = random_problem("lstm", 3, 5, 4, 3, seed=5)
    report = check_function(lstm_forward, lstm_backward, {"x": x, "h0": h0, **params})
    assert report.ok, report


# ------------------------------------------------ the sequence function is a loop over its step
@pytest.mark.parametrize("kind,reset_after", KINDS)
def test_the_sequence_cache_holds_one_step_cache_per_step(kind, reset_after):
    x, h0, _, params = random_problem(kind, 2, 3, 4, 3, seed=6)
    h, h_last, _, cache = seq_forward(kind, x, h0, params, np.array([3, 1]), reset_after)
    assert len(cache.steps) == 3 and cache.mask.shape == (2, 3)
    expected = {"rnn": "RNNStepCache", "lstm": "LSTMStepCache"}.get(
        kind, "GRUResetAfterStepCache" if reset_after else "GRUStepCache")
    assert all(type(step).__name__ == expected for step in cache.steps)
    np.testing.assert_array_equal(h_last[1], h[1, 0])  # the second sequence ends after one step


# --------------------------------------------------------------- (b) CS231n reference values
def test_cs231n_rnn_step_forward():
    N, D, H = 3, 10, 4
    x = np.linspace(-0.4, 0.7, num=N * D).reshape(N, D)
    prev_h = np.linspace(-0.2, 0.5, num=N * H).reshape(N, H)
    Wx = np.linspace(-0.1, 0.9, num=D * H).reshape(D, H)
    Wh = np.linspace(-0.3, 0.7, num=H * H).reshape(H, H)
    b = np.linspace(-0.2, 0.4, num=H)
    next_h, _ = rnn_step_forward(x, prev_h, Wx, Wh, b)
    expected_next_h = np.asarray([
        [-0.58172089, -0.50182032, -0.41232771, -0.31410098],
        [0.66854692, 0.79562378, 0.87755553, 0.92795967],
        [0.97934501, 0.99144213, 0.99646691, 0.99854353]])
    assert np.abs(next_h - expected_next_h).max() < 1e-8


def test_cs231n_rnn_forward():
    N, T, D, H = 2, 3, 4, 5
    x = np.linspace(-0.1, 0.3, num=N * T * D).reshape(N, T, D)
    h0 = np.linspace(-0.3, 0.1, num=N * H).reshape(N, H)
    Wx = np.linspace(-0.2, 0.4, num=D * H).reshape(D, H)
    Wh = np.linspace(-0.4, 0.1, num=H * H).reshape(H, H)
    b = np.linspace(-0.7, 0.1, num=H)
    h, _ = rnn_forward(x, h0, Wx, Wh, b)
    expected_h = np.asarray([
        [[-0.42070749, -0.27279261, -0.11074945, 0.05740409, 0.22236251],
         [-0.39525808, -0.22554661, -0.0409454, 0.14649412, 0.32397316],
         [-0.42305111, -0.24223728, -0.04287027, 0.15997045, 0.35014525]],
        [[-0.55857474, -0.39065825, -0.19198182, 0.02378408, 0.23735671],
         [-0.27150199, -0.07088804, 0.13562939, 0.33099728, 0.50158768],
         [-0.51014825, -0.30524429, -0.06755202, 0.17806392, 0.40333043]]])
    assert np.abs(h - expected_h).max() < 1e-8


def test_cs231n_lstm_step_forward():
    N, D, H = 3, 4, 5
    x = np.linspace(-0.4, 1.2, num=N * D).reshape(N, D)
    prev_h = np.linspace(-0.3, 0.7, num=N * H).reshape(N, H)
    prev_c = np.linspace(-0.4, 0.9, num=N * H).reshape(N, H)
    Wx = np.linspace(-2.1, 1.3, num=4 * D * H).reshape(D, 4 * H)
    Wh = np.linspace(-0.7, 2.2, num=4 * H * H).reshape(H, 4 * H)
    b = np.linspace(0.3, 0.7, num=4 * H)
    next_h, next_c, _ = lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b)
    expected_next_h = np.asarray([
        [0.24635157, 0.28610883, 0.32240467, 0.35525807, 0.38474904],
        [0.49223563, 0.55611431, 0.61507696, 0.66844003, 0.7159181],
        [0.56735664, 0.66310127, 0.74419266, 0.80889665, 0.858299]])
    expected_next_c = np.asarray([
        [0.32986176, 0.39145139, 0.451556, 0.51014116, 0.56717407],
        [0.66382255, 0.76674007, 0.87195994, 0.97902709, 1.08751345],
        [0.74192008, 0.90592151, 1.07717006, 1.25120233, 1.42395676]])
    assert np.abs(next_h - expected_next_h).max() < 1e-8
    assert np.abs(next_c - expected_next_c).max() < 1e-8


def test_cs231n_lstm_forward():
    N, D, H, T = 2, 5, 4, 3
    x = np.linspace(-0.4, 0.6, num=N * T * D).reshape(N, T, D)
    h0 = np.linspace(-0.4, 0.8, num=N * H).reshape(N, H)
    Wx = np.linspace(-0.2, 0.9, num=4 * D * H).reshape(D, 4 * H)
    Wh = np.linspace(-0.3, 0.6, num=4 * H * H).reshape(H, 4 * H)
    b = np.linspace(0.2, 0.7, num=4 * H)
    h, _ = lstm_forward(x, h0, Wx, Wh, b)
    expected_h = np.asarray([
        [[0.01764008, 0.01823233, 0.01882671, 0.0194232],
         [0.11287491, 0.12146228, 0.13018446, 0.13902939],
         [0.31358768, 0.33338627, 0.35304453, 0.37250975]],
        [[0.45767879, 0.4761092, 0.4936887, 0.51041945],
         [0.6704845, 0.69350089, 0.71486014, 0.7346449],
         [0.81733511, 0.83677871, 0.85403753, 0.86935314]]])
    assert np.abs(h - expected_h).max() < 1e-8


@pytest.mark.parametrize("reset_after", [False, True])
def test_gru_step_matches_the_written_equations(reset_after):
    rng = np.random.default_rng(9)
    x, h = rng.standard_normal((3, 4)), rng.standard_normal((3, 2))
    p = make_params("gru", 4, 2, rng)
    Wx, Wh, bx, bh = (np.split(p[k], 3, axis=-1) for k in ("Wx", "Wh", "bx", "bh"))
    r = sigmoid(x @ Wx[0] + bx[0] + h @ Wh[0] + bh[0])
    z = sigmoid(x @ Wx[1] + bx[1] + h @ Wh[1] + bh[1])
    if reset_after:
        n = np.tanh(x @ Wx[2] + bx[2] + r * (h @ Wh[2] + bh[2]))
    else:
        n = np.tanh(x @ Wx[2] + bx[2] + (r * h) @ Wh[2] + bh[2])
    next_h, _ = gru_step_forward(x, h, p["Wx"], p["Wh"], p["bx"], p["bh"], reset_after)
    np.testing.assert_allclose(next_h, (1 - z) * n + z * h, rtol=0, atol=1e-14)


# ------------------------------------------------------------------- (c) properties
@st.composite
def padded_problems(draw):
    kind, reset_after = draw(st.sampled_from(KINDS))
    N, T = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    D, H = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    extra = draw(st.integers(1, 3))
    lens = np.array(draw(st.lists(st.integers(0, T), min_size=N, max_size=N)))
    scale = draw(st.sampled_from([1.0, 30.0]))  # 30: saturated gates and large pre-activations
    seed = draw(st.integers(0, 2**16))
    return kind, reset_after, N, T, D, H, extra, lens, scale, seed


@settings(max_examples=60, deadline=None)
@given(padded_problems())
def test_padding_steps_change_nothing(problem):
    kind, reset_after, N, T, D, H, extra, lens, scale, seed = problem
    rng = np.random.default_rng(seed)
    x, h0, _, params = random_problem(kind, N, T + extra, D, H, seed)
    x = scale * x
    dh = rng.standard_normal((N, T + extra, H))
    dh_last, dc_last = rng.standard_normal((N, H)), rng.standard_normal((N, H))

    long = seq_forward(kind, x, h0, params, lens, reset_after)
    short = seq_forward(kind, x[:, :T], h0, params, lens, reset_after)
    long_grads = seq_backward(kind, dh, dh_last, dc_last, long[3])
    short_grads = seq_backward(kind, dh[:, :T], dh_last, dc_last, short[3])

    assert np.all(long[0][:, T:] == 0)
    np.testing.assert_allclose(long[0][:, :T], short[0], rtol=0, atol=1e-12)
    for a, b in zip(long[1:3], short[1:3]):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert np.all(long_grads[0][:, T:] == 0)
    np.testing.assert_allclose(long_grads[0][:, :T], short_grads[0], rtol=0, atol=1e-10)
    for a, b in zip(long_grads[1:], short_grads[1:]):
        assert np.all(np.isfinite(a))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(KINDS), st.integers(1, 3), st.integers(1, 4), st.integers(1, 3), st.integers(0, 99))
def test_all_zero_lengths_keep_the_initial_state(kind_variant, N, T, H, seed):
    kind, reset_after = kind_variant
    x, h0, _, params = random_problem(kind, N, T, 2, H, seed)
    lens = np.zeros(N, dtype=np.int64)
    h, h_last, c_last, cache = seq_forward(kind, x, h0, params, lens, reset_after)
    assert np.all(h == 0)
    np.testing.assert_array_equal(h_last, h0)
    if kind == "lstm":
        assert np.all(c_last == 0)
    rng = np.random.default_rng(seed)
    dh_last, dc_last = rng.standard_normal((N, H)), rng.standard_normal((N, H))
    grads = seq_backward(kind, rng.standard_normal((N, T, H)), dh_last, dc_last, cache)
    assert np.all(grads[0] == 0)
    np.testing.assert_array_equal(grads[1], dh_last)
    for dparam in grads[2:]:
        assert np.all(dparam == 0)


def step_round_trip(kind, reset_after, x, h, c, p):
    """One step forward and backward (the upstream gradient is the output itself)."""
    if kind == "rnn":
        out, cache = rnn_step_forward(x, h, p["Wx"], p["Wh"], p["b"])
        return out, rnn_step_backward(out, cache)
    if kind == "lstm":
        out, next_c, cache = lstm_step_forward(x, h, c, p["Wx"], p["Wh"], p["b"])
        return out, lstm_step_backward(out, next_c, cache)
    out, cache = gru_step_forward(x, h, p["Wx"], p["Wh"], p["bx"], p["bh"], reset_after)
    return out, gru_step_backward(out, cache)


@pytest.mark.parametrize("kind,reset_after", KINDS)
def test_float32_stays_float32(kind, reset_after):
    x, h0, c0, params = random_problem(kind, 3, 4, 2, 3, seed=10, dtype=np.float32)
    rng = np.random.default_rng(11)
    lens = np.array([4, 0, 2])
    h, h_last, c_last, cache = seq_forward(kind, x, h0, params, lens, reset_after)
    assert h.dtype == h_last.dtype == np.float32
    dh = rng.standard_normal(h.shape).astype(np.float32)
    dlast = rng.standard_normal(h_last.shape).astype(np.float32)
    for grad in seq_backward(kind, dh, dlast, dlast, cache):
        assert grad.dtype == np.float32
    out, step_grads = step_round_trip(kind, reset_after, x[:, 0], h0, c0, params)
    assert out.dtype == np.float32
    assert all(grad.dtype == np.float32 for grad in step_grads)


@pytest.mark.parametrize("kind,reset_after", KINDS)
def test_mixed_dtypes_follow_numpy_promotion(kind, reset_after):
    """CS231n's sample() starts the states with np.zeros (float64) beside float32 weights."""
    x, _, _, params = random_problem(kind, 3, 4, 2, 3, seed=12, dtype=np.float32)
    zeros = np.zeros((3, 3))
    out, step_grads = step_round_trip(kind, reset_after, x[:, 0], zeros, zeros, params)
    assert out.dtype == np.float64
    assert all(grad.dtype == np.float64 for grad in step_grads)
    h, *_ = seq_forward(kind, x, zeros, params, None, reset_after)
    assert h.dtype == np.float64


def test_the_gru_cache_is_named_by_variant():
    x, h0, _, p = random_problem("gru", 2, 1, 3, 2, seed=13)
    _, before = gru_step_forward(x[:, 0], h0, *p.values(), reset_after=False)
    _, after = gru_step_forward(x[:, 0], h0, *p.values(), reset_after=True)
    assert isinstance(before, GRUStepCache) and before.reset_after is False and "hn" not in before._fields
    assert isinstance(after, GRUResetAfterStepCache) and after.reset_after is True
    np.testing.assert_allclose(after.hn, h0 @ p["Wh"][:, 4:] + p["bh"][4:], rtol=0, atol=1e-15)


def test_bad_inputs_name_the_argument():
    x, h0, c0, p = random_problem("lstm", 2, 3, 4, 3, seed=14)
    with pytest.raises(ValueError, match="x: expected a 2-d array \\(N, D\\) or a 3-d array"):
        lstm_forward(x[0, 0], h0, p["Wx"], p["Wh"], p["b"])
    with pytest.raises(ValueError, match="x: expected at least one time step"):
        lstm_forward(x[:, :0], h0, p["Wx"], p["Wh"], p["b"])
    with pytest.raises(ValueError, match="Wx: expected shape \\(4, 12\\)"):
        lstm_forward(x, h0, p["Wx"][:-1], p["Wh"], p["b"])
    with pytest.raises(ValueError, match="prev_c: expected shape \\(2, 3\\)"):
        lstm_step_forward(x[:, 0], h0, c0[:1], p["Wx"], p["Wh"], p["b"])
    with pytest.raises(IndexError, match="valid_lens"):
        lstm_forward(x, h0, p["Wx"], p["Wh"], p["b"], valid_lens=np.array([4, 1]))
    with pytest.raises(ValueError, match="valid_lens"):
        lstm_forward(x, h0, p["Wx"], p["Wh"], p["b"], valid_lens=np.array([1, 1, 1]))
    with pytest.raises(TypeError, match="h0: expected a floating-point array"):
        lstm_forward(x, h0.astype(int), p["Wx"], p["Wh"], p["b"])
    h, cache = lstm_forward(x, h0, p["Wx"], p["Wh"], p["b"])
    with pytest.raises(ValueError, match="dh: expected shape"):
        lstm_backward(h[:, :2], cache)
    with pytest.raises(ValueError, match="dc_last: expected shape"):
        lstm_backward(h, cache, dc_last=h0[:1])
    _, step = lstm_step_forward(x[:, 0], h0, c0, p["Wx"], p["Wh"], p["b"])[1:]
    with pytest.raises(ValueError, match="dnext_c: expected shape"):
        lstm_step_backward(h0, c0[:1], step)


# ----------------------------------------------------------------- (d) PyTorch parity
def _torch_run(torch, kind, x, h0, c0, lens, dh, dh_last, dc_last, seed):
    """Run a random single-layer torch.nn.{RNN,GRU,LSTM} (float64), return outputs, grads and
    its weights mapped to ours.

    Mapping (torch stores (kH, D) with gate blocks as rows; we use (D, kH) with blocks as columns):
      RNN:  Wx = weight_ih_l0.T, Wh = weight_hh_l0.T, b = bias_ih_l0 + bias_hh_l0
      GRU (reset_after=True only): Wx = weight_ih_l0.T, Wh = weight_hh_l0.T, bx = bias_ih_l0,
            bh = bias_hh_l0 (both in gate order [r, z, n])
      LSTM: torch rows [i, f, g, o] -> our columns [i, f, o, g]:
            Wx = weight_ih_l0[perm].T, Wh = weight_hh_l0[perm].T, b = (bias_ih_l0 + bias_hh_l0)[perm]
    """
    nn = torch.nn
    N, T, D = x.shape
    H = h0.shape[1]
    torch.manual_seed(seed)
    module = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[kind](D, H, batch_first=True).double()
    tx = torch.tensor(x, requires_grad=True)
    th0 = torch.tensor(h0[None], requires_grad=True)
    tc0 = torch.tensor(c0[None], requires_grad=True) if kind == "lstm" else None
    state = (th0, tc0) if kind == "lstm" else th0
    if lens is None:
        out, final = module(tx, state)
    else:
        packed = nn.utils.rnn.pack_padded_sequence(tx, torch.tensor(lens), batch_first=True,
                                                   enforce_sorted=False)
        out, final = module(packed, state)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
    h_n = final[0] if kind == "lstm" else final
    loss = (out * torch.tensor(dh)).sum() + (h_n[0] * torch.tensor(dh_last)).sum()
    if kind == "lstm":
        loss = loss + (final[1][0] * torch.tensor(dc_last)).sum()
    loss.backward()

    perm = np.concatenate([np.arange(H), H + np.arange(H), 3 * H + np.arange(H), 2 * H + np.arange(H)]) \
        if kind == "lstm" else np.arange(GATES[kind] * H)
    w = {name: p.detach().numpy() for name, p in module.named_parameters()}
    g = {name: p.grad.numpy() for name, p in module.named_parameters()}
    if kind == "gru":
        params = {"Wx": w["weight_ih_l0"].T.copy(), "Wh": w["weight_hh_l0"].T.copy(),
                  "bx": w["bias_ih_l0"].copy(), "bh": w["bias_hh_l0"].copy()}
        dparams = [g["weight_ih_l0"].T, g["weight_hh_l0"].T, g["bias_ih_l0"], g["bias_hh_l0"]]
    else:
        params = {"Wx": w["weight_ih_l0"][perm].T.copy(), "Wh": w["weight_hh_l0"][perm].T.copy(),
                  "b": (w["bias_ih_l0"] + w["bias_hh_l0"])[perm]}
        # b_ih and b_hh enter identically, so either one's gradient is db
        dparams = [g["weight_ih_l0"][perm].T, g["weight_hh_l0"][perm].T, g["bias_ih_l0"][perm]]
    results = {"out": out.detach().numpy(), "h_last": h_n[0].detach().numpy(),
               "dx": tx.grad.numpy(), "dh0": th0.grad.numpy()[0], "dparams": dparams}
    if kind == "lstm":
        results["c_last"] = final[1][0].detach().numpy()
        results["dc0"] = tc0.grad.numpy()[0]
    return params, results


@pytest.mark.parametrize("lens", [None, np.array([2, 5, 1, 4])], ids=["full", "packed"])
@pytest.mark.parametrize("kind", ["rnn", "gru", "lstm"])
def test_torch_parity(kind, lens):
    torch = require("torch")
    N, T, D, H = 4, 5, 3, 4
    rng = np.random.default_rng(15)
    x, h0, c0 = rng.standard_normal((N, T, D)), rng.standard_normal((N, H)), rng.standard_normal((N, H))
    dh, dh_last, dc_last = (rng.standard_normal(s) for s in [(N, T, H), (N, H), (N, H)])
    c0 = np.zeros_like(h0)  # the reference LSTM starts from a zero cell (the layers' parity covers any c0)
    params, ref = _torch_run(torch, kind, x, h0, c0, lens, dh, dh_last, dc_last, seed=16)
    out, h_last, c_last, cache = seq_forward(kind, x, h0, params, lens, reset_after=True)
    grads = seq_backward(kind, dh, dh_last, dc_last, cache)

    def close(a, b):
        assert np.abs(a - b).max() < 1e-10

    close(out, ref["out"])
    close(h_last, ref["h_last"])
    close(grads[0], ref["dx"])
    close(grads[1], ref["dh0"])
    if kind == "lstm":
        close(c_last, ref["c_last"])
    assert len(grads[2:]) == len(ref["dparams"])
    for ours, theirs in zip(grads[2:], ref["dparams"]):
        close(ours, theirs)


# ------------------------------------------------------------------ (e) the reference stays readable
def test_the_reference_reads_like_its_equations():
    """The learner's module: the GRU forward early in the file, each step function about a screen,
    no scratch buffers, in-place tricks or private helpers (those belong to fast_recurrent.py)."""
    import ast
    import inspect

    from npseq.functional import recurrent

    source = inspect.getsource(recurrent)
    first_gru = source[:source.index("def gru_step_forward(")].count("\n") + 1
    assert first_gru <= 150, first_gru
    tree = ast.parse(source)
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        assert not node.name.startswith("_"), f"private helper {node.name} in the reference"
        body = node.body[1:] if isinstance(node.body[0].value if isinstance(node.body[0], ast.Expr) else None,
                                           ast.Constant) else node.body
        lines = body[-1].end_lineno - body[0].lineno + 1
        code = ast.unparse(ast.Module(body=body, type_ignores=[]))
        assert lines <= 40, f"{node.name}: {lines} lines"
        for trick in ("out=", "empty", "copyto", "+=", "*=", "-="):
            assert trick not in code, f"{node.name} uses {trick}"
        called = {n.func.id for n in ast.walk(ast.Module(body=body, type_ignores=[]))
                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert not [name for name in called if name.startswith("_")], node.name
