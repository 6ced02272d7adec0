"""The cases of the variants set: a peephole LSTM, a coupled-gate LSTM, the minimal gated unit, a layer-normalised
RNN, one step each, from the course's own references (:mod:`npseq.course.references.variants`).

The gated cells' weights are scaled by 0.5 and the peepholes by 0.3 so that no gate saturates. Each cell is
graded at N=3 D=4 H=5 and at the edge of one example and one unit (the layer-normalised RNN needs more units:
see its cases).
"""
from __future__ import annotations

from ...samples import normal
from ..references import variants as R
from . import Case, one_upstream, seeded, two_upstream

SIZES = ((3, 4, 5), (1, 2, 1))
"""(N, D, H) of the gated cells' two cases."""


def _label(n, d, hidden, more=""):
    return f"N={n} D={d} H={hidden}{more}"


def _step_inputs(n, d, hidden, gates, cell_state):
    """x, prev_h (and prev_c), Wx, Wh, b of a cell with ``gates`` column blocks."""
    def build(rng):
        inputs = {"x": normal(rng, n, d), "prev_h": normal(rng, n, hidden)}
        if cell_state:
            inputs["prev_c"] = normal(rng, n, hidden)
        inputs.update({"Wx": normal(rng, d, gates * hidden, scale=0.5),
                       "Wh": normal(rng, hidden, gates * hidden, scale=0.5), "b": normal(rng, gates * hidden)})
        return inputs
    return build


def peephole_lstm_step_cases():
    def build(n, d, hidden):
        step = _step_inputs(n, d, hidden, 4, cell_state=True)

        def make(rng):
            inputs = step(rng)
            inputs.update({name: normal(rng, hidden, scale=0.3) for name in ("p_i", "p_f", "p_o")})
            return inputs
        return make

    wrt = ("x", "prev_h", "prev_c", "Wx", "Wh", "b", "p_i", "p_f", "p_o")
    return tuple(Case(_label(*size), seeded(seed, build(*size)), R.peephole_lstm_step_forward, 2, wrt, two_upstream,
                      seed)
                 for seed, size in zip((101, 102), SIZES))


def coupled_lstm_step_cases():
    wrt = ("x", "prev_h", "prev_c", "Wx", "Wh", "b")
    return tuple(Case(_label(*size), seeded(seed, _step_inputs(*size, 3, cell_state=True)),
                      R.coupled_lstm_step_forward, 2, wrt, two_upstream, seed)
                 for seed, size in zip((103, 104), SIZES))


def minimal_gated_unit_step_cases():
    wrt = ("x", "prev_h", "Wx", "Wh", "b")
    return tuple(Case(_label(*size), seeded(seed, _step_inputs(*size, 2, cell_state=False)),
                      R.minimal_gated_unit_step_forward, 1, wrt, one_upstream, seed)
                 for seed, size in zip((105, 106), SIZES))


def layer_norm_rnn_step_cases():
    """Over one unit layer norm is the constant 0, and over two it is nearly +-1 (with a vanishing gradient)
    unless ``eps`` is as large as the variance: the small cases have three units, or two and a
    large ``eps``. The weights are not scaled down: the normalisation undoes their scale, and a row of
    pre-activations spread wide keeps its normalisation's derivatives small for finite differences."""
    def build(n, d, hidden, eps):
        def make(rng):
            return {"x": normal(rng, n, d), "prev_h": normal(rng, n, hidden),
                    "Wx": normal(rng, d, hidden), "Wh": normal(rng, hidden, hidden),
                    "gamma": 1 + normal(rng, hidden, scale=0.5), "beta": normal(rng, hidden, scale=0.5), "eps": eps}
        return make

    wrt = ("x", "prev_h", "Wx", "Wh", "gamma", "beta")
    return tuple(Case(_label(n, d, hidden, f", eps={eps:g}"), seeded(seed, build(n, d, hidden, eps)),
                      R.layer_norm_rnn_step_forward, 1, wrt, one_upstream, seed)
                 for seed, (n, d, hidden, eps) in ((107, (3, 4, 5, 1e-5)), (108, (1, 2, 3, 1e-5)),
                                                   (109, (2, 3, 2, 0.5))))
