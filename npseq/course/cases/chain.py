"""The cases of the chain set: the vocabulary layer, the encoder's GRU, one training step of the translator.

A training step's gradients are of intermediates as well as of inputs, so its cases difference
the loss with respect to a shift of each intermediate (:func:`translator_step_numerical`), the
forward recomputed from that intermediate on.
"""
from __future__ import annotations

from ... import backend
from ... import functional as F
from ...gradcheck import numerical_gradient
from ...samples import lengths, normal
from ..references.chain import TranslatorStepGrads, translator_step_forward
from . import Case, one_upstream, seeded

LINKS = TranslatorStepGrads._fields
"""The gradients of a training step, in the order its backward computes them: the chain's links."""


def temporal_affine_cases():
    def build(n, t, d, m):
        def make(rng):
            return {"x": normal(rng, n, t, d), "w": normal(rng, d, m), "b": normal(rng, m)}
        return make

    return tuple(Case(label, seeded(seed, build(*shape)), F.temporal_affine_forward, 1, ("x", "w", "b"),
                      one_upstream, seed)
                 for seed, label, shape in ((60, "N=2 T=3 D=4 M=5", (2, 3, 4, 5)),
                                            (61, "N=1 T=1 D=2 M=3", (1, 1, 2, 3))))


def _gru_sequence_forward(reset_after):
    """``gru_forward`` with its final state as a second output, so that it gets an upstream gradient of its own."""
    def forward(x, h0, Wx, Wh, bx, bh, valid_lens):
        outputs, cache = F.gru_forward(x, h0, Wx, Wh, bx, bh, reset_after, valid_lens)
        return outputs, cache.h_last, cache
    return forward


def _with_dh_last(fn, douts, cache):
    return fn(douts[0], cache, douts[1])


def gru_sequence_cases():
    def build(n, t, d, hidden, lens):
        def make(rng):
            return {"x": normal(rng, n, t, d), "h0": normal(rng, n, hidden),
                    "Wx": normal(rng, d, 3 * hidden, scale=0.5), "Wh": normal(rng, hidden, 3 * hidden, scale=0.5),
                    "bx": normal(rng, 3 * hidden), "bh": normal(rng, 3 * hidden),
                    "valid_lens": None if lens is None else lengths(lens)}
        return make

    wrt = ("x", "h0", "Wx", "Wh", "bx", "bh")
    return (Case("N=3 T=5 D=3 H=4, valid_lens=[5, 2, 0] (a row of all padding), dh_last given",
                 seeded(62, build(3, 5, 3, 4, [5, 2, 0])), _gru_sequence_forward(False), 2, wrt, _with_dh_last, 62),
            Case("reset_after=True, N=2 T=3 D=2 H=3, valid_lens=[1, 3], dh_last given",
                 seeded(63, build(2, 3, 2, 3, [1, 3])), _gru_sequence_forward(True), 2, wrt, _with_dh_last, 63),
            Case("N=1 T=1 D=2 H=2, valid_lens=None, dh_last=None", seeded(64, build(1, 1, 2, 2, None)),
                 F.gru_forward, 1, wrt, one_upstream, 64))


def _translator_inputs(n, s, t, sizes, source_lens, target_mask):
    """The inputs of a training step; ``sizes`` are ``(V_src, V_tgt, V, E, H, A)``; ids drawn with repeats (more
    tokens than words). The recurrent weights are scaled by 0.5 so that no gate saturates; the attention's and
    the decoder's input weights are not, and ``wv`` is doubled, so that the context moves the loss enough
    for finite differences to resolve every element of the attention's gradients."""
    v_src, v_tgt, vocabulary, embed, hidden, attention = sizes

    def build(rng):
        params = {"W_src_embed": normal(rng, v_src, embed), "Wx_enc": normal(rng, embed, 3 * hidden, scale=0.5),
                  "Wh_enc": normal(rng, hidden, 3 * hidden, scale=0.5), "bx_enc": normal(rng, 3 * hidden),
                  "bh_enc": normal(rng, 3 * hidden), "W_tgt_embed": normal(rng, v_tgt, embed),
                  "Wq": normal(rng, hidden, attention), "Wk": normal(rng, hidden, attention),
                  "wv": normal(rng, attention, scale=2.0), "Wx_dec": normal(rng, hidden + embed, 3 * hidden),
                  "Wh_dec": normal(rng, hidden, 3 * hidden, scale=0.5), "bx_dec": normal(rng, 3 * hidden),
                  "bh_dec": normal(rng, 3 * hidden), "W_out": normal(rng, hidden, vocabulary),
                  "b_out": normal(rng, vocabulary)}
        return {"source": lengths(rng.integers(0, v_src, (n, s))), "source_lens": lengths(source_lens),
                "target_in": lengths(rng.integers(0, v_tgt, (n, t))),
                "target_out": lengths(rng.integers(0, vocabulary, (n, t))),
                "target_mask": backend.xp.asarray(backend.numpy.array(target_mask, dtype=bool)), "params": params}
    return build


def _intermediate_shapes(inputs) -> dict:
    n, s = inputs["source"].shape
    t = inputs["target_in"].shape[1]
    p = inputs["params"]
    hidden = p["Wh_enc"].shape[0]
    return {"source_embedded": (n, s, p["W_src_embed"].shape[1]), "enc_outputs": (n, s, hidden),
            "encoder_state": (n, hidden), "target_embedded": (n, t, p["W_tgt_embed"].shape[1]),
            "states": (n, t, hidden), "scores": (n, t, p["W_out"].shape[1])}


def _widest_float(array):
    """The widest float type ``array``'s backend has: NumPy's ``longdouble`` where it is wider than float64
    (x86: 64 mantissa bits), float64 elsewhere."""
    xp = backend.get_array_module(array)
    if xp is backend.numpy and backend.numpy.finfo(backend.numpy.longdouble).eps < backend.numpy.finfo(float).eps:
        return backend.numpy.longdouble
    return array.dtype


def translator_step_numerical(inputs, douts) -> dict:
    """The finite differences of ``dloss * L`` (five-point stencil, ``h = 1e-3``) for every link of :data:`LINKS`:
    with respect to the parameter for a parameter's gradient, to a shift of the intermediate, at 0, for the others.

    The forward runs in the widest float type at hand (:func:`_widest_float`): the loss of a
    whole step rounds to about 1e-15 in float64, which over ``h`` is 1e-12 on every difference,
    and the attention's gradients are small next to the rest (a query moves every key's score
    nearly alike, which the softmax ignores), small enough that their smallest elements would
    sit in that noise.

    Args:
        inputs: a training step's inputs (the arguments of ``translator_step_forward``), as a case makes them.
        douts: ``(dloss,)``, the loss's upstream gradient.

    Returns:
        A dict from each name of :data:`LINKS` to its finite differences (float64, like the inputs).
    """
    shapes = _intermediate_shapes(inputs)
    wide = _widest_float(inputs["params"]["W_out"])
    params = {name: value.astype(wide) for name, value in inputs["params"].items()}
    numeric = {}
    for link in LINKS:
        name = link[1:]
        point = inputs["params"][name].copy() if name in params else backend.xp.zeros(shapes[name])

        def loss(_, name=name, point=point):
            if name in params:
                return translator_step_forward(**{**inputs, "params": {**params, name: point.astype(wide)}})[0]
            return translator_step_forward(**{**inputs, "params": params}, shifts={name: point.astype(wide)})[0]

        numeric[link] = numerical_gradient(loss, point, df=douts[0], h=1e-3, order=4)
    return numeric


def translator_step_cases():
    sizes = (6, 6, 6, 3, 4, 4)
    return (Case("N=2 S=4 T=3, source_lens=[4, 2], target mask rows [1,1,1], [1,1,0], repeated ids",
                 seeded(65, _translator_inputs(2, 4, 3, sizes, [4, 2], [[1, 1, 1], [1, 1, 0]])),
                 translator_step_forward, 1, LINKS, one_upstream, 65, numerical=translator_step_numerical),
            Case("N=1 S=3 T=2, no padding, V_src=4 V_tgt=5 V=3",
                 seeded(66, _translator_inputs(1, 3, 2, (4, 5, 3, 3, 4, 4), [3], [[1, 1]])),
                 translator_step_forward, 1, LINKS, one_upstream, 66, numerical=translator_step_numerical))
