"""Training loops: seq2seq with teacher forcing."""
from __future__ import annotations

import dataclasses
import math
import time

from tqdm.auto import tqdm

from . import backend
from .nn import MaskedSoftmaxCELoss
from .nn.init import make_rng
from .optim import clip_grad_norm


@dataclasses.dataclass
class History:
    """Per-epoch training statistics.

    ``loss``: the objective as the loss function reduces it, averaged over batches.
    ``token_ce``: per-token cross-entropy in nats (summed token NLL / token count),
    the same whatever the reduction. ``d2l_metric``: the summed objective divided
    by the token count, which is what d2l prints as "loss" (with ``reduction="d2l"``
    it equals ``token_ce / num_steps``). ``grad_norm``: the mean global gradient
    norm before clipping. ``tokens_per_s``: target tokens per second of wall time.
    """
    loss: list = dataclasses.field(default_factory=list)
    token_ce: list = dataclasses.field(default_factory=list)
    d2l_metric: list = dataclasses.field(default_factory=list)
    grad_norm: list = dataclasses.field(default_factory=list)
    tokens_per_s: list = dataclasses.field(default_factory=list)
    wall_s: list = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def teacher_forcing_inputs(Y, bos_id: int):
    """Decoder inputs for teacher forcing: ``<bos>`` then the targets shifted right by one.

    ``Y`` ``(N, T)`` -> ``(N, T)`` with ``out[:, 0] = bos`` and ``out[:, t] = Y[:, t-1]``.
    """
    xp = backend.get_array_module(Y)
    return xp.concatenate([xp.full((Y.shape[0], 1), bos_id, dtype=Y.dtype), Y[:, :-1]], axis=1)


def train_seq2seq_step(model, loss_fn, optimizer, batch, bos_id: int, clip: float | None,
                       sampling_ratio: float = 0.0, rng=None):
    """One update: forward with teacher forcing, loss, backward, clipping, optimizer step.

    Returns ``(loss, nll_sum, num_tokens, grad_norm)`` as Python numbers (the only
    device-to-host transfers of the step).
    """
    X, X_valid_len, Y, Y_valid_len = (backend.asarray(a) for a in batch)
    model.zero_grad()
    logits = model(X, teacher_forcing_inputs(Y, bos_id), X_valid_len, sampling_ratio, rng)
    loss = loss_fn(logits, Y, Y_valid_len)
    model.backward(loss_fn.backward())
    grad_norm = clip_grad_norm(optimizer.params, clip if clip else math.inf)
    optimizer.step()
    return float(loss.sum()), float(loss_fn.nll_sum), loss_fn.num_tokens, grad_norm


def train_seq2seq(model, batches, tgt_vocab, optimizer, num_epochs: int, *, loss_fn=None, clip: float | None = 1.0,
                  sampling_ratio: float = 0.0, seed=0, progress: bool = True, on_epoch_end=None) -> History:
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
        on_epoch_end: optional ``callback(epoch, history)``.

    Returns:
        A :class:`History`.
    """
    if not isinstance(num_epochs, int) or num_epochs < 1:
        raise ValueError(f"num_epochs: expected a positive int, got {num_epochs!r}")
    loss_fn = loss_fn or MaskedSoftmaxCELoss("mean")
    rng = make_rng(seed)
    bos_id = tgt_vocab["<bos>"]
    history = History()
    model.train()
    bar = tqdm(range(num_epochs), desc="train", unit="epoch", disable=not progress)
    for epoch in bar:
        start = time.perf_counter()
        loss_sum = nll_sum = norm_sum = 0.0
        num_tokens = num_batches = 0
        for batch in batches:
            loss, nll, tokens, norm = train_seq2seq_step(model, loss_fn, optimizer, batch, bos_id, clip,
                                                         sampling_ratio, rng)
            loss_sum, nll_sum, norm_sum = loss_sum + loss, nll_sum + nll, norm_sum + norm
            num_tokens, num_batches = num_tokens + tokens, num_batches + 1
        if num_batches == 0:
            raise ValueError("batches: expected at least one batch per epoch, got none")
        wall = time.perf_counter() - start
        history.loss.append(loss_sum / num_batches)
        history.token_ce.append(nll_sum / max(num_tokens, 1))
        history.d2l_metric.append(loss_sum / max(num_tokens, 1))
        history.grad_norm.append(norm_sum / num_batches)
        history.tokens_per_s.append(num_tokens / wall if wall > 0 else math.inf)
        history.wall_s.append(wall)
        bar.set_postfix(loss=f"{history.loss[-1]:.4f}", ce=f"{history.token_ce[-1]:.3f}",
                        tok_s=f"{history.tokens_per_s[-1]:.0f}")
        if on_epoch_end is not None:
            on_epoch_end(epoch, history)
    return history
