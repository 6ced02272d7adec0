"""The cases of the transformer set: scaled dot-product attention, layer normalisation, the feed-forward block,
multi-head attention and one residual-norm sub-layer.

Two places where finite differences would mislead: ReLU's kink, a jump in the derivative that a stencil would
straddle, and a layer norm's row whose values nearly coincide, where the normalisation bends so sharply that the
stencil's error outgrows the grader's tolerance. The cases draw again until every ReLU pre-activation lies
:data:`RELU_MARGIN` away from 0 (:func:`clear_of_the_kink`) and every normalised row spreads at least
:data:`SPREAD_MARGIN` (:func:`spread_enough`), in the sheet's numbers and in every student's.
"""
from __future__ import annotations

from ... import functional as F
from ...samples import lengths, normal
from ..references import transformer as R
from . import Case, one_upstream, seeded, with_dweights

RELU_MARGIN = 0.05
"""The least distance from 0 of any ReLU pre-activation ``a = x W1 + b1`` in a case. A step of the grader's
stencil (at most 2e-3, on one element of x, W1 or b1) moves a pre-activation by at most 2e-3 times the largest
|x|, |W1| or 1, far less than this: finite differences never cross ReLU's kink, where they would see a jump
that no backward has."""

SPREAD_MARGIN = 0.5
"""The least standard deviation of a row that a case's layer norm normalises. Where a row's values nearly
coincide, x_hat = (x - mu) / sigma bends sharply and the stencil's error grows like (h / sigma)^4: rows with
sigma near 0.1 push a correct gradient past the grader's 1e-7, rows spread this wide keep it a hundred times
below."""

MAX_DRAWS = 1000
"""How many draws a case may take to satisfy its margins (a few, on average)."""


def clear_of_the_kink(inputs: dict, margin: float = RELU_MARGIN) -> bool:
    """Whether every ReLU pre-activation ``x W1 + b1`` of a case's inputs lies more than ``margin`` from 0."""
    return float(abs(inputs["x"] @ inputs["W1"] + inputs["b1"]).min()) > margin


def spread_enough(rows, margin: float = SPREAD_MARGIN) -> bool:
    """Whether every row (over the last axis) of what a layer norm normalises has a standard deviation over
    ``margin``."""
    return float(rows.std(axis=-1).min()) > margin


def _redrawn(draw, accept, what: str):
    """``make(rng)``: ``draw(rng)`` again until ``accept`` takes the inputs."""
    def make(rng):
        for _ in range(MAX_DRAWS):
            inputs = draw(rng)
            if accept(inputs):
                return inputs
        raise RuntimeError(f"{what}: no draw in {MAX_DRAWS} kept clear of the margins that finite differences need")
    return make


def layer_norm_cases():
    def build(shape, eps, shift):
        def draw(rng):
            dim = shape[-1]
            return {"x": normal(rng, *shape, scale=2.0) + shift, "gamma": 1 + normal(rng, dim, scale=0.5),
                    "beta": normal(rng, dim), "eps": eps}
        return _redrawn(draw, lambda inputs: spread_enough(inputs["x"]), f"layer-norm case x {shape}")

    return tuple(Case(label, seeded(seed, build(*args)), F.layer_norm_forward, 1, ("x", "gamma", "beta"),
                      one_upstream, seed)
                 for seed, label, args in (
                     (23, "x (N=2, T=3, D=5), eps=1e-5, rows not centred", ((2, 3, 5), 1e-5, 3.0)),
                     (24, "x (4, 6) (2-d), eps=0.5 (large enough to matter)", ((4, 6), 0.5, 0.0)),
                     (25, "x (N=1, T=1, D=3)", ((1, 1, 3), 1e-5, 0.0))))


MULTIHEAD_GRADED = ("W_q", "b_q", "W_k", "W_v", "b_v", "W_o", "b_o")
"""The parameters whose gradients are graded: all but ``b_k``, whose gradient is 0 (a shift of every score of
a query, which the softmax ignores), so that finite differences see only rounding noise there."""


def _multihead_forward(num_heads, causal):
    def forward(queries, keys, values, W_q, b_q, W_k, b_k, W_v, b_v, W_o, b_o, valid_lens):
        params = {"W_q": W_q, "b_q": b_q, "W_k": W_k, "b_k": b_k, "W_v": W_v, "b_v": b_v, "W_o": W_o, "b_o": b_o}
        return F.multihead_attention_forward(queries, keys, values, params, num_heads, valid_lens, causal)
    return forward


def _multihead_call(call):
    """``call``, with the returned dict of parameter gradients laid out as arrays, in :data:`MULTIHEAD_GRADED` order."""
    def flattened(fn, douts, cache):
        result = call(fn, douts, cache)
        if isinstance(result, (tuple, list)) and len(result) == 4 and isinstance(result[3], dict):
            return (*result[:3], *(result[3].get(name) for name in MULTIHEAD_GRADED))
        return result
    return flattened


def multihead_attention_cases():
    def build(n, t_q, t_k, dims, lens):
        def make(rng):
            d_q, d_k, d_v, hidden, d_o = dims
            sizes = {"W_q": (d_q, hidden), "b_q": (hidden,), "W_k": (d_k, hidden), "b_k": (hidden,),
                     "W_v": (d_v, hidden), "b_v": (hidden,), "W_o": (hidden, d_o), "b_o": (d_o,)}
            inputs = {"queries": normal(rng, n, t_q, d_q), "keys": normal(rng, n, t_k, d_k),
                      "values": normal(rng, n, t_k, d_v)}
            inputs.update({name: normal(rng, *shape, scale=0.5) for name, shape in sizes.items()})
            inputs["valid_lens"] = None if lens is None else lengths(lens)
            return inputs
        return make

    wrt = ("queries", "keys", "values") + MULTIHEAD_GRADED
    return (
        Case("2 heads, N=2 T_q=3 T_k=4, valid_lens=[4, 2], dweights=None",
             seeded(26, build(2, 3, 4, (5, 3, 4, 6, 5), [4, 2])), _multihead_forward(2, False), 1, wrt,
             _multihead_call(one_upstream), 26, heads=2),
        Case("3 heads, causal, T_q=T_k=4, valid_lens per query, dweights given",
             seeded(27, build(2, 4, 4, (6, 6, 6, 6, 6), [[1, 4, 3, 2], [4, 4, 1, 4]])), _multihead_forward(3, True),
             2, wrt, _multihead_call(with_dweights), 27, heads=3),
        Case("1 head, N=1, one query", seeded(28, build(1, 1, 3, (2, 2, 3, 4, 2), None)),
             _multihead_forward(1, False), 1, wrt, _multihead_call(one_upstream), 28, heads=1),
    )


def scaled_dot_product_attention_cases():
    def build(shape, lens):
        def make(rng):
            *lead, t_q, t_k, d, d_v = shape
            return {"queries": normal(rng, *lead, t_q, d), "keys": normal(rng, *lead, t_k, d),
                    "values": normal(rng, *lead, t_k, d_v), "valid_lens": None if lens is None else lengths(lens)}
        return make

    def forward(causal):
        def attend(queries, keys, values, valid_lens):
            return F.scaled_dot_product_attention_forward(queries, keys, values, valid_lens, causal)
        return attend

    wrt = ("queries", "keys", "values")
    return (
        Case("N=2 T_q=3 T_k=4 d=5, valid_lens=[4, 2] (padded keys), dweights=None",
             seeded(30, build((2, 3, 4, 5, 2), [4, 2])), forward(False), 1, wrt, one_upstream, 30),
        Case("causal, 2 heads (N=2, h=2, T=4), valid_lens per query with a 0 (a query that sees no key), "
             "dweights given", seeded(31, build((2, 2, 4, 4, 3, 2), [[1, 4, 0, 2], [4, 4, 3, 1]])), forward(True),
             2, wrt, with_dweights, 31),
        Case("N=1, one query, one key, valid_lens=None", seeded(32, build((1, 1, 1, 2, 3), None)), forward(False),
             1, wrt, one_upstream, 32),
    )


def _feed_forward_inputs(shape, hidden, out=None):
    """``draw(rng)``: the feed-forward block's inputs, weights scaled by 0.5."""
    def draw(rng):
        dim = shape[-1]
        return {"x": normal(rng, *shape), "W1": normal(rng, dim, hidden, scale=0.5), "b1": normal(rng, hidden),
                "W2": normal(rng, hidden, out or dim, scale=0.5), "b2": normal(rng, out or dim)}
    return draw


def _feed_forward(activation):
    def forward(x, W1, b1, W2, b2):
        return F.feed_forward_forward(x, W1, b1, W2, b2, activation)
    return forward


def feed_forward_cases():
    def relu(shape, hidden, out=None):
        return _redrawn(_feed_forward_inputs(shape, hidden, out), clear_of_the_kink, f"feed-forward case x {shape}")

    def gelu(shape, hidden):  # smooth: any draw will do
        return _feed_forward_inputs(shape, hidden)

    wrt = ("x", "W1", "b1", "W2", "b2")
    return (
        Case("ReLU, x (N=2, T=3, D=4), F=6, D_o=3", seeded(33, relu((2, 3, 4), 6, 3)),
             _feed_forward("relu"), 1, wrt, one_upstream, 33),
        Case("ReLU, x (N=1, T=1, D=2), F=3", seeded(34, relu((1, 1, 2), 3)),
             _feed_forward("relu"), 1, wrt, one_upstream, 34),
        Case("GELU, x (N=2, T=2, D=3), F=5", seeded(37, gelu((2, 2, 3), 5)),
             _feed_forward("gelu"), 1, wrt, one_upstream, 37),
    )


def clear_for_the_sublayer(inputs: dict) -> bool:
    """Whether a residual-norm case keeps clear of ReLU's kink and spreads every row of ``x + FFN(x)`` enough."""
    if not clear_of_the_kink(inputs):
        return False
    ffn, _ = F.feed_forward_forward(inputs["x"], inputs["W1"], inputs["b1"], inputs["W2"], inputs["b2"])
    return spread_enough(inputs["x"] + ffn)


def residual_norm_cases():
    def build(shape, hidden, eps):
        feed_forward = _feed_forward_inputs(shape, hidden)

        def draw(rng):
            dim = shape[-1]
            return {**feed_forward(rng), "gamma": 1 + normal(rng, dim, scale=0.5), "beta": normal(rng, dim),
                    "eps": eps}
        return _redrawn(draw, clear_for_the_sublayer, f"residual-norm case x {shape}")

    wrt = ("x", "W1", "b1", "W2", "b2", "gamma", "beta")
    return (
        Case("x (N=2, T=3, D=4), F=5, eps=1e-5", seeded(35, build((2, 3, 4), 5, 1e-5)),
             R.feed_forward_sublayer_forward, 1, wrt, one_upstream, 35),
        Case("x (N=1, T=2, D=3), F=2, eps=0.5 (large enough to matter)", seeded(36, build((1, 2, 3), 2, 0.5)),
             R.feed_forward_sublayer_forward, 1, wrt, one_upstream, 36),
    )
