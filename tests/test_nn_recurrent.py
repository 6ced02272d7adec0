"""Tests of npseq.nn.recurrent: RNN, GRU and LSTM layers (stacked, bidirectional, padded)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optional_tools import require
from recurrent_cases import reference_run

import npseq
from npseq.gradcheck import check_module
from npseq.nn.recurrent import GRU, LSTM, RNN, detach, from_torch_state_dict, to_torch_state_dict

# Finite-difference step: a stack of two bidirectional layers sums many terms, so the
# objective's roundoff (~1e-14) matters more than with one cell; 2e-5 balances it against
# the O(h^2) truncation error.
STEP = 2e-5

VARIANTS = [("RNN", {}), ("GRU", {"reset_after": False}), ("GRU", {"reset_after": True}), ("LSTM", {})]
CLASSES = {"RNN": RNN, "GRU": GRU, "LSTM": LSTM}
IDS = ["rnn", "gru", "gru-reset-after", "lstm"]


def make(name, kwargs, D=3, H=4, num_layers=2, bidirectional=True, dropout=0.0, seed=0, scale=0.4):
    """A float64 layer whose weights are redrawn from N(0, scale^2) (a little larger than the
    default init, so few gradients are tiny and finite differences stay accurate)."""
    module = CLASSES[name](D, H, num_layers=num_layers, bidirectional=bidirectional, dropout=dropout,
                           rng=seed, dtype=np.float64, **kwargs)
    rng = np.random.default_rng(seed + 100)
    for _, param in module.named_parameters():
        param.data[...] = scale * rng.standard_normal(param.shape)
    return module


def make_state(module, N, rng):
    shape = (module.num_layers * module.num_directions, N, module.hidden_size)
    h = 0.5 * rng.standard_normal(shape)
    return (h, 0.5 * rng.standard_normal(shape)) if isinstance(module, LSTM) else h


def as_parts(state):
    return state if isinstance(state, tuple) else (state,)


# ---------------------------------------------------------------- finite differences
@pytest.mark.slow
@pytest.mark.parametrize("name,kwargs", VARIANTS, ids=IDS)
def test_gradcheck_stacked_bidirectional_padded_with_initial_state(name, kwargs):
    module = make(name, kwargs).train()
    rng = np.random.default_rng(1)
    N, T = 3, 5
    inputs = {"x": rng.standard_normal((N, T, 3)), "state": make_state(module, N, rng),
              "valid_lens": np.array([5, 1, 3])}
    report = check_module(module, inputs, h=STEP)
    assert report.ok, report


@pytest.mark.parametrize("name,kwargs", VARIANTS, ids=IDS)
def test_gradcheck_single_layer_default_state(name, kwargs):
    module = make(name, kwargs, num_layers=1, bidirectional=False)
    x = np.random.default_rng(2).standard_normal((2, 4, 3))
    report = check_module(module, {"x": x}, h=STEP)
    assert report.ok, report


def test_gradcheck_with_dropout_masks_held_fixed():
    """Dropout > 0 in training mode: reseeding before every call makes the forward deterministic."""
    module = make("LSTM", {}, dropout=0.4)
    forward = module.forward

    def seeded_forward(*args, **kwargs):
        module.dropout_rng = np.random.default_rng(7)
        return forward(*args, **kwargs)

    module.forward = seeded_forward
    rng = np.random.default_rng(3)
    inputs = {"x": rng.standard_normal((3, 4, 3)), "valid_lens": np.array([4, 2, 1])}
    report = check_module(module, inputs, h=STEP)
    assert report.ok, report
    # and the masks were really applied: a fresh seed changes the output
    module.forward = forward
    module.dropout_rng = np.random.default_rng(7)
    a, _ = module(**inputs)
    module.dropout_rng = np.random.default_rng(8)
    b, _ = module(**inputs)
    module.clear_caches()
    assert not np.allclose(a, b)


# ------------------------------------------------------------------- behaviour
@pytest.mark.parametrize("name,kwargs", VARIANTS, ids=IDS)
def test_dropout_in_eval_mode_equals_no_dropout(name, kwargs):
    with_dropout = make(name, kwargs, dropout=0.5).eval()
    without = make(name, kwargs, dropout=0.0).eval()
    rng = np.random.default_rng(4)
    x, lens = rng.standard_normal((3, 4, 3)), np.array([4, 2, 0])
    dout = rng.standard_normal((3, 4, 8))
    out_a, state_a = with_dropout(x, valid_lens=lens)
    out_b, state_b = without(x, valid_lens=lens)
    np.testing.assert_array_equal(out_a, out_b)
    for a, b in zip(as_parts(state_a), as_parts(state_b)):
        np.testing.assert_array_equal(a, b)
    dx_a, _ = with_dropout.backward(dout)
    dx_b, _ = without.backward(dout)
    np.testing.assert_array_equal(dx_a, dx_b)
    for (_, pa), (_, pb) in zip(with_dropout.named_parameters(), without.named_parameters()):
        np.testing.assert_array_equal(pa.grad, pb.grad)


@pytest.mark.parametrize("name,kwargs", VARIANTS, ids=IDS)
def test_two_rounds_in_a_row_and_interleaved_calls(name, kwargs):
    module = make(name, kwargs)
    rng = np.random.default_rng(5)
    x1, x2 = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 3, 3))
    lens1, lens2 = np.array([4, 2]), np.array([1, 3])
    d1, d2 = rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 3, 8))

    def grads():
        return {n: p.grad.copy() for n, p in module.named_parameters()}

    module.zero_grad()
    out1, _ = module(x1, valid_lens=lens1)
    dx1, ds1 = module.backward(d1)
    g1 = grads()
    module.zero_grad()
    module(x2, valid_lens=lens2)
    dx2, _ = module.backward(d2)
    g2 = grads()

    # the same round twice without zero_grad: identical outputs and input grads, doubled parameter grads
    module.zero_grad()
    for _ in range(2):
        out, _ = module(x1, valid_lens=lens1)
        dx, ds = module.backward(d1)
        np.testing.assert_array_equal(out, out1)
        np.testing.assert_array_equal(dx, dx1)
    for n, g in grads().items():
        np.testing.assert_allclose(g, 2 * g1[n], rtol=1e-13, atol=1e-15)

    # two forwards then two backwards: last in, first out
    module.zero_grad()
    module(x1, valid_lens=lens1)
    module(x2, valid_lens=lens2)
    assert module.num_pending == 2
    np.testing.assert_array_equal(module.backward(d2)[0], dx2)
    np.testing.assert_array_equal(module.backward(d1)[0], dx1)
    for n, g in grads().items():
        np.testing.assert_allclose(g, g1[n] + g2[n], rtol=1e-13, atol=1e-15)
    with pytest.raises(RuntimeError, match="more often than forward"):
        module.backward(d1)


def test_no_grad_stores_nothing():
    module = make("GRU", {"reset_after": True})
    with npseq.no_grad():
        module(np.zeros((2, 3, 3)))
    assert module.num_pending == 0


@pytest.mark.parametrize("name,kwargs", VARIANTS, ids=IDS)
def test_initial_state_gradient_is_returned_for_a_zero_state(name, kwargs):
    module = make(name, kwargs)
    x = np.random.default_rng(6).standard_normal((2, 3, 3))
    out, state = module(x)
    dx, dstate0 = module.backward(np.ones_like(out))
    zeros = tuple(np.zeros_like(p) for p in as_parts(state))
    module(x, state=zeros if name == "LSTM" else zeros[0])
    dx_b, dstate0_b = module.backward(np.ones_like(out))
    for a, b in zip(as_parts(dstate0), as_parts(dstate0_b)):
        assert a.shape == (4, 2, 4)
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(dx, dx_b)


def test_lstm_dstate_parts_may_be_none():
    module = make("LSTM", {})
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 3))
    dout, dc = rng.standard_normal((2, 3, 8)), rng.standard_normal((4, 2, 4))
    module(x)
    dx_a, d0_a = module.backward(dout, (None, dc))
    module(x)
    dx_b, d0_b = module.backward(dout, (np.zeros_like(dc), dc))
    np.testing.assert_array_equal(dx_a, dx_b)
    for a, b in zip(d0_a, d0_b):
        np.testing.assert_array_equal(a, b)


@st.composite
def layer_problems(draw):
    name, kwargs = draw(st.sampled_from(VARIANTS))
    num_layers, bidirectional = draw(st.integers(1, 2)), draw(st.booleans())
    N, T, extra = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 3))
    H = draw(st.integers(1, 3))
    lens = np.array(draw(st.lists(st.integers(0, T), min_size=N, max_size=N)))
    return name, kwargs, num_layers, bidirectional, N, T, extra, H, lens, draw(st.integers(0, 999))


@settings(max_examples=40, deadline=None)
@given(layer_problems())
def test_padding_never_changes_valid_outputs_or_final_states(problem):
    name, kwargs, num_layers, bidirectional, N, T, extra, H, lens, seed = problem
    module = make(name, kwargs, D=2, H=H, num_layers=num_layers, bidirectional=bidirectional, seed=seed)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, T + extra, 2))
    state = make_state(module, N, rng)
    dirs = module.num_directions
    dout = rng.standard_normal((N, T + extra, dirs * H))
    dstate = make_state(module, N, rng)

    long_out, long_state = module(x, state, lens)
    long_dx, long_d0 = module.backward(dout, dstate)
    long_grads = {n: p.grad.copy() for n, p in module.named_parameters()}
    module.zero_grad()
    short_out, short_state = module(x[:, :T], state, lens)
    short_dx, short_d0 = module.backward(dout[:, :T], dstate)

    assert np.all(long_out[:, T:] == 0) and np.all(long_dx[:, T:] == 0)
    np.testing.assert_allclose(long_out[:, :T], short_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(long_dx[:, :T], short_dx, rtol=0, atol=1e-10)
    for a, b in zip(as_parts(long_state) + as_parts(long_d0), as_parts(short_state) + as_parts(short_d0)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    for n, p in module.named_parameters():
        np.testing.assert_allclose(long_grads[n], p.grad, rtol=1e-10, atol=1e-10)


def test_zero_length_sequences_keep_their_initial_state():
    module = make("LSTM", {})
    rng = np.random.default_rng(8)
    state = make_state(module, 2, rng)
    out, (h, c) = module(rng.standard_normal((2, 3, 3)), state, np.array([0, 3]))
    assert np.all(out[0] == 0)
    np.testing.assert_array_equal(h[:, 0], state[0][:, 0])
    np.testing.assert_array_equal(c[:, 0], state[1][:, 0])
    module.clear_caches()


# ---------------------------------------------------------------- truncated BPTT
@pytest.mark.parametrize("name,kwargs", VARIANTS, ids=IDS)
def test_truncated_bptt_stops_at_the_chunk_boundary(name, kwargs):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 6, 3))
    d1, d2 = rng.standard_normal((2, 3, 8)), rng.standard_normal((2, 3, 8))
    module = make(name, kwargs)
    module.zero_grad()
    _, state1 = module(x[:, :3])                 # chunk 1; its cache stays pending
    carried = detach(state1)
    out2, _ = module(x[:, 3:], carried)          # chunk 2 from the carried state
    dx2, dstate_carried = module.backward(d2)
    grads2 = {n: p.grad.copy() for n, p in module.named_parameters()}
    assert module.num_pending == 1               # chunk 1 untouched by chunk 2's backward

    fresh = make(name, kwargs)                   # same weights, chunk 2 from the same constant state
    out_f, _ = fresh(x[:, 3:], detach(state1))
    dx_f, dstate_f = fresh.backward(d2)
    np.testing.assert_array_equal(out2, out_f)
    np.testing.assert_array_equal(dx2, dx_f)
    for n, p in fresh.named_parameters():
        np.testing.assert_array_equal(grads2[n], p.grad)
    for a, b in zip(as_parts(dstate_carried), as_parts(dstate_f)):
        np.testing.assert_array_equal(a, b)
        assert np.any(a != 0)

    # handing dstate0 back to chunk 1 by hand recovers full backpropagation through time,
    # but only for the unidirectional layer (the reverse direction of chunk 2 is a different sweep)
    uni = make(name, kwargs, bidirectional=False)
    uni.zero_grad()
    _, s1 = uni(x[:, :3])
    uni(x[:, 3:], detach(s1))
    _, ds = uni.backward(d2[..., :4])
    dx1, _ = uni.backward(d1[..., :4], ds)
    chunked = {n: p.grad.copy() for n, p in uni.named_parameters()}
    uni.zero_grad()
    uni(x)
    dx_full, _ = uni.backward(np.concatenate([d1[..., :4], d2[..., :4]], axis=1))
    np.testing.assert_allclose(dx1, dx_full[:, :3], rtol=1e-12, atol=1e-13)
    for n, p in uni.named_parameters():
        np.testing.assert_allclose(chunked[n], p.grad, rtol=1e-12, atol=1e-12)


def test_detach_copies_arrays_and_tuples():
    h = np.ones((1, 2, 3))
    d = detach(h)
    d[...] = 5
    assert np.all(h == 1)
    pair = detach((h, 2 * h))
    assert isinstance(pair, tuple) and len(pair) == 2
    assert pair[0] is not h and np.array_equal(pair[1], 2 * h)
    assert detach(None) is None


# ------------------------------------------------------------------ step norms
def test_step_norms_recording():
    module = make("RNN", {}, num_layers=1, bidirectional=False)
    rng = np.random.default_rng(10)
    x, lens = rng.standard_normal((3, 5, 3)), np.array([5, 2, 0])
    dout, dstate = rng.standard_normal((3, 5, 4)), rng.standard_normal((1, 3, 4))
    module(x, valid_lens=lens)
    module.backward(dout, dstate)
    assert module.step_grad_norms == {}
    module.record_step_norms = True
    module(x, valid_lens=lens)
    module.backward(dout, dstate)
    norms = module.step_grad_norms[(0, 0)]
    assert isinstance(norms, np.ndarray) and norms.shape == (5,)
    params = {"Wx": module.Wx_l0.data, "Wh": module.Wh_l0.data, "b": module.b_l0.data}
    expected = reference_run("rnn", x, np.zeros((3, 4)), None, params, lens, dout, dstate[0]).norms
    np.testing.assert_allclose(norms, expected, rtol=1e-12)

    deep = make("LSTM", {})
    deep.record_step_norms = True
    out, _ = deep(x, valid_lens=lens)
    deep.backward(np.ones_like(out))
    assert set(deep.step_grad_norms) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert all(v.shape == (5,) and np.all(v >= 0) for v in deep.step_grad_norms.values())


# ------------------------------------------------------------ construction, dtype, errors
def test_parameters_names_shapes_and_init():
    module = LSTM(5, 4, num_layers=2, bidirectional=True, rng=0)
    names = [n for n, _ in module.named_parameters()]
    assert names == ["Wx_l0", "Wh_l0", "b_l0", "Wx_l0_reverse", "Wh_l0_reverse", "b_l0_reverse",
                     "Wx_l1", "Wh_l1", "b_l1", "Wx_l1_reverse", "Wh_l1_reverse", "b_l1_reverse"]
    assert module.Wx_l0.shape == (5, 16) and module.Wx_l1.shape == (8, 16) and module.Wh_l1.shape == (4, 16)
    for _, p in module.named_parameters():
        assert p.dtype == np.float32 and np.all(np.abs(p.data) <= 0.5)
    gru = GRU(3, 2, rng=0)
    assert [n for n, _ in gru.named_parameters()] == ["Wx_l0", "Wh_l0", "bx_l0", "bh_l0"]
    same = LSTM(5, 4, num_layers=2, bidirectional=True, rng=0)
    np.testing.assert_array_equal(same.Wh_l1.data, module.Wh_l1.data)
    assert "bidirectional=True" in repr(module)


@pytest.mark.parametrize("name,kwargs", VARIANTS, ids=IDS)
def test_float32_in_float32_out(name, kwargs):
    module = CLASSES[name](3, 4, num_layers=2, bidirectional=True, rng=0, **kwargs)
    x = np.random.default_rng(11).standard_normal((2, 3, 3)).astype(np.float32)
    out, state = module(x, valid_lens=np.array([3, 1]))
    assert out.dtype == np.float32 and all(p.dtype == np.float32 for p in as_parts(state))
    dx, d0 = module.backward(np.ones_like(out))
    assert dx.dtype == np.float32 and all(p.dtype == np.float32 for p in as_parts(d0))
    assert all(p.grad.dtype == np.float32 for p in module.parameters())


def test_bad_inputs_name_the_argument():
    module = LSTM(3, 4, num_layers=2, rng=0, dtype=np.float64)
    x = np.zeros((2, 5, 3))
    state = (np.zeros((2, 2, 4)), np.zeros((2, 2, 4)))
    with pytest.raises(ValueError, match=r"x: expected a 3-d array"):
        module(x[0])
    with pytest.raises(ValueError, match=r"x: expected shape \(N, T, 3\)"):
        module(np.zeros((2, 5, 4)))
    with pytest.raises(TypeError, match="x: expected dtype float64"):
        module(x.astype(np.float32))
    with pytest.raises(TypeError, match=r"state: expected a tuple \(h, c\)"):
        module(x, state[0])
    with pytest.raises(ValueError, match=r"state\[1\]: expected shape \(2, 2, 4\)"):
        module(x, (state[0], np.zeros((1, 2, 4))))
    with pytest.raises(ValueError, match="state: expected shape"):
        RNN(3, 4, rng=0, dtype=np.float64)(x, np.zeros((2, 2, 4)))
    with pytest.raises(ValueError, match="valid_lens: expected shape"):
        module(x, valid_lens=np.array([1, 2, 3]))
    with pytest.raises(IndexError, match="valid_lens: expected lengths in"):
        module(x, valid_lens=np.array([6, 2]))
    with pytest.raises(TypeError, match="valid_lens: expected an integer array"):
        module(x, valid_lens=np.array([1.0, 2.0]))
    out, _ = module(x)
    with pytest.raises(ValueError, match="doutputs: expected shape"):
        module.backward(out[:, :2])
    module(x)
    with pytest.raises(ValueError, match=r"dstate\[0\]: expected shape"):
        module.backward(out, (np.zeros((1, 2, 4)), None))
    with pytest.raises(ValueError, match="dropout: expected"):
        GRU(3, 4, dropout=1.0)
    with pytest.raises(ValueError, match="hidden_size: expected a positive int, got 0"):
        RNN(3, 0)
    with pytest.raises(TypeError, match="hidden_size: expected a positive int, got bool True"):
        GRU(3, True)  # a bool is no size, though Python counts it an int
    with pytest.raises(TypeError, match="num_layers: expected a positive int, got float 2.0"):
        RNN(3, 4, 2.0)
    for layer in (RNN(3, 4, rng=0, dtype=np.float64), GRU(3, 4, rng=0, dtype=np.float64), module):
        for empty in (np.zeros((0, 5, 3)), np.zeros((2, 0, 3))):
            with pytest.raises(ValueError, match=r"x: expected at least one sequence and one time step"):
                layer(empty)


# ------------------------------------------------------------------ PyTorch parity
def _torch_grads_as_ours(torch_module, module):
    """Map torch's parameter gradients to npseq names (the mapping of the class docstrings)."""
    H = module.hidden_size
    blocks = [0, 1, 3, 2] if isinstance(module, LSTM) else list(range(module._gates))
    rows = np.concatenate([np.arange(b * H, (b + 1) * H) for b in blocks])
    g = {n: p.grad.numpy() for n, p in torch_module.named_parameters()}
    ours = {}
    for layer in range(module.num_layers):
        for direction in range(module.num_directions):
            sfx = f"_l{layer}" + ("_reverse" if direction else "")
            ours["Wx" + sfx] = g["weight_ih" + sfx][rows].T
            ours["Wh" + sfx] = g["weight_hh" + sfx][rows].T
            if isinstance(module, GRU):
                ours["bx" + sfx], ours["bh" + sfx] = g["bias_ih" + sfx], g["bias_hh" + sfx]
            else:
                # b = b_ih + b_hh, so each torch bias has the gradient of b
                np.testing.assert_allclose(g["bias_ih" + sfx], g["bias_hh" + sfx], rtol=0, atol=1e-12)
                ours["b" + sfx] = g["bias_ih" + sfx][rows]
    return ours


@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
def test_torch_parity_two_layers_bidirectional_packed(name):
    torch = require("torch")
    nn = torch.nn
    N, T, D, H, L = 4, 6, 3, 5, 2
    torch.manual_seed(0)
    theirs = getattr(nn, name)(D, H, num_layers=L, bidirectional=True, batch_first=True).double()
    ours = CLASSES[name](D, H, num_layers=L, bidirectional=True, rng=0, dtype=np.float64,
                         **({"reset_after": True} if name == "GRU" else {}))
    from_torch_state_dict(ours, theirs.state_dict())

    rng = np.random.default_rng(12)
    lens = np.array([2, 6, 1, 4])
    x = rng.standard_normal((N, T, D))
    state = make_state(ours, N, rng)
    dout = rng.standard_normal((N, T, 2 * H))
    dstate = make_state(ours, N, rng)

    tx = torch.tensor(x, requires_grad=True)
    tstate = tuple(torch.tensor(p, requires_grad=True) for p in as_parts(state))
    packed = nn.utils.rnn.pack_padded_sequence(tx, torch.tensor(lens), batch_first=True, enforce_sorted=False)
    tout, tfinal = theirs(packed, tstate if name == "LSTM" else tstate[0])
    tout, _ = nn.utils.rnn.pad_packed_sequence(tout, batch_first=True, total_length=T)
    tfinal = tfinal if name == "LSTM" else (tfinal,)
    loss = (tout * torch.tensor(dout)).sum()
    for part, grad in zip(tfinal, as_parts(dstate)):
        loss = loss + (part * torch.tensor(grad)).sum()
    loss.backward()

    out, final = ours(x, state, lens)
    dx, d0 = ours.backward(dout, dstate)

    def close(a, b):
        assert np.abs(np.asarray(a) - np.asarray(b)).max() < 1e-10

    close(out, tout.detach().numpy())
    for a, b in zip(as_parts(final), tfinal):
        close(a, b.detach().numpy())
    close(dx, tx.grad.numpy())
    for a, b in zip(as_parts(d0), tstate):
        close(a, b.grad.numpy())
    expected = _torch_grads_as_ours(theirs, ours)
    assert set(expected) == {n for n, _ in ours.named_parameters()}
    for n, p in ours.named_parameters():
        close(p.grad, expected[n])


@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
def test_to_torch_state_dict_round_trip(name):
    torch = require("torch")
    ours = make(name, {"reset_after": True} if name == "GRU" else {})
    theirs = getattr(torch.nn, name)(3, 4, num_layers=2, bidirectional=True, batch_first=True).double()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in to_torch_state_dict(ours).items()})
    x = np.random.default_rng(13).standard_normal((2, 3, 3))
    with torch.no_grad():
        tout, _ = theirs(torch.tensor(x))
    with npseq.no_grad():
        out, _ = ours(x)
    assert np.abs(out - tout.numpy()).max() < 1e-12
    back = make(name, {"reset_after": True} if name == "GRU" else {}, seed=5)
    from_torch_state_dict(back, theirs.state_dict())
    for (n, a), (_, b) in zip(ours.named_parameters(), back.named_parameters()):
        np.testing.assert_allclose(a.data, b.data, rtol=0, atol=1e-15, err_msg=n)


def test_torch_mapping_needs_reset_after_gru():
    with pytest.raises(ValueError, match="reset_after=True"):
        to_torch_state_dict(GRU(3, 4, reset_after=False))
    with pytest.raises(KeyError, match="missing"):
        from_torch_state_dict(RNN(3, 4, num_layers=2), {"weight_ih_l0": np.zeros((4, 3))})
