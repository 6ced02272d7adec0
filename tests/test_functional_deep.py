"""Tests of npseq.functional.deep, the stacked and bidirectional layers wired from the reference cells: finite
differences in float64, parity with npseq.nn's layers (which run the fast twins) and with torch.nn.GRU, edge
shapes drawn by hypothesis, and the argument checks."""
import ast
import copy
import inspect
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from optional_tools import require

from npseq._checks import is_check_statement
from npseq.errors import InvalidTypeError, InvalidValueError
from npseq.functional import (
    BidirectionalCache,
    StackedCache,
    bidirectional_backward,
    bidirectional_forward,
    deep,
    gru_forward,
    reverse_sequences,
    stacked_backward,
    stacked_forward,
)
from npseq.gradcheck import check_function
from npseq.nn import GRU, LSTM, RNN
from npseq.nn.recurrent import from_torch_state_dict

VARIANTS = [("rnn", False), ("gru", False), ("gru", True), ("lstm", False)]  # (cell, reset_after)
IDS = ["rnn", "gru", "gru-reset-after", "lstm"]
LAYERS = {"rnn": RNN, "gru": GRU, "lstm": LSTM}
GATES = {"rnn": 1, "gru": 3, "lstm": 4}
BIASES = {"rnn": ("b",), "gru": ("bx", "bh"), "lstm": ("b",)}
TOL = dict(rtol=1e-12, atol=1e-12)
LENS = np.array([3, 0, 1, 4])  # T = 4: a padded row, an empty one, a single step and a full one


def weight_names(cell, num_layers, directions):
    """npseq.nn's parameter names, grouped as ``params`` is: ``(Wx, Wh, *biases)`` per layer and direction."""
    return [tuple(f"{weight}_l{layer}" + ("_reverse" if direction else "") for weight in ("Wx", "Wh", *BIASES[cell]))
            for layer in range(num_layers) for direction in range(directions)]


def random_params(cell, D, H, num_layers, directions, rng, scale=0.5):
    """``params`` for :func:`stacked_forward`: weights small enough that no gate saturates."""
    width = GATES[cell] * H
    params = []
    for layer in range(num_layers):
        inputs = D if layer == 0 else directions * H
        for _ in range(directions):
            params.append((scale * rng.standard_normal((inputs, width)), scale * rng.standard_normal((H, width)),
                           *(scale * rng.standard_normal(width) for _ in BIASES[cell])))
    return params


def nn_layer(cell, reset_after, D, H, num_layers, bidirectional, dropout=0.0, seed=0):
    extra = {"reset_after": reset_after} if cell == "gru" else {}
    return LAYERS[cell](D, H, num_layers=num_layers, bidirectional=bidirectional, dropout=dropout, rng=seed,
                        dtype=np.float64, **extra)


def params_of(layer, cell):
    return [tuple(getattr(layer, name).data for name in names)
            for names in weight_names(cell, layer.num_layers, layer.num_directions)]


# ------------------------------------------------------------------ finite differences
def _gradcheck(cell, reset_after, lens, *, stacked, bidirectional=True, dropout=0.0, seed=0):
    """``check_function`` on a 2-layer stack (``stacked``) or one bidirectional layer, with upstream gradients
    on the outputs and on every final state; ``params`` travel flattened, one input per weight."""
    N, T, D, H = 4, 4, 3, 2
    directions = 2 if bidirectional else 1
    num_layers = 2 if stacked else 1
    rng = np.random.default_rng(seed)
    params = random_params(cell, D, H, num_layers, directions, rng)
    inputs = {"x": rng.standard_normal((N, T, D)), "h0": 0.5 * rng.standard_normal((num_layers * directions, N, H))}
    names = weight_names(cell, num_layers, directions)
    for group, weights in zip(names, params):
        inputs.update(zip(group, weights))
    sizes = [len(group) for group in names]

    def forward(x, h0, *flat):
        grouped, start = [], 0
        for size in sizes:
            grouped.append(flat[start:start + size])
            start += size
        if stacked:  # a fresh generator each call: the same dropout masks at every finite difference
            y, cache = stacked_forward(x, h0, grouped, cell, lens, bidirectional=bidirectional,
                                       reset_after=reset_after, dropout=dropout, rng=np.random.default_rng(7))
        else:
            y, cache = bidirectional_forward(x, h0, grouped, cell, lens, reset_after=reset_after)
        return (y, cache.h_last, cache.c_last, cache) if cell == "lstm" else (y, cache.h_last, cache)

    def backward(dy, dh_last, *rest):
        dc_last, cache = rest if cell == "lstm" else (None, rest[0])
        grads = (stacked_backward if stacked else bidirectional_backward)(dy, cache, dh_last, dc_last)
        return (grads.dx, grads.dh0, *(grad for group in grads.dparams for grad in group))

    return check_function(forward, backward, inputs)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["one-direction", "bidirectional"])
@pytest.mark.parametrize("lens", [None, LENS], ids=["full", "padded"])
@pytest.mark.parametrize("cell,reset_after", VARIANTS, ids=IDS)
def test_stacked_backward_agrees_with_finite_differences(cell, reset_after, lens, bidirectional):
    report = _gradcheck(cell, reset_after, lens, stacked=True, bidirectional=bidirectional)
    assert report.ok, report


@pytest.mark.parametrize("lens", [None, LENS], ids=["full", "padded"])
@pytest.mark.parametrize("cell,reset_after", VARIANTS, ids=IDS)
def test_bidirectional_backward_agrees_with_finite_differences(cell, reset_after, lens):
    report = _gradcheck(cell, reset_after, lens, stacked=False)
    assert report.ok, report


@pytest.mark.parametrize("cell,reset_after", [("gru", True), ("lstm", False)], ids=["gru-reset-after", "lstm"])
def test_stacked_backward_with_dropout_between_layers_agrees_with_finite_differences(cell, reset_after):
    report = _gradcheck(cell, reset_after, LENS, stacked=True, dropout=0.4, seed=3)
    assert report.ok, report


# ------------------------------------------------------------------ parity with npseq.nn and torch
def _run_both(cell, reset_after, num_layers, bidirectional, N, T, D, H, lens, dropout, seed):
    """The same problem through an npseq.nn layer (in training mode) and through the functional pair, from the
    same weights, initial state and dropout generator: ``(nn's results, the functional ones)``."""
    rng = np.random.default_rng(seed)
    layer = nn_layer(cell, reset_after, D, H, num_layers, bidirectional, dropout, seed)
    for _, param in layer.named_parameters():
        param.data[...] = 0.5 * rng.standard_normal(param.shape)
    rows = num_layers * layer.num_directions
    x, h0 = rng.standard_normal((N, T, D)), 0.5 * rng.standard_normal((rows, N, H))
    dy = rng.standard_normal((N, T, layer.num_directions * H))
    dh_last, dc_last = rng.standard_normal((rows, N, H)), rng.standard_normal((rows, N, H))
    masks = copy.deepcopy(layer.dropout_rng)  # nn draws its masks from it in the same order, bottom layer first

    y, cache = stacked_forward(x, h0, params_of(layer, cell), cell, lens, bidirectional=bidirectional,
                               reset_after=reset_after, dropout=dropout, rng=masks)
    grads = stacked_backward(dy, cache, dh_last, dc_last if cell == "lstm" else None)
    if cell == "lstm":
        out, (h_n, c_n) = layer(x, (h0, np.zeros_like(h0)), valid_lens=lens)
        dx, (dh0, _) = layer.backward(dy, (dh_last, dc_last))
    else:
        (out, h_n), c_n = layer(x, h0, valid_lens=lens), None
        dx, dh0 = layer.backward(dy, dh_last)
    names = weight_names(cell, num_layers, layer.num_directions)
    theirs = {"y": out, "h_last": h_n, "c_last": c_n, "dx": dx, "dh0": dh0,
              **{name: getattr(layer, name).grad for group in names for name in group}}
    ours = {"y": y, "h_last": cache.h_last, "c_last": cache.c_last, "dx": grads.dx, "dh0": grads.dh0,
            **{name: grad for group, grad_group in zip(names, grads.dparams) for name, grad in zip(group, grad_group)}}
    return theirs, ours


def _assert_same(theirs, ours):
    assert theirs.keys() == ours.keys()
    for name, want in theirs.items():
        if want is None:
            assert ours[name] is None, name
        else:
            np.testing.assert_allclose(ours[name], want, **TOL, err_msg=name)


@pytest.mark.parametrize("dropout", [0.0, 0.3], ids=["no-dropout", "dropout"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["one-direction", "bidirectional"])
@pytest.mark.parametrize("cell,reset_after", VARIANTS, ids=IDS)
def test_two_layers_equal_npseq_nn(cell, reset_after, bidirectional, dropout):
    _assert_same(*_run_both(cell, reset_after, 2, bidirectional, 4, 4, 3, 5, LENS, dropout, seed=1))


@pytest.mark.parametrize("cell,reset_after", VARIANTS, ids=IDS)
def test_bidirectional_layer_equals_npseq_nn(cell, reset_after):
    rng = np.random.default_rng(2)
    layer = nn_layer(cell, reset_after, 3, 4, 1, True, seed=2)
    x, h0, dy = rng.standard_normal((4, 4, 3)), rng.standard_normal((2, 4, 4)), rng.standard_normal((4, 4, 8))
    y, cache = bidirectional_forward(x, h0, params_of(layer, cell), cell, LENS, reset_after=reset_after)
    grads = bidirectional_backward(dy, cache)
    out, final = layer(x, (h0, np.zeros_like(h0)) if cell == "lstm" else h0, valid_lens=LENS)
    dx, dstate0 = layer.backward(dy)
    np.testing.assert_allclose(y, out, **TOL)
    np.testing.assert_allclose(cache.h_last, final[0] if cell == "lstm" else final, **TOL)
    np.testing.assert_allclose(grads.dx, dx, **TOL)
    np.testing.assert_allclose(grads.dh0, dstate0[0] if cell == "lstm" else dstate0, **TOL)
    for group, grad_group in zip(weight_names(cell, 1, 2), grads.dparams):
        for name, grad in zip(group, grad_group):
            np.testing.assert_allclose(grad, getattr(layer, name).grad, **TOL, err_msg=name)


@st.composite
def problems(draw):
    cell, reset_after = draw(st.sampled_from(VARIANTS))
    N, T = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    lens = np.array(draw(st.lists(st.integers(0, T), min_size=N, max_size=N))) if draw(st.booleans()) else None
    return (cell, reset_after, draw(st.integers(1, 3)), draw(st.booleans()), N, T, draw(st.integers(1, 3)),
            draw(st.integers(1, 3)), lens, draw(st.sampled_from([0.0, 0.5])), draw(st.integers(0, 2**16)))


@given(problems())
def test_edge_shapes_equal_npseq_nn(problem):
    """N, T, D, H down to 1, rows of length 0 and T, one to three layers, with and without dropout."""
    _assert_same(*_run_both(*problem))


def test_two_layer_bidirectional_gru_equals_torch():
    torch = require("torch")
    N, T, D, H = 4, 6, 3, 5
    lens = np.array([2, 6, 1, 4])  # packed sequences need lengths >= 1
    torch.manual_seed(0)
    theirs = torch.nn.GRU(D, H, num_layers=2, bidirectional=True, batch_first=True).double()
    layer = nn_layer("gru", True, D, H, 2, True)
    from_torch_state_dict(layer, theirs.state_dict())
    rng = np.random.default_rng(4)
    x, h0 = rng.standard_normal((N, T, D)), 0.5 * rng.standard_normal((4, N, H))
    dy, dh_last = rng.standard_normal((N, T, 2 * H)), rng.standard_normal((4, N, H))

    y, cache = stacked_forward(x, h0, params_of(layer, "gru"), "gru", lens, bidirectional=True, reset_after=True)
    grads = stacked_backward(dy, cache, dh_last)

    tx, th0 = torch.tensor(x, requires_grad=True), torch.tensor(h0, requires_grad=True)
    packed = torch.nn.utils.rnn.pack_padded_sequence(tx, torch.tensor(lens), batch_first=True, enforce_sorted=False)
    tout, h_n = theirs(packed, th0)
    tout, _ = torch.nn.utils.rnn.pad_packed_sequence(tout, batch_first=True, total_length=T)
    ((tout * torch.tensor(dy)).sum() + (h_n * torch.tensor(dh_last)).sum()).backward()

    def close(a, b):
        assert np.abs(np.asarray(a) - b.detach().numpy()).max() < 1e-10

    close(y, tout)
    close(cache.h_last, h_n)
    close(grads.dx, tx.grad)
    close(grads.dh0, th0.grad)
    torch_grads = dict(theirs.named_parameters())
    for names, (dWx, dWh, dbx, dbh) in zip(weight_names("gru", 2, 2), grads.dparams):
        suffix = names[0][2:]  # "_l0", "_l0_reverse", ...
        close(dWx.T, torch_grads["weight_ih" + suffix].grad)
        close(dWh.T, torch_grads["weight_hh" + suffix].grad)
        close(dbx, torch_grads["bias_ih" + suffix].grad)
        close(dbh, torch_grads["bias_hh" + suffix].grad)


# ------------------------------------------------------------------ what the wiring does
def test_reverse_sequences_reverses_within_each_length_and_is_its_own_inverse():
    a = np.arange(2 * 5, dtype=np.float64).reshape(2, 5, 1)
    lens = np.array([3, 0])
    reversed_ = reverse_sequences(a, lens)
    np.testing.assert_array_equal(reversed_[0, :, 0], [2, 1, 0, 3, 4])  # the padding stays where it was
    np.testing.assert_array_equal(reversed_[1], a[1])
    np.testing.assert_array_equal(reverse_sequences(reversed_, lens), a)
    np.testing.assert_array_equal(reverse_sequences(a), a[:, ::-1])
    np.testing.assert_array_equal(reverse_sequences(np.array([[1, 2, 3]]), np.array([2])), [[2, 1, 3]])  # token ids
    with pytest.raises(InvalidValueError, match=r"a: expected an array \(N, T, ...\) with a time axis, got shape"):
        reverse_sequences(np.arange(3.0))


def test_the_reverse_direction_starts_at_each_sequences_own_last_step():
    """Its half of the outputs is a plain run over each row's valid steps read backwards, zero on the padding,
    and its final state the one after reading the first step."""
    rng = np.random.default_rng(5)
    x, params = rng.standard_normal((3, 5, 2)), random_params("gru", 2, 3, 1, 2, rng)
    lens = np.array([5, 2, 0])
    y, cache = bidirectional_forward(x, None, params, "gru", lens)
    assert isinstance(cache, BidirectionalCache) and y.shape == (3, 5, 6) and cache.c_last is None
    for n, length in enumerate(lens):
        if length == 0:
            np.testing.assert_array_equal(y[n], 0.0)
            continue
        alone, alone_cache = gru_forward(x[n:n + 1, :length][:, ::-1], np.zeros((1, 3)), *params[1])
        np.testing.assert_allclose(y[n, :length, 3:], alone[0, ::-1], **TOL)
        np.testing.assert_allclose(cache.h_last[1, n], alone_cache.h_last[0], **TOL)
        np.testing.assert_array_equal(y[n, length:], 0.0)


def test_one_layer_one_direction_is_the_cells_own_sequence_function():
    rng = np.random.default_rng(6)
    x, params = rng.standard_normal((2, 3, 4)), random_params("gru", 4, 3, 1, 1, rng)
    h0 = rng.standard_normal((1, 2, 3))
    y, cache = stacked_forward(x, h0, params, "gru", reset_after=True)
    alone, alone_cache = gru_forward(x, h0[0], *params[0], reset_after=True)
    assert isinstance(cache, StackedCache) and cache.dropouts == []
    np.testing.assert_array_equal(y, alone)
    np.testing.assert_array_equal(cache.h_last[0], alone_cache.h_last)


def test_dropout_draws_masks_between_layers_only_and_zero_dropout_draws_nothing():
    rng = np.random.default_rng(7)
    x, params = rng.standard_normal((2, 3, 4)), random_params("rnn", 4, 5, 3, 1, rng)
    masks = np.random.default_rng(8)
    _, cache = stacked_forward(x, None, params, "rnn", dropout=0.5, rng=masks)
    assert [m.mask.shape for m in cache.dropouts] == [(2, 3, 5), (2, 3, 5)]
    assert set(np.unique(cache.dropouts[0].mask)) <= {0.0, 2.0}
    untouched = copy.deepcopy(masks)
    _, cache = stacked_forward(x, None, params, "rnn", rng=masks)
    assert all(m.mask is None for m in cache.dropouts) and masks.random() == untouched.random()


# ------------------------------------------------------------------ argument checks
def _arguments():
    rng = np.random.default_rng(9)
    return rng.standard_normal((2, 3, 4)), random_params("gru", 4, 5, 2, 2, rng)


@pytest.mark.parametrize("change,message", [
    (dict(cell="tanh"), r"cell: expected one of \('rnn', 'gru', 'lstm'\), got 'tanh'"),
    (dict(cell="rnn"), r"params\[0\]: expected a tuple \('Wx', 'Wh', 'b'\) for cell='rnn', got 4 arrays"),
    (dict(reset_after=True, cell="lstm"), r"reset_after: expected a bool, True for the GRU only"),
    (dict(drop_last=True), r"params: expected .*a multiple of 2 \(one per layer and direction\).*got 3 entries"),
    (dict(bidirectional=False), r"params\[1\] Wx \(layer 1\): expected shape \(5, 15\), got \(4, 15\)"),
    (dict(h0=np.zeros((2, 2, 5))), r"h0: expected shape \(4, 2, 5\), got \(2, 2, 5\)"),
    (dict(valid_lens=np.array([1, 4])), r"valid_lens: expected lengths in \[0, 3\], got 4"),
    (dict(dropout=0.5), r"rng: expected a random Generator"),
    (dict(dropout=0.5, rng=3), r"rng: expected a numpy.random.Generator to draw the dropout masks, got int"),
    (dict(dropout=1.0, rng=np.random.default_rng(0)), r"dropout: expected a drop probability in \[0, 1\)"),
])
def test_stacked_forward_names_the_wrong_argument(change, message):
    x, params = _arguments()
    arguments = dict(x=x, h0=None, params=params, cell="gru", valid_lens=None, bidirectional=True)
    if change.pop("drop_last", False):
        arguments["params"] = params[:3]
    arguments.update(change)
    with pytest.raises((InvalidValueError, InvalidTypeError, IndexError), match=message):
        stacked_forward(**arguments)


def test_the_backwards_name_the_wrong_upstream_gradient():
    x, params = _arguments()
    _, cache = stacked_forward(x, None, params, "gru", bidirectional=True)
    with pytest.raises(InvalidValueError, match=r"dy: expected shape \(2, 3, 10\), got \(2, 3, 5\)"):
        stacked_backward(np.zeros((2, 3, 5)), cache)
    with pytest.raises(InvalidValueError, match=r"dh_last: expected shape \(4, 2, 5\), got \(2, 2, 5\)"):
        stacked_backward(np.zeros((2, 3, 10)), cache, np.zeros((2, 2, 5)))
    with pytest.raises(InvalidValueError, match=r"dc_last: expected None: cell='gru' has no memory state c"):
        stacked_backward(np.zeros((2, 3, 10)), cache, None, np.zeros((4, 2, 5)))
    _, layer_cache = bidirectional_forward(x, None, params[:2], "gru")
    with pytest.raises(InvalidValueError, match=r"dy: expected shape \(2, 3, 10\), got \(2, 3, 4\)"):
        bidirectional_backward(np.zeros((2, 3, 4)), layer_cache)
    with pytest.raises(InvalidTypeError, match=r"cache: expected a StackedCache .*, got BidirectionalCache"):
        stacked_backward(np.zeros((2, 3, 10)), layer_cache)
    with pytest.raises(InvalidValueError, match=r"params: expected 2 tuples"):
        bidirectional_forward(x, None, params, "gru")


def test_every_function_checks_its_arguments_in_one_call_at_its_top():
    """As every functional reference does: the body past the docstring is the maths."""
    for name in deep.__all__:
        function = getattr(deep, name)
        if not inspect.isfunction(function):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0].body[1:]  # past the docstring
        checks = [index for index, statement in enumerate(body)
                  if is_check_statement(statement) and not isinstance(statement, ast.Assign)]
        assert checks == [0], (name, [ast.unparse(body[i]) for i in checks])
