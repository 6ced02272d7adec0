"""npseq.functional as a drop-in for the CS231n RNN assignment: a captioning model written the way
the assignment's own ``CaptioningRNN`` calls its layers (its loss and its ``sample()`` loop), run
on npseq's functions unchanged: float32 parameters, 1-d word ids in ``sample()``, and float64
``np.zeros`` for a state beside float32 weights (NumPy's promotion, as in the assignment)."""
import numpy as np
import pytest

from npseq.functional import (
    affine_backward,
    affine_forward,
    lstm_backward,
    lstm_forward,
    lstm_step_forward,
    rnn_backward,
    rnn_forward,
    rnn_step_forward,
    temporal_affine_backward,
    temporal_affine_forward,
    temporal_softmax_loss,
    word_embedding_backward,
    word_embedding_forward,
)
from npseq.gradcheck import gradient_error, numerical_gradient

NULL, START, END, VOCAB, FEATURES, WORDVEC, HIDDEN = 0, 1, 2, 9, 6, 5, 7


def make_params(cell, dtype, seed=0):
    rng = np.random.default_rng(seed)
    gates = 4 if cell == "lstm" else 1
    shapes = {"W_proj": (FEATURES, HIDDEN), "b_proj": (HIDDEN,), "W_embed": (VOCAB, WORDVEC),
              "Wx": (WORDVEC, gates * HIDDEN), "Wh": (HIDDEN, gates * HIDDEN), "b": (gates * HIDDEN,),
              "W_vocab": (HIDDEN, VOCAB), "b_vocab": (VOCAB,)}
    return {name: (0.3 * rng.standard_normal(shape)).astype(dtype) for name, shape in shapes.items()}


def captioning_loss(params, features, captions, cell):
    """The assignment's ``CaptioningRNN.loss``, step for step."""
    captions_in, captions_out = captions[:, :-1], captions[:, 1:]
    mask = captions_out != NULL
    h0, cache_proj = affine_forward(features, params["W_proj"], params["b_proj"])
    x, cache_embed = word_embedding_forward(captions_in, params["W_embed"])
    forward, backward = (lstm_forward, lstm_backward) if cell == "lstm" else (rnn_forward, rnn_backward)
    h, cache_rnn = forward(x, h0, params["Wx"], params["Wh"], params["b"])
    scores, cache_scores = temporal_affine_forward(h, params["W_vocab"], params["b_vocab"])
    loss, dscores = temporal_softmax_loss(scores, captions_out, mask, verbose=False)
    grads = {}
    dh, grads["W_vocab"], grads["b_vocab"] = temporal_affine_backward(dscores, cache_scores)
    dx, dh0, grads["Wx"], grads["Wh"], grads["b"] = backward(dh, cache_rnn)
    grads["W_embed"] = word_embedding_backward(dx, cache_embed)
    _, grads["W_proj"], grads["b_proj"] = affine_backward(dh0, cache_proj)
    return loss, grads


def sample(params, features, cell, max_length=6):
    """The assignment's ``CaptioningRNN.sample``: greedy, one word id per example at a time."""
    N = features.shape[0]
    captions = NULL * np.ones((N, max_length), dtype=np.int32)
    h, _ = affine_forward(features, params["W_proj"], params["b_proj"])
    c = np.zeros(h.shape)  # float64, beside float32 weights
    word = START * np.ones(N, dtype=np.int32)
    for t in range(max_length):
        x, _ = word_embedding_forward(word, params["W_embed"])  # 1-d ids: x is (N, W)
        if cell == "lstm":
            h, c, _ = lstm_step_forward(x, h, c, params["Wx"], params["Wh"], params["b"])
        else:
            h, _ = rnn_step_forward(x, h, params["Wx"], params["Wh"], params["b"])
        scores, _ = affine_forward(h, params["W_vocab"], params["b_vocab"])
        word = np.argmax(scores, axis=1)
        captions[:, t] = word
    return captions


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_the_assignments_sample_loop_runs_unchanged(cell):
    params = make_params(cell, np.float32)
    features = np.random.default_rng(1).standard_normal((4, FEATURES)).astype(np.float32)
    captions = sample(params, features, cell)
    assert captions.shape == (4, 6) and captions.dtype == np.int32
    assert captions.min() >= 0 and captions.max() < VOCAB
    # with a float64 starting state the whole step promotes to float64, as NumPy would
    x, _ = word_embedding_forward(np.full(4, START), params["W_embed"])
    h, _ = rnn_step_forward(x, np.zeros((4, HIDDEN)), *(params[k][:, :HIDDEN] if params[k].ndim == 2 else
                                                       params[k][:HIDDEN] for k in ("Wx", "Wh", "b")))
    assert x.shape == (4, WORDVEC) and h.dtype == np.float64


@pytest.mark.slow
@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_the_assignments_loss_and_its_gradients(cell):
    rng = np.random.default_rng(2)
    captions = rng.integers(3, VOCAB, size=(3, 6))
    captions[:, 0] = START
    captions[0, 4:] = NULL  # a shorter caption: masked out of the loss
    features = rng.standard_normal((3, FEATURES))
    params = make_params(cell, np.float64, seed=3)
    loss, grads = captioning_loss(params, features, captions, cell)
    assert np.isfinite(loss) and grads.keys() == params.keys()
    for name, value in params.items():
        def f(_, name=name):
            return captioning_loss(params, features, captions, cell)[0]
        numeric = numerical_gradient(f, value, h=1e-3, order=4)  # small gradients: a wide, high-order stencil
        assert gradient_error(grads[name], numeric).max() < 1e-7, name
    loss32, grads32 = captioning_loss(make_params(cell, np.float32, seed=3), features.astype(np.float32),
                                      captions, cell)
    assert abs(loss32 - loss) < 1e-4
    assert all(g.dtype == np.float32 for g in grads32.values())
