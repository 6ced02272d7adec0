"""The cases of the deep set: two stacked tanh RNN layers, and a bidirectional one, over padded sequences
(:mod:`npseq.course.references.deep`), and Nadaraya-Watson kernel regression.

The recurrent weights are scaled by 0.5 so that no tanh saturates. Each layer has a case with a row of all padding
(and, bidirectional, one cut short: the padding is where a layer that reads the sequence from its end goes wrong),
and a small one without ``valid_lens``.
"""
from __future__ import annotations

from ... import backend
from ... import functional as F
from ...samples import lengths, normal
from ..references import deep as R
from . import Case, one_upstream, seeded


def _layers_inputs(n, t, d, hidden, lens, widths):
    """``x``, ``h0`` ``(2, N, H)`` and a ``Wx``, ``Wh``, ``b`` per entry of ``widths`` (``suffix -> rows of Wx``)."""
    def build(rng):
        inputs = {"x": normal(rng, n, t, d), "h0": normal(rng, 2, n, hidden)}
        for suffix, rows in widths.items():
            inputs.update({f"Wx{suffix}": normal(rng, rows, hidden, scale=0.5),
                           f"Wh{suffix}": normal(rng, hidden, hidden, scale=0.5), f"b{suffix}": normal(rng, hidden)})
        inputs["valid_lens"] = None if lens is None else lengths(lens)
        return inputs
    return build


def stacked_rnn_cases():
    wrt = ("x", "h0", "Wx1", "Wh1", "b1", "Wx2", "Wh2", "b2")
    return tuple(Case(label, seeded(seed, _layers_inputs(n, t, d, hidden, lens, {"1": d, "2": hidden})),
                      R.stacked_rnn_forward, 1, wrt, one_upstream, seed)
                 for seed, label, (n, t, d, hidden, lens) in (
                     (301, "N=3 T=6 D=4 H=5, valid_lens=[6, 3, 0] (a row of all padding)", (3, 6, 4, 5, [6, 3, 0])),
                     (302, "N=1 T=1 D=2 H=2, valid_lens=None", (1, 1, 2, 2, None))))


def bidirectional_rnn_cases():
    wrt = ("x", "h0", "Wx_f", "Wh_f", "b_f", "Wx_b", "Wh_b", "b_b")
    return tuple(Case(label, seeded(seed, _layers_inputs(n, t, d, hidden, lens, {"_f": d, "_b": d})),
                      R.bidirectional_rnn_forward, 1, wrt, one_upstream, seed)
                 for seed, label, (n, t, d, hidden, lens) in (
                     (303, "N=3 T=5 D=3 H=4, valid_lens=[5, 2, 0] (a row cut short, a row of all padding)",
                      (3, 5, 3, 4, [5, 2, 0])),
                     (304, "N=2 T=4 D=2 H=3, valid_lens=None (each sequence reversed whole)", (2, 4, 2, 3, None)),
                     (305, "N=1 T=1 D=1 H=1, valid_lens=None", (1, 1, 1, 1, None))))


def nadaraya_watson_cases():
    """The width w is drawn near 1 (a kernel about as wide as the keys are spread: neither one key nor all of them
    take the whole weight), and its sign is drawn too, which the Gaussian ignores and ``dw`` does not."""
    def build(queries_shape, k):
        def make(rng):
            n = queries_shape[0]
            return {"queries": normal(rng, *queries_shape), "keys": normal(rng, n, k), "values": normal(rng, n, k),
                    "w": backend.asarray(rng.choice([-1.0, 1.0]) * (1.0 + 0.2 * rng.standard_normal()))}
        return make

    wrt = ("queries", "keys", "values", "w")
    return tuple(Case(label, seeded(seed, build(*shape)), F.nadaraya_watson_forward, 1, wrt, one_upstream, seed)
                 for seed, label, shape in (
                     (306, "queries (N=4,), one per example with its own K=5 keys (d2l's training)", ((4,), 5)),
                     (307, "queries (N=2, Q=3) sharing each example's K=4 keys", ((2, 3), 4)),
                     (308, "N=1, one query, one key (its weight is 1: only the value has a gradient)", ((1,), 1))))
