"""The cases of the attention set: Luong's general and concat scores, local-p attention, masked dot attention.

The concat score's and the position predictor's weights are scaled so that no tanh or sigmoid saturates. local-p's
window has edges that jump with the predicted position (a key is in or out), which finite differences would see as
a spike: its cases draw again until every position lies :data:`WINDOW_MARGIN` away from any edge
(:func:`clear_of_window_edges`), far more than a step of the grader's stencil moves it.
"""
from __future__ import annotations

from ... import functional as F
from ...samples import lengths, normal
from ..references import attention as R
from . import Case, one_upstream, seeded, with_dweights

WINDOW_MARGIN = 0.1
"""How far each predicted position :math:`p` of a local-p case stays from a window's edge (:math:`p = k \\pm D`
for a key :math:`k`). The grader's stencil moves an input by at most ``2e-3``, which moves :math:`p` by well
under 0.1 with these weights (:math:`|\\partial p / \\partial x| \\le S/4 \\cdot |v_p| |W_p|`, a few units), so
no key enters or leaves a window while finite differences are taken."""

MAX_DRAWS = 100
"""How many draws a local-p case may take to find positions clear of the edges (a few, on average)."""


def general_scores_cases():
    def build(n, q, k, dq, dk):
        def make(rng):
            return {"queries": normal(rng, n, q, dq), "keys": normal(rng, n, k, dk), "W": normal(rng, dq, dk)}
        return make

    wrt = ("queries", "keys", "W")
    return tuple(Case(label, seeded(seed, build(*shape)), F.general_scores_forward, 1, wrt, one_upstream, seed)
                 for seed, label, shape in (
                     (201, "N=2 Q=3 K=4, Dq=3 Dk=5 (W not square)", (2, 3, 4, 3, 5)),
                     (202, "N=1, one query, one key, Dq=2 Dk=1", (1, 1, 1, 2, 1)),
                     (203, "N=3, one query (a decoder step), K=5, Dq=Dk=2", (3, 1, 5, 2, 2))))


def concat_scores_cases():
    def build(n, q, k, dq, dk, hidden):
        def make(rng):
            return {"queries": normal(rng, n, q, dq), "keys": normal(rng, n, k, dk),
                    "Wq": normal(rng, dq, hidden, scale=0.5), "Wk": normal(rng, dk, hidden, scale=0.5),
                    "wv": normal(rng, hidden, scale=1.5)}
        return make

    wrt = ("queries", "keys", "Wq", "Wk", "wv")
    return tuple(Case(label, seeded(seed, build(*shape)), F.concat_scores_forward, 1, wrt, one_upstream, seed)
                 for seed, label, shape in (
                     (204, "N=2 Q=3 K=4, Dq=3 Dk=5, hidden size 4", (2, 3, 4, 3, 5, 4)),
                     (205, "N=1, one query, K=2, Dq=2 Dk=1, hidden size 1", (1, 1, 2, 2, 1, 1))))


def clear_of_window_edges(inputs: dict, margin: float = WINDOW_MARGIN) -> bool:
    """Whether no key of a local-p case's inputs enters or leaves a window while :math:`p` moves by up to
    ``margin`` either way. A key's window condition :math:`|k - p| \\le D` holds on an interval of :math:`p`
    longer than ``2 margin``, so comparing the windows at :math:`p \\pm` ``margin`` with the one at :math:`p`
    covers every position in between."""
    lens, half_width, num_keys = inputs["source_lens"], inputs["half_width"], inputs["keys"].shape[1]
    centers, _ = F.predictive_position_forward(inputs["queries"], inputs["Wp"], inputs["vp"], lens)
    window = F.local_window(centers, lens, num_keys, half_width)
    return all((F.local_window(centers + shift, lens, num_keys, half_width) == window).all()
               for shift in (-margin, margin))


def local_p_attention_cases():
    def build(n, q, k, dims, half_width, lens):
        def draw(rng):
            dq, dk, dv, hidden = dims
            return {"queries": normal(rng, n, q, dq), "keys": normal(rng, n, k, dk), "values": normal(rng, n, k, dv),
                    "W": normal(rng, dq, dk, scale=0.5), "Wp": normal(rng, dq, hidden, scale=0.5),
                    "vp": normal(rng, hidden, scale=1.5), "source_lens": lengths(lens), "half_width": half_width}

        def make(rng):
            for _ in range(MAX_DRAWS):
                inputs = draw(rng)
                if clear_of_window_edges(inputs):
                    return inputs
            raise RuntimeError(f"local-p case with source_lens={lens}: no draw in {MAX_DRAWS} put every predicted "
                               f"position {WINDOW_MARGIN} away from a window's edge")
        return make

    wrt = ("queries", "keys", "values", "W", "Wp", "vp")
    return tuple(Case(label, seeded(seed, build(*args)), R.local_p_attention_forward, 1, wrt, one_upstream, seed)
                 for seed, label, args in (
                     (206, "N=2 Q=3 K=7, D=2, source_lens=[7, 4] (windows cut at the sentence's ends)",
                      (2, 3, 7, (4, 5, 3, 4), 2, [7, 4])),
                     (207, "N=3 Q=2 K=5, D=1 (sigma 0.5), source_lens=[5, 2, 0] (an empty sentence: empty windows)",
                      (3, 2, 5, (3, 3, 2, 3), 1, [5, 2, 0])),
                     (208, "N=1, one query, K=6, D=3 (sigma 1.5)", (1, 1, 6, (2, 3, 2, 2), 3, [6]))))


def _masked_dot_forward(causal):
    def forward(queries, keys, values, valid_lens):
        return R.masked_dot_attention_forward(queries, keys, values, valid_lens, causal)
    return forward


def masked_dot_attention_cases():
    def build(n, q, k, d, dv, lens):
        def make(rng):
            return {"queries": normal(rng, n, q, d), "keys": normal(rng, n, k, d), "values": normal(rng, n, k, dv),
                    "valid_lens": None if lens is None else lengths(lens)}
        return make

    wrt = ("queries", "keys", "values")
    return (
        Case("causal, N=3 T_q=T_k=4, valid_lens=[4, 2, 0] (a row of all padding), dweights=None",
             seeded(209, build(3, 4, 4, 3, 2, [4, 2, 0])), _masked_dot_forward(True), 1, wrt, one_upstream, 209),
        Case("causal, N=2 T_q=3 T_k=5, valid_lens per query [[5, 1, 3], [0, 2, 5]], dweights given",
             seeded(210, build(2, 3, 5, 3, 4, [[5, 1, 3], [0, 2, 5]])), _masked_dot_forward(True), 2, wrt,
             with_dweights, 210),
        Case("padding alone (causal=False), N=1, one query, K=4, valid_lens=[3]",
             seeded(211, build(1, 1, 4, 2, 3, [3])), _masked_dot_forward(False), 1, wrt, one_upstream, 211),
    )
