"""How far a training step is from its matrix products: the floating-point work of d2l's Bahdanau
translator counted from its shapes, and the time the products alone take on this machine.

The products of one training batch are listed by phase (encoder forward, decoder forward,
backward), each as ``batch`` independent ``(m, k) @ (k, n)`` products done ``count`` times.
The backward of a product ``C = A B`` is two products, ``dA = dC B^T`` and ``dB = A^T dC``;
where ``B`` is a weight used at every step, its gradient is one product over all the steps
stacked (what npseq's recurrent layers and torch's cuDNN-style kernels do). The elementwise
work (gates, tanh, softmax, the optimizer) is counted separately, in rough flops per element
stated next to each term: it is memory traffic more than arithmetic, and the roofline here is
the products-only one.

:func:`time_products` runs exactly those products with float32 operands (preallocated, written
with ``out=``) and reports the seconds per phase: the *products-only bound* on this machine,
measured on the same shapes in the same run as the implementations. ``bound / measured`` is
the fraction of that bound an implementation reaches; the rest of its time is elementwise
passes, memory traffic and Python.
"""
from __future__ import annotations

import collections
import time
from typing import NamedTuple

import numpy as np


class Product(NamedTuple):
    phase: str  # "encoder", "decoder" (forward) or "backward"
    what: str   # which product, in words
    batch: int  # independent products done in one call (a batched matmul); 1 for a plain product
    m: int
    k: int
    n: int
    count: int  # calls per training batch

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.k * self.n * self.count


def _recurrent_products(side: str, cell: str, H: int, steps: list, layer: int) -> list:
    """The hidden-side products of one recurrent layer: a GRU's ``h W_h[r, z]`` and ``(r h) W_hn``, an LSTM's one
    ``h W_h`` of its four gates."""
    if cell == "lstm":
        return [(f"{side} h W_h[i, f, o, g], layer {layer}", 1, steps, H, 4 * H, True)]
    return [(f"{side} h W_h[r, z], layer {layer}", 1, steps, H, 2 * H, True),
            (f"{side} (r h) W_hn, layer {layer}", 1, steps, H, H, True)]


GATES = {"gru": 3, "lstm": 4}
"""Gate blocks of each cell: the input projection's width is ``GATES[cell] * H``."""


def _forward_products(N, S, T, E, H, V, layers, src_lens=None, tgt_lens=None, cell="gru"):
    """The forward products: (phase, what, batch, rows of each call, k, n, weight gradient stacked over the calls?).

    Without lengths every call has all ``N`` rows (``N * S`` for the ones over the whole source). With
    ``src_lens`` and ``tgt_lens`` (one per sentence) a call has only the valid positions: step ``s`` of the
    encoder the sentences longer than ``s``, the products over the whole source ``sum(src_lens)`` rows, a
    decoder step the targets longer than it, the scores and the context of a step the valid keys of those
    sentences, the output layer ``sum(tgt_lens)`` rows."""
    src = np.full(N, S) if src_lens is None else np.minimum(np.asarray(src_lens), S)
    tgt = np.full(N, T) if tgt_lens is None else np.minimum(np.asarray(tgt_lens), T)
    enc_steps = [int((src > s).sum()) for s in range(S)]
    dec_steps = [int((tgt > t).sum()) for t in range(T)]
    keys = [int(src[tgt > t].sum()) for t in range(T)]  # valid (query, key) pairs of decoder step t
    src_rows, tgt_rows = [int(src.sum())], [int(tgt.sum())]
    padded = src_lens is None and tgt_lens is None
    width = GATES[cell] * H
    encoder = [("encoder input projection, layer 0", 1, src_rows, E, width, True)]
    encoder += [(f"encoder input projection, layer {l}", 1, src_rows, H, width, True) for l in range(1, layers)]
    for l in range(layers):
        encoder += _recurrent_products("encoder", cell, H, enc_steps, l)
    # the context alpha V: N products (1, S) @ (S, H) a step when padded; over the valid keys, one (1, keys) @
    # (keys, H) of the same flops
    context = ("context alpha V", N, [1] * T, S, H, False) if padded else ("context alpha V", 1, [1] * T, keys, H,
                                                                             False)
    decoder = [("key projection (once per batch)", 1, src_rows, H, H, True),
               ("query projection", 1, dec_steps, H, H, True),
               ("scores w_v . tanh(q + k)", 1, keys, H, 1, True),
               context,
               ("decoder input projection [c; E y], layer 0", 1, dec_steps, H + E, width, True)]
    decoder += [(f"decoder input projection, layer {l}", 1, dec_steps, H, width, True) for l in range(1, layers)]
    for l in range(layers):
        decoder += _recurrent_products("decoder", cell, H, dec_steps, l)
    decoder += [("output layer", 1, tgt_rows, H, V, True)]
    return [("encoder",) + p for p in encoder] + [("decoder",) + p for p in decoder]


def bahdanau_products(N, S, T, E, H, V, layers=2, src_lens=None, tgt_lens=None, cell="gru") -> list:
    """Every product of one training batch of the Bahdanau translator (GRU or LSTM ``cell``), forward and
    backward, as :class:`Product` rows. A GRU's hidden-side products are listed as ``h W_h[r, z]`` and
    ``(r h) W_hn``; the reset-after GRU the models build does ``h W_h`` in one product instead,
    the same work.

    Args:
        N: batch size; S, T: source and target steps; E: embedding size; H: hidden size;
        V: target vocabulary size; layers: recurrent layers in the encoder and the decoder.
        src_lens, tgt_lens: the valid lengths of the batch's sentences: then only the products that the valid
            positions need are counted (what a packed implementation runs), not every padded row.
    """
    rows = []
    for phase, what, batch, calls, k, n, stacked in _forward_products(N, S, T, E, H, V, layers, src_lens, tgt_lens,
                                                                      cell):
        if isinstance(k, list):  # the context over the valid keys: k varies by call, m = 1
            sizes = collections.Counter((1, kk) for kk, m in zip(k, calls) if kk)
            for (m, kk), count in sorted(sizes.items()):
                rows.append(Product(phase, what, batch, m, kk, n, count))
                rows.append(Product("backward", f"d(input) of {what}", batch, m, n, kk, count))
                rows.append(Product("backward", f"d(second operand) of {what}", batch, kk, m, n, count))
            continue
        for m, count in sorted(collections.Counter(m for m in calls if m).items()):
            rows.append(Product(phase, what, batch, m, k, n, count))
            rows.append(Product("backward", f"d(input) of {what}", batch, m, n, k, count))
            if not stacked:
                rows.append(Product("backward", f"d(second operand) of {what}", batch, k, m, n, count))
        if stacked and sum(calls):
            rows.append(Product("backward", f"d(weight) of {what}, all calls stacked", batch, k, sum(calls), n, 1))
    return rows


def elementwise_flops(N, S, T, E, H, V, layers, num_params) -> dict:
    """Rough elementwise flops per phase (forward, backward about twice): a GRU step about 20 per
    hidden unit, the attention's tanh, masking and softmax about 8 per (query, key, hidden) entry
    and 6 per score, the loss about 6 per logit, Adam and clipping about 15 per parameter."""
    gru = 20 * N * H
    attention = 8 * N * S * H + 6 * N * S
    encoder = layers * S * gru
    decoder = layers * T * gru + T * attention
    return {"encoder": encoder, "decoder": decoder, "loss": 6 * N * T * V, "backward": 2 * (encoder + decoder),
            "optimizer": 15 * num_params}


def time_products(products, repeats: int = 3, seed: int = 0) -> dict:
    """Seconds per training batch that the products alone take here, by phase (float32, the best of
    ``repeats`` passes over the whole list)."""
    rng = np.random.default_rng(seed)
    operands = {}
    for p in products:
        key = (p.batch, p.m, p.k, p.n)
        if key not in operands:
            shape = (lambda *s: s) if p.batch > 1 else (lambda *s: s[1:])
            operands[key] = (rng.standard_normal(shape(p.batch, p.m, p.k), dtype=np.float32),
                             rng.standard_normal(shape(p.batch, p.k, p.n), dtype=np.float32),
                             np.empty(shape(p.batch, p.m, p.n), dtype=np.float32))
    best = None
    for _ in range(repeats):
        seconds = {}
        for p in products:
            a, b, out = operands[(p.batch, p.m, p.k, p.n)]
            start = time.perf_counter()
            for _ in range(p.count):
                np.matmul(a, b, out=out)
            seconds[p.phase] = seconds.get(p.phase, 0.0) + time.perf_counter() - start
        if best is None or sum(seconds.values()) < sum(best.values()):
            best = seconds
    return best


def sgemm_peak(size: int = 2048, repeats: int = 5, seed: int = 0) -> float:
    """This machine's float32 matrix-product rate in FLOP/s, at its BLAS threads: the best of ``repeats``
    ``(size, size) @ (size, size)`` products, a shape large enough to run at the kernel's full speed. (At 1024 the
    best of five read anywhere from 220 to 376 GFLOP/s on one 2-core AMD EPYC within minutes; at 2048, 385 or 386.)"""
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((size, size), dtype=np.float32) for _ in range(2))
    out = np.empty((size, size), dtype=np.float32)
    np.matmul(a, b, out=out)  # warm-up: threads started, pages touched
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.matmul(a, b, out=out)
        best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 / best
