"""Decoding: turn a trained encoder–decoder's step function into output sequences."""
from __future__ import annotations

import dataclasses
from typing import Any

from . import backend
from ._checks import check_ndim
from .data import preprocess_nmt
from .functional import log_softmax_forward
from .grad_mode import no_grad


@dataclasses.dataclass
class SearchResult:
    """One decoded sequence.

    ``tokens``: output ids, without ``<bos>``; ``<eos>`` is dropped (decoding stops there).
    ``score``: the search's ranking score (greedy: the log-probability
    :math:`\\log P(y) = \\sum_t \\log p(y_t \\mid y_{<t}, x)`, ``<eos>`` included when produced).
    ``log_prob``: that log-probability. ``attention``: ``(len(tokens) [+1 for <eos>], S)``
    host array of each step's attention weights, or ``None`` for a decoder without attention.
    """
    tokens: list
    score: float
    log_prob: float
    attention: Any = None


def _source_batch(src):
    """``src`` ``(S,)`` ids as a batch of one on the current backend, with its valid length."""
    src = backend.asarray(src)
    check_ndim("src", src, 1, "(S,)")
    return src[None, :], backend.xp.asarray([src.shape[0]], dtype=src.dtype)


def greedy_search(model, src, *, bos_id: int, eos_id: int, max_len: int) -> SearchResult:
    """Pick the most probable token at every step: :math:`y_t = \\arg\\max_v p(v \\mid y_{<t}, x)`.

    Stops at ``<eos>`` or after ``max_len`` steps. Runs under ``no_grad`` and in
    eval mode (the model's mode is restored afterwards).

    Args:
        model: an ``EncoderDecoder``.
        src: ``(S,)`` source token ids (a sentence, ``<eos>`` included, unpadded).

    Returns:
        A :class:`SearchResult`.
    """
    training = model.training
    model.eval()
    try:
        with no_grad():
            src_batch, valid_len = _source_batch(src)
            state = model.encode(src_batch, valid_len)
            token = backend.xp.asarray([bos_id])
            tokens, weights, log_prob = [], [], 0.0
            for _ in range(max_len):
                logits, state, step_weights = model.decoder.step(token, state)
                log_p, _ = log_softmax_forward(logits)
                token = log_p.argmax(axis=-1)
                best = int(token[0])
                log_prob += float(log_p[0, best])
                if step_weights is not None:
                    weights.append(backend.to_numpy(step_weights[0]))
                if best == eos_id:
                    break
                tokens.append(best)
    finally:
        model.train(training)
    attention = backend.numpy.stack(weights) if weights else None
    return SearchResult(tokens, log_prob, log_prob, attention)


def translate(model, sentence: str, src_vocab, tgt_vocab, max_len: int, method: str = "greedy", **options):
    """Translate one sentence: normalise and tokenise as the training data, search, detokenise.

    The source (with ``<eos>``) is cut to ``max_len`` tokens, as d2l's ``predict_seq2seq`` does.
    Returns ``(text, result)`` with ``result`` the :class:`SearchResult`.
    """
    searches = {"greedy": greedy_search}
    if method not in searches:
        raise ValueError(f"method: expected one of {tuple(searches)}, got {method!r}")
    words = [w for w in preprocess_nmt(sentence).split(" ") if w]
    ids = (src_vocab[words] + [src_vocab["<eos>"]])[:max_len]
    src = backend.numpy.asarray(ids, dtype=backend.numpy.int64)
    result = searches[method](model, src, bos_id=tgt_vocab["<bos>"], eos_id=tgt_vocab["<eos>"],
                              max_len=max_len, **options)
    return " ".join(tgt_vocab.to_tokens(result.tokens)), result
