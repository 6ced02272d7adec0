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
from .models import CaptioningRNN, Transformer, build_seq2seq
from .nn import CELLS
from .samples import edge_lengths, ids, lengths, normal, with_dweights

REGISTRY: dict = {}


def register(name: str):
    """Add a check (a function ``rng -> GradCheckReport``) to :data:`REGISTRY` under ``name``."""
    def add(check: Callable):
        REGISTRY[name] = check
        return check
    return add


# ----------------------------------------------------------------- functional
@register("affine")
def _affine(rng):
    return check_function(F.affine_forward, F.affine_backward,
                          {"x": normal(rng, 3, 2, 2), "w": normal(rng, 4, 5), "b": normal(rng, 5)})


@register("temporal_affine")
def _temporal_affine(rng):
    return check_function(F.temporal_affine_forward, F.temporal_affine_backward,
                          {"x": normal(rng, 2, 3, 4), "w": normal(rng, 4, 5), "b": normal(rng, 5)})


@register("word_embedding")
def _word_embedding(rng):
    return check_function(F.word_embedding_forward, F.word_embedding_backward,
                          {"x": ids(rng, 5, 2, 4), "W": normal(rng, 5, 3)}, grad_names=["W"])


@register("activations")
def _activations(rng):
    rows = []
    for name, pair in (("tanh", (F.tanh_forward, F.tanh_backward)),
                       ("sigmoid", (F.sigmoid_forward, F.sigmoid_backward)),
                       ("softmax", (F.softmax_forward, F.softmax_backward)),
                       ("log_softmax", (F.log_softmax_forward, F.log_softmax_backward)),
                       ("relu", (F.relu_forward, F.relu_backward)),
                       ("gelu", (F.gelu_forward, F.gelu_backward))):
        report = check_function(*pair, {"x": normal(rng, 3, 4)})
        for row in report.rows:
            row.name = f"{name}: {row.name}"
        rows += report.rows
    return GradCheckReport(rows)


@register("dropout")
def _dropout(rng):
    seed = int(rng.integers(2**31))
    return check_function(lambda x: F.dropout_forward(x, 0.4, backend.numpy.random.default_rng(seed)),
                          F.dropout_backward, {"x": normal(rng, 3, 4)})


@register("masked_softmax")
def _masked_softmax(rng):
    return check_function(F.masked_softmax, F.masked_softmax_backward,
                          {"scores": normal(rng, 3, 2, 4), "valid_lens": edge_lengths(4)})


def _recurrent(forward, backward, gates, rng, biases=1, **kwargs):
    n, t, d, h = 2, 3, 3, 4
    inputs = {"x": normal(rng, n, t, d), "h0": normal(rng, n, h), "Wx": 0.5 * normal(rng, d, gates * h),
              "Wh": 0.5 * normal(rng, h, gates * h)}
    for i in range(biases):
        inputs[f"b{i}"] = normal(rng, gates * h)
    return check_function(forward, backward, inputs, kwargs=kwargs)


@register("rnn_step")
def _rnn_step(rng):
    return check_function(F.rnn_step_forward, F.rnn_step_backward,
                          {"x": normal(rng, 2, 3), "prev_h": normal(rng, 2, 4), "Wx": normal(rng, 3, 4),
                           "Wh": normal(rng, 4, 4), "b": normal(rng, 4)})


@register("lstm_step")
def _lstm_step(rng):
    return check_function(F.lstm_step_forward, F.lstm_step_backward,
                          {"x": normal(rng, 2, 3), "prev_h": normal(rng, 2, 4), "prev_c": normal(rng, 2, 4),
                           "Wx": normal(rng, 3, 16), "Wh": normal(rng, 4, 16), "b": normal(rng, 16)})


for _variant in (False, True):
    @register(f"gru_step (reset_after={_variant})")
    def _gru_step(rng, reset_after=_variant):
        return check_function(F.gru_step_forward, F.gru_step_backward,
                              {"x": normal(rng, 2, 3), "prev_h": normal(rng, 2, 4), "Wx": normal(rng, 3, 12),
                               "Wh": normal(rng, 4, 12), "bx": normal(rng, 12), "bh": normal(rng, 12)},
                              kwargs={"reset_after": reset_after})



def _cell_check_name(name: str, cell) -> str:
    """``gru (reset_after=True)``: the cell's name and the options of the variant the models build."""
    variant = ", ".join(f"{option}={value}" for option, value in cell.options.items())
    return f"{name} ({variant})" if variant else name


# Every cell the models know, over a sequence, in the variant they build; the GRU's other variant (reset before,
# Cho et al. 2014 / d2l) besides.
for _name, _cell in CELLS.items():
    @register(_cell_check_name(_name, _cell))
    def _cell_sequence(rng, cell=_cell):
        return _recurrent(cell.forward, cell.backward, cell.gates, rng, biases=len(cell.bias_names), **cell.options)


@register("gru (reset_after=False)")
def _gru_reset_before(rng):
    return _recurrent(F.gru_forward, F.gru_backward, 3, rng, biases=2, reset_after=False)


def _attention_inputs(rng, dq=3, dk=3):
    return {"queries": normal(rng, 2, 2, dq), "keys": normal(rng, 2, 4, dk), "values": normal(rng, 2, 4, 3)}


@register("dot_attention")
def _dot_attention(rng):
    inputs = dict(_attention_inputs(rng), valid_lens=lengths([4, 2]))
    return check_function(F.dot_attention_forward, with_dweights(F.dot_attention_backward), inputs)


@register("general_attention")
def _general_attention(rng):
    inputs = dict(_attention_inputs(rng, 3, 5), W=0.5 * normal(rng, 3, 5), valid_lens=lengths([3, 1]))
    return check_function(F.general_attention_forward, with_dweights(F.general_attention_backward), inputs)


@register("additive_attention")
def _additive_attention(rng):
    inputs = dict(_attention_inputs(rng, 3, 5), Wq=0.5 * normal(rng, 3, 4),
                  Wk=0.5 * normal(rng, 5, 4), wv=normal(rng, 4),
                  valid_lens=lengths([2, 4]))
    return check_function(F.additive_attention_forward, with_dweights(F.additive_attention_backward), inputs)


# -------------------------------------------------------------------- modules
@register("Linear")
def _linear(rng):
    return check_module(nn.Linear(4, 3, rng=rng, dtype="float64"), {"x": normal(rng, 2, 3, 4)})


@register("GRU layer (2 layers, bidirectional, padded)")
def _gru_layer(rng):
    layer = nn.GRU(3, 4, num_layers=2, bidirectional=True, reset_after=True, rng=rng, dtype="float64")
    return check_module(layer, {"x": normal(rng, 3, 4, 3), "valid_lens": lengths([4, 1, 3])},
                        h=1e-3, order=4)


@register("LSTM layer (2 layers, bidirectional, padded)")
def _lstm_layer(rng):
    layer = nn.LSTM(3, 4, num_layers=2, bidirectional=True, rng=rng, dtype="float64")
    return check_module(layer, {"x": normal(rng, 3, 4, 3), "valid_lens": lengths([4, 1, 3])},
                        h=1e-3, order=4)


@register("AdditiveAttention")
def _additive_module(rng):
    layer = nn.AdditiveAttention(5, 3, 4, rng=rng, dtype="float64")
    return check_module(layer, dict(_attention_inputs(rng, 3, 5), valid_lens=lengths([3, 4])))


@register("MaskedSoftmaxCELoss")
def _masked_ce(rng):
    loss = nn.MaskedSoftmaxCELoss("mean")
    return check_module(loss, {"logits": normal(rng, 2, 3, 5), "labels": ids(rng, 5, 2, 3),
                               "valid_lens": lengths([3, 1])})


def _seq2seq(rng, decoder, cell, **options):
    model = build_seq2seq(6, 5, decoder=decoder, cell=cell, embed_size=3, num_hiddens=4, num_layers=2,
                          dropout=0.0, seed=int(rng.integers(2**31)), dtype="float64", **options)
    # Larger weights make attention non-uniform, lifting every gradient well above rounding.
    for name, param in model.named_parameters():
        param.data *= 5.0 if "attention" in name else 2.0
    inputs = {"src": ids(rng, 6, 2, 3), "tgt_in": ids(rng, 5, 2, 3),
              "src_valid_lens": lengths([3, 1])}
    return check_module(model, inputs, h=1e-3, order=4)


for _decoder, _cell in (("plain", "lstm"), ("bahdanau", "gru"), ("luong", "gru")):
    register(f"EncoderDecoder ({_decoder}, {_cell})")(
        lambda rng, decoder=_decoder, cell=_cell: _seq2seq(rng, decoder, cell))


# ---------------------------------------------------------------- transformer
# Registered after the modules, not beside the other functional checks: each check's inputs are seeded by
# its position in REGISTRY, so a check inserted earlier would hand every later check new inputs.
@register("layer_norm")
def _layer_norm(rng):
    return check_function(F.layer_norm_forward, F.layer_norm_backward,
                          {"x": normal(rng, 2, 3, 5), "gamma": normal(rng, 5), "beta": normal(rng, 5)})


@register("scaled_dot_product_attention (heads, padding, causal)")
def _scaled_dot_product_attention(rng):
    inputs = {"queries": normal(rng, 3, 2, 4, 3), "keys": normal(rng, 3, 2, 4, 3),
              "values": normal(rng, 3, 2, 4, 2), "valid_lens": lengths([4, 2, 1])}
    return check_function(F.scaled_dot_product_attention_forward,
                          with_dweights(F.scaled_dot_product_attention_backward), inputs, kwargs={"causal": True})


def _multihead_inputs(rng, dq=5, dk=3, dv=4, hidden=6, do=5):
    sizes = {"W_q": (dq, hidden), "b_q": (hidden,), "W_k": (dk, hidden), "b_k": (hidden,),
             "W_v": (dv, hidden), "b_v": (hidden,), "W_o": (hidden, do), "b_o": (do,)}
    inputs = {"queries": normal(rng, 2, 3, dq), "keys": normal(rng, 2, 4, dk), "values": normal(rng, 2, 4, dv)}
    return dict(inputs, **{name: 0.7 * normal(rng, *shape) for name, shape in sizes.items()})


# The key bias shifts all scores of a query alike, which the softmax ignores: its true gradient
# is 0, so the relative error of its rounding noise means nothing. The tests check it is ~0.
_MULTIHEAD_CHECKED = ("queries", "keys", "values") + tuple(name for name in F.MULTIHEAD_PARAMS if name != "b_k")


def _multihead_pair(num_heads, **kwargs):
    """The multi-head pair with its parameters as separate arguments, the form check_function perturbs."""
    def forward(queries, keys, values, *weights):
        return F.multihead_attention_forward(queries, keys, values, dict(zip(F.MULTIHEAD_PARAMS, weights)),
                                             num_heads, **kwargs)

    def backward(dout, dweights, cache):
        *dinputs, grads = F.multihead_attention_backward(dout, cache, dweights)
        return (*dinputs, *(grads[name] for name in _MULTIHEAD_CHECKED[3:]))
    return forward, backward


@register("multihead_attention (2 heads, padding)")
def _multihead_attention(rng):
    return check_function(*_multihead_pair(2, valid_lens=lengths([3, 1])), _multihead_inputs(rng),
                          grad_names=_MULTIHEAD_CHECKED)


@register("multihead_attention (3 heads, causal)")
def _multihead_attention_causal(rng):
    return check_function(*_multihead_pair(3, causal=True), _multihead_inputs(rng), grad_names=_MULTIHEAD_CHECKED)


@register("add_positions")
def _add_positions(rng):
    return check_function(F.add_positions_forward, F.add_positions_backward,
                          {"x": normal(rng, 2, 3, 4), "positions": normal(rng, 5, 4)})


def _feed_forward_inputs(rng, dim=4, hidden=6):
    return {"W1": 0.7 * normal(rng, dim, hidden), "b1": normal(rng, hidden),
            "W2": 0.7 * normal(rng, hidden, dim), "b2": normal(rng, dim)}


for _activation in ("relu", "gelu"):
    @register(f"feed_forward ({_activation})")
    def _feed_forward(rng, activation=_activation):
        return check_function(F.feed_forward_forward, F.feed_forward_backward,
                              dict(x=normal(rng, 2, 3, 4), **_feed_forward_inputs(rng)),
                              kwargs={"activation": activation})


def _residual_pair(order):
    """A residual + layer norm around a GELU feed-forward, its parameters as separate arguments."""
    def forward(x, gamma, beta, W1, b1, W2, b2):
        return F.residual_norm_forward(x, lambda z: F.feed_forward_forward(z, W1, b1, W2, b2, "gelu"),
                                       gamma, beta, order)

    def sublayer_backward(dy, cache):
        dz, *grads = F.feed_forward_backward(dy, cache)
        return dz, grads

    def backward(dy, cache):
        dx, dgamma, dbeta, grads = F.residual_norm_backward(dy, cache, sublayer_backward)
        return (dx, dgamma, dbeta, *grads)
    return forward, backward


for _order in F.NORM_ORDERS:
    register(f"residual_norm ({_order}-norm)")(
        lambda rng, order=_order: check_function(
            *_residual_pair(order),
            dict(x=normal(rng, 2, 3, 4), gamma=1 + 0.3 * normal(rng, 4), beta=normal(rng, 4),
                 **_feed_forward_inputs(rng))))


def run_checks(names=None, seed: int = 0):
    """Run the registered checks (all, or ``names``) and yield ``(name, report)`` in order."""
    names = list(REGISTRY) if names is None else list(names)
    unknown = [name for name in names if name not in REGISTRY]
    if unknown:
        raise InvalidValueError(f"names: expected registered checks {list(REGISTRY)}, got {unknown}")
    for i, name in enumerate(names):
        yield name, REGISTRY[name](backend.numpy.random.default_rng([seed, i]))


# ------------------------------------------------------------ later additions
# Registered after the others: each check's inputs come from its position in the registry, and the
# checks above keep theirs.
@register("mse_loss")
def _mse_loss(rng):
    return check_function(F.mse_loss_forward, F.mse_loss_backward,
                          {"pred": normal(rng, 3, 4), "target": normal(rng, 3, 4)}, grad_names=["pred"])


# ------------------------------------------------------------ local attention
@register("local attention pooling (local-p window, centres near both ends, padding)")
def _local_pooling_check(rng):
    # Centres near 0 and near S_n = 4; no window edge (|s - p| = D) within a step h of them.
    inputs = {"scores": normal(rng, 2, 2, 6), "values": normal(rng, 2, 6, 3),
              "centers": backend.asarray(backend.numpy.array([[0.05, 3.3], [0.2, 3.95]]))}
    return check_function(lambda scores, values, centers: F.local_attention_pooling_forward(
        scores, values, centers, lengths([6, 4]), 3, gaussian=True),
                          with_dweights(F.local_attention_pooling_backward), inputs)


@register("predictive_position (local-p)")
def _predictive_position(rng):
    inputs = {"queries": normal(rng, 2, 3, 4), "Wp": normal(rng, 4, 5), "vp": normal(rng, 5)}
    return check_function(lambda q, Wp, vp: F.predictive_position_forward(q, Wp, vp, lengths([6, 3])),
                          F.predictive_position_backward, inputs)


@register("location_scores")
def _location_scores(rng):
    return check_function(F.location_scores_forward, F.location_scores_backward,
                          {"queries": normal(rng, 2, 3, 4), "Wa": normal(rng, 4, 7)}, kwargs={"num_keys": 5})


for _mode, _score in (("local-m", "general"), ("local-p", "concat"), ("local-p", "dot")):
    @register(f"local attention layer ({_mode}, {_score} score, padding)")
    def _local_layer(rng, mode=_mode, score=_score):
        key_size = 4 if score == "dot" else 5
        layer = nn.LocalAttention(4, key_size, mode=mode, score=score, half_width=3, num_hiddens=6, rng=rng,
                                  dtype="float64")
        inputs = {"queries": normal(rng, 2, 2, 4), "keys": normal(rng, 2, 6, key_size),
                  "values": normal(rng, 2, 6, 3), "source_lens": lengths([6, 3]), "step": 1}
        # W_p's gradient passes through a sigmoid and a Gaussian and can be ~1e-6: a wider, fourth-order
        # stencil keeps the finite differences' rounding error far below it.
        return check_module(layer, inputs, h=1e-3, order=4)


for _attention, _cell in (("local-m", "lstm"), ("local-p", "gru")):
    register(f"EncoderDecoder (luong {_attention}, window 2, {_cell})")(
        lambda rng, attention=_attention, cell=_cell: _seq2seq(rng, "luong", cell, attention=attention, window=2))


# ------------------------------------------------- cells conditioned on a vector (captioning)
# A wider, fourth-order stencil: a gradient through several gates can be ~1e-5, where the rounding of
# the default stencil alone reaches a relative 1e-7; these checks should pass at any registry position.
def _conditioned_inputs(rng, cell, mode):
    """x (2, 4, 3), v (2, 5), H = 3; ``every_step``: h0 and Wv (F, kH); ``first_step``: Wv (F, H) and bv."""
    width = CELLS[cell].gates * 3
    inputs = {"x": normal(rng, 2, 4, 3), "v": normal(rng, 2, 5)}
    if mode == "every_step":
        inputs.update(h0=normal(rng, 2, 3), Wx=normal(rng, 3, width), Wh=normal(rng, 3, width),
                      Wv=normal(rng, 5, width))
    else:
        inputs.update(Wv=normal(rng, 5, 3), bv=normal(rng, 3), Wx=normal(rng, 3, width),
                      Wh=normal(rng, 3, width))
    inputs.update({bias: normal(rng, width) for bias in CELLS[cell].bias_names})
    return inputs


for _mode in ("every_step", "first_step"):
    for _cell, _options in (("rnn", {}), ("gru", {"reset_after": False}), ("gru", {"reset_after": True}),
                            ("lstm", {})):
        _variant = f", reset_after={_options['reset_after']}" if _options else ""

        @register(f"conditioned {_cell} ({_mode.replace('_', ' ')}{_variant}, padding)")
        def _conditioned(rng, cell=_cell, mode=_mode, options=_options):
            forward, backward = getattr(F, f"{cell}_{mode}_forward"), getattr(F, f"{cell}_{mode}_backward")
            return check_function(forward, backward, _conditioned_inputs(rng, cell, mode),
                                  kwargs=dict(options, valid_lens=lengths([4, 2])), time_axes={"x": 1}, h=1e-3, order=4)


for _mode, _cell in (("every_step", "gru"), ("every_step", "lstm"), ("first_step", "gru"), ("first_step", "lstm")):
    @register(f"CaptioningRNN ({_mode.replace('_', ' ')}, {_cell}, padding)")
    def _captioning(rng, mode=_mode, cell=_cell):
        model = CaptioningRNN(5, 7, 4, mode=mode, cell=cell, embed_size=3, rng=rng, dtype="float64")
        inputs = {"features": normal(rng, 3, 5), "captions_in": ids(rng, 7, 3, 4), "valid_lens": lengths([4, 2, 1])}
        return check_module(model, inputs, h=1e-3, order=4)


# ------------------------------------------------------- transformer modules
def _without_key_biases(report: GradCheckReport) -> GradCheckReport:
    """The report less the key biases' rows: a shift of every key adds the same amount to all the scores of a
    query, which the softmax ignores, so their true gradient is 0 and the relative error of rounding noise
    means nothing (the tests check that it is ~0)."""
    return GradCheckReport([row for row in report.rows if not row.name.endswith("b_k")], report.tol)


# Products of three layers of weights curve the output enough that second-order differences resolve the
# smaller gradients only to ~1e-7; a fourth-order stencil resolves them to ~1e-9, and a step of 1e-4 stays
# clear of the ReLU's kink at the registry's inputs (another seed may step over one: a failure at ~1).
_BLOCK_STEP = 1e-4


for _order in F.NORM_ORDERS:
    @register(f"TransformerEncoderBlock ({_order}-norm, 3 heads, padding)")
    def _encoder_block(rng, order=_order):
        block = nn.TransformerEncoderBlock(6, 10, 3, norm=order, rng=rng, dtype="float64")
        return _without_key_biases(check_module(block, {"x": normal(rng, 2, 4, 6), "valid_lens": lengths([4, 2])},
                                                h=_BLOCK_STEP, order=4))

    @register(f"TransformerDecoderBlock ({_order}-norm, 2 heads, causal, padded source)")
    def _decoder_block(rng, order=_order):
        block = nn.TransformerDecoderBlock(6, 10, 2, norm=order, rng=rng, dtype="float64")
        inputs = {"x": normal(rng, 2, 3, 6), "enc_outputs": normal(rng, 2, 4, 6), "enc_valid_lens": lengths([4, 2])}
        return _without_key_biases(check_module(block, inputs, h=_BLOCK_STEP, order=4))


@register("Transformer (2 layers, 2 heads, GELU, padded source)")
def _transformer(rng):
    # GELU, not ReLU: the stencil below is wide enough to step over a ReLU's kink somewhere among the
    # model's hidden units; the blocks' checks above cover the ReLU.
    # Sizes as small as still make two heads and two blocks: finite differences perturb every one of the
    # model's parameters four times, so a model of ~900 parameters costs a third of one of ~2,900.
    model = Transformer(7, 6, num_hiddens=4, ffn_num_hiddens=6, num_heads=2, num_layers=2, dropout=0.0,
                        activation="gelu", rng=int(rng.integers(2**31)), dtype="float64")
    inputs = {"src": ids(rng, 7, 2, 5), "tgt_in": ids(rng, 6, 2, 4), "src_valid_lens": lengths([5, 2])}
    # The sqrt(D)-scaled embeddings put curvature into the loss that second-order differences with h = 1e-5
    # resolve only to ~1e-7; a wider fourth-order stencil (as for the recurrent models) is exact to ~1e-9.
    return _without_key_biases(check_module(model, inputs, h=1e-3, order=4))


# ------------------------------------------------------------ kernel regression
@register("gaussian_scores")
def _gaussian_scores(rng):
    return check_function(F.gaussian_scores_forward, F.gaussian_scores_backward,
                          {"queries": normal(rng, 2, 3, 2), "keys": normal(rng, 2, 4, 2),
                           "w": backend.asarray(backend.numpy.array(0.8))})


@register("nadaraya_watson (parametric, one query per example)")
def _nadaraya_watson(rng):
    # Points within a few kernel widths (1/w) of each other: no weight so small that its gradient vanishes. Even so a
    # far key's gradient can be a thousandth of the largest, which h = 1e-5 resolves only to ~1e-7 for some seeds;
    # the wider fourth-order stencil is exact to ~1e-9.
    inputs = {"queries": normal(rng, 4), "keys": normal(rng, 4, 3), "values": normal(rng, 4, 3),
              "w": backend.asarray(backend.numpy.array(0.7))}
    return check_function(F.nadaraya_watson_forward, F.nadaraya_watson_backward, inputs, h=1e-3, order=4)


# ------------------------------------------------------------ deep and bidirectional layers
_DEEP_BIASES = {"gru": ("bx", "bh"), "lstm": ("b",)}
_DEEP_GATES = {"gru": 3, "lstm": 4}


def _deep_layer(rng, cell: str, stacked: bool):
    """``functional.deep`` on a padded batch: two stacked bidirectional layers (``stacked``) or one bidirectional
    layer of ``cell``. The weights travel flattened, one input each, and every output (y and the final states)
    gets an upstream gradient."""
    n, t, d, h = 3, 4, 3, 2
    num_layers = 2 if stacked else 1
    names, inputs = [], {"x": normal(rng, n, t, d), "h0": normal(rng, 2 * num_layers, n, h, scale=0.5)}
    for layer in range(num_layers):
        for direction in ("", "_reverse"):
            group = tuple(f"{weight}_l{layer}{direction}" for weight in ("Wx", "Wh", *_DEEP_BIASES[cell]))
            widths = (d if layer == 0 else 2 * h, h) + (None,) * len(_DEEP_BIASES[cell])
            for name, rows in zip(group, widths):
                shape = (_DEEP_GATES[cell] * h,) if rows is None else (rows, _DEEP_GATES[cell] * h)
                inputs[name] = normal(rng, *shape, scale=0.5)
            names.append(group)
    valid_lens = lengths([4, 1, 3])

    reset_after = cell == "gru"

    def forward(x, h0, *flat):
        params = [flat[i * len(group):(i + 1) * len(group)] for i, group in enumerate(names)]
        if stacked:
            y, cache = F.stacked_forward(x, h0, params, cell, valid_lens, bidirectional=True, reset_after=reset_after)
        else:
            y, cache = F.bidirectional_forward(x, h0, params, cell, valid_lens, reset_after=reset_after)
        return (y, cache.h_last, cache.c_last, cache) if cell == "lstm" else (y, cache.h_last, cache)

    def backward(dy, dh_last, *rest):
        dc_last, cache = rest if cell == "lstm" else (None, rest[0])
        grads = (F.stacked_backward if stacked else F.bidirectional_backward)(dy, cache, dh_last, dc_last)
        return (grads.dx, grads.dh0, *(grad for group in grads.dparams for grad in group))

    return check_function(forward, backward, inputs, h=1e-3, order=4)


@register("stacked_forward (GRU, 2 layers, bidirectional, padded)")
def _stacked_gru(rng):
    return _deep_layer(rng, "gru", stacked=True)


@register("bidirectional_forward (LSTM, padded)")
def _bidirectional_lstm(rng):
    return _deep_layer(rng, "lstm", stacked=False)
