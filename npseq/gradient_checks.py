"""The registered gradient checks: every backward in npseq against finite differences.

``npseq gradcheck`` runs them all and prints one report table per check. Each check
builds small float64 inputs from a fixed seed, so a run is reproducible and a
failure points at one tensor and one element. The inputs are drawn on the host and
placed on the current backend, so ``NPSEQ_BACKEND=cupy npseq gradcheck`` checks the
GPU path with the same numbers (the comparison itself runs on the host).
"""
from __future__ import annotations

from typing import Callable

from . import backend, nn
from . import functional as F
from .errors import InvalidValueError
from .gradcheck import GradCheckReport, check_function, check_module
from .models import build_seq2seq

REGISTRY: dict = {}


def register(name: str):
    """Add a check (a function ``rng -> GradCheckReport``) to :data:`REGISTRY` under ``name``."""
    def add(check: Callable):
        REGISTRY[name] = check
        return check
    return add


def _normal(rng, *shape):
    return backend.asarray(rng.standard_normal(shape))


def _ids(rng, high, *shape):
    return backend.asarray(rng.integers(0, high, size=shape))


def _lens(*values):
    return backend.asarray(backend.numpy.array(values))


# ----------------------------------------------------------------- functional
@register("affine")
def _affine(rng):
    return check_function(F.affine_forward, F.affine_backward,
                          {"x": _normal(rng, 3, 2, 2), "w": _normal(rng, 4, 5), "b": _normal(rng, 5)})


@register("temporal_affine")
def _temporal_affine(rng):
    return check_function(F.temporal_affine_forward, F.temporal_affine_backward,
                          {"x": _normal(rng, 2, 3, 4), "w": _normal(rng, 4, 5), "b": _normal(rng, 5)})


@register("word_embedding")
def _word_embedding(rng):
    return check_function(F.word_embedding_forward, F.word_embedding_backward,
                          {"x": _ids(rng, 5, 2, 4), "W": _normal(rng, 5, 3)}, grad_names=["W"])


@register("activations")
def _activations(rng):
    rows = []
    for name, pair in (("tanh", (F.tanh_forward, F.tanh_backward)),
                       ("sigmoid", (F.sigmoid_forward, F.sigmoid_backward)),
                       ("softmax", (F.softmax_forward, F.softmax_backward)),
                       ("log_softmax", (F.log_softmax_forward, F.log_softmax_backward)),
                       ("relu", (F.relu_forward, F.relu_backward))):
        report = check_function(*pair, {"x": _normal(rng, 3, 4)})
        for row in report.rows:
            row.name = f"{name}: {row.name}"
        rows += report.rows
    return GradCheckReport(rows)


@register("mse_loss")
def _mse_loss(rng):
    return check_function(F.mse_loss_forward, F.mse_loss_backward,
                          {"pred": _normal(rng, 3, 4), "target": _normal(rng, 3, 4)}, grad_names=["pred"])


@register("dropout")
def _dropout(rng):
    seed = int(rng.integers(2**31))
    return check_function(lambda x: F.dropout_forward(x, 0.4, backend.numpy.random.default_rng(seed)),
                          F.dropout_backward, {"x": _normal(rng, 3, 4)})


@register("masked_softmax")
def _masked_softmax(rng):
    return check_function(F.masked_softmax, F.masked_softmax_backward,
                          {"scores": _normal(rng, 3, 2, 4), "valid_lens": _lens(4, 1, 0)})


def _recurrent(forward, backward, gates, rng, biases=1, **kwargs):
    n, t, d, h = 2, 3, 3, 4
    inputs = {"x": _normal(rng, n, t, d), "h0": _normal(rng, n, h), "Wx": 0.5 * _normal(rng, d, gates * h),
              "Wh": 0.5 * _normal(rng, h, gates * h)}
    for i in range(biases):
        inputs[f"b{i}"] = _normal(rng, gates * h)
    return check_function(forward, backward, inputs, kwargs=kwargs)


@register("rnn_step")
def _rnn_step(rng):
    return check_function(F.rnn_step_forward, F.rnn_step_backward,
                          {"x": _normal(rng, 2, 3), "prev_h": _normal(rng, 2, 4), "Wx": _normal(rng, 3, 4),
                           "Wh": _normal(rng, 4, 4), "b": _normal(rng, 4)})


@register("rnn")
def _rnn(rng):
    return _recurrent(F.rnn_forward, F.rnn_backward, 1, rng)


@register("lstm_step")
def _lstm_step(rng):
    return check_function(F.lstm_step_forward, F.lstm_step_backward,
                          {"x": _normal(rng, 2, 3), "prev_h": _normal(rng, 2, 4), "prev_c": _normal(rng, 2, 4),
                           "Wx": _normal(rng, 3, 16), "Wh": _normal(rng, 4, 16), "b": _normal(rng, 16)})


@register("lstm")
def _lstm(rng):
    return _recurrent(F.lstm_forward, F.lstm_backward, 4, rng)


for _variant in (False, True):
    @register(f"gru_step (reset_after={_variant})")
    def _gru_step(rng, reset_after=_variant):
        return check_function(F.gru_step_forward, F.gru_step_backward,
                              {"x": _normal(rng, 2, 3), "prev_h": _normal(rng, 2, 4), "Wx": _normal(rng, 3, 12),
                               "Wh": _normal(rng, 4, 12), "bx": _normal(rng, 12), "bh": _normal(rng, 12)},
                              kwargs={"reset_after": reset_after})

    @register(f"gru (reset_after={_variant})")
    def _gru(rng, reset_after=_variant):
        return _recurrent(F.gru_forward, F.gru_backward, 3, rng, biases=2, reset_after=reset_after)


def _weights_too(backward):
    """Attention forwards return ``(context, weights, cache)``; their backward takes ``dweights`` last."""
    return lambda dcontext, dweights, cache: backward(dcontext, cache, dweights)


def _attention_inputs(rng, dq=3, dk=3):
    return {"queries": _normal(rng, 2, 2, dq), "keys": _normal(rng, 2, 4, dk), "values": _normal(rng, 2, 4, 3)}


@register("dot_attention")
def _dot_attention(rng):
    inputs = dict(_attention_inputs(rng), valid_lens=_lens(4, 2))
    return check_function(F.dot_attention_forward, _weights_too(F.dot_attention_backward), inputs)


@register("general_attention")
def _general_attention(rng):
    inputs = dict(_attention_inputs(rng, 3, 5), W=0.5 * _normal(rng, 3, 5), valid_lens=_lens(3, 1))
    return check_function(F.general_attention_forward, _weights_too(F.general_attention_backward), inputs)


@register("additive_attention")
def _additive_attention(rng):
    inputs = dict(_attention_inputs(rng, 3, 5), Wq=0.5 * _normal(rng, 3, 4),
                  Wk=0.5 * _normal(rng, 5, 4), wv=_normal(rng, 4),
                  valid_lens=_lens(2, 4))
    return check_function(F.additive_attention_forward, _weights_too(F.additive_attention_backward), inputs)


# -------------------------------------------------------------------- modules
@register("Linear")
def _linear(rng):
    return check_module(nn.Linear(4, 3, rng=rng, dtype="float64"), {"x": _normal(rng, 2, 3, 4)})


@register("GRU layer (2 layers, bidirectional, padded)")
def _gru_layer(rng):
    layer = nn.GRU(3, 4, num_layers=2, bidirectional=True, reset_after=True, rng=rng, dtype="float64")
    return check_module(layer, {"x": _normal(rng, 3, 4, 3), "valid_lens": _lens(4, 1, 3)},
                        h=1e-3, order=4)


@register("LSTM layer (2 layers, bidirectional, padded)")
def _lstm_layer(rng):
    layer = nn.LSTM(3, 4, num_layers=2, bidirectional=True, rng=rng, dtype="float64")
    return check_module(layer, {"x": _normal(rng, 3, 4, 3), "valid_lens": _lens(4, 1, 3)},
                        h=1e-3, order=4)


@register("AdditiveAttention")
def _additive_module(rng):
    layer = nn.AdditiveAttention(5, 3, 4, rng=rng, dtype="float64")
    return check_module(layer, dict(_attention_inputs(rng, 3, 5), valid_lens=_lens(3, 4)))


@register("MaskedSoftmaxCELoss")
def _masked_ce(rng):
    loss = nn.MaskedSoftmaxCELoss("mean")
    return check_module(loss, {"logits": _normal(rng, 2, 3, 5), "labels": _ids(rng, 5, 2, 3),
                               "valid_lens": _lens(3, 1)})


def _seq2seq(rng, decoder, cell):
    model = build_seq2seq(6, 5, decoder=decoder, cell=cell, embed_size=3, num_hiddens=4, num_layers=2,
                          dropout=0.0, seed=int(rng.integers(2**31)), dtype="float64")
    # Larger weights make attention non-uniform, lifting every gradient well above rounding.
    for name, param in model.named_parameters():
        param.data *= 5.0 if "attention" in name else 2.0
    inputs = {"src": _ids(rng, 6, 2, 3), "tgt_in": _ids(rng, 5, 2, 3),
              "src_valid_lens": _lens(3, 1)}
    return check_module(model, inputs, h=1e-3, order=4)


for _decoder, _cell in (("plain", "lstm"), ("bahdanau", "gru"), ("luong", "gru")):
    register(f"EncoderDecoder ({_decoder}, {_cell})")(
        lambda rng, decoder=_decoder, cell=_cell: _seq2seq(rng, decoder, cell))


def run_checks(names=None, seed: int = 0):
    """Run the registered checks (all, or ``names``) and yield ``(name, report)`` in order."""
    names = list(REGISTRY) if names is None else list(names)
    unknown = [name for name in names if name not in REGISTRY]
    if unknown:
        raise InvalidValueError(f"names: expected registered checks {list(REGISTRY)}, got {unknown}")
    for i, name in enumerate(names):
        yield name, REGISTRY[name](backend.numpy.random.default_rng([seed, i]))
