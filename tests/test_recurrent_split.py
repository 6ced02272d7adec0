"""Backward data / backward weights: the split pairs, and layers that defer their weight gradients."""
import numpy as np
import pytest

from npseq.functional import fast_recurrent as S
from npseq.functional import recurrent as R
from npseq.nn import GRU, LSTM, RNN


def _rnn(x, h, p, lens, dh):
    _, cache = S.rnn_sequence_forward(x, h, *p, S.sequence_padding(lens, x.shape[1], x))
    data = S.rnn_sequence_backward_data(dh, cache)
    return cache, data.dA, R.rnn_backward(dh, R.rnn_forward(x, h, *p, lens)[1])


def _gru(reset_after):
    def run(x, h, p, lens, dh):
        _, cache = S.gru_sequence_forward(x, h, *p, reset_after, S.sequence_padding(lens, x.shape[1], x))
        data = S.gru_sequence_backward_data(dh, cache)
        return cache, data.preact, R.gru_backward(dh, R.gru_forward(x, h, *p, reset_after, lens)[1])
    return run


def _lstm(x, h, p, lens, dh):
    _, cache = S.lstm_sequence_forward(x, h, np.zeros_like(h), *p, S.sequence_padding(lens, x.shape[1], x))
    data = S.lstm_sequence_backward_data(dh, cache)
    return cache, data.dA, R.lstm_backward(dh, R.lstm_forward(x, h, *p, lens)[1])


# cell: (gates, one call's (cache, pre-activation grads, reference grads), backward weights, biases)
CELLS = {
    "rnn": (1, _rnn, S.rnn_sequence_backward_weights, 1),
    "gru": (3, _gru(False), S.gru_sequence_backward_weights, 2),
    "gru_after": (3, _gru(True), S.gru_sequence_backward_weights, 2),
    "lstm": (4, _lstm, S.lstm_sequence_backward_weights, 1),
}


@pytest.mark.parametrize("cell", CELLS)
def test_weights_of_several_calls_are_the_sum_of_each_calls_weights(cell):
    gates, run, backward_weights, num_biases = CELLS[cell]
    rng = np.random.default_rng(0)
    n, d, hidden = 3, 4, 5
    params = [rng.standard_normal((d, gates * hidden)), rng.standard_normal((hidden, gates * hidden))]
    params += [rng.standard_normal(gates * hidden) for _ in range(num_biases)]
    expected, caches, preacts = None, [], []
    for t_steps, lens in ((4, np.array([4, 2, 0])), (1, None), (3, np.array([1, 3, 2]))):
        x = rng.standard_normal((n, t_steps, d))
        dh = rng.standard_normal((n, t_steps, hidden))
        cache, preact, reference = run(x, rng.standard_normal((n, hidden)), params, lens, dh)
        weights = reference[-(2 + num_biases):]
        expected = weights if expected is None else [a + b for a, b in zip(expected, weights)]
        caches.append(cache)
        preacts.append(preact)
    for got, want in zip(backward_weights(caches, preacts), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_mismatched_call_lists_are_refused():
    rng = np.random.default_rng(1)
    _, cache = S.rnn_sequence_forward(rng.standard_normal((2, 3, 4)), np.zeros((2, 5)), rng.standard_normal((4, 5)),
                                      rng.standard_normal((5, 5)), np.zeros(5))
    with pytest.raises(ValueError, match=r"dAs: expected one pre-activation gradient per cache \(1 caches\), got 0"):
        S.rnn_sequence_backward_weights([cache], [])


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
