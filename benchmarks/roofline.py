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


def _forward_products(N, S, T, E, H, V, layers):
    """The forward products: (what, batch, m, k, n, count, weight gradient stacked over the count?)."""
    encoder = [("encoder input projection, layer 0", 1, N * S, E, 3 * H, 1, True)]
    encoder += [(f"encoder input projection, layer {l}", 1, N * S, H, 3 * H, 1, True) for l in range(1, layers)]
    for l in range(layers):
        encoder += [(f"encoder h W_h[r, z], layer {l}", 1, N, H, 2 * H, S, True),
                    (f"encoder (r h) W_hn, layer {l}", 1, N, H, H, S, True)]
    decoder = [("key projection (once per batch)", 1, N * S, H, H, 1, True),
               ("query projection", 1, N, H, H, T, True),
               ("scores w_v . tanh(q + k)", 1, N * S, H, 1, T, True),
               ("context alpha V", N, 1, S, H, T, False),
               ("decoder input projection [c; E y], layer 0", 1, N, H + E, 3 * H, T, True)]
    decoder += [(f"decoder input projection, layer {l}", 1, N, H, 3 * H, T, True) for l in range(1, layers)]
    for l in range(layers):
        decoder += [(f"decoder h W_h[r, z], layer {l}", 1, N, H, 2 * H, T, True),
                    (f"decoder (r h) W_hn, layer {l}", 1, N, H, H, T, True)]
    decoder += [("output layer", 1, N * T, H, V, 1, True)]
    return [("encoder",) + p for p in encoder] + [("decoder",) + p for p in decoder]


def bahdanau_products(N, S, T, E, H, V, layers=2) -> list:
    """Every product of one training batch of the Bahdanau GRU translator, forward and backward, as
    :class:`Product` rows. The hidden-side products are listed as ``h W_h[r, z]`` and
    ``(r h) W_hn``; the reset-after GRU the models build does ``h W_h`` in one product instead,
    the same work.

    Args:
        N: batch size; S, T: source and target steps; E: embedding size; H: hidden size;
        V: target vocabulary size; layers: recurrent layers in the encoder and the decoder.
    """
    rows = []
    for phase, what, batch, m, k, n, count, stacked in _forward_products(N, S, T, E, H, V, layers):
        rows.append(Product(phase, what, batch, m, k, n, count))
        rows.append(Product("backward", f"d(input) of {what}", batch, m, n, k, count))
        if stacked:
            rows.append(Product("backward", f"d(weight) of {what}, all calls stacked", batch, k, m * count, n, 1))
        else:
            rows.append(Product("backward", f"d(second operand) of {what}", batch, k, m, n, count))
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
