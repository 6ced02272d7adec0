"""The cases of the classic set: recurrent cells and sequences, attention, the embedding, the loss, a decoder step."""
from __future__ import annotations

from ... import backend
from ... import functional as F
from ...functional.activations import softmax_where
from ...samples import lengths, normal
from . import Case, one_upstream, seeded, two_upstream, with_dweights


def _step_inputs(n, d, hidden, gates, biases):
    """Inputs of a recurrent step; weights scaled by 0.5 so that no gate saturates."""
    def build(rng):
        inputs = {"x": normal(rng, n, d), "prev_h": normal(rng, n, hidden)}
        if "prev_c" in biases:
            inputs["prev_c"] = normal(rng, n, hidden)
        inputs["Wx"] = normal(rng, d, gates * hidden, scale=0.5)
        inputs["Wh"] = normal(rng, hidden, gates * hidden, scale=0.5)
        for name in biases:
            if name != "prev_c":
                inputs[name] = normal(rng, gates * hidden)
        return inputs
    return build


def rnn_step_cases():
    cases = []
    for seed, (n, d, hidden) in ((1, (3, 4, 5)), (2, (1, 2, 1))):
        cases.append(Case(f"N={n} D={d} H={hidden}", seeded(seed, _step_inputs(n, d, hidden, 1, ["b"])),
                          F.rnn_step_forward, 1, ("x", "prev_h", "Wx", "Wh", "b"), one_upstream, seed))
    return tuple(cases)


def lstm_step_cases():
    cases = []
    for seed, (n, d, hidden) in ((3, (3, 4, 5)), (4, (1, 2, 2))):
        cases.append(Case(f"N={n} D={d} H={hidden}", seeded(seed, _step_inputs(n, d, hidden, 4, ["prev_c", "b"])),
                          F.lstm_step_forward, 2, ("x", "prev_h", "prev_c", "Wx", "Wh", "b"), two_upstream, seed))
    return tuple(cases)


def gru_step_cases():
    cases = []
    for seed, reset_after in ((5, False), (6, True)):
        build = _step_inputs(3, 4, 5, 3, ["bx", "bh"])
        cases.append(Case(f"reset_after={reset_after}, N=3 D=4 H=5", seeded(seed, build),
                          lambda reset_after=reset_after, **inputs: F.gru_step_forward(**inputs,
                                                                                       reset_after=reset_after),
                          1, ("x", "prev_h", "Wx", "Wh", "bx", "bh"), one_upstream, seed))
    return tuple(cases)


def masked_softmax_cases():
    def per_example(rng):
        return {"scores": normal(rng, 3, 2, 4), "valid_lens": lengths([4, 1, 0])}

    def per_query(rng):
        return {"scores": normal(rng, 2, 3, 5), "valid_lens": lengths([[5, 2, 1], [0, 3, 4]])}

    def large(rng):
        return {"scores": normal(rng, 2, 2, 6, scale=4.0), "valid_lens": None}

    return tuple(Case(label, seeded(seed, build), F.masked_softmax, 1, ("scores",), one_upstream, seed)
                 for seed, label, build in ((7, "valid_lens=[4, 1, 0] (a zero-length row)", per_example),
                                            (8, "valid_lens per query (N, Q), one row empty", per_query),
                                            (9, "valid_lens=None, large scores (std 4)", large)))


def masked_softmax_caller_cases():
    """The shapes the transformer set's attention hands the masked softmax backward: ``(N, h, Q, K)``, a causal mask
    with padded keys. A helper right on its own ``(N, Q, K)`` cases (a sum over ``axis=2``) broke every attention
    with heads, and the learner was sent to the attention."""
    def heads(rng):
        queries, keys = backend.numpy.arange(4)[:, None], backend.numpy.arange(5)
        causal = keys[None, :] <= queries + 1                               # (Q, K)
        padded = keys[None, :] < backend.numpy.array([5, 2])[:, None]       # (N, K)
        return {"scores": normal(rng, 2, 3, 4, 5), "mask": causal[None, None] & padded[:, None, None]}

    return (Case("heads (N=2, h=3, Q=4, K=5), causal mask and padded keys", seeded(10, heads), softmax_where, 1,
                 ("scores",), one_upstream, 10),)


def additive_attention_cases():
    def build(lens):
        def make(rng):
            n, q, k, dq, dk, dv, hidden = 2, 3, 4, 3, 5, 2, 4
            return {"queries": normal(rng, n, q, dq), "keys": normal(rng, n, k, dk), "values": normal(rng, n, k, dv),
                    "Wq": normal(rng, dq, hidden, scale=0.5), "Wk": normal(rng, dk, hidden, scale=0.5),
                    "wv": normal(rng, hidden, scale=2.0), "valid_lens": lengths(lens)}
        return make

    wrt = ("queries", "keys", "values", "Wq", "Wk", "wv")
    return (
        Case("valid_lens=[2, 4], dweights=None", seeded(10, build([2, 4])), F.additive_attention_forward,
             1, wrt, one_upstream, 10),
        Case("valid_lens per query (N, Q) with a 0, dweights given", seeded(11, build([[4, 1, 3], [0, 2, 4]])),
             F.additive_attention_forward, 2, wrt, with_dweights, 11),
    )


def _sequence_inputs(n, t, d, hidden, gates, lens):
    """Inputs of a recurrent sequence function; ``lens`` ``None`` or the valid lengths."""
    def build(rng):
        return {"x": normal(rng, n, t, d), "h0": normal(rng, n, hidden),
                "Wx": normal(rng, d, gates * hidden, scale=0.5), "Wh": normal(rng, hidden, gates * hidden, scale=0.5),
                "b": normal(rng, gates * hidden), "valid_lens": None if lens is None else lengths(lens)}
    return build


def sequence_cases(forward, gates, first_seed):
    sizes = (((3, 6, 4, 5), [6, 3, 0], "N=3 T=6 D=4 H=5, valid_lens=[6, 3, 0] (a row of all padding)"),
             ((1, 1, 2, 2), None, "N=1 T=1 D=2 H=2, valid_lens=None"))
    return tuple(Case(label, seeded(first_seed + i, _sequence_inputs(*shape, gates, lens)), forward, 1,
                      ("x", "h0", "Wx", "Wh", "b"), one_upstream, first_seed + i)
                 for i, (shape, lens, label) in enumerate(sizes))


def word_embedding_cases():
    def build(ids, vocab, dim):
        def make(rng):
            return {"x": lengths(ids), "W": normal(rng, vocab, dim)}
        return make

    return (Case("repeated ids x=[[0, 3, 3, 1], [3, 0, 2, 3]], V=5 (id 4 unused)",
                 seeded(16, build([[0, 3, 3, 1], [3, 0, 2, 3]], 5, 3)), F.word_embedding_forward, 1, ("W",),
                 one_upstream, 16),
            Case("N=1 T=1", seeded(17, build([[2]], 3, 2)), F.word_embedding_forward, 1, ("W",), one_upstream, 17))


def _loss_forward(x, y, mask):
    """``temporal_softmax_loss`` as a forward: the loss (a 0-d array) and, as the cache, its inputs."""
    loss, _ = F.temporal_softmax_loss(x, y, mask)
    return backend.xp.asarray(loss), {"x": x, "y": y, "mask": mask}


def _loss_call(fn, douts, inputs):
    """Call a loss function on its inputs; the loss it returns becomes an array so that it can be compared."""
    result = fn(inputs["x"], inputs["y"], inputs["mask"])
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return backend.numpy.asarray(result[0], dtype=backend.numpy.float64), result[1]
    return result


def temporal_softmax_loss_cases():
    def build(n, t, v, mask, scale):
        def make(rng):
            return {"x": normal(rng, n, t, v, scale=scale), "y": lengths(rng.integers(0, v, (n, t))),
                    "mask": backend.xp.asarray(backend.numpy.array(mask, dtype=bool))}
        return make

    return tuple(Case(label, seeded(seed, build(*args)), _loss_forward, 1, ("x",), _loss_call, seed,
                      returns_loss=True)
                 for seed, label, args in (
                     (18, "N=3 T=4 V=5, mask rows [1,1,1,0], [1,0,0,0], [0,0,0,0] (one all padding)",
                      (3, 4, 5, [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], 1.0)),
                     (19, "N=1 T=1 V=3", (1, 1, 3, [[1]], 1.0)),
                     (20, "N=2 T=3 V=4, large scores (std 10)", (2, 3, 4, [[1, 1, 1], [1, 1, 0]], 10.0))))


def decoder_step_cases():
    def build(n, steps, lens):
        def make(rng):
            embed, hidden, enc, attn = 3, 4, 5, 4
            return {"x": normal(rng, n, embed), "prev_h": normal(rng, n, hidden),
                    "enc_outputs": normal(rng, n, steps, enc), "valid_lens": None if lens is None else lengths(lens),
                    "Wq": normal(rng, hidden, attn, scale=0.5), "Wk": normal(rng, enc, attn, scale=0.5),
                    "wv": normal(rng, attn), "Wx": normal(rng, enc + embed, 3 * hidden, scale=0.5),
                    "Wh": normal(rng, hidden, 3 * hidden, scale=0.5), "bx": normal(rng, 3 * hidden),
                    "bh": normal(rng, 3 * hidden)}
        return make

    wrt = ("x", "prev_h", "enc_outputs", "Wq", "Wk", "wv", "Wx", "Wh", "bx", "bh")
    return (Case("N=2 S=4, valid_lens=[4, 2]", seeded(21, build(2, 4, [4, 2])), F.bahdanau_decoder_step_forward, 1,
                 wrt, one_upstream, 21),
            Case("N=1 S=1, valid_lens=None", seeded(22, build(1, 1, None)), F.bahdanau_decoder_step_forward, 1,
                 wrt, one_upstream, 22))
