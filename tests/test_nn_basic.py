"""Parameter, Module (cache stack, no_grad, modes, state dicts) and the Linear/ReLU/Embedding/Dropout modules."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import npseq
from npseq import nn
from npseq.gradcheck import check_module


class TwoLayer(nn.Module):
    """Linear -> Dropout -> Linear, enough to exercise nesting and ordering."""

    def __init__(self, rng=0, dtype=np.float64):
        super().__init__()
        rng = np.random.default_rng(rng)
        self.first = nn.Linear(3, 4, rng=rng, dtype=dtype)
        self.drop = nn.Dropout(0.5, rng=rng)
        self.second = nn.Linear(4, 2, rng=rng, dtype=dtype)

    def forward(self, x):
        return self.second(self.drop(self.first(x)))

    def backward(self, dy):
        return self.first.backward(self.drop.backward(self.second.backward(dy)))


# ------------------------------------------------------------- gradients
@given(shape=st.lists(st.integers(1, 3), min_size=0, max_size=2), d=st.integers(1, 4),
       m=st.integers(1, 3), bias=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_linear_gradients_any_leading_shape(shape, d, m, bias, seed):
    layer = nn.Linear(d, m, bias=bias, rng=seed, dtype=np.float64)
    x = np.random.default_rng(seed).standard_normal((*shape, d))
    report = check_module(layer, {"x": x}, seed=seed)
    assert report.ok, report
    assert layer.num_pending == 0


@given(n=st.integers(1, 3), t=st.integers(1, 4), v=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_embedding_gradient(n, t, v, seed):
    layer = nn.Embedding(v, 3, rng=seed, dtype=np.float64)
    ids = np.random.default_rng(seed).integers(0, v, size=(n, t))
    report = check_module(layer, {"x": ids})
    assert report.ok, report
    assert [row.name for row in report.rows] == ["W"]


def test_relu_module_in_a_two_layer_perceptron():
    class Perceptron(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden, self.act, self.out = nn.Linear(3, 5, rng=1, dtype=np.float64), nn.ReLU(), \
                nn.Linear(5, 1, rng=2, dtype=np.float64)

        def forward(self, x):
            return self.out(self.act(self.hidden(x)))

        def backward(self, dy):
            return self.hidden.backward(self.act.backward(self.out.backward(dy)))

    model = Perceptron()
    report = check_module(model, {"x": np.random.default_rng(3).standard_normal((6, 3))})
    assert report.ok, report
    assert [row.name for row in report.rows] == ["x", "hidden.W", "hidden.b", "out.W", "out.b"]
    assert model.act.num_pending == 0
    relu = nn.ReLU()
    relu(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"dy: expected shape \(2, 3\), got \(3, 2\)"):
        relu.backward(np.zeros((3, 2)))


def test_nested_module_gradients_in_eval_mode():
    model = TwoLayer().eval()
    report = check_module(model, {"x": np.random.default_rng(1).standard_normal((5, 3))})
    assert report.ok, report
    assert [row.name for row in report.rows] == ["x", "first.W", "first.b", "second.W", "second.b"]


def test_dropout_module_backward_uses_the_same_mask():
    drop = nn.Dropout(0.5, rng=4)
    x = np.ones((20, 30))
    y = drop(x)
    np.testing.assert_array_equal(drop.backward(np.ones_like(x)), y)
    drop.eval()
    assert drop(x) is x


# ----------------------------------------------------------- cache stack
def test_several_calls_then_backward_last_in_first_out():
    layer = nn.Linear(2, 2, rng=0, dtype=np.float64)
    a, b = np.ones((1, 2)), np.full((1, 2), 2.0)
    layer(a)
    layer(b)
    assert layer.num_pending == 2
    layer.backward(np.ones((1, 2)))
    np.testing.assert_array_equal(layer.W.grad, b.T @ np.ones((1, 2)))
    layer.backward(np.ones((1, 2)))
    np.testing.assert_array_equal(layer.W.grad, (a + b).T @ np.ones((1, 2)))


def test_backward_more_often_than_forward_is_a_clear_error():
    layer = nn.Linear(2, 2, rng=0)
    with pytest.raises(RuntimeError, match=r"Linear.backward: called more often than forward \(no cache left\)"):
        layer.backward(np.ones((1, 2), np.float32))


def test_no_grad_stores_nothing():
    model = TwoLayer()
    with npseq.no_grad():
        assert not npseq.is_grad_enabled()
        model(np.ones((2, 3)))
    assert npseq.is_grad_enabled()
    assert all(m.num_pending == 0 for m in model.modules())
    with pytest.raises(RuntimeError, match="no cache left"):
        model.backward(np.ones((2, 2)))


def test_clear_caches_drops_pending_calls_everywhere():
    model = TwoLayer()
    model(np.ones((2, 3)))
    model.clear_caches()
    assert all(m.num_pending == 0 for m in model.modules())


def test_two_training_rounds_in_a_row_accumulate_then_reset():
    rng = np.random.default_rng(5)
    model = TwoLayer()
    x, dy = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    for _ in range(2):
        model.zero_grad()
        model(x)
        model.backward(dy)
        first = [p.grad.copy() for p in model.parameters()]
        model(x)
        model.backward(dy)
        # Dropout draws a new mask each call, so the second call's gradient differs, but it adds.
        assert all(np.all(np.isfinite(p.grad)) for p in model.parameters())
        assert any(not np.array_equal(p.grad, g) for p, g in zip(model.parameters(), first))
        for p in model.parameters():
            p.data -= 0.1 * p.grad


# ------------------------------------------------------ tree and modes
def test_named_parameters_modes_and_zero_grad():
    model = TwoLayer()
    assert [name for name, _ in model.named_parameters()] == ["first.W", "first.b", "second.W", "second.b"]
    assert [p.shape for p in model.parameters()] == [(3, 4), (4,), (4, 2), (2,)]
    assert model.eval() is model and not model.drop.training
    model.train()
    assert all(m.training for m in model.modules())
    for p in model.parameters():
        p.grad += 1
    model.zero_grad()
    assert all(not p.grad.any() for p in model.parameters())
    assert "first): Linear(3, 4, bias=True)" in repr(model)


def test_same_seed_same_weights_and_dtype():
    a, b = TwoLayer(rng=7, dtype=np.float32), TwoLayer(rng=7, dtype=np.float32)
    for (_name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert p.dtype == np.float32
        np.testing.assert_array_equal(p.data, q.data)
    c = TwoLayer(rng=8)
    assert not np.array_equal(a.first.W.data, c.first.W.data)


def test_float32_through_a_training_step():
    model = TwoLayer(dtype=np.float32)
    y = model(np.ones((2, 3), np.float32))
    dx = model.backward(np.ones_like(y))
    assert y.dtype == dx.dtype == np.float32
    assert all(p.grad.dtype == np.float32 for p in model.parameters())


# ------------------------------------------------------------ state dict
def test_state_dict_round_trip_copies_in_place():
    source, target = TwoLayer(rng=1), TwoLayer(rng=2)
    state = source.state_dict()
    weights_before = target.first.W.data
    target.load_state_dict(state)
    assert target.first.W.data is weights_before  # loaded in place
    for (_, p), (_, q) in zip(source.named_parameters(), target.named_parameters()):
        np.testing.assert_array_equal(p.data, q.data)
    state["first.W"][...] = 0  # the state dict holds copies
    assert source.first.W.data.any()


def test_state_dict_with_missing_or_misshapen_entries():
    model = TwoLayer()
    state = model.state_dict()
    missing = dict(state)
    del missing["second.b"]
    with pytest.raises(KeyError, match=r"missing \['second.b'\], unexpected \[\]"):
        model.load_state_dict(missing)
    extra = dict(state, **{"third.W": np.zeros(2)})
    with pytest.raises(KeyError, match=r"missing \[\], unexpected \['third.W'\]"):
        model.load_state_dict(extra)
    model.load_state_dict(missing, strict=False)
    bad = dict(state, **{"first.W": np.zeros((4, 3))})
    before = model.first.b.data.copy()
    bad["first.b"] = before + 1
    with pytest.raises(ValueError, match=r"state\['first.W'\]: expected shape \(3, 4\), got \(4, 3\)"):
        model.load_state_dict(bad)
    np.testing.assert_array_equal(model.first.b.data, before)  # nothing written on error


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("call, error, message", [
    (lambda: nn.Linear(3, 2)(np.ones((2, 4), np.float32)), ValueError,
     r"x: expected shape \(\.\.\., 3\), got \(2, 4\)"),
    (lambda: nn.Linear(3, 2)(np.ones((2, 3), int)), TypeError, r"x: expected a floating-point array, got dtype int64"),
    (lambda: nn.Embedding(5, 2)(np.array([[1, 5]])), IndexError,
     r"x: expected token ids \(vocabulary of 5\) in \[0, 4\], got 5"),
    (lambda: nn.Embedding(5, 2)(np.array([[1.0]])), TypeError, r"x: expected an integer array, got dtype float64"),
    (lambda: nn.Dropout(1.5), ValueError, r"p: expected a drop probability in \[0, 1\), got 1.5"),
    (lambda: nn.Linear(3, 2, rng="seed"), TypeError,
     r"rng: expected a numpy.random.Generator, an int seed or None, got str"),
    (lambda: nn.Parameter(np.zeros(3, int)), TypeError, r"data: expected a floating-point array, got dtype int64"),
])
def test_bad_input_names_argument_expected_and_given(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_wrong_upstream_gradient_shape():
    layer = nn.Linear(3, 2)
    layer(np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match=r"dy: expected shape \(4, 2\), got \(4, 3\)"):
        layer.backward(np.ones((4, 3), np.float32))


def test_named_modules_gives_dotted_paths_depth_first():
    from npseq.models import build_seq2seq
    model = build_seq2seq(5, 6, embed_size=4, num_hiddens=3, num_layers=1, seed=0)
    paths = [path for path, _ in model.named_modules()]
    assert paths[0] == "" and "encoder." in paths and "encoder.rnn." in paths and "decoder.attention." in paths
    assert [module for _, module in model.named_modules()] == list(model.modules())
