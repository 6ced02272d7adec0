"""Decoding: turn a trained encoder–decoder's step function into output sequences.

Three searches over the same model, from cheapest to exact:

* :func:`greedy_search` takes the most probable token at every step;
* :func:`beam_search` keeps the ``k`` most probable prefixes at every step;
* :func:`exhaustive_search` scores every sequence up to ``max_len`` (tiny vocabularies only:
  it is the reference that beam search is tested against).

Notation: the model gives :math:`\\log p(y_t \\mid y_{<t}, x)` at each step, an output
:math:`y = (y_1, \\ldots, y_L)` has :math:`\\log P(y) = \\sum_{t=1}^{L} \\log p(y_t \\mid y_{<t}, x)`,
and **L counts the generated tokens, <eos> included when it is produced** (d2l's "length of the
output sequence"); a hypothesis cut at ``max_len`` without ``<eos>`` has ``L = max_len``. ``L`` is
also the number of decoder steps behind the output, hence the number of attention rows.
Beam and exhaustive search rank complete hypotheses by the length-normalised score

.. math::
    \\text{score}(y) = \\frac{\\log P(y)}{\\operatorname{lp}(L)}, \\qquad
    \\operatorname{lp}(L) = L^{\\alpha} \\ (\\texttt{"d2l"}) \\quad\\text{or}\\quad
    \\operatorname{lp}(L) = \\Big(\\frac{5 + L}{6}\\Big)^{\\alpha} \\ (\\texttt{"gnmt"}, \\text{Wu et al. 2016}).

Every search runs under ``no_grad`` (nothing is cached for a backward) and in eval mode
(dropout off); the model's training mode is restored afterwards.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any, NamedTuple

from . import backend
from ._checks import check_count, check_ndim, check_token_ids, check_valid_lens
from .data import build_array_nmt, source_tokens, target_text
from .errors import InvalidTypeError, InvalidValueError
from .functional import log_softmax_forward
from .grad_mode import no_grad
from .metrics import corpus_bleu, exact_match
from .models.seq2seq import reorder_state

LENGTH_PENALTIES = ("d2l", "gnmt")
# An explicit cap on a search's length: max_len bounds the decoder steps, so without a cap one typo
# asks for hours. (Beam size has none here: a beam of k >= V**max_len is exhaustive search, which
# teaching code compares against; the command line caps --beam.)
MAX_DECODE_LEN = 1024


@dataclasses.dataclass
class SearchResult:
    """One decoded sequence.

    ``tokens``: output ids, without ``<bos>``; ``<eos>`` is dropped (decoding stops there).
    ``score``: the search's ranking score (greedy: the log-probability; beam and exhaustive:
    the length-normalised :func:`sequence_score`).
    ``log_prob``: :math:`\\log P(y) = \\sum_t \\log p(y_t \\mid y_{<t}, x)`, ``<eos>`` included when produced.
    ``attention``: ``(L, S)`` host array of each step's attention weights, or ``None`` for a
    decoder without attention. ``length``: ``L``, the decoder steps behind the output
    (``len(tokens) + 1`` when it ended with ``<eos>``, else ``len(tokens)``).
    ``trace``: the :class:`BeamTrace` of ``beam_search(..., trace=True)``, else ``None``.
    """
    tokens: list
    score: float
    log_prob: float
    attention: Any = None
    length: int = 0
    trace: Any = None


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """A complete output that beam or exhaustive search ranks.

    ``tokens``: the generated ids, ``<eos>`` included when produced (so ``len(tokens)`` is ``L``).
    ``score``: the normalised :func:`sequence_score`; ``log_prob``: :math:`\\log P(y)`.
    ``attention``: ``(L, S)`` host array, or ``None``. ``status``: ``"finished"`` (ended with
    ``<eos>``) or ``"cut"`` (reached ``max_len``).
    """
    tokens: list
    score: float
    log_prob: float
    attention: Any
    status: str

    def result(self, trace=None) -> SearchResult:
        """The :class:`SearchResult` of this hypothesis: ``<eos>`` dropped from the tokens, ``L`` kept."""
        output = self.tokens[:-1] if self.status == "finished" else self.tokens
        return SearchResult(output, self.score, self.log_prob, self.attention, len(self.tokens), trace)


def length_penalty_factor(length: int, alpha: float, length_penalty: str = "d2l") -> float:
    """:math:`\\operatorname{lp}(L)`: ``L ** alpha`` (``"d2l"``) or ``((5 + L) / 6) ** alpha`` (``"gnmt"``)."""
    return length ** alpha if length_penalty == "d2l" else ((5 + length) / 6) ** alpha


def sequence_score(log_prob: float, length: int, alpha: float, length_penalty: str = "d2l") -> float:
    """The normalised score :math:`\\log P(y) / \\operatorname{lp}(L)` that beam and exhaustive search rank by."""
    return log_prob / length_penalty_factor(length, alpha, length_penalty)


def _check_special_ids(model, bos_id, eos_id) -> None:
    """``bos_id`` is an id of the model's target vocabulary (it is fed to the decoder); ``eos_id`` an int
    (one outside the vocabulary is never produced: the search then runs to ``max_len``)."""
    vocab_size = model.decoder.vocab_size
    if isinstance(bos_id, bool) or not isinstance(bos_id, (int, backend.numpy.integer)) \
            or not 0 <= bos_id < vocab_size:
        raise InvalidValueError(f"bos_id: expected a token id in [0, {vocab_size - 1}] (the target vocabulary), "
                                f"got {bos_id!r}")
    if isinstance(eos_id, bool) or not isinstance(eos_id, (int, backend.numpy.integer)):
        raise InvalidTypeError(f"eos_id: expected an int token id, got {type(eos_id).__name__} {eos_id!r}")


def _check_ranked_search(model, max_len, bos_id, eos_id, alpha, length_penalty) -> None:
    """The arguments beam and exhaustive search share: the length cap, the special ids, the scoring."""
    check_count("max_len", max_len, maximum=MAX_DECODE_LEN)
    _check_scoring(alpha, length_penalty)
    _check_special_ids(model, bos_id, eos_id)


def _check_scoring(alpha, length_penalty) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha):
        raise InvalidValueError(f"alpha: expected a finite number, got {alpha!r}")
    if length_penalty not in LENGTH_PENALTIES:
        raise InvalidValueError(f"length_penalty: expected one of {LENGTH_PENALTIES}, got {length_penalty!r}")


def _source_batch(model, src):
    """``src`` ``(S,)`` ids as a batch of one on the current backend, with its valid length.

    The ids are checked against the model's vocabulary on the host, before the copy
    (on a GPU the engine itself does not read values).
    """
    host_src = backend.to_numpy(src)
    check_ndim("src", host_src, 1, "(S,)")
    if host_src.size == 0:
        raise InvalidValueError("src: expected at least one token id (e.g. <eos>), got an empty array")
    check_token_ids("src", host_src, model.encoder.vocab_size)
    src = backend.asarray(host_src)
    return src[None, :], backend.xp.asarray([src.shape[0]], dtype=src.dtype)


def _padded_source_batch(model, src, src_valid_lens):
    """``src`` ``(N, S)`` padded ids and ``src_valid_lens`` ``(N,)``, checked on the host, on the current backend."""
    src, src_valid_lens = backend.to_numpy(src), backend.to_numpy(src_valid_lens)
    check_ndim("src", src, 2, "(N, S)")
    check_token_ids("src", src, model.encoder.vocab_size)
    check_valid_lens("src_valid_lens", src_valid_lens, src.shape[:1], src.shape[1])
    return backend.asarray(src), backend.asarray(src_valid_lens)


@contextlib.contextmanager
def _inference(model):
    """Eval mode and ``no_grad`` for the body; the model's training mode is restored after."""
    training = model.training
    model.eval()
    try:
        with no_grad():
            yield
    finally:
        model.train(training)


def _log_probs(model, tokens, state):
    """One batched decoder step: ``log p(. | prefix)`` ``(n, V)``, the next state, weights ``(n, S)`` or None."""
    logits, state, weights = model.decoder.step(tokens, state)
    log_p, _ = log_softmax_forward(logits)
    return log_p, state, weights


def greedy_search(model, src, *, bos_id: int, eos_id: int, max_len: int) -> SearchResult:
    """Pick the most probable token at every step: :math:`y_t = \\arg\\max_v p(v \\mid y_{<t}, x)`.

    Stops at ``<eos>`` or after ``max_len`` steps. The score is :math:`\\log P(y)` itself
    (no length normalisation: greedy compares no hypotheses of different lengths).
    Runs under ``no_grad`` and in eval mode (the model's mode is restored afterwards).

    Args:
        model: an ``EncoderDecoder``.
        src: ``(S,)`` source token ids (a sentence, ``<eos>`` included, unpadded).

    Returns:
        A :class:`SearchResult` with ``attention`` ``(L, S)`` (or ``None``).
    """
    check_count("max_len", max_len, maximum=MAX_DECODE_LEN)
    _check_special_ids(model, bos_id, eos_id)
    with _inference(model):
        state = model.encode(*_source_batch(model, src))
        token = backend.xp.asarray([bos_id])
        tokens, weights, log_prob = [], [], 0.0
        for length in range(1, max_len + 1):  # noqa: B007 (the steps run are read after the loop)
            log_p, state, step_weights = _log_probs(model, token, state)
            token = log_p.argmax(axis=-1)
            best = int(token[0])
            log_prob += float(log_p[0, best])
            if step_weights is not None:
                weights.append(backend.to_numpy(step_weights[0]))
            if best == eos_id:
                break
            tokens.append(best)
    attention = backend.numpy.stack(weights) if weights else None
    return SearchResult(tokens, log_prob, log_prob, attention, length)


def greedy_search_batch(model, src, src_valid_lens, *, bos_id: int, eos_id: int, max_len: int) -> list:
    """:func:`greedy_search` for a whole padded batch at once (evaluation of test sets).

    Every sentence takes the argmax at each step, exactly as :func:`greedy_search` would
    alone (padding never reaches the encoder state or the attention); the batch runs
    until every sentence has produced ``<eos>`` or ``max_len`` tokens: one decoder
    call per step for the whole batch.

    Args:
        model: an ``EncoderDecoder``.
        src: ``(N, S)`` padded source ids; src_valid_lens: ``(N,)``.

    Returns:
        A list of ``N`` token-id lists (``<eos>`` and what follows dropped).
    """
    check_count("max_len", max_len, maximum=MAX_DECODE_LEN)
    _check_special_ids(model, bos_id, eos_id)
    src, src_valid_lens = _padded_source_batch(model, src, src_valid_lens)
    with _inference(model):
        xp = backend.xp
        state = model.encode(src, src_valid_lens)
        token = xp.full(src.shape[0], bos_id, dtype=src.dtype)
        done = xp.zeros(src.shape[0], dtype=bool)
        steps = []
        for _ in range(max_len):
            log_p, state, _ = _log_probs(model, token, state)
            token = log_p.argmax(axis=-1)
            steps.append(token)
            done |= token == eos_id
            if bool(done.all()):
                break
    outputs = backend.to_numpy(xp.stack(steps, axis=1)).tolist()
    return [row[:row.index(eos_id)] if eos_id in row else row for row in outputs]


# ----------------------------------------------------------------- beam trace
@dataclasses.dataclass
class TraceRow:
    """One hypothesis in a :class:`BeamTrace`.

    ``tokens``: the generated tokens (ids, or strings when a vocabulary was given),
    ``<eos>`` shown when produced. ``status``: ``"kept"`` (stays in the beam),
    ``"finished"`` (ended with ``<eos>``), ``"cut"`` (reached ``max_len``) or
    ``"dropped"`` (a candidate ranked just below the beam).
    """
    tokens: list
    log_prob: float
    score: float
    status: str

    @property
    def length(self) -> int:
        return len(self.tokens)


@dataclasses.dataclass
class TraceStep:
    """Step ``t`` of a beam search: the candidates ranked by :math:`\\log P`, best first.

    ``num_candidates`` is (hypotheses in the beam) × ``V``; ``rows`` are the ``k`` selected
    ones and, after them, up to ``k`` of the best dropped ones.
    """
    step: int
    num_hypotheses: int
    num_candidates: int
    rows: list


@dataclasses.dataclass
class BeamTrace:
    """The beam, step by step, and the finished hypotheses ranked by score (best first).

    ``print(trace)`` renders one table per step and a final ranking.
    """
    beam_size: int
    alpha: float
    length_penalty: str
    steps: list = dataclasses.field(default_factory=list)
    finished: list = dataclasses.field(default_factory=list)

    def _formula(self) -> str:
        return (f"log P / L**{self.alpha:g}" if self.length_penalty == "d2l"
                else f"log P / ((5 + L) / 6)**{self.alpha:g}")

    def __str__(self) -> str:
        def table(rows, last_column):
            texts = [" ".join(str(token) for token in row.tokens) for row in rows]
            width = max([len("hypothesis")] + [len(text) for text in texts])
            lines = [f"  {'#':>3}  {'hypothesis':<{width}}  {'L':>3}  {'log P':>9}  {'score':>9}  {last_column}"]
            for rank, (row, text) in enumerate(zip(rows, texts), 1):
                lines.append(f"  {rank:>3}  {text:<{width}}  {row.length:>3}  {row.log_prob:>9.4f}  "
                             f"{row.score:>9.4f}  {row.status}")
            return lines

        lines = [f"beam search, k={self.beam_size}, score = {self._formula()} ({self.length_penalty}); "
                 f"candidates ranked by log P"]
        for step in self.steps:
            plural = "hypothesis" if step.num_hypotheses == 1 else "hypotheses"
            lines.append(f"step {step.step}: {step.num_hypotheses} {plural} x V = {step.num_candidates} candidates")
            lines += table(step.rows, "status")
        lines.append("finished hypotheses, ranked by score:")
        lines += table(self.finished, "status")
        return "\n".join(lines)


# ---------------------------------------------------------------- beam search
class _Beam(NamedTuple):
    """The prefixes in the beam, which the next step extends."""
    last: Any       # (n,) on the device: each prefix's last token, the decoder's next input
    log_probs: Any  # (n,) on the device, float64 to sum many steps: log P of each prefix
    prefixes: Any   # (n, t - 1) ints on the host (the beam is small): the tokens generated so far
    attention: Any  # (n, t - 1, S) on the device: each prefix's attention rows; None before the first step
    #                 and for a decoder without attention


class _Ranked(NamedTuple):
    """The best of one step's candidates, best first, on the host."""
    parents: Any    # (rows,) the prefix in the beam each candidate extends
    tokens: Any     # (rows,) the token it appends
    log_probs: list  # log P of each, Python floats
    sequences: Any  # (rows, t) the prefix and the token
    count: int      # n·V: how many candidates there were


def _ranked_candidates(beam: _Beam, log_p, rows: int) -> _Ranked:
    """The ``rows`` best extensions of the beam's prefixes by one token, ranked by
    :math:`\\log P(y_{<t}, v) = \\log P(y_{<t}) + \\log p(v \\mid y_{<t}, x)`; ties go to the lower
    (parent, token) index. ``log_p`` ``(n, V)``. The ranking runs on the device, the ranked rows
    come back to the host."""
    xp = backend.get_array_module(log_p)
    total = (beam.log_probs[:, None] + log_p).ravel()
    order = xp.argsort(-total, kind="stable")[:min(total.size, rows)]
    log_probs = backend.to_numpy(total[order]).tolist()
    order = backend.to_numpy(order)
    parents, tokens = order // log_p.shape[1], order % log_p.shape[1]
    sequences = backend.numpy.concatenate([beam.prefixes[parents], tokens[:, None]], axis=1)
    return _Ranked(parents, tokens, log_probs, sequences, total.size)


def _status(rank: int, token: int, selected: int, t: int, max_len: int, eos_id: int) -> str:
    """What becomes of the candidate ranked ``rank`` (from 0) at step ``t``: ``"dropped"`` below the
    ``selected`` best, else ``"finished"`` with ``<eos>``, ``"cut"`` at ``max_len``, or ``"kept"``."""
    if rank >= selected:
        return "dropped"
    return "finished" if token == eos_id else "cut" if t == max_len else "kept"


def _attention_of(beam: _Beam, weights, parents):
    """The attention rows ``(n', t, S)`` of the candidates extending ``parents``: each parent's rows,
    then this step's weights ``(n, S)``; None for a decoder without attention. On the device."""
    if weights is None:
        return None
    xp = backend.get_array_module(weights)
    rows = xp.asarray(parents)
    step_rows = weights.take(rows, axis=0)[:, None]
    return step_rows if beam.attention is None else xp.concatenate([beam.attention.take(rows, axis=0), step_rows],
                                                                   axis=1)


def _next_beam(ranked: _Ranked, alive: list, attention) -> _Beam:
    """The candidates ``alive`` (ranks) as the next beam, their arrays moved back to the device."""
    xp = backend.xp
    return _Beam(xp.asarray(ranked.tokens[alive]), xp.asarray([ranked.log_probs[i] for i in alive]),
                 ranked.sequences[alive], None if attention is None else attention.take(xp.asarray(alive), axis=0))


def _shown(ids, tgt_vocab):
    """Token ids as Python ints, or as strings when a vocabulary is given (for the trace)."""
    ids = [int(i) for i in ids]
    return ids if tgt_vocab is None else tgt_vocab.to_tokens(ids)


def _trace_step(t: int, beam: _Beam, ranked: _Ranked, statuses: list, alpha: float, length_penalty: str,
                tgt_vocab) -> TraceStep:
    """Step ``t`` of a :class:`BeamTrace`: every ranked candidate with its score and status."""
    return TraceStep(t, beam.prefixes.shape[0], ranked.count, [
        TraceRow(_shown(sequence, tgt_vocab), log_prob, sequence_score(log_prob, t, alpha, length_penalty), status)
        for sequence, log_prob, status in zip(ranked.sequences, ranked.log_probs, statuses)])


def _trace_ranking(finished: list, tgt_vocab) -> list:
    """The finished hypotheses of a :class:`BeamTrace`, best score first."""
    ranked = sorted(finished, key=lambda hypothesis: -hypothesis.score)
    return [TraceRow(_shown(h.tokens, tgt_vocab), h.log_prob, h.score, h.status) for h in ranked]


def beam_search(model, src, *, bos_id: int, eos_id: int, max_len: int, beam_size: int, alpha: float = 0.75,
                length_penalty: str = "d2l", trace: bool = False, tgt_vocab=None) -> SearchResult:
    """Keep the ``k = beam_size`` most probable prefixes at every step (d2l's beam search).

    At step ``t`` every prefix :math:`y_{<t}` in the beam is extended by every token
    :math:`v`, giving ``n·V`` candidates with
    :math:`\\log P(y_{<t}, v) = \\log P(y_{<t}) + \\log p(v \\mid y_{<t}, x)`. The ``k`` candidates
    with the highest :math:`\\log P` are selected; those ending in ``<eos>`` are finished
    and leave the beam (which shrinks), the others stay. At ``t = max_len`` every
    selected candidate is finished ("cut"). The search stops when the beam is empty,
    and returns the finished hypothesis with the best normalised score
    :math:`\\log P(y) / \\operatorname{lp}(L)` (see the module docstring; ``L`` counts
    ``<eos>``). With ``k = 1`` this is greedy search; with ``k >= V ** max_len`` it
    keeps every candidate and equals :func:`exhaustive_search`.

    The whole beam goes through the decoder as one batch: one ``decoder.step`` per
    time step, the surviving hypotheses' states gathered with ``reorder_state``.
    Ties in :math:`\\log P` go to the lower (parent, token) index, as ``argmax`` does.

    Args:
        model: an ``EncoderDecoder``.
        src: ``(S,)`` source token ids (a sentence, ``<eos>`` included, unpadded).
        max_len: the most tokens generated (``<eos>`` included), at most :data:`MAX_DECODE_LEN`.
        beam_size: ``k``, at least 1.
        alpha: the length-penalty exponent (0: rank by :math:`\\log P` alone).
        length_penalty: ``"d2l"`` (:math:`L^\\alpha`) or ``"gnmt"`` (:math:`((5 + L)/6)^\\alpha`).
        trace: also record a :class:`BeamTrace` in ``result.trace``.
        tgt_vocab: a ``Vocab`` to show the trace's tokens as strings (ids otherwise).

    Returns:
        A :class:`SearchResult` with ``attention`` ``(L, S)`` (or ``None``).
    """
    _check_ranked_search(model, max_len, bos_id, eos_id, alpha, length_penalty)
    check_count("beam_size", beam_size)
    record = BeamTrace(beam_size, alpha, length_penalty) if trace else None
    finished = []  # Hypothesis records, in the order they finish
    src_batch, valid_len = _source_batch(model, src)
    xp = backend.get_array_module(src_batch)
    with _inference(model):
        state = model.encode(src_batch, valid_len)
        beam = _Beam(last=xp.asarray([bos_id]), log_probs=xp.zeros(1),
                     prefixes=backend.numpy.zeros((1, 0), dtype=backend.numpy.int64), attention=None)
        for t in range(1, max_len + 1):
            log_p, state, weights = _log_probs(model, beam.last, state)
            # the k best candidates are selected; a trace also shows up to k dropped ones after them
            ranked = _ranked_candidates(beam, log_p, 2 * beam_size if trace else beam_size)
            selected = min(beam_size, ranked.count)
            statuses = [_status(i, token, selected, t, max_len, eos_id) for i, token in enumerate(ranked.tokens)]
            attention = _attention_of(beam, weights, ranked.parents[:selected])
            for i in range(selected):
                if statuses[i] != "kept":  # finished with <eos>, or cut at max_len
                    rows = None if attention is None else backend.to_numpy(attention[i])
                    score = sequence_score(ranked.log_probs[i], t, alpha, length_penalty)
                    finished.append(Hypothesis(ranked.sequences[i].tolist(), score, ranked.log_probs[i], rows,
                                               statuses[i]))
            if record is not None:
                record.steps.append(_trace_step(t, beam, ranked, statuses, alpha, length_penalty, tgt_vocab))
            alive = [i for i in range(selected) if statuses[i] == "kept"]
            if not alive:
                break
            state = reorder_state(state, xp.asarray(ranked.parents[alive]))
            beam = _next_beam(ranked, alive, attention)
    if record is not None:
        record.finished = _trace_ranking(finished, tgt_vocab)
    # max() keeps the first of equal scores: the earlier finished, the more probable.
    return max(finished, key=lambda hypothesis: hypothesis.score).result(record)


# -------------------------------------------------------- batched beam search
def beam_search_batch(model, src, src_valid_lens, *, bos_id: int, eos_id: int, max_len: int, beam_size: int,
                      alpha: float = 0.75, length_penalty: str = "d2l") -> list:
    """:func:`beam_search` for a whole padded batch at once (many sentences to translate).

    Every sentence keeps its own beam of at most ``k = beam_size`` prefixes and ranks its own
    ``n·V`` candidates by :math:`\\log P(y_{<t}, v) = \\log P(y_{<t}) + \\log p(v \\mid y_{<t}, x)`
    exactly as :func:`beam_search` does (ties to the lower (parent, token) index); the beams of
    all sentences are the rows of one batch, one ``decoder.step`` per time step for all of
    them, and a sentence whose beam is empty leaves the batch. With ``k = 1`` and
    ``alpha = 0`` this is :func:`greedy_search`, score included: one hypothesis is never
    compared, and :math:`\\operatorname{lp}(L) = 1`.

    Result ``i`` is what ``beam_search(model, src[i, :src_valid_lens[i]], ...)`` returns
    (without a trace), up to rounding: a product over a batch may round in the last bit
    otherwise than over one sentence, which can only change an output at an exact tie.

    Args:
        model: an ``EncoderDecoder``.
        src: ``(N, S)`` padded source ids; src_valid_lens: ``(N,)``.
        max_len, beam_size, alpha, length_penalty: as for :func:`beam_search`.

    Returns:
        A list of ``N`` :class:`SearchResult`, ``attention`` ``(L, S_i)`` cut to the sentence's
        own length ``S_i = src_valid_lens[i]`` (or ``None``).
    """
    _check_ranked_search(model, max_len, bos_id, eos_id, alpha, length_penalty)
    check_count("beam_size", beam_size)
    src, src_valid_lens = _padded_source_batch(model, src, src_valid_lens)
    host_lens = backend.to_numpy(src_valid_lens)
    np = backend.numpy
    xp = backend.get_array_module(src)
    finished = [[] for _ in range(src.shape[0])]  # each sentence's Hypothesis records, in the order they finish
    with _inference(model):
        state = model.encode(src, src_valid_lens)
        beam = _Beam(last=xp.full(src.shape[0], bos_id, dtype=src.dtype), log_probs=xp.zeros(src.shape[0]),
                     prefixes=np.zeros((src.shape[0], 0), dtype=np.int64), attention=None)
        owner = np.arange(src.shape[0])  # the sentence of each row of the beam, rows grouped by sentence
        for t in range(1, max_len + 1):
            log_p, state, weights = _log_probs(model, beam.last, state)
            ranked = _ranked_per_sentence(beam, owner, log_p, beam_size)
            ended = (ranked.tokens == eos_id) | (t == max_len)
            attention = _attention_of(beam, weights, ranked.parents)
            for i in np.flatnonzero(ended):
                sentence = ranked.owner[i]
                rows = None if attention is None else backend.to_numpy(attention[i, :, :host_lens[sentence]])
                score = sequence_score(ranked.log_probs[i], t, alpha, length_penalty)
                finished[sentence].append(Hypothesis(ranked.sequences[i].tolist(), score, ranked.log_probs[i],
                                                     rows, "finished" if ranked.tokens[i] == eos_id else "cut"))
            alive = np.flatnonzero(~ended).tolist()
            if not alive:
                break
            state = reorder_state(state, xp.asarray(ranked.parents[alive]))
            beam, owner = _next_beam(ranked, alive, attention), ranked.owner[alive]
    return [max(hypotheses, key=lambda hypothesis: hypothesis.score).result() for hypotheses in finished]


class _RankedRows(NamedTuple):
    """The selected candidates of every sentence of a batch, grouped by sentence, best first, on the host."""
    owner: Any      # (rows,) the sentence each candidate belongs to
    parents: Any    # (rows,) the row of the beam it extends
    tokens: Any     # (rows,) the token it appends
    log_probs: list  # log P of each, Python floats
    sequences: Any  # (rows, t) the prefix and the token


def _ranked_per_sentence(beam: _Beam, owner, log_p, beam_size: int) -> _RankedRows:
    """Each sentence's ``beam_size`` best candidates, ranked as :func:`_ranked_candidates` ranks one beam's.

    The rows of sentence ``s`` (its beam, ``n_s <= k`` prefixes) go into a ``(sentences, n_max, V)``
    block, padded with :math:`-\\infty`, and each sentence's ``n_max·V`` candidates are sorted at
    once; a padding row sorts after the sentence's own rows, so ``min(k, n_s·V)`` are selected."""
    np = backend.numpy
    xp = backend.get_array_module(log_p)
    sentences, first_row, widths = np.unique(owner, return_index=True, return_counts=True)
    place = np.arange(owner.size) - np.repeat(first_row, widths)  # each row's rank in its sentence's beam
    vocab = log_p.shape[1]
    total = xp.full((sentences.size, widths.max(), vocab), -xp.inf)
    total[xp.asarray(np.repeat(np.arange(sentences.size), widths)), xp.asarray(place)] = (
        beam.log_probs[:, None] + log_p)
    total = total.reshape(sentences.size, -1)
    order = xp.argsort(-total, axis=1, kind="stable")[:, :beam_size]
    log_probs = backend.to_numpy(xp.take_along_axis(total, order, axis=1))
    order = backend.to_numpy(order)
    sentence_of, rank = np.nonzero(np.arange(order.shape[1]) < np.minimum(beam_size, widths * vocab)[:, None])
    parents = first_row[sentence_of] + order[sentence_of, rank] // vocab
    tokens = order[sentence_of, rank] % vocab
    sequences = np.concatenate([beam.prefixes[parents], tokens[:, None]], axis=1)
    return _RankedRows(sentences[sentence_of], parents, tokens, log_probs[sentence_of, rank].tolist(), sequences)


# ---------------------------------------------------------- exhaustive search
def exhaustive_search(model, src, *, bos_id: int, eos_id: int, max_len: int, alpha: float = 0.75,
                      length_penalty: str = "d2l", max_space: int = 10 ** 6) -> SearchResult:
    """Score every output up to ``max_len`` tokens and return the best: the exact optimum.

    The outputs are every sequence ending in ``<eos>`` at some step ``L <= max_len``
    and every sequence of ``max_len`` tokens without ``<eos>`` (cut), each ranked by
    :math:`\\log P(y) / \\operatorname{lp}(L)` as in :func:`beam_search`; ties go to the
    shorter output, then to the lower token ids. The prefixes of length ``t`` (those
    without ``<eos>``, :math:`(V-1)^t` of them) go through the decoder as one batch, so
    the cost is ``max_len`` decoder steps over at most :math:`V^{max\\_len - 1}` rows.

    Args:
        model: an ``EncoderDecoder``.
        src: ``(S,)`` source token ids.
        max_len, alpha, length_penalty: as in :func:`beam_search`.
        max_space: refuse (``ValueError``) when :math:`V^{max\\_len}`, the bound on the number
            of outputs, exceeds it.

    Returns:
        A :class:`SearchResult` with ``attention`` ``(L, S)`` (or ``None``).
    """
    _check_ranked_search(model, max_len, bos_id, eos_id, alpha, length_penalty)
    check_count("max_space", max_space)
    vocab_size = model.decoder.vocab_size
    space = vocab_size ** max_len
    if space > max_space:
        raise InvalidValueError(f"max_len: exhaustive search over |V|**max_len = {vocab_size}**{max_len} = {space} "
                                f"sequences exceeds max_space = {max_space}; lower max_len or raise max_space")
    best = None  # (score, log_prob, tokens, attention, length)
    with _inference(model):
        src_batch, valid_len = _source_batch(model, src)
        xp = backend.get_array_module(src_batch)
        state = model.encode(src_batch, valid_len)
        last = xp.asarray([bos_id])
        cum = xp.zeros(1)
        prefixes = xp.zeros((1, 0), dtype=last.dtype)
        attention = None
        is_eos = xp.arange(vocab_size) == eos_id
        continuing = xp.nonzero(~is_eos)[0]
        for t in range(1, max_len + 1):
            log_p, state, weights = _log_probs(model, last, state)
            total = cum[:, None] + log_p
            # At the last step every extension is an output; before it, only those ending in <eos>.
            columns = xp.arange(vocab_size) if t == max_len else xp.nonzero(is_eos)[0]
            if columns.size:
                ends = total[:, columns]
                flat = int(ends.argmax())
                log_prob = float(ends.ravel()[flat])
                score = sequence_score(log_prob, t, alpha, length_penalty)
                if best is None or score > best.score:
                    row, column = divmod(flat, int(columns.size))
                    token = int(columns[column])
                    tokens = backend.to_numpy(prefixes[row]).tolist() + [token]
                    rows = None
                    if weights is not None:
                        step_row = weights[row][None]
                        rows = backend.to_numpy(step_row if attention is None
                                                else xp.concatenate([attention[row], step_row]))
                    best = Hypothesis(tokens, score, log_prob, rows, "finished" if token == eos_id else "cut")
            if t == max_len:
                break
            parents = xp.repeat(xp.arange(total.shape[0]), continuing.size)
            last = xp.tile(continuing, total.shape[0])
            cum = total[:, continuing].ravel()
            prefixes = xp.concatenate([prefixes[parents], last[:, None]], axis=1)
            if weights is not None:
                step_rows = weights[parents][:, None]
                attention = step_rows if attention is None else xp.concatenate([attention[parents], step_rows], 1)
            state = reorder_state(state, parents)
    return best.result()


SEARCHES = {"greedy": greedy_search, "beam": beam_search, "exhaustive": exhaustive_search}


def attention_rows(out_tokens, attention) -> list:
    """Row labels of an attention map ``(L, S)``: the output tokens, then ``<eos>`` if the search produced it
    (``L`` counts ``<eos>``; see the module docstring). ``attention`` ``None``: the output tokens."""
    rows = list(out_tokens)
    return rows if attention is None else rows + ["<eos>"] * (len(attention) - len(rows))


@dataclasses.dataclass
class Translation:
    """One translated sentence (returned by :func:`translate`).

    ``text``: the detokenised output. ``source_tokens``: the source the model read (cut, ``<eos>``
    included). ``output_tokens``: the output tokens (``<eos>`` dropped). ``result``: the search's
    :class:`SearchResult` (score, attention ``(L, S)``, trace).
    """
    text: str
    source_tokens: list
    output_tokens: list
    result: SearchResult

    @property
    def attention_rows(self) -> list:
        """Row labels of ``result.attention``: see :func:`attention_rows`."""
        return attention_rows(self.output_tokens, self.result.attention)


@backend.with_blas_threads  # a small model on one BLAS thread (see backend.blas_threads)
def translate(model, sentence: str, src_vocab, tgt_vocab, max_len: int, method: str = "greedy", *,
              task: str | None = None, src_max_len: int | None = None, **options) -> Translation:
    """Translate one raw sentence: tokenise as the training data, cut, search, detokenise.

    1. tokens = :func:`~npseq.data.source_tokens` ``(sentence, task)`` (a built-in task's tokeniser,
       or d2l's normalisation and word split), then ``<eos>``;
    2. the source is cut to ``src_max_len`` tokens (default ``max_len``), the length the model was
       trained on, as d2l's ``predict_seq2seq`` does;
    3. ``method`` is ``"greedy"``, ``"beam"`` or ``"exhaustive"``; ``options`` go to that search
       (e.g. ``beam_size=3, alpha=0.75, trace=True`` for beam search, whose trace then shows words);
    4. the output ids become tokens and text (:func:`~npseq.data.target_text`).

    Raises :class:`~npseq.errors.InvalidValueError` for a sentence without a word.
    """
    if method not in SEARCHES:
        raise InvalidValueError(f"method: expected one of {tuple(SEARCHES)}, got {method!r}")
    if method == "beam":
        options.setdefault("tgt_vocab", tgt_vocab)
    words = source_tokens(sentence, task)
    if not words:
        raise InvalidValueError("sentence: expected at least one word, got an empty line")
    ids = (src_vocab[words] + [src_vocab["<eos>"]])[:max(src_max_len or max_len, 1)]
    src = backend.numpy.asarray(ids, dtype=backend.numpy.int64)
    result = SEARCHES[method](model, src, bos_id=tgt_vocab["<bos>"], eos_id=tgt_vocab["<eos>"],
                              max_len=max_len, **options)
    out_tokens = tgt_vocab.to_tokens(result.tokens)
    return Translation(target_text(out_tokens, task), src_vocab.to_tokens(ids), out_tokens, result)


@backend.with_blas_threads  # a small model on one BLAS thread (see backend.blas_threads)
def translate_batch(model, sentences, src_vocab, tgt_vocab, max_len: int, method: str = "greedy", *,
                    task: str | None = None, src_max_len: int | None = None, **options) -> list:
    """:func:`translate` for many sentences at once: one search over them all, the decoder called once a step.

    Each sentence is tokenised and cut as :func:`translate` does, the sources are padded into
    one batch (:func:`~npseq.data.build_array_nmt`), and :func:`beam_search_batch` searches
    them together: ``method="beam"`` with ``options`` (``beam_size``, ``alpha``,
    ``length_penalty``), ``method="greedy"`` as the beam of one without length penalty
    (:func:`greedy_search` exactly). Translation ``i`` is ``translate(model, sentences[i], ...)``
    up to the rounding that :func:`beam_search_batch` describes.

    Raises :class:`~npseq.errors.InvalidValueError` for a sentence without a word (naming it).
    """
    searches = {"greedy": dict(beam_size=1, alpha=0.0), "beam": options}
    if method not in searches:
        raise InvalidValueError(f"method: expected one of {tuple(searches)} (exhaustive search translates one "
                                f"sentence at a time: translate), got {method!r}")
    if method == "greedy" and options:
        raise InvalidValueError(f"options: greedy search takes none, got {', '.join(options)}")
    words = [source_tokens(sentence, task) for sentence in sentences]
    if (empty := next((i for i, tokens in enumerate(words) if not tokens), None)) is not None:
        raise InvalidValueError(f"sentences[{empty}]: expected at least one word, got {sentences[empty]!r}")
    if not words:
        return []
    cut = max(src_max_len or max_len, 1)
    src, src_valid_lens = build_array_nmt(words, src_vocab, min(cut, max(map(len, words)) + 1))
    results = beam_search_batch(model, src, src_valid_lens, bos_id=tgt_vocab["<bos>"], eos_id=tgt_vocab["<eos>"],
                                max_len=max_len, **searches[method])
    translations = []
    for ids, length, result in zip(src.tolist(), src_valid_lens.tolist(), results):
        out_tokens = tgt_vocab.to_tokens(result.tokens)
        translations.append(Translation(target_text(out_tokens, task), src_vocab.to_tokens(ids[:length]), out_tokens,
                                        result))
    return translations


class TranslationScores(NamedTuple):
    """Scores of greedy decoding on a test set: ``bleu`` (corpus BLEU-4 on a 0-1 scale), ``exact_match``."""
    bleu: float
    exact_match: float


@backend.with_blas_threads  # a small model on one BLAS thread (see backend.blas_threads)
def evaluate_translations(model, pairs, src_vocab, tgt_vocab, *, src_len: int, max_len: int) -> TranslationScores:
    """Greedy-decode every source of ``pairs`` in one batch and score the outputs against the targets.

    Args:
        model: an ``EncoderDecoder``.
        pairs: a non-empty list of ``(source tokens, target tokens)`` (e.g. ``TranslationData.test_pairs``).
        src_len: the source steps the model was trained on (sources are cut or padded to it).
        max_len: the most output tokens.

    Returns:
        :class:`TranslationScores`: :func:`~npseq.metrics.corpus_bleu` / 100 and :func:`~npseq.metrics.exact_match`
        of the space-joined output tokens against the space-joined targets.
    """
    X, X_len = build_array_nmt([src for src, _ in pairs], src_vocab, src_len)
    outputs = greedy_search_batch(model, X, X_len, bos_id=tgt_vocab["<bos>"], eos_id=tgt_vocab["<eos>"],
                                  max_len=max_len)
    hyps = [" ".join(tgt_vocab.to_tokens(ids)) for ids in outputs]
    refs = [" ".join(tgt) for _, tgt in pairs]
    return TranslationScores(corpus_bleu(hyps, refs) / 100.0, exact_match(hyps, refs))


def head_attention(model, translation: Translation, src_vocab, tgt_vocab):
    """Every head's attention in every block of a Transformer ``model`` behind one ``translation``.

    The decoder reads ``<bos>`` and the output tokens before each step's (``L`` steps, as the rows of
    ``translation.result.attention``); with the decoder's step equal to its teacher-forced forward, the
    maps are those the search saw. Returns the model's :class:`~npseq.models.transformer.HeadMaps`
    (``cross``: ``(blocks, heads, L, S)``, rows labelled by ``translation.attention_rows``).
    """
    if not hasattr(model, "head_maps"):
        raise InvalidTypeError(f"model: expected a Transformer (per-head attention maps), got {type(model).__name__}")
    src = backend.xp.asarray(src_vocab[translation.source_tokens])
    tgt_in = backend.xp.asarray([tgt_vocab["<bos>"]] + translation.result.tokens[:translation.result.length - 1])
    return model.head_maps(src, tgt_in)
