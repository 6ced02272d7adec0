"""Captioning on the built-in synthetic scenes: train, evaluate, draw (what ``npseq demo --task captions`` runs).

The library part of the demo: :func:`train_captioner` and :func:`evaluate_captions` are also what
the captioning tutorial calls, and :func:`run_captions_demo` puts them together and returns a
:class:`CaptionsDemoRecord` for the command to print. Nothing here prints.
"""
from __future__ import annotations

import os
import time
from typing import Callable, NamedTuple

from . import backend, heap
from ._checks import MemoryEstimate
from .data.captions import IMAGE_SIZE, CaptionData, CaptionSplit, caption_data_sizes, load_caption_data
from .errors import InvalidValueError
from .metrics import corpus_bleu, exact_match
from .models.captioning import CaptioningRNN
from .nn import MaskedSoftmaxCELoss, cell_record, make_rnn_parameters
from .optim import Adam, clip_grad_norm
from .viz import show_captioned_images

__all__ = ["CAPTIONS_DEMO_SETTINGS", "CaptionScores", "CaptionsDemoRecord", "build_captioner", "train_captioner",
           "evaluate_captions", "run_captions_demo", "captions_demo_memory"]

CAPTIONS_DEMO_SETTINGS = dict(num_train=8000, num_test=300, batch_size=128, num_hiddens=64, embed_size=32,
                              cell="gru", mode="first_step", lr=0.01, clip=1.0, epochs=5)
"""The demo's settings: 25 to 45 s of training on two CPU cores (idle or shared), test BLEU 0.947 (seed 0, on a
2-core AMD EPYC; the last digits depend on the CPU)."""


class CaptionScores(NamedTuple):
    bleu: float         # corpus BLEU-4 (npseq.metrics.corpus_bleu) divided by 100: 0 to 1
    exact_match: float  # the fraction of captions equal to the reference
    captions: list      # the generated captions, as strings


class CaptionsDemoRecord(NamedTuple):
    num_train: int
    num_test: int          # unseen scenes: no test image is a training image
    epochs: int
    train_s: float         # seconds spent training
    losses: list           # mean per-token cross-entropy of each epoch
    scores: CaptionScores  # on the test scenes, greedy decoding
    references: list       # the test scenes' true captions
    png: str               # the picture of a few test scenes with their generated captions
    text: str              # every test caption next to its reference


def build_captioner(data: CaptionData, *, num_hiddens: int, embed_size: int, cell: str, mode: str,
                    seed: int = 0, dtype=None) -> CaptioningRNN:
    """A :class:`~npseq.models.CaptioningRNN` sized for ``data`` (its features and vocabulary)."""
    return CaptioningRNN(data.feature_size, len(data.vocab), num_hiddens, mode=mode, cell=cell,
                         embed_size=embed_size, rng=seed, dtype=dtype)


def _on_device(array, like):
    """A host array as an array of ``like``'s backend and dtype (features) or kept int64 (token ids)."""
    dtype = like.dtype if array.dtype.kind == "f" else None
    return backend.asarray(array, dtype=dtype)


def train_captioner(model: CaptioningRNN, batches, epochs: int, *, lr: float, clip: float = 1.0,
                    on_epoch: Callable | None = None) -> list:
    """Teacher-forced training with Adam on the per-token cross-entropy of the valid steps.

    .. math:: L = \\frac{\\sum_{n,t} m_{nt} (-\\log p(y_{n,t+1} \\mid v_n, y_{n, \\le t}))}{\\sum_{n,t} m_{nt}}

    Args:
        model: the captioner.
        batches: an iterable of ``(features, captions_in, captions_out, valid_lens)`` host arrays, one pass
            per epoch (``CaptionData.train_iter``, or a list of one batch to overfit it).
        epochs: passes over ``batches``.
        lr: Adam's step size; clip: the global gradient norm is clipped to it.
        on_epoch: called as ``on_epoch(epoch, loss)`` after each epoch.

    Returns:
        the mean loss of each epoch.
    """
    if epochs < 1:
        raise InvalidValueError(f"epochs: expected a positive integer, got {epochs!r}")
    heap.keep_freed_memory()
    loss_fn = MaskedSoftmaxCELoss()
    optimizer = Adam(model.parameters(), lr=lr)
    like = model.dense.W.data
    losses = []
    model.train()
    for epoch in range(epochs):
        total, count = 0.0, 0
        for batch in batches:
            features, captions_in, captions_out, valid_lens = (_on_device(a, like) for a in batch)
            model.zero_grad()
            loss = loss_fn(model(features, captions_in, valid_lens), captions_out, valid_lens)
            model.backward(loss_fn.backward())
            clip_grad_norm(model.parameters(), clip)
            optimizer.step()
            total, count = total + float(loss), count + 1
        losses.append(total / count)
        if on_epoch is not None:
            on_epoch(epoch, losses[-1])
    return losses


def evaluate_captions(model: CaptioningRNN, split: CaptionSplit, vocab) -> CaptionScores:
    """Greedy captions of every scene of ``split``, scored against the true captions."""
    model.eval()
    max_len = split.captions_out.shape[1]
    ids = model.caption(_on_device(split.features, model.dense.W.data), bos_id=vocab["<bos>"],
                        eos_id=vocab["<eos>"], max_len=max_len)
    captions = [" ".join(vocab.to_tokens(row)) for row in ids]
    references = [scene.caption for scene in split.scenes]
    return CaptionScores(corpus_bleu(captions, references) / 100, exact_match(captions, references), captions)


def captions_demo_memory(num_train: int | None = None) -> MemoryEstimate:
    """The memory :func:`run_captions_demo` takes with ``num_train`` training scenes (``None``: the settings'),
    estimated before any scene is drawn: the scenes (:func:`~npseq.data.captions.caption_data_sizes`), and the
    captioner's parameters (exact, four copies with gradients and Adam's moments) and one training step's
    activations (as :func:`~npseq.models.estimate_rnnlm_memory` counts them). Pass it to
    :func:`npseq._checks.check_memory`."""
    settings = CAPTIONS_DEMO_SETTINGS
    data = caption_data_sizes(num_train or settings["num_train"], settings["num_test"])
    V, H, E, N, T = data.vocab_size, settings["num_hiddens"], settings["embed_size"], settings["batch_size"], \
        data.num_steps
    pixels = IMAGE_SIZE * IMAGE_SIZE * 3
    parameters = pixels * H + H + V * E + make_rnn_parameters(settings["cell"], E, H) + H * V + V
    activations = 2 * (N * (pixels + H) + N * T * (2 * E + cell_record(settings["cell"]).gates * 2 * H + 3 * H)
                       + 3 * N * T * V)
    itemsize = backend.default_dtype.itemsize
    return MemoryEstimate(parameters, 4 * parameters * itemsize, activations * itemsize, data.bytes)


def run_captions_demo(out: str, *, epochs: int | None = None, num_train: int | None = None, seed: int = 0,
                      num_shown: int = 8, on_epoch: Callable | None = None) -> CaptionsDemoRecord:
    """Draw the scenes, train a first-step GRU captioner (:data:`CAPTIONS_DEMO_SETTINGS`), caption the
    unseen test scenes, and write ``captions.png`` and ``captions.txt`` into the folder ``out``.

    Args:
        out: an existing folder.
        epochs, num_train: override the settings (e.g. a quick run in the tests).
        seed: the data's and the weights' seed.
        num_shown: test scenes drawn in the PNG.
        on_epoch: called as ``on_epoch(epoch, loss)`` after each epoch.
    """
    settings = dict(CAPTIONS_DEMO_SETTINGS)
    settings["epochs"] = epochs or settings["epochs"]
    settings["num_train"] = num_train or settings["num_train"]
    data = load_caption_data(settings["num_train"], settings["num_test"], batch_size=settings["batch_size"],
                             seed=seed)
    model = build_captioner(data, num_hiddens=settings["num_hiddens"], embed_size=settings["embed_size"],
                            cell=settings["cell"], mode=settings["mode"], seed=seed)
    start = time.perf_counter()
    losses = train_captioner(model, data.train_iter, settings["epochs"], lr=settings["lr"], clip=settings["clip"],
                             on_epoch=on_epoch)
    train_s = time.perf_counter() - start
    scores = evaluate_captions(model, data.test, data.vocab)
    references = [scene.caption for scene in data.test.scenes]
    shown = range(min(num_shown, len(references)))
    png = show_captioned_images([data.test.scenes[i].image for i in shown], [scores.captions[i] for i in shown],
                                os.path.join(out, "captions.png"), references=[references[i] for i in shown])
    text = os.path.join(out, "captions.txt")
    with open(text, "w", encoding="utf-8") as file:
        file.write("generated\treference\n")
        file.writelines(f"{hyp}\t{ref}\n" for hyp, ref in zip(scores.captions, references))
    return CaptionsDemoRecord(len(data.train.scenes), len(references), settings["epochs"], train_s, losses, scores,
                              references, png, text)
