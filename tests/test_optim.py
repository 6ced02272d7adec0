"""Optimizers and gradient clipping: PyTorch parity, in-place updates, dtype, state dicts, errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optional_tools import require

from npseq import optim
from npseq.nn import Linear, Parameter

SHAPES = [(3, 4), (5,), (1, 1)]

# (npseq class, torch class name, keyword arguments shared by both)
CONFIGS = [
    (optim.SGD, "SGD", dict(lr=0.1)),
    (optim.SGD, "SGD", dict(lr=0.05, momentum=0.9)),
    (optim.SGD, "SGD", dict(lr=0.05, momentum=0.5, weight_decay=0.1)),
    (optim.Adagrad, "Adagrad", dict(lr=0.1)),
    (optim.Adagrad, "Adagrad", dict(lr=0.3, eps=1e-6, weight_decay=0.05)),
    (optim.Adam, "Adam", dict(lr=0.01)),
    (optim.Adam, "Adam", dict(lr=0.1, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
]
IDS = [f"{cls.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for cls, _, kw in CONFIGS]


def make_params(rng, dtype=np.float64, shapes=SHAPES):
    return [Parameter(rng.standard_normal(shape).astype(dtype)) for shape in shapes]


def set_grads(params, grads):
    for param, grad in zip(params, grads):
        param.grad[...] = grad


def random_grads(rng, params, dtype=np.float64):
    return [rng.standard_normal(param.shape).astype(dtype) for param in params]


@pytest.mark.slow
@pytest.mark.parametrize("cls, torch_name, kwargs", CONFIGS, ids=IDS)
def test_matches_torch_over_five_steps(cls, torch_name, kwargs):
    torch = require("torch")
    rng = np.random.default_rng(0)
    params = make_params(rng)
    tensors = [torch.tensor(p.data.copy(), requires_grad=True) for p in params]
    opt = cls(params, **kwargs)
    topt = getattr(torch.optim, torch_name)(tensors, **kwargs)
    for _ in range(5):
        grads = random_grads(rng, params)
        set_grads(params, grads)
        for tensor, grad in zip(tensors, grads):
            tensor.grad = torch.tensor(grad)
        opt.step()
        topt.step()
        for param, tensor in zip(params, tensors):
            assert np.abs(param.data - tensor.detach().numpy()).max() < 1e-12


@pytest.mark.parametrize("max_norm", [0.5, 3.0, 100.0])
def test_clip_grad_norm_matches_torch(max_norm):
    torch = require("torch")
    rng = np.random.default_rng(1)
    params = make_params(rng)
    grads = random_grads(rng, params)
    set_grads(params, grads)
    tensors = [torch.zeros(p.shape, dtype=torch.float64, requires_grad=True) for p in params]
    for tensor, grad in zip(tensors, grads):
        tensor.grad = torch.tensor(grad)
    norm = optim.clip_grad_norm(params, max_norm)
    torch_norm = torch.nn.utils.clip_grad_norm_(tensors, max_norm)
    assert isinstance(norm, float)
    assert abs(norm - float(torch_norm)) < 1e-12
    for param, tensor in zip(params, tensors):
        assert np.abs(param.grad - tensor.grad.numpy()).max() < 1e-12


def test_clip_grad_norm_rescales_to_max_norm_and_keeps_direction():
    rng = np.random.default_rng(2)
    params = make_params(rng)
    grads = [10 * g for g in random_grads(rng, params)]
    set_grads(params, grads)
    before = math.sqrt(sum(float((g ** 2).sum()) for g in grads))
    norm = optim.clip_grad_norm(params, 1.0)
    assert norm == pytest.approx(before, rel=1e-14)
    after = math.sqrt(sum(float((p.grad ** 2).sum()) for p in params))
    assert after == pytest.approx(1.0, abs=1e-5)
    for param, grad in zip(params, grads):
        np.testing.assert_allclose(param.grad, grad * (1.0 / (before + 1e-6)), rtol=1e-14)


def test_clip_grad_norm_below_threshold_and_inf_leave_grads_alone():
    rng = np.random.default_rng(3)
    params = make_params(rng)
    grads = random_grads(rng, params)
    set_grads(params, grads)
    assert optim.clip_grad_norm(params, 1e6) > 0
    assert optim.clip_grad_norm(params, float("inf")) > 0
    for param, grad in zip(params, grads):
        assert np.array_equal(param.grad, grad)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_clip_grad_norm_non_finite_raises_and_changes_nothing(bad):
    rng = np.random.default_rng(4)
    params = make_params(rng)
    grads = random_grads(rng, params)
    grads[1][2] = bad
    set_grads(params, grads)
    weights = [p.data.copy() for p in params]
    with pytest.raises(FloatingPointError, match=r"NaN or inf.*params\[1\]"):
        optim.clip_grad_norm(params, 1.0)
    for param, grad, weight in zip(params, grads, weights):
        np.testing.assert_array_equal(param.grad, grad)
        np.testing.assert_array_equal(param.data, weight)


def test_clip_grad_norm_float32_squares_overflow_is_not_an_error():
    # 1e20 is finite in float32 but its square is not: the norm must still be measured.
    param = Parameter(np.zeros(4, dtype=np.float32))
    param.grad[...] = np.float32(1e20)
    norm = optim.clip_grad_norm([param], 1.0)
    assert norm == pytest.approx(2e20, rel=1e-6)
    assert param.grad.dtype == np.float32
    assert float(np.sqrt((param.grad.astype(np.float64) ** 2).sum())) == pytest.approx(1.0, rel=1e-5)


@given(clip=st.floats(1e-3, 10.0), scale=st.floats(1e-3, 1e3), seed=st.integers(0, 2**31 - 1))
@settings(max_examples=30, deadline=None)
def test_clip_grad_value_clamps_in_place(clip, scale, seed):
    rng = np.random.default_rng(seed)
    params = make_params(rng)
    grads = [scale * g for g in random_grads(rng, params)]
    set_grads(params, grads)
    handles = [p.grad for p in params]
    optim.clip_grad_value(params, clip)
    for param, grad, handle in zip(params, grads, handles):
        assert param.grad is handle
        np.testing.assert_array_equal(param.grad, np.clip(grad, -clip, clip))


@pytest.mark.parametrize("cls, torch_name, kwargs", CONFIGS, ids=IDS)
def test_step_is_in_place_and_keeps_float32(cls, torch_name, kwargs):
    rng = np.random.default_rng(5)
    params = make_params(rng, dtype=np.float32)
    reference = make_params(np.random.default_rng(5), dtype=np.float64)
    handles = [p.data for p in params]
    opt = cls(params, **kwargs)
    ref_opt = cls(reference, **kwargs)
    for _ in range(2):  # two steps in a row
        grads = random_grads(rng, params)
        set_grads(params, [g.astype(np.float32) for g in grads])
        set_grads(reference, grads)
        opt.step()
        ref_opt.step()
    for param, handle, ref in zip(params, handles, reference):
        assert param.data is handle
        assert param.data.dtype == np.float32 and param.grad.dtype == np.float32
        np.testing.assert_allclose(param.data, ref.data, rtol=1e-4, atol=1e-5)
    for buffers in opt.state.values():
        assert all(buf.dtype == np.float32 for buf in buffers)


def test_buffers_are_preallocated_and_updated_in_place():
    rng = np.random.default_rng(6)
    params = make_params(rng)
    opt = optim.Adam(params)
    handles = {name: list(buffers) for name, buffers in opt.state.items()}
    assert all(not buf.any() for buffers in handles.values() for buf in buffers)
    set_grads(params, random_grads(rng, params))
    opt.step()
    for name, buffers in opt.state.items():
        assert all(buf is handle for buf, handle in zip(buffers, handles[name]))
    assert opt.step_count == 1


def test_zero_grad_and_two_rounds_through_a_module():
    rng = np.random.default_rng(7)
    layer = Linear(3, 2, rng=rng, dtype=np.float64)
    opt = optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    x = rng.standard_normal((4, 3))
    weights = layer.W.data
    for _ in range(2):
        opt.zero_grad()
        y = layer(x)
        layer.backward(y)  # gradient of 0.5 * ||y||^2
        expected_dW = x.T @ y
        np.testing.assert_allclose(layer.W.grad, expected_dW, rtol=1e-12)
        opt.step()
    assert layer.W.data is weights
    opt.zero_grad()
    assert not layer.W.grad.any() and not layer.b.grad.any()


def test_accepts_a_generator_of_parameters():
    rng = np.random.default_rng(8)
    layer = Linear(2, 2, rng=rng, dtype=np.float64)
    opt = optim.Adagrad(p for _, p in layer.named_parameters())
    assert len(opt.params) == 2


@pytest.mark.parametrize("cls, torch_name, kwargs", CONFIGS, ids=IDS)
def test_minimises_a_quadratic(cls, torch_name, kwargs):
    # f(p) = 0.5 * sum(a * (p - target)^2) with curvatures a in [0.5, 2].
    rng = np.random.default_rng(9)
    target = rng.standard_normal(6)
    curvature = rng.uniform(0.5, 2.0, 6)
    param = Parameter(np.zeros(6))
    kwargs = dict(kwargs, lr=0.5 if cls is optim.Adagrad else 0.05 if cls is optim.Adam else 0.1,
                  weight_decay=0.0)
    opt = cls([param], **kwargs)
    start = 0.5 * float((curvature * target ** 2).sum())
    for _ in range(500):
        opt.zero_grad()
        param.grad += curvature * (param.data - target)
        opt.step()
    loss = 0.5 * float((curvature * (param.data - target) ** 2).sum())
    assert loss < 1e-4 * start


@pytest.mark.parametrize("cls, torch_name, kwargs", CONFIGS, ids=IDS)
def test_state_dict_round_trip_continues_identically(cls, torch_name, kwargs):
    rng = np.random.default_rng(10)
    params = make_params(rng)
    opt = cls(params, **kwargs)
    grad_rng = np.random.default_rng(11)
    for _ in range(3):
        set_grads(params, random_grads(grad_rng, params))
        opt.step()
    state = opt.state_dict()
    # As if saved with numpy.savez and loaded back: scalars and tuples become arrays.
    state = {name: np.asarray(value) for name, value in state.items()}
    clones = [Parameter(p.data.copy()) for p in params]
    resumed = cls(clones, **dict(kwargs, lr=1.0))  # the saved lr must win
    resumed.load_state_dict(state)
    assert resumed.step_count == 3
    assert type(resumed.lr) is float and resumed.lr == kwargs["lr"]
    for _ in range(3):
        grads = random_grads(grad_rng, params)
        set_grads(params, grads)
        set_grads(clones, grads)
        opt.step()
        resumed.step()
    for param, clone in zip(params, clones):
        np.testing.assert_array_equal(param.data, clone.data)


def test_state_dict_holds_copies():
    rng = np.random.default_rng(12)
    params = make_params(rng)
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    set_grads(params, random_grads(rng, params))
    opt.step()
    state = opt.state_dict()
    assert state["step_count"] == 1 and state["momentum"] == 0.9
    assert state["momentum_buffer.0"] is not opt.state["momentum_buffer"][0]
    saved = state["momentum_buffer.0"].copy()
    opt.step()
    np.testing.assert_array_equal(state["momentum_buffer.0"], saved)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_in_pieces_equals_adam_on_whole_tensors(dtype, monkeypatch):
    # Pieces of 1000 elements: a (70, 50) weight spans four, the last one short; the (5,)
    # bias fits in one. Elementwise arithmetic does not care how the array is cut, so the
    # two runs must agree bit for bit.
    rng = np.random.default_rng(21)
    shapes = [(70, 50), (5,)]
    start = make_params(rng, dtype, shapes)
    grads = [random_grads(rng, start, dtype) for _ in range(3)]
    results = []
    for piece in (1000, 10**9):
        monkeypatch.setattr(optim, "ADAM_PIECE", piece)
        params = [Parameter(p.data.copy()) for p in start]
        opt = optim.Adam(params, lr=0.1, weight_decay=0.01)
        for step_grads in grads:
            set_grads(params, step_grads)
            opt.step()
        results.append([p.data for p in params] + opt.state["exp_avg"] + opt.state["exp_avg_sq"])
    for cut, whole in zip(*results):
        assert cut.dtype == dtype
        np.testing.assert_array_equal(cut, whole)
    assert not np.array_equal(results[0][0], start[0].data)


def test_load_state_dict_rejects_mismatches_and_changes_nothing():
    rng = np.random.default_rng(13)
    params = make_params(rng)
    opt = optim.Adam(params)
    set_grads(params, random_grads(rng, params))
    opt.step()
    good = opt.state_dict()
    fresh = optim.Adam(make_params(rng))
    with pytest.raises(KeyError, match="exp_avg.2"):
        fresh.load_state_dict({k: v for k, v in good.items() if k != "exp_avg.2"})
    with pytest.raises(KeyError, match="momentum_buffer"):
        optim.SGD(params, lr=0.1, momentum=0.9).load_state_dict(good)
    with pytest.raises(ValueError, match=r"exp_avg_sq.1.*\(5,\)"):
        fresh.load_state_dict(dict(good, **{"exp_avg_sq.1": np.zeros(4)}))
    with pytest.raises(ValueError, match="betas"):
        fresh.load_state_dict(dict(good, betas=(0.9, 1.5)))
    with pytest.raises(ValueError, match="step_count"):
        fresh.load_state_dict(dict(good, step_count=-1))
    with pytest.raises(KeyError, match="momentum_buffer"):
        optim.SGD(params, lr=0.1, momentum=0.9).load_state_dict(optim.SGD(params, lr=0.1).state_dict())
    assert fresh.step_count == 0 and fresh.betas == (0.9, 0.999)
    assert all(not buf.any() for buffers in fresh.state.values() for buf in buffers)


@pytest.mark.parametrize("make, match", [
    (lambda p: optim.SGD([], lr=0.1), "empty"),
    (lambda p: optim.SGD(p[0], lr=0.1), "single Parameter"),
    (lambda p: optim.SGD(Linear(2, 2), lr=0.1), r"module\.parameters\(\)"),
    (lambda p: optim.SGD([p[0], np.zeros(3)], lr=0.1), r"params\[1\].*ndarray"),
    (lambda p: optim.SGD([p[0], p[1], p[0]], lr=0.1), r"params\[2\].*params\[0\]"),
    (lambda p: optim.SGD(p, lr=0.0), "lr"),
    (lambda p: optim.SGD(p, lr=-1.0), "lr"),
    (lambda p: optim.SGD(p, lr=float("nan")), "lr"),
    (lambda p: optim.SGD(p, lr="fast"), "lr"),
    (lambda p: optim.SGD(p, lr=0.1, momentum=-0.1), "momentum"),
    (lambda p: optim.SGD(p, lr=0.1, weight_decay=-1), "weight_decay"),
    (lambda p: optim.Adagrad(p, eps=0.0), "eps"),
    (lambda p: optim.Adam(p, betas=(0.9, 1.0)), r"betas\[1\]"),
    (lambda p: optim.Adam(p, betas=(-0.1, 0.9)), r"betas\[0\]"),
    (lambda p: optim.Adam(p, betas=0.9), "betas"),
    (lambda p: optim.clip_grad_norm(p, 0.0), "max_norm"),
    (lambda p: optim.clip_grad_value(p, -1.0), "clip"),
    (lambda p: optim.clip_grad_value(p, float("inf")), "clip"),
])
def test_bad_arguments_raise_clear_errors(make, match):
    params = make_params(np.random.default_rng(14))
    with pytest.raises((TypeError, ValueError), match=match):
        make(params)


def test_hyperparameters_are_python_floats():
    params = make_params(np.random.default_rng(15), dtype=np.float32)
    opt = optim.Adam(params, lr=np.float64(0.01), betas=(np.float64(0.9), 0.99))
    assert type(opt.lr) is float and all(type(b) is float for b in opt.betas)
    set_grads(params, random_grads(np.random.default_rng(16), params, np.float32))
    opt.step()
    assert all(p.data.dtype == np.float32 for p in params)
