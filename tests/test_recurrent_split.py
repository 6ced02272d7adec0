"""Backward data / backward weights: the split pairs, and layers that defer their weight gradients."""
import numpy as np
import pytest

from npseq.functional import recurrent as R
from npseq.nn import GRU, LSTM, RNN

CELLS = {
    "rnn": (1, lambda x, h, p, lens: R.rnn_forward(x, h, *p, valid_lens=lens), R.rnn_backward,
            R.rnn_backward_data, R.rnn_backward_weights, 1),
    "gru": (3, lambda x, h, p, lens: R.gru_forward(x, h, *p, reset_after=False, valid_lens=lens), R.gru_backward,
            R.gru_backward_data, R.gru_backward_weights, 2),
    "gru_after": (3, lambda x, h, p, lens: R.gru_forward(x, h, *p, reset_after=True, valid_lens=lens),
                  R.gru_backward, R.gru_backward_data, R.gru_backward_weights, 2),
    "lstm": (4, lambda x, h, p, lens: R.lstm_seq_forward(x, h, h * 0.5, *p, valid_lens=lens), R.lstm_seq_backward,
             R.lstm_seq_backward_data, R.lstm_backward_weights, 1),
}


@pytest.mark.parametrize("cell", CELLS)
def test_weights_of_several_calls_are_the_sum_of_each_calls_weights(cell):
    gates, forward, backward, backward_data, backward_weights, num_biases = CELLS[cell]
    rng = np.random.default_rng(0)
    n, d, hidden = 3, 4, 5
    params = [rng.standard_normal((d, gates * hidden)), rng.standard_normal((hidden, gates * hidden))]
    params += [rng.standard_normal(gates * hidden) for _ in range(num_biases)]
    calls = []
    for t_steps, lens in ((4, np.array([4, 2, 0])), (1, None), (3, np.array([1, 3, 2]))):
        x = rng.standard_normal((n, t_steps, d))
        out, cache = forward(x, rng.standard_normal((n, hidden)), params, lens)
        calls.append((cache, rng.standard_normal(out.shape)))
    expected = None
    caches, preacts = [], []
    for cache, dh in calls:
        full = backward(dh, cache)
        weights = full[-(2 + num_biases):]
        expected = weights if expected is None else [a + b for a, b in zip(expected, weights)]
        data = backward_data(dh, cache)
        for got, want in zip(data[:-1], full):  # dx, dh0 (and dc0) agree with the composed backward
            np.testing.assert_array_equal(got, want)
        caches.append(cache)
        preacts.append(data[-1])
    for got, want in zip(backward_weights(caches, preacts), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_mismatched_call_lists_are_refused():
    rng = np.random.default_rng(1)
    _, cache = R.rnn_forward(rng.standard_normal((2, 3, 4)), np.zeros((2, 5)), rng.standard_normal((4, 5)),
                             rng.standard_normal((5, 5)), np.zeros(5))
    with pytest.raises(ValueError, match=r"dAs: expected one pre-activation gradient per cache \(1 caches\), got 0"):
        R.rnn_backward_weights([cache], [])


@pytest.mark.parametrize("layer_class", [RNN, GRU, LSTM])
def test_deferred_weight_gradients_equal_immediate_ones(layer_class):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5))
    douts = [rng.standard_normal((3, 4, 12)) for _ in range(3)]
    grads = []
    for deferred in (False, True):
        layer = layer_class(5, 6, num_layers=2, bidirectional=True, rng=0, dtype=np.float64)
        for _ in douts:
            layer(x, valid_lens=np.array([4, 1, 3]))
        dxs = []
        if deferred:
            with layer.deferred_weight_grads():
                dxs = [layer.backward(dout)[0] for dout in reversed(douts)]
                assert not layer.Wx_l0.grad.any()  # nothing added before the block ends
        else:
            dxs = [layer.backward(dout)[0] for dout in reversed(douts)]
        grads.append((dxs, [p.grad.copy() for p in layer.parameters()]))
    (dx_now, g_now), (dx_later, g_later) = grads
    for a, b in zip(dx_now, dx_later):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(g_now, g_later):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_deferral_cannot_nest_and_an_error_drops_the_pending_work():
    layer = GRU(2, 3, rng=0, dtype=np.float64)
    with layer.deferred_weight_grads():
        with pytest.raises(RuntimeError, match="already inside such a block"):
            with layer.deferred_weight_grads():
                pass
    layer(np.ones((1, 2, 2)))
    with pytest.raises(KeyError):
        with layer.deferred_weight_grads():
            layer.backward(np.ones((1, 2, 3)))
            raise KeyError("interrupted")
    assert not any(p.grad.any() for p in layer.parameters())
    layer(np.ones((1, 2, 2)))
    layer.backward(np.ones((1, 2, 3)))  # back to immediate mode
    assert layer.Wx_l0.grad.any()
