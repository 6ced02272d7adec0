"""Training loops: seq2seq with teacher forcing; language models with truncated BPTT."""
from __future__ import annotations

import dataclasses
import itertools
import math
import signal
import time

from . import backend, heap
from ._checks import as_rng, check_count, check_token_ids, check_valid_lens
from .data.lm import PARTITIONS
from .errors import InvalidTypeError, InvalidValueError, TrainingDiverged
from .functional import log_softmax_forward
from .grad_mode import no_grad
from .metrics import perplexity
from .nn import MaskedSoftmaxCELoss, detach
from .optim import clip_grad_norm


@dataclasses.dataclass
class EpochStatistics:
    """What every training loop records once per epoch, one list entry each.

    ``token_ce``: the epoch's cross-entropy per token in nats (summed token NLL / token count).
    ``grad_norm``: the mean global gradient norm before clipping. ``tokens_per_s``: training
    tokens per second of the epoch's wall time. ``wall_s``: that wall time in seconds.
    """
    token_ce: list = dataclasses.field(default_factory=list)
    grad_norm: list = dataclasses.field(default_factory=list)
    tokens_per_s: list = dataclasses.field(default_factory=list)
    wall_s: list = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class History(EpochStatistics):
    """Per-epoch statistics of :func:`train_seq2seq`: those of :class:`EpochStatistics`, and

    ``loss``: the objective as the loss function reduces it, averaged over batches
    (``token_ce`` is the same whatever the reduction). ``d2l_metric``: the summed objective
    divided by the token count, which is what d2l prints as "loss" (with ``reduction="d2l"``
    it equals ``token_ce / num_steps``). ``tokens_per_s`` counts target tokens.
    """
    loss: list = dataclasses.field(default_factory=list)
    d2l_metric: list = dataclasses.field(default_factory=list)

    @classmethod
    def from_dict(cls, state: dict) -> "History":
        """The history that :meth:`to_dict` gave; ``ValueError`` naming the first unknown key or bad list."""
        if not isinstance(state, dict):
            raise InvalidTypeError(f"state: expected a dict from History.to_dict(), got {type(state).__name__}")
        known = [field.name for field in dataclasses.fields(cls)]
        unknown = [key for key in state if key not in known]
        if unknown:
            raise InvalidValueError(f"state: expected the keys {known}, got unknown keys {unknown}")
        lengths = {len(values) for values in state.values() if isinstance(values, list)}
        if len(lengths) > 1 or any(not isinstance(values, list) for values in state.values()):
            raise InvalidValueError("state: expected one list of numbers per statistic, all of the same length")
        return cls(**{key: list(values) for key, values in state.items()})


_MAX_COUNT = 2 ** 53  # sums and counts above this lose precision as floats: no real epoch reaches it


@dataclasses.dataclass
class EpochProgress:
    """How far the current epoch of :func:`train_seq2seq` has run: a record the caller owns.

    The loop updates it after every batch and clears it when the epoch ends, so at any
    stop it says where to continue: ``batches_done`` batches of the epoch are done, and
    the sums behind the epoch's statistics so far are ``loss_sum``, ``nll_sum``,
    ``norm_sum`` (over batches), ``num_tokens`` and ``wall_s``. Passing the record back
    to ``train_seq2seq`` (with the same batches at the same epoch, the model, optimizer
    and generators restored) skips the done batches and continues bit for bit.
    """
    batches_done: int = 0
    loss_sum: float = 0.0
    nll_sum: float = 0.0
    norm_sum: float = 0.0
    num_tokens: int = 0
    wall_s: float = 0.0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, state: dict) -> "EpochProgress":
        """The record :meth:`to_dict` gave; ``ValueError`` naming the first missing or bad field."""
        if not isinstance(state, dict):
            raise InvalidTypeError(f"state: expected a dict from EpochProgress.to_dict(), got {type(state).__name__}")
        fields = {field.name: field.type for field in dataclasses.fields(cls)}
        if set(state) != set(fields):
            raise InvalidValueError(f"state: expected the keys {sorted(fields)}, got {sorted(state)}")
        for name, kind in fields.items():
            value, counts = state[name], kind == "int"
            # Ints are compared, never converted: float(10**400) would overflow.
            number = not isinstance(value, bool) and (isinstance(value, int) or
                                                        (not counts and isinstance(value, float)))
            if not (number and 0 <= value <= _MAX_COUNT):
                raise InvalidValueError(f"state[{name!r}]: expected {'an int' if counts else 'a number'} in "
                                        f"[0, {_MAX_COUNT}], got {value!r:.40}")
        return cls(**state)


def teacher_forcing_inputs(Y, bos_id: int):
    """Decoder inputs for teacher forcing: ``<bos>`` then the targets shifted right by one.

    ``Y`` ``(N, T)`` -> ``(N, T)`` with ``out[:, 0] = bos`` and ``out[:, t] = Y[:, t-1]``.
    """
    xp = backend.get_array_module(Y)
    return xp.concatenate([xp.full((Y.shape[0], 1), bos_id, dtype=Y.dtype), Y[:, :-1]], axis=1)


def _checked_batch(model, batch):
    """A translation batch ``(X, X_valid_len, Y, Y_valid_len)`` on the current backend.

    Ids and lengths are checked against the model here, while still on the host: on a
    GPU the engine does not read values (see :mod:`npseq._checks`), so a bad id would
    otherwise pass unnoticed.
    """
    X, X_valid_len, Y, Y_valid_len = batch
    for name, ids, vocab_size in (("X", X, model.encoder.vocab_size), ("Y", Y, model.decoder.vocab_size)):
        check_token_ids(name, ids, vocab_size)
    for name, lens, ids in (("X_valid_len", X_valid_len, X), ("Y_valid_len", Y_valid_len, Y)):
        check_valid_lens(name, lens, ids.shape[:1], ids.shape[1])
    return tuple(backend.asarray(a) for a in batch)


def train_seq2seq_step(model, loss_fn, optimizer, batch, bos_id: int, clip: float | None,
                       sampling_ratio: float = 0.0, rng=None):
    """One update: forward with teacher forcing, loss, backward, clipping, optimizer step.

    The model is given the target lengths too, so that a recurrent decoder spends no work on
    padded positions (their logits, which the masked loss ignores, are zero).

    Returns ``(loss, nll_sum, num_tokens, grad_norm)`` as Python numbers. On a GPU the
    batch is copied over once, and two reads come back: the gradient norm (clipping
    needs it) and the two loss sums; the token count is taken from the host batch. The
    memory a step frees is kept for the next (:func:`npseq.heap.keep_freed_memory`).
    """
    heap.keep_freed_memory()
    X, X_valid_len, Y, Y_valid_len = _checked_batch(model, batch)
    num_tokens = int(backend.to_numpy(batch[3]).sum())
    model.zero_grad()
    logits = model(X, teacher_forcing_inputs(Y, bos_id), X_valid_len, sampling_ratio, rng, Y_valid_len)
    loss = loss_fn(logits, Y, Y_valid_len)
    model.backward(loss_fn.backward())
    grad_norm = clip_grad_norm(optimizer.params, clip if clip else math.inf)
    optimizer.step()
    loss_sum, nll_sum = backend.scalars_to_host(loss.sum(), loss_fn.nll_sum)
    return loss_sum, nll_sum, num_tokens, grad_norm


def _epoch_bar(epochs, total, progress: bool):
    """``epochs`` behind a progress bar of ``total`` epochs, drawn when ``progress`` (tqdm's, a widget in a notebook).

    tqdm.auto is imported only for a bar that is drawn: in a notebook without ipywidgets its import alone warns,
    and a tutorial that trains with ``progress=False`` should show no such warning."""
    if progress:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm  # a disabled bar draws nothing in any front end
    return tqdm(epochs, total=total, desc="train", unit="epoch", disable=not progress)


@backend.with_blas_threads  # a small model on one BLAS thread (see backend.blas_threads)
def train_seq2seq(model, batches, tgt_vocab, optimizer, num_epochs: int, *, loss_fn=None, clip: float | None = 1.0,
                  sampling_ratio: float = 0.0, seed=0, rng=None, progress: bool = True,
                  on_epoch_end=None, stop=None, position: EpochProgress | None = None) -> History:
    """Train an :class:`~npseq.models.EncoderDecoder` with teacher forcing.

    Each batch ``(X, X_valid_len, Y, Y_valid_len)`` feeds the decoder ``<bos>``
    followed by ``Y`` shifted right, and the loss compares the logits with ``Y``
    over its valid steps. Gradients are clipped to a global norm of ``clip``
    (``None``: no clipping). With ``sampling_ratio > 0`` each decoder input is,
    with that probability, the model's own previous prediction (scheduled sampling).

    The same seed, model and batches give bit-identical results.

    Args:
        model: an ``EncoderDecoder``.
        batches: an iterable re-iterated every epoch (e.g. ``BatchIterator``).
        tgt_vocab: the target ``Vocab`` (for the ``<bos>`` id).
        optimizer: an ``npseq.optim`` optimizer over ``model.parameters()``.
        num_epochs: number of passes over ``batches``.
        loss_fn: default ``MaskedSoftmaxCELoss("mean")`` (per valid token).
        seed: seeds the scheduled-sampling generator when ``rng`` is None.
        rng: the scheduled-sampling generator (default: ``as_rng(seed)``, a new one each
            call). Pass the same Generator to successive calls, and save its
            ``bit_generator.state`` with a checkpoint, to resume a ``sampling_ratio > 0``
            run bit-exactly.
        on_epoch_end: optional ``callback(epoch, history)``.
        stop: optional ``callable() -> bool``, asked before every batch; when it answers
            True, training returns at once (between two updates, never inside one) with
            the epochs finished so far, and ``position`` says where it stopped. A Ctrl-C
            handler that sets a flag makes a stop that leaves a consistent state.
        position: an :class:`EpochProgress` the loop keeps up to date (default: a private
            one). A record with ``batches_done > 0`` continues that epoch: its first
            ``batches_done`` batches are skipped and its sums carried on.

    Returns:
        A :class:`History`.

    Raises:
        TrainingDiverged: a gradient became NaN or inf (the weights are left as they were
            before that batch), the loss did, or the weights did by the end of an epoch; epochs
            in its message count from the start of this call.
    """
    if not isinstance(num_epochs, int) or num_epochs < 1:
        raise InvalidValueError(f"num_epochs: expected a positive int, got {num_epochs!r}")
    loss_fn = loss_fn or MaskedSoftmaxCELoss("mean")
    rng = as_rng(seed if rng is None else rng)
    position = EpochProgress() if position is None else position
    bos_id = tgt_vocab["<bos>"]
    history = History()
    model.train()
    bar = _epoch_bar(range(num_epochs), num_epochs, progress)
    for epoch in bar:
        start = time.perf_counter() - position.wall_s
        for batch in itertools.islice(batches, position.batches_done, None):
            if stop is not None and stop():
                position.wall_s = time.perf_counter() - start
                bar.close()
                return history
            try:
                loss, nll, tokens, norm = train_seq2seq_step(model, loss_fn, optimizer, batch, bos_id, clip,
                                                             sampling_ratio, rng)
            except FloatingPointError:  # from clip_grad_norm, before this batch touched the weights
                raise TrainingDiverged(f"training diverged in epoch {epoch + 1}, batch "
                                       f"{position.batches_done + 1}: the gradients hold NaN or inf "
                                       f"(learning rate too high?)") from None
            if not math.isfinite(loss):
                raise TrainingDiverged(f"training diverged in epoch {epoch + 1}, batch "
                                       f"{position.batches_done + 1}: the loss is {loss}")
            position.loss_sum, position.nll_sum = position.loss_sum + loss, position.nll_sum + nll
            position.norm_sum, position.num_tokens = position.norm_sum + norm, position.num_tokens + tokens
            position.batches_done += 1
        num_batches = position.batches_done
        if num_batches == 0:
            raise InvalidValueError("batches: expected at least one batch per epoch, got none")
        if not all(bool(backend.get_array_module(p.data).isfinite(p.data).all()) for p in optimizer.params):
            raise TrainingDiverged(f"training diverged in epoch {epoch + 1}: the last update made weights "
                                   f"NaN or inf")
        wall = time.perf_counter() - start
        history.loss.append(position.loss_sum / num_batches)
        history.token_ce.append(position.nll_sum / max(position.num_tokens, 1))
        history.d2l_metric.append(position.loss_sum / max(position.num_tokens, 1))
        history.grad_norm.append(position.norm_sum / num_batches)
        history.tokens_per_s.append(position.num_tokens / wall if wall > 0 else math.inf)
        history.wall_s.append(wall)
        bar.set_postfix(loss=f"{history.loss[-1]:.4f}", ce=f"{history.token_ce[-1]:.3f}",
                        tok_s=f"{history.tokens_per_s[-1]:.0f}")
        _clear(position)
        if on_epoch_end is not None:
            on_epoch_end(epoch, history)
    return history


class StopOnCtrlC:
    """While active, the first Ctrl-C only asks the training loop to stop after the current batch.

    Pass ``stop=lambda: ctrl_c.pressed`` to :func:`train_seq2seq`: the loop then returns between
    two updates and the caller can save a consistent checkpoint, all within a batch's time. A
    second Ctrl-C interrupts at once (the default behaviour). Main thread only (signal handlers).
    """

    def __init__(self):
        self.pressed = False

    def _handler(self, signum, frame):
        self.pressed = True
        signal.signal(signal.SIGINT, self._previous)

    def __enter__(self):
        self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc_info):
        signal.signal(signal.SIGINT, self._previous)
        return False


def _clear(position: EpochProgress) -> None:
    """Reset ``position`` in place for a new epoch (the caller holds the same record)."""
    for field in dataclasses.fields(position):
        setattr(position, field.name, field.default)


# ------------------------------------------------------------------ language models
@dataclasses.dataclass
class LMHistory(EpochStatistics):
    """Per-epoch statistics of :func:`train_lm`: those of :class:`EpochStatistics`, and

    ``train_ppl``: :math:`\\exp` of ``token_ce``, which is measured on each batch before its update (as
    d2l reports it); ``tokens_per_s`` leaves the validation out.
    ``valid_ppl``: :func:`evaluate_perplexity` on the validation ids after the epoch
    (empty without them). ``num_batches``: batches run in the epoch (fewer in an epoch cut short by
    ``max_seconds``). ``stopped_early``: the time budget ended training.
    ``step_grad_norms``: with ``record_step_norms``, per epoch the last batch's
    :math:`\\|\\partial L / \\partial h_t\\|` per layer (``{(layer, 0): (T,) array}``).
    """
    train_ppl: list = dataclasses.field(default_factory=list)
    valid_ppl: list = dataclasses.field(default_factory=list)
    num_batches: list = dataclasses.field(default_factory=list)
    step_grad_norms: list = dataclasses.field(default_factory=list)
    stopped_early: bool = False


def _lm_partition(batches, partition):
    """The partition to train with: the argument, else the iterable's ``partition``; both must agree."""
    declared = getattr(batches, "partition", None)
    if partition is None:
        partition = declared
        if partition is None:
            raise InvalidValueError(f"partition: expected one of {PARTITIONS} (batches has no .partition to "
                                    f"read it from), got None")
    if partition not in PARTITIONS:
        raise InvalidValueError(f"partition: expected one of {PARTITIONS}, got {partition!r}")
    if declared is not None and declared != partition:
        raise InvalidValueError(f"partition: expected the batches' own partition {declared!r}, got {partition!r}")
    return partition


def _check_lm_ids(model, name, ids):
    """Ids for a language model, checked on the host before the copy (see :func:`_checked_batch`);
    a model without a ``vocab_size`` leaves the check to its own layers."""
    vocab_size = getattr(model, "vocab_size", None)
    if vocab_size is not None:
        ids = ids if hasattr(ids, "dtype") else backend.numpy.asarray(ids)  # a list of ids
        check_token_ids(name, ids, vocab_size)


def train_lm_step(model, loss_fn, optimizer, X, Y, state, clip: float | None):
    """One truncated-BPTT update on a batch ``X``, ``Y`` ``(N, T)`` from the initial ``state``.

    Forward from ``state`` (``None``: zeros), mean per-token cross-entropy, backward
    (which stops at ``state``: the gradient with respect to it is dropped), clipping
    to the global norm ``clip``, optimizer step. Returns ``(detached final state,
    nll_sum, num_tokens, grad_norm)`` with Python numbers. The memory a step frees is kept
    for the next (:func:`npseq.heap.keep_freed_memory`).
    """
    heap.keep_freed_memory()
    xp = backend.get_array_module(X)
    model.zero_grad()
    logits, final = model(X, state)
    loss_fn(logits, Y, xp.full((X.shape[0],), X.shape[1], dtype=xp.int64))
    model.backward(loss_fn.backward())
    grad_norm = clip_grad_norm(optimizer.params, clip if clip else math.inf)
    optimizer.step()
    return detach(final), float(loss_fn.nll_sum), X.shape[0] * X.shape[1], grad_norm


@backend.with_blas_threads  # a small model on one BLAS thread (see backend.blas_threads)
def train_lm(model, batches, optimizer, num_epochs, *, partition=None, clip: float | None = 1.0, valid_ids=None,
             eval_num_steps=None, eval_batch_size=None, max_seconds=None, record_step_norms: bool = False,
             progress: bool = True, on_epoch_end=None) -> LMHistory:
    """Train a language model (:class:`~npseq.models.lm.RNNLM`) with truncated backpropagation through time.

    For every batch ``(X, Y)`` ``(N, T)`` (``Y`` is ``X`` shifted by one token) the
    loss is the mean per-token cross-entropy

    .. math:: \\ell = -\\frac{1}{NT} \\sum_{n,t} \\log \\operatorname{softmax}(z_{nt})_{Y_{nt}},
        \\qquad (z, s_T) = \\text{model}(X, s_0)

    then gradients are clipped to a global norm of ``clip`` (``None``: no clipping)
    and the optimizer steps. The initial state :math:`s_0` depends on ``partition``:

    * ``"random"``: zeros for every batch (the batches are unrelated subsequences);
    * ``"sequential"``: zeros for an epoch's first batch, then the final state of the
      previous batch, detached (:func:`~npseq.nn.detach`): row ``i`` of a batch
      continues row ``i`` of the previous one, so the model sees an unbroken context,
      while backpropagation stops at the batch boundary (truncated BPTT over ``T``
      steps).

    ``partition`` defaults to ``batches.partition`` (a
    :class:`~npseq.data.SeqDataLoader` has one); giving both requires them to agree.

    Args:
        model: an ``RNNLM`` (``forward(X, state) -> (logits, state)``, ``backward(dlogits)``).
        batches: an iterable of ``(X, Y)`` re-iterated every epoch.
        optimizer: an ``npseq.optim`` optimizer over ``model.parameters()``.
        num_epochs: a positive int, or ``None`` to run until ``max_seconds``.
        valid_ids: 1-d validation ids: after each epoch, :func:`evaluate_perplexity` with
            ``eval_num_steps`` and ``eval_batch_size`` (defaults: the first batch's ``T``, ``N``).
        max_seconds: a time budget: checked after every batch, training stops once
            the elapsed wall time (validation included) reaches it; the cut epoch is
            recorded (with its validation) and ``stopped_early`` is set.
        record_step_norms: keep the last batch's per-step gradient norms of each epoch.
        on_epoch_end: optional ``callback(epoch, history)``.

    Returns:
        An :class:`LMHistory`.

    Raises:
        TrainingDiverged: a gradient became NaN or inf (the weights are left as they were before that batch), or
            the loss did.
    """
    if num_epochs is None:
        if max_seconds is None:
            raise InvalidValueError("num_epochs: expected a positive int (or None with max_seconds), got None "
                                    "without max_seconds")
    else:
        check_count("num_epochs", num_epochs)
    if max_seconds is not None and not (isinstance(max_seconds, (int, float)) and max_seconds > 0):
        raise InvalidValueError(f"max_seconds: expected a number of seconds > 0 or None, got {max_seconds!r}")
    partition = _lm_partition(batches, partition)
    loss_fn = MaskedSoftmaxCELoss("mean")
    history = LMHistory()
    rnn = getattr(model, "rnn", None)
    if record_step_norms and rnn is not None:
        recording_before, rnn.record_step_norms = rnn.record_step_norms, True
    start_all = time.perf_counter()
    epochs = itertools.count() if num_epochs is None else range(num_epochs)
    bar = _epoch_bar(epochs, num_epochs, progress)
    for epoch in bar:
        model.train()
        start = time.perf_counter()
        nll_sum = norm_sum = 0.0
        num_tokens = num_batches = 0
        state = None
        shape = None
        for X, Y in batches:
            for name, ids in (("X", X), ("Y", Y)):
                _check_lm_ids(model, name, ids)
            X, Y = backend.asarray(X), backend.asarray(Y)
            if shape is None:
                shape = X.shape
            if partition == "random":
                state = None
            elif X.shape[0] != shape[0]:
                raise InvalidValueError(f"batches: sequential partitioning carries the state, so every batch needs "
                                        f"{shape[0]} rows (the first batch's), got {X.shape[0]}")
            try:
                state, nll, tokens, norm = train_lm_step(model, loss_fn, optimizer, X, Y, state, clip)
            except FloatingPointError:  # from clip_grad_norm, before this batch touched the weights
                raise TrainingDiverged(f"training diverged in epoch {epoch + 1}, batch {num_batches + 1}: the "
                                       f"gradients hold NaN or inf (learning rate too high?)") from None
            if not math.isfinite(nll):
                raise TrainingDiverged(f"training diverged in epoch {epoch + 1}, batch {num_batches + 1}: the "
                                       f"loss is {nll}")
            nll_sum, norm_sum = nll_sum + nll, norm_sum + norm
            num_tokens, num_batches = num_tokens + tokens, num_batches + 1
            if max_seconds is not None and time.perf_counter() - start_all >= max_seconds:
                history.stopped_early = True
                break
        if num_batches == 0:
            raise InvalidValueError("batches: expected at least one batch per epoch, got none")
        wall = time.perf_counter() - start
        history.token_ce.append(nll_sum / num_tokens)
        history.train_ppl.append(perplexity(nll_sum, num_tokens))
        history.grad_norm.append(norm_sum / num_batches)
        history.tokens_per_s.append(num_tokens / wall if wall > 0 else math.inf)
        history.wall_s.append(wall)
        history.num_batches.append(num_batches)
        if record_step_norms and rnn is not None:
            history.step_grad_norms.append(dict(rnn.step_grad_norms))
        postfix = dict(ppl=f"{history.train_ppl[-1]:.2f}", tok_s=f"{history.tokens_per_s[-1]:.0f}")
        if valid_ids is not None:
            history.valid_ppl.append(evaluate_perplexity(model, valid_ids, eval_num_steps or shape[1],
                                                         eval_batch_size or shape[0]))
            postfix["valid_ppl"] = f"{history.valid_ppl[-1]:.2f}"
        bar.set_postfix(**postfix)
        if on_epoch_end is not None:
            on_epoch_end(epoch, history)
        if history.stopped_early or (max_seconds is not None and time.perf_counter() - start_all >= max_seconds):
            history.stopped_early = True
            break
    bar.close()
    if record_step_norms and rnn is not None:
        rnn.record_step_norms = recording_before
    return history


def evaluate_perplexity(model, corpus_ids, num_steps: int, batch_size: int) -> float:
    """Perplexity of a language model on held-out ids, reading them as one stream.

    The ``M`` ids are laid out as ``batch_size`` rows of :math:`L = \\lfloor (M-1)/N \\rfloor`
    consecutive tokens (row :math:`i` starts at :math:`iL`; the last :math:`(M-1) - NL`
    tokens are left out), and the rows are read ``num_steps`` columns at a time (the
    last chunk may be shorter), the state carried from chunk to chunk, in eval mode
    and under ``no_grad``. Every token but each row's first is predicted:

    .. math:: \\text{PPL} = \\exp\\Big(-\\frac{1}{NL} \\sum_{i,j} \\log p(x_{iL+j+1} \\mid x_{iL} \\dots x_{iL+j})\\Big)

    ``batch_size=1`` scores the whole stream in one row. The model's mode is restored.

    Args:
        model: ``forward(X (N, T), state) -> (logits (N, T, V), state)``.
        corpus_ids: 1-d integer ids (host or device).
        num_steps, batch_size: chunk length and number of rows (positive ints).

    Returns:
        The perplexity (a Python float).
    """
    check_count("num_steps", num_steps)
    check_count("batch_size", batch_size)
    _check_lm_ids(model, "corpus_ids", corpus_ids)
    ids = backend.asarray(corpus_ids)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise InvalidValueError(f"corpus_ids: expected a 1-d integer array, got shape {tuple(ids.shape)}, dtype "
                                f"{ids.dtype}")
    row_len = (ids.shape[0] - 1) // batch_size
    if row_len < 1:
        raise InvalidValueError(f"batch_size: expected at most len(corpus_ids) - 1 = {ids.shape[0] - 1} rows, "
                                f"got {batch_size}")
    xp = backend.get_array_module(ids)
    Xs = ids[:batch_size * row_len].reshape(batch_size, row_len)
    Ys = ids[1:batch_size * row_len + 1].reshape(batch_size, row_len)
    training = model.training
    model.eval()
    nll_sum, state = 0.0, None
    try:
        with no_grad():
            for j in range(0, row_len, num_steps):
                logits, state = model(Xs[:, j:j + num_steps], state)
                log_p, _ = log_softmax_forward(logits)
                nll_sum -= float(xp.take_along_axis(log_p, Ys[:, j:j + num_steps, None], axis=-1).sum())
    finally:
        model.train(training)
    return perplexity(nll_sum, batch_size * row_len)


def _prefix_tokens(prefix):
    if isinstance(prefix, str):
        return list(prefix), ""
    if isinstance(prefix, (list, tuple)) and all(isinstance(token, str) for token in prefix):
        return list(prefix), " "
    raise InvalidTypeError(f"prefix: expected a str (characters) or a list of str tokens, got {type(prefix).__name__}")


def predict(model, prefix, num_preds: int, vocab, *, temperature=None, rng=None) -> str:
    """Continue ``prefix`` by ``num_preds`` tokens (d2l's ``predict_ch8``, with sampling).

    Warm-up: the prefix ids :math:`x_1 \\dots x_P` go through the model from a zero
    state in one call, giving the state :math:`s_P` and the logits :math:`z_P` for the
    next token. Then, for :math:`j = 1 \\dots` ``num_preds``, the next token is

    * ``temperature=None``: greedy, :math:`x_{P+j} = \\arg\\max_v z_{v}`;
    * ``temperature=\\tau > 0``: sampled, :math:`x_{P+j} \\sim \\operatorname{softmax}(z / \\tau)`,
      drawn by inverting the cumulative distribution at ``rng.random()`` (so the same
      ``rng`` seed gives the same text; :math:`\\tau \\to 0` approaches greedy,
      :math:`\\tau = 1` samples the model's own distribution);

    and it is fed back as a batch of one to get :math:`s_{P+j}`, :math:`z`. Runs in eval
    mode under ``no_grad`` (the mode is restored).

    Args:
        prefix: a str (each character a token, joined back without separator) or a
            non-empty list of str tokens (joined back with spaces). Unknown tokens map to ``<unk>``.
        num_preds: tokens to generate (>= 0).
        vocab: the :class:`~npseq.data.Vocab` of the training corpus.
        temperature: ``None`` or a float > 0.
        rng: a ``numpy.random.Generator`` or int seed; required when sampling.

    Returns:
        The prefix as given followed by the generated tokens, as text.
    """
    tokens, joiner = _prefix_tokens(prefix)
    if not tokens:
        raise InvalidValueError("prefix: expected at least one token to start from, got none")
    if isinstance(num_preds, bool) or not isinstance(num_preds, int) or num_preds < 0:
        raise InvalidValueError(f"num_preds: expected an int >= 0, got {num_preds!r}")
    if temperature is not None:
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
            raise InvalidValueError(f"temperature: expected None (greedy) or a number > 0, got {temperature!r}")
        if rng is None:
            raise InvalidValueError("rng: expected a numpy.random.Generator or an int seed when sampling "
                                    "(temperature is set), got None")
        rng = as_rng(rng)
    np = backend.numpy
    xp = backend.xp
    ids = list(vocab[tokens])
    training = model.training
    model.eval()
    try:
        with no_grad():
            logits, state = model(xp.asarray([ids], dtype=xp.int64), None)
            for j in range(num_preds):
                z = backend.to_numpy(logits[0, -1]).astype(np.float64)
                if temperature is None:
                    token = int(z.argmax())
                else:
                    p = np.exp((z - z.max()) / temperature)
                    cdf = np.cumsum(p / p.sum())
                    token = min(int(np.searchsorted(cdf, rng.random(), side="right")), len(cdf) - 1)
                ids.append(token)
                if j + 1 < num_preds:
                    logits, state = model(xp.asarray([[token]], dtype=xp.int64), state)
    finally:
        model.train(training)
    return joiner.join(tokens + vocab.to_tokens(ids[len(tokens):]))
