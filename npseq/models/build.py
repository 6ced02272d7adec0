"""Encoder-decoders from plain, JSON-friendly settings: what checkpoints and the command line build.

:func:`build_seq2seq` builds the recurrent models of :mod:`npseq.models.seq2seq` (``model="rnn"``) and the
:class:`~npseq.models.transformer.Transformer` (``model="transformer"``); :func:`check_seq2seq_config`
checks the same settings without building anything, and :func:`estimate_seq2seq_memory` says how much memory
training the model they describe takes.
"""
from __future__ import annotations

import inspect
import math
from typing import NamedTuple

from .. import backend
from .._checks import MemoryEstimate, as_rng, check_count, check_probability
from ..errors import InvalidTypeError, InvalidValueError, LimitError
from ..nn.attention import SCORES
from ..nn.recurrent import CELLS, cell_record, make_rnn_parameters
from .encoder_decoder import EncoderDecoder
from .seq2seq import LuongAttentionDecoder, Seq2SeqAttentionDecoder, Seq2SeqDecoder, Seq2SeqEncoder
from .transformer import MAX_POSITIONS, Transformer

DECODER_KINDS = ("plain", "bahdanau", "luong")
# The model of `npseq demo` and the attention tutorials: one layer draws the clearest alignment on
# the built-in tasks' short inputs and trains in seconds. Pass as build_seq2seq(..., **DEMO_SETTINGS).
DEMO_SETTINGS = dict(decoder="bahdanau", cell="gru", embed_size=32, num_hiddens=64, num_layers=1, dropout=0.0)
# The Transformer of `npseq demo --model transformer`: sized to reach exact match >= 0.99 on the built-in
# tasks within the demo's time on two cores.
TRANSFORMER_DEMO_SETTINGS = dict(model="transformer", num_hiddens=32, ffn_num_hiddens=64, num_heads=4, num_layers=2,
                                 dropout=0.0)
MODEL_KINDS = ("rnn", "transformer")
# Explicit caps on build_seq2seq's sizes: far above any model this engine trains in reasonable time,
# low enough that a typo (or a tampered checkpoint config) fails with a message, not an exhausted memory.
MAX_LAYERS = 64
MAX_UNITS = 65536        # embed_size and num_hiddens
MAX_VOCAB_SIZE = 2 ** 24


def _as_dtype(dtype):
    """``numpy.dtype(dtype)``, or ``None`` for something that names no dtype."""
    try:
        return backend.numpy.dtype(dtype)
    except (TypeError, ValueError):
        return None


def _check_size(name: str, value, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name}: expected an int in [1, {maximum}], got {type(value).__name__} {value!r}")
    if not 1 <= value <= maximum:
        raise LimitError(f"{name}: expected an int in [1, {maximum}], got {value}")
    return value


def check_seq2seq_config(src_vocab_size: int, tgt_vocab_size: int, *, decoder: str = "bahdanau",
                         cell: str = "gru", embed_size: int = 32, num_hiddens: int = 32, num_layers: int = 2,
                         dropout: float = 0.1, bidirectional: bool = False, score: str = "general",
                         input_feeding: bool = True, attention: str = "global", window: int = 2, seed=0,
                         dtype=None, model: str = "rnn", num_heads: int = 4, ffn_num_hiddens: int = 64) -> int:
    """Check :func:`build_seq2seq`'s arguments without building anything; return a lower bound on its
    parameter count.

    Sizes must be ints in ``[1, cap]`` (:data:`MAX_VOCAB_SIZE`, :data:`MAX_UNITS`,
    :data:`MAX_LAYERS`), ``dropout`` a number in ``[0, 1)``, the choices known, the
    flags bools, ``seed`` an int, a Generator or ``None``, ``dtype`` ``None``, ``"float32"``
    or ``"float64"``; a local ``attention`` only with ``decoder="luong"``, its ``window`` an int in
    ``[0, MAX_UNITS]`` (at least 1 for ``"local-p"``); ``model`` one of :data:`MODEL_KINDS`, and for the
    Transformer ``num_heads`` a divisor of ``num_hiddens``, ``ffn_num_hiddens`` a size, no
    ``bidirectional`` encoder. The bound,

    .. math::
        \\text{rnn: } (V_{src} + V_{tgt}) E + V_{tgt} H + L H^2, \\qquad
        \\text{transformer: } (V_{src} + 2 V_{tgt}) H + L (12 H^2 + 4 H F),

    counts the two embeddings, the output layer and one ``H x H`` recurrent matrix per
    layer (the Transformer: its embeddings of size ``H``, the output layer, and per layer the
    four attention matrices of the encoder block, the eight of the decoder block and the two
    feed-forward networks): every variant has at least these, so a caller holding saved
    weights can refuse a config that describes a far larger model before allocating it.
    """
    _check_size("src_vocab_size", src_vocab_size, MAX_VOCAB_SIZE)
    _check_size("tgt_vocab_size", tgt_vocab_size, MAX_VOCAB_SIZE)
    _check_size("embed_size", embed_size, MAX_UNITS)
    _check_size("num_hiddens", num_hiddens, MAX_UNITS)
    _check_size("num_layers", num_layers, MAX_LAYERS)
    for name, value, choices in (("decoder", decoder, DECODER_KINDS), ("cell", cell, tuple(CELLS)),
                                 ("score", score, tuple(SCORES))):
        if value not in choices:
            raise InvalidValueError(f"{name}: expected one of {choices}, got {value!r}")
    if attention not in LuongAttentionDecoder.ATTENTIONS:
        raise InvalidValueError(f"attention: expected one of {LuongAttentionDecoder.ATTENTIONS}, got {attention!r}")
    if attention != "global" and decoder != "luong":
        raise InvalidValueError(f"attention: {attention!r} is Luong's local attention, for decoder='luong' "
                                f"only, got decoder={decoder!r}")
    if isinstance(window, bool) or not isinstance(window, int) or not 0 <= window <= MAX_UNITS:
        raise InvalidTypeError(f"window: expected an int in [0, {MAX_UNITS}], got {window!r:.40}")
    if attention == "local-p" and window < 1:
        raise InvalidValueError(f"window: local-p needs at least 1 (its Gaussian has sigma = window / 2), got {window}")
    check_probability("dropout", dropout, "a probability")
    for name, value in (("bidirectional", bidirectional), ("input_feeding", input_feeding)):
        if not isinstance(value, bool):
            raise InvalidTypeError(f"{name}: expected a bool, got {type(value).__name__} {value!r}")
    if not (seed is None or isinstance(seed, backend.numpy.random.Generator)
            or (isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2 ** 63)):
        raise InvalidTypeError(f"seed: expected an int in [0, 2**63), a numpy.random.Generator or None, "
                        f"got {type(seed).__name__} {seed!r:.40}")
    if dtype is not None and _as_dtype(dtype) not in (backend.numpy.float32, backend.numpy.float64):
        raise InvalidValueError(f"dtype: expected None, float32 or float64, got {dtype!r:.40}")
    if model not in MODEL_KINDS:
        raise InvalidValueError(f"model: expected one of {MODEL_KINDS}, got {model!r:.40}")
    _check_size("num_heads", num_heads, MAX_UNITS)
    _check_size("ffn_num_hiddens", ffn_num_hiddens, MAX_UNITS)
    if model == "transformer":
        if num_hiddens % num_heads:
            raise InvalidValueError(f"num_heads: expected a divisor of num_hiddens = {num_hiddens} (each head gets "
                                    f"num_hiddens / num_heads features), got {num_heads}")
        if bidirectional:
            raise InvalidValueError("bidirectional: a Transformer encoder already reads both directions; "
                                    "expected False with model='transformer'")
        return ((src_vocab_size + 2 * tgt_vocab_size) * num_hiddens
                + num_layers * (12 * num_hiddens ** 2 + 4 * num_hiddens * ffn_num_hiddens))
    return ((src_vocab_size + tgt_vocab_size) * embed_size + tgt_vocab_size * num_hiddens
            + num_layers * num_hiddens ** 2)


def build_seq2seq(src_vocab_size: int, tgt_vocab_size: int, *, decoder: str = "bahdanau", cell: str = "gru",
                  embed_size: int = 32, num_hiddens: int = 32, num_layers: int = 2, dropout: float = 0.1,
                  bidirectional: bool = False, score: str = "general", input_feeding: bool = True,
                  attention: str = "global", window: int = 2, seed=0, dtype=None, model: str = "rnn",
                  num_heads: int = 4, ffn_num_hiddens: int = 64) -> EncoderDecoder:
    """An :class:`EncoderDecoder` from plain settings (the defaults are d2l's Bahdanau model).

    Every argument is a JSON-friendly value, so ``build_seq2seq(**config)`` rebuilds
    a saved model's architecture from its checkpoint's config. ``score``,
    ``input_feeding``, ``attention`` and ``window`` apply to ``decoder="luong"`` only. ``model="transformer"``
    builds a :class:`~npseq.models.transformer.Transformer` of size ``num_hiddens`` with ``num_layers`` blocks
    on each side, ``num_heads`` heads and feed-forward size ``ffn_num_hiddens``; it reads ``dropout`` and
    ignores the recurrent settings (``decoder``, ``cell``, ``embed_size``, ...). Configs saved before
    ``model`` existed build recurrent models, its default. One generator seeded by
    ``seed`` initialises encoder then decoder. The arguments are checked first
    (:func:`check_seq2seq_config`, with its caps), so a bad one fails before any allocation.
    """
    check_seq2seq_config(src_vocab_size, tgt_vocab_size, decoder=decoder, cell=cell, embed_size=embed_size,
                         num_hiddens=num_hiddens, num_layers=num_layers, dropout=dropout,
                         bidirectional=bidirectional, score=score, input_feeding=input_feeding, attention=attention,
                         window=window, model=model, num_heads=num_heads, ffn_num_hiddens=ffn_num_hiddens)
    rng = as_rng(seed)
    if model == "transformer":
        return Transformer(src_vocab_size, tgt_vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_layers,
                           dropout, rng=rng, dtype=dtype)
    encoder = Seq2SeqEncoder(src_vocab_size, embed_size, num_hiddens, num_layers, dropout, cell, bidirectional,
                             rng=rng, dtype=dtype)
    size = encoder.output_size
    if decoder == "plain":
        dec = Seq2SeqDecoder(tgt_vocab_size, embed_size, num_hiddens, num_layers, dropout, cell, rng=rng, dtype=dtype)
    elif decoder == "bahdanau":
        dec = Seq2SeqAttentionDecoder(tgt_vocab_size, embed_size, num_hiddens, num_layers, dropout, cell, size,
                                      rng=rng, dtype=dtype)
    else:
        dec = LuongAttentionDecoder(tgt_vocab_size, embed_size, num_hiddens, num_layers, dropout, cell, score,
                                    input_feeding, size, attention=attention, window=window, rng=rng, dtype=dtype)
    return EncoderDecoder(encoder, dec)


def _luong_attention_parameters(score: str, attention: str, hidden: int, keys: int) -> int:
    """The parameters of Luong's attention: the score's weights, as its entry of :data:`~npseq.nn.SCORES` names
    them (none for ``dot``, ``W`` for ``general``, ``W_q``, ``W_k`` and ``w_v`` for ``concat``); local-p adds its
    position predictor ``W_p``, ``v_p``."""
    shapes = SCORES[score].weights(hidden, keys, hidden).values()
    count = sum(math.prod(shape) for shape in shapes)
    return count + (hidden * hidden + hidden if attention == "local-p" else 0)


class _Counts(NamedTuple):
    parameters: int
    activations: int  # elements one training step holds


def _seq2seq_counts(c: dict, batch: int, src_steps: int, tgt_steps: int) -> _Counts:
    """The parameters and activations of one training step of the model ``c`` describes."""
    V_src, V_tgt, H = c["src_vocab_size"], c["tgt_vocab_size"], c["num_hiddens"]
    N, S, T, L = batch, src_steps, tgt_steps, c["num_layers"]
    logits = 3 * N * T * V_tgt  # the logits, their softmax and their gradient
    if c["model"] == "transformer":
        F, heads = c["ffn_num_hiddens"], c["num_heads"]
        attention = 4 * (H * H + H)
        ffn = 2 * H * F + F + H
        parameters = ((V_src + V_tgt) * H + L * (attention + ffn + 4 * H) + L * (2 * attention + ffn + 6 * H)
                      + H * V_tgt + V_tgt)
        # per block: projections, residuals and norms (~12 N x steps x H), the feed-forward's hidden layer twice,
        # and the attention scores and weights of every head
        encoder = L * (N * S * (12 * H + 2 * F) + 2 * N * heads * S * S)
        decoder = L * (N * T * (18 * H + 2 * F) + 2 * N * S * H + 2 * N * heads * (T * T + T * S))
        activations = 2 * MAX_POSITIONS * H + N * (S + T) * H * 2 + encoder + decoder + logits
        return _Counts(parameters, 2 * activations)  # forward caches, and the gradients of the backward pass
    E, cell = c["embed_size"], c["cell"]
    directions = 2 if c["bidirectional"] else 1
    keys = directions * H
    bridge = 2 * H * H + H if directions == 2 else 0  # the bidirectional encoder's StateBridge
    encoder = V_src * E + make_rnn_parameters(cell, E, H, L, directions == 2) + bridge
    if c["decoder"] == "plain":
        decoder_input, attention, attention_cache = E + H, 0, 0
    elif c["decoder"] == "bahdanau":  # additive: tanh(q W_q + k W_k) of shape (N, T, S, H) for the backward
        decoder_input, attention = E + keys, keys * H + H * H + H
        attention_cache = N * T * S * H + 2 * N * T * S + N * S * H
    else:
        decoder_input = E + (H if c["input_feeding"] else 0)
        attention = _luong_attention_parameters(c["score"], c["attention"], H, keys) + (keys + H) * H
        features = H if SCORES[c["score"]].projects_keys else 1  # an additive score keeps tanh(q W_q + k W_k)
        attention_cache = N * T * S * features + 2 * N * T * S + N * S * H + 2 * N * T * (keys + H)
    decoder = V_tgt * E + make_rnn_parameters(cell, decoder_input, H, L) + attention + H * V_tgt + V_tgt
    per_step = cell_record(cell).gates * 2 * H + 3 * H  # a layer's input projection, gates, state (and cell) per step
    activations = (N * S * (E + L * directions * per_step) + N * T * (decoder_input + L * per_step)
                   + attention_cache + logits)
    return _Counts(encoder + decoder, 2 * activations)


def estimate_seq2seq_memory(config: dict, *, batch_size: int, num_steps) -> MemoryEstimate:
    """The memory of training the model ``build_seq2seq(**config)`` builds, estimated without building it.

    ``batch_size``: pairs per batch; ``num_steps``: ``(source steps, target steps)``. The parameter count is
    exact (``sum(p.size for p in model.parameters())``, for the scores npseq has); their bytes count four
    copies (the parameters, their gradients and Adam's two moments) in the config's ``dtype``
    (default: :data:`npseq.backend.default_dtype`). The activations are what one step keeps for its backward
    pass and the gradients that flow back through them: recurrent layers' caches per step, attention weights
    (an additive score's ``(N, T, S, H)`` features, a Transformer's ``(N, heads, T, S)`` weights per block), the
    logits and their softmax, doubled for the backward. Raises what :func:`check_seq2seq_config` raises for a
    bad config. Pass the result to :func:`npseq._checks.check_memory`.
    """
    check_seq2seq_config(**config)
    defaults = {name: parameter.default for name, parameter in inspect.signature(build_seq2seq).parameters.items()
                if parameter.default is not inspect.Parameter.empty}
    settings = {**defaults, **config}
    batch_size = check_count("batch_size", batch_size)
    src_steps, tgt_steps = (check_count("num_steps", steps) for steps in num_steps)
    counts = _seq2seq_counts(settings, batch_size, src_steps, tgt_steps)
    itemsize = backend.numpy.dtype(settings["dtype"] or backend.default_dtype).itemsize
    return MemoryEstimate(counts.parameters, 4 * counts.parameters * itemsize, counts.activations * itemsize)
