"""Grade a learner's backward passes: ``npseq grade my_file.py`` (or ``python -m npseq.grade my_file.py``).

The course exercises (``tutorials/exercises/``) ask for twelve backward functions, each
with the exact signature of npseq's own (:data:`EXERCISES` lists them), five steps:

* ``rnn_step_backward(dnext_h, cache) -> (dx, dprev_h, dWx, dWh, db)``
* ``lstm_step_backward(dnext_h, dnext_c, cache) -> (dx, dprev_h, dprev_c, dWx, dWh, db)``
* ``gru_step_backward(dnext_h, cache) -> (dx, dprev_h, dWx, dWh, dbx, dbh)``, both GRU
  variants in one function, which branches on ``cache.reset_after``
* ``masked_softmax_backward(dweights, cache) -> dscores``
* ``additive_attention_backward(dcontext, cache, dweights=None) -> (dqueries, dkeys, dvalues, dWq, dWk, dwv)``

and five over sequences:

* ``rnn_backward(dh, cache) -> (dx, dh0, dWx, dWh, db)`` and ``lstm_backward(dh, cache)``, likewise,
  with padding (``valid_lens``)
* ``word_embedding_backward(dout, cache) -> dW``, with repeated ids
* ``temporal_softmax_loss(x, y, mask) -> (loss, dx)``, a loss: its value is checked too
* ``bahdanau_decoder_step_backward(dnext_h, cache) -> (dx, dprev_h, denc_outputs, dWq, dWk, dwv, dWx, dWh,
  dbx, dbh)``, attention and a GRU step (:mod:`npseq.exercises` holds its forward and reference)

and two pieces of the Transformer:

* ``layer_norm_backward(dy, cache) -> (dx, dgamma, dbeta)``
* ``multihead_attention_backward(dout, cache, dweights=None) -> (dqueries, dkeys, dvalues, grads)``, with
  ``grads`` a dict of the parameters' gradients keyed as the forward's ``params``; every one is graded
  but ``b_k``'s, which is 0 in exact arithmetic and so rounding noise to finite differences

For every one of these names that the learner's file defines, and for each of a
few fixed cases (seeded float64 inputs; edge cases such as N=1, T=1, a row of all
padding, repeated token ids), the grader runs *npseq's* forward, hands its cache to
the learner's backward together with a seeded upstream gradient, and checks every
returned tensor twice:

* against centered finite differences of the forward (:mod:`npseq.gradcheck`, the
  five-point stencil with ``h = 1e-3``, error :math:`O(h^4)`): largest relative error
  (:func:`npseq.gradcheck.gradient_error`) below ``1e-7``;
* against npseq's own backward on the same cache: largest absolute difference
  below ``1e-9 * max(1, max |engine gradient|)``.

A tensor passes in a case when it has the right shape, is finite and passes both.
A failing tensor is located: its worst element, for a gate weight the gate and the
unit (``dWx[0, 15]: gate g, unit 0``), for a sequence gradient the first time step,
walking back from ``T-1``, where it leaves npseq's (:func:`npseq.gradcheck.step_report`),
and for NaN or inf where the first one sits.

**Isolation.** The file is imported, and each function graded, in a child process
with a time limit (``--timeout``, default 60 s per function) and, where the platform
has ``resource.RLIMIT_AS``, a memory limit (``--memory-mb``, default 4096 MB above
what the process already holds). A function that runs past the limit, crashes the
process (a segfault), ends it (``os._exit``) or calls ``sys.exit`` scores 0 with one
line saying which; the other functions are still graded. What the learner's code
prints goes to standard error when the report is machine-readable.

**Score.** Each function is worth one point, split evenly over its (case, tensor)
pairs: points = correct pairs / all pairs (all or nothing per tensor per case).
A case whose call raises, or returns the wrong number of arrays, scores 0 for all
its tensors; a ``NotImplementedError`` is reported as "not implemented" rather
than as a crash. A name the file does not define is "not attempted" (0 points).
The total is the sum of points over the graded functions, as a percentage.

**Honesty.** A submission that imports or calls npseq's own backward functions
(:func:`npseq_backward_names`) is flagged in the report, in a note per function
whose grading called one and in a list of the file's lines that import or name
one. The score is unchanged: the instructor decides.

**Formats.** ``--format text`` (default) prints tables; ``--format json`` prints one
JSON object (:meth:`GradeReport.to_dict`); ``--format gradescope`` writes Gradescope's
``results.json`` (``--results PATH``) and prints the tables.

Exit codes: 0 when every graded function is entirely correct, 1 when some are not,
2 when the file cannot be graded (missing, syntax error, error, time limit or crash
while importing) or the command line is wrong.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import faulthandler
import functools
import json
import multiprocessing
import os
import signal
import sys
import time
import traceback
import types
from typing import Callable

from . import backend
from . import functional as F
from .exercises import bahdanau_decoder_step_backward, bahdanau_decoder_step_forward
from .gradcheck import DEFAULT_TOL, compare, first_wrong_step, gradient_error, numerical_gradient, step_report

ENGINE_TOL = 1e-9
"""Learner and engine gradients may differ by this much, relative to ``max(1, max |engine gradient|)``."""

DEFAULT_TIMEOUT = 60.0
"""Seconds each function (and the import of the file) may take, all its cases together."""

DEFAULT_MEMORY_MB = 4096
"""Megabytes of address space a child process may add to what it holds when it starts."""

FORMATS = ("text", "json", "gradescope")


class SubmissionError(Exception):
    """The learner's file cannot be graded (missing, unreadable, or it fails to import); one line."""


# ------------------------------------------------------------------ exercises
@dataclasses.dataclass(frozen=True)
class Case:
    """One fixed situation a backward is graded in."""
    label: str
    make_inputs: Callable[[], dict]  # fresh seeded float64 inputs, the forward's arguments by name
    forward: Callable                # npseq's forward: forward(**inputs) -> (*outputs, cache)
    outputs: int                     # how many leading outputs get an upstream gradient
    wrt: tuple                       # inputs whose gradients the backward returns, in order
    call: Callable                   # call(backward, douts, cache) -> what the backward returns
    seed: int                        # seeds the upstream gradients
    returns_loss: bool = False       # a loss function: returns (loss, gradients); upstream gradient 1


@dataclasses.dataclass(frozen=True)
class Exercise:
    name: str
    signature: str
    grads: tuple  # names of the returned gradients, in order
    engine: Callable
    cases: tuple
    gates: tuple = ()       # the gate names of the weights' column blocks, in order (LSTM: i, f, o, g)
    gated: tuple = ()       # the returned gradients whose last axis holds those blocks
    time_axes: tuple = ()   # (gradient name, axis of the time steps) for the sequence gradients
    upstream_time_axis: int | None = None  # a recurrence: the time axis of the first upstream gradient


def _normal(rng, *shape, scale=1.0):
    return backend.xp.asarray(scale * rng.standard_normal(shape))


def _lens(values):
    return backend.xp.asarray(backend.numpy.array(values, dtype=backend.numpy.int64))


def _seeded(seed: int, build: Callable) -> Callable[[], dict]:
    return lambda: build(backend.numpy.random.default_rng(seed))


def _step_inputs(n, d, hidden, gates, biases):
    """Inputs of a recurrent step; weights scaled by 0.5 so that no gate saturates."""
    def build(rng):
        inputs = {"x": _normal(rng, n, d), "prev_h": _normal(rng, n, hidden)}
        if "prev_c" in biases:
            inputs["prev_c"] = _normal(rng, n, hidden)
        inputs["Wx"] = _normal(rng, d, gates * hidden, scale=0.5)
        inputs["Wh"] = _normal(rng, hidden, gates * hidden, scale=0.5)
        for name in biases:
            if name != "prev_c":
                inputs[name] = _normal(rng, gates * hidden)
        return inputs
    return build


def _one_upstream(fn, douts, cache):
    return fn(douts[0], cache)


def _two_upstream(fn, douts, cache):
    return fn(douts[0], douts[1], cache)


def _with_dweights(fn, douts, cache):
    return fn(douts[0], cache, douts[1])


def _rnn_cases():
    cases = []
    for seed, (n, d, hidden) in ((1, (3, 4, 5)), (2, (1, 2, 1))):
        cases.append(Case(f"N={n} D={d} H={hidden}", _seeded(seed, _step_inputs(n, d, hidden, 1, ["b"])),
                          F.rnn_step_forward, 1, ("x", "prev_h", "Wx", "Wh", "b"), _one_upstream, seed))
    return tuple(cases)


def _lstm_cases():
    cases = []
    for seed, (n, d, hidden) in ((3, (3, 4, 5)), (4, (1, 2, 2))):
        cases.append(Case(f"N={n} D={d} H={hidden}", _seeded(seed, _step_inputs(n, d, hidden, 4, ["prev_c", "b"])),
                          F.lstm_step_forward, 2, ("x", "prev_h", "prev_c", "Wx", "Wh", "b"), _two_upstream, seed))
    return tuple(cases)


def _gru_cases():
    cases = []
    for seed, reset_after in ((5, False), (6, True)):
        build = _step_inputs(3, 4, 5, 3, ["bx", "bh"])
        cases.append(Case(f"reset_after={reset_after}, N=3 D=4 H=5", _seeded(seed, build),
                          lambda reset_after=reset_after, **inputs: F.gru_step_forward(**inputs,
                                                                                       reset_after=reset_after),
                          1, ("x", "prev_h", "Wx", "Wh", "bx", "bh"), _one_upstream, seed))
    return tuple(cases)


def _masked_softmax_cases():
    def per_example(rng):
        return {"scores": _normal(rng, 3, 2, 4), "valid_lens": _lens([4, 1, 0])}

    def per_query(rng):
        return {"scores": _normal(rng, 2, 3, 5), "valid_lens": _lens([[5, 2, 1], [0, 3, 4]])}

    def large(rng):
        return {"scores": _normal(rng, 2, 2, 6, scale=4.0), "valid_lens": None}

    return tuple(Case(label, _seeded(seed, build), F.masked_softmax, 1, ("scores",), _one_upstream, seed)
                 for seed, label, build in ((7, "valid_lens=[4, 1, 0] (a zero-length row)", per_example),
                                            (8, "valid_lens per query (N, Q), one row empty", per_query),
                                            (9, "valid_lens=None, large scores (std 4)", large)))


def _additive_attention_cases():
    def build(lens):
        def make(rng):
            n, q, k, dq, dk, dv, hidden = 2, 3, 4, 3, 5, 2, 4
            return {"queries": _normal(rng, n, q, dq), "keys": _normal(rng, n, k, dk), "values": _normal(rng, n, k, dv),
                    "Wq": _normal(rng, dq, hidden, scale=0.5), "Wk": _normal(rng, dk, hidden, scale=0.5),
                    "wv": _normal(rng, hidden, scale=2.0), "valid_lens": _lens(lens)}
        return make

    wrt = ("queries", "keys", "values", "Wq", "Wk", "wv")
    return (
        Case("valid_lens=[2, 4], dweights=None", _seeded(10, build([2, 4])), F.additive_attention_forward,
             1, wrt, _one_upstream, 10),
        Case("valid_lens per query (N, Q) with a 0, dweights given", _seeded(11, build([[4, 1, 3], [0, 2, 4]])),
             F.additive_attention_forward, 2, wrt, _with_dweights, 11),
    )


def _sequence_inputs(n, t, d, hidden, gates, lens):
    """Inputs of a recurrent sequence function; ``lens`` ``None`` or the valid lengths."""
    def build(rng):
        return {"x": _normal(rng, n, t, d), "h0": _normal(rng, n, hidden),
                "Wx": _normal(rng, d, gates * hidden, scale=0.5), "Wh": _normal(rng, hidden, gates * hidden, scale=0.5),
                "b": _normal(rng, gates * hidden), "valid_lens": None if lens is None else _lens(lens)}
    return build


def _sequence_cases(forward, gates, first_seed):
    sizes = (((3, 6, 4, 5), [6, 3, 0], "N=3 T=6 D=4 H=5, valid_lens=[6, 3, 0] (a row of all padding)"),
             ((1, 1, 2, 2), None, "N=1 T=1 D=2 H=2, valid_lens=None"))
    return tuple(Case(label, _seeded(first_seed + i, _sequence_inputs(*shape, gates, lens)), forward, 1,
                      ("x", "h0", "Wx", "Wh", "b"), _one_upstream, first_seed + i)
                 for i, (shape, lens, label) in enumerate(sizes))


def _word_embedding_cases():
    def build(ids, vocab, dim):
        def make(rng):
            return {"x": _lens(ids), "W": _normal(rng, vocab, dim)}
        return make

    return (Case("repeated ids x=[[0, 3, 3, 1], [3, 0, 2, 3]], V=5 (id 4 unused)",
                 _seeded(16, build([[0, 3, 3, 1], [3, 0, 2, 3]], 5, 3)), F.word_embedding_forward, 1, ("W",),
                 _one_upstream, 16),
            Case("N=1 T=1", _seeded(17, build([[2]], 3, 2)), F.word_embedding_forward, 1, ("W",), _one_upstream, 17))


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


def _temporal_softmax_loss_cases():
    def build(n, t, v, mask, scale):
        def make(rng):
            return {"x": _normal(rng, n, t, v, scale=scale), "y": _lens(rng.integers(0, v, (n, t))),
                    "mask": backend.xp.asarray(backend.numpy.array(mask, dtype=bool))}
        return make

    return tuple(Case(label, _seeded(seed, build(*args)), _loss_forward, 1, ("x",), _loss_call, seed,
                      returns_loss=True)
                 for seed, label, args in (
                     (18, "N=3 T=4 V=5, mask rows [1,1,1,0], [1,0,0,0], [0,0,0,0] (one all padding)",
                      (3, 4, 5, [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], 1.0)),
                     (19, "N=1 T=1 V=3", (1, 1, 3, [[1]], 1.0)),
                     (20, "N=2 T=3 V=4, large scores (std 10)", (2, 3, 4, [[1, 1, 1], [1, 1, 0]], 10.0))))


def _decoder_step_cases():
    def build(n, steps, lens):
        def make(rng):
            embed, hidden, enc, attn = 3, 4, 5, 4
            return {"x": _normal(rng, n, embed), "prev_h": _normal(rng, n, hidden),
                    "enc_outputs": _normal(rng, n, steps, enc), "valid_lens": None if lens is None else _lens(lens),
                    "Wq": _normal(rng, hidden, attn, scale=0.5), "Wk": _normal(rng, enc, attn, scale=0.5),
                    "wv": _normal(rng, attn), "Wx": _normal(rng, enc + embed, 3 * hidden, scale=0.5),
                    "Wh": _normal(rng, hidden, 3 * hidden, scale=0.5), "bx": _normal(rng, 3 * hidden),
                    "bh": _normal(rng, 3 * hidden)}
        return make

    wrt = ("x", "prev_h", "enc_outputs", "Wq", "Wk", "wv", "Wx", "Wh", "bx", "bh")
    return (Case("N=2 S=4, valid_lens=[4, 2]", _seeded(21, build(2, 4, [4, 2])), bahdanau_decoder_step_forward, 1,
                 wrt, _one_upstream, 21),
            Case("N=1 S=1, valid_lens=None", _seeded(22, build(1, 1, None)), bahdanau_decoder_step_forward, 1,
                 wrt, _one_upstream, 22))


def _layer_norm_cases():
    def build(shape, eps, shift):
        def make(rng):
            dim = shape[-1]
            return {"x": _normal(rng, *shape, scale=2.0) + shift, "gamma": 1 + _normal(rng, dim, scale=0.5),
                    "beta": _normal(rng, dim), "eps": eps}
        return make

    return tuple(Case(label, _seeded(seed, build(*args)), F.layer_norm_forward, 1, ("x", "gamma", "beta"),
                      _one_upstream, seed)
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


def _multihead_cases():
    def build(n, t_q, t_k, dims, lens):
        def make(rng):
            d_q, d_k, d_v, hidden, d_o = dims
            sizes = {"W_q": (d_q, hidden), "b_q": (hidden,), "W_k": (d_k, hidden), "b_k": (hidden,),
                     "W_v": (d_v, hidden), "b_v": (hidden,), "W_o": (hidden, d_o), "b_o": (d_o,)}
            inputs = {"queries": _normal(rng, n, t_q, d_q), "keys": _normal(rng, n, t_k, d_k),
                      "values": _normal(rng, n, t_k, d_v)}
            inputs.update({name: _normal(rng, *shape, scale=0.5) for name, shape in sizes.items()})
            inputs["valid_lens"] = None if lens is None else _lens(lens)
            return inputs
        return make

    wrt = ("queries", "keys", "values") + MULTIHEAD_GRADED
    return (
        Case("2 heads, N=2 T_q=3 T_k=4, valid_lens=[4, 2], dweights=None",
             _seeded(26, build(2, 3, 4, (5, 3, 4, 6, 5), [4, 2])), _multihead_forward(2, False), 1, wrt,
             _multihead_call(_one_upstream), 26),
        Case("3 heads, causal, T_q=T_k=4, valid_lens per query, dweights given",
             _seeded(27, build(2, 4, 4, (6, 6, 6, 6, 6), [[1, 4, 3, 2], [4, 4, 1, 4]])), _multihead_forward(3, True),
             2, wrt, _multihead_call(_with_dweights), 27),
        Case("1 head, N=1, one query", _seeded(28, build(1, 1, 3, (2, 2, 3, 4, 2), None)),
             _multihead_forward(1, False), 1, wrt, _multihead_call(_one_upstream), 28),
    )


EXERCISES = (
    Exercise("rnn_step_backward", "rnn_step_backward(dnext_h, cache)",
             ("dx", "dprev_h", "dWx", "dWh", "db"), F.rnn_step_backward, _rnn_cases()),
    Exercise("lstm_step_backward", "lstm_step_backward(dnext_h, dnext_c, cache)",
             ("dx", "dprev_h", "dprev_c", "dWx", "dWh", "db"), F.lstm_step_backward, _lstm_cases(),
             gates=("i", "f", "o", "g"), gated=("dWx", "dWh", "db")),
    Exercise("gru_step_backward", "gru_step_backward(dnext_h, cache)",
             ("dx", "dprev_h", "dWx", "dWh", "dbx", "dbh"), F.gru_step_backward, _gru_cases(),
             gates=("r", "z", "n"), gated=("dWx", "dWh", "dbx", "dbh")),
    Exercise("masked_softmax_backward", "masked_softmax_backward(dweights, cache)",
             ("dscores",), F.masked_softmax_backward, _masked_softmax_cases()),
    Exercise("additive_attention_backward", "additive_attention_backward(dcontext, cache, dweights=None)",
             ("dqueries", "dkeys", "dvalues", "dWq", "dWk", "dwv"), F.additive_attention_backward,
             _additive_attention_cases()),
    Exercise("rnn_backward", "rnn_backward(dh, cache)", ("dx", "dh0", "dWx", "dWh", "db"), F.rnn_backward,
             _sequence_cases(F.rnn_forward, 1, 12), time_axes=(("dx", 1),), upstream_time_axis=1),
    Exercise("lstm_backward", "lstm_backward(dh, cache)", ("dx", "dh0", "dWx", "dWh", "db"), F.lstm_backward,
             _sequence_cases(F.lstm_forward, 4, 14), gates=("i", "f", "o", "g"), gated=("dWx", "dWh", "db"),
             time_axes=(("dx", 1),), upstream_time_axis=1),
    Exercise("word_embedding_backward", "word_embedding_backward(dout, cache)", ("dW",),
             F.word_embedding_backward, _word_embedding_cases()),
    Exercise("temporal_softmax_loss", "temporal_softmax_loss(x, y, mask)", ("loss", "dx"),
             F.temporal_softmax_loss, _temporal_softmax_loss_cases(), time_axes=(("dx", 1),)),
    Exercise("bahdanau_decoder_step_backward", "bahdanau_decoder_step_backward(dnext_h, cache)",
             ("dx", "dprev_h", "denc_outputs", "dWq", "dWk", "dwv", "dWx", "dWh", "dbx", "dbh"),
             bahdanau_decoder_step_backward, _decoder_step_cases(), gates=("r", "z", "n"),
             gated=("dWx", "dWh", "dbx", "dbh")),
    Exercise("layer_norm_backward", "layer_norm_backward(dy, cache)", ("dx", "dgamma", "dbeta"),
             F.layer_norm_backward, _layer_norm_cases()),
    Exercise("multihead_attention_backward", "multihead_attention_backward(dout, cache, dweights=None)",
             ("dqueries", "dkeys", "dvalues") + tuple(f"d{name}" for name in MULTIHEAD_GRADED),
             F.multihead_attention_backward, _multihead_cases()),
)
"""The graded functions, in the order of the exercise sheet."""

NAMES = tuple(exercise.name for exercise in EXERCISES)


EXERCISE_BY_NAME = {exercise.name: exercise for exercise in EXERCISES}


# --------------------------------------------------------------------- report
@dataclasses.dataclass
class TensorGrade:
    """One returned gradient in one case."""
    case: str
    tensor: str
    shape: tuple           # the expected shape
    fd_error: float        # largest relative error against finite differences (inf when not comparable)
    engine_diff: float     # largest absolute difference from npseq's own backward (inf when not comparable)
    ok: bool
    problem: str = ""      # what is wrong, for a failing tensor
    first_wrong_step: int | None = None  # sequence gradients: see npseq.gradcheck.first_wrong_step

    def to_dict(self) -> dict:
        return {"case": self.case, "tensor": self.tensor, "shape": list(self.shape), "ok": self.ok,
                "fd_error": _finite_or_none(self.fd_error), "engine_diff": _finite_or_none(self.engine_diff),
                "problem": self.problem, "first_wrong_step": self.first_wrong_step}


@dataclasses.dataclass
class CaseProblem:
    """A case in which the learner's function gave no gradients to check."""
    case: str
    kind: str     # "not implemented" or "error"
    message: str


FAILURES = ("time limit", "crashed", "exited", "sys.exit")
"""How a function can fail as a whole (it then scores 0): what :attr:`FunctionGrade.failure` starts with."""


@dataclasses.dataclass
class FunctionGrade:
    """The verdict on one exercise function."""
    name: str
    signature: str
    attempted: bool                            # the file defines the name
    rows: list = dataclasses.field(default_factory=list)      # TensorGrade, case by case
    problems: list = dataclasses.field(default_factory=list)  # CaseProblem
    total: int = 0                             # (case, tensor) pairs
    cases: tuple = ()                          # the case labels, in grading order
    note: str = ""
    failure: str = ""                          # one line starting with one of FAILURES: it scored 0 as a whole
    npseq_calls: tuple = ()                    # npseq backward functions its code called while graded

    @property
    def correct(self) -> int:
        return 0 if self.failure else sum(row.ok for row in self.rows)

    @property
    def points(self) -> float:
        """Fraction of this function's (case, tensor) pairs that are correct, in ``[0, 1]``."""
        return self.correct / self.total if self.total else 0.0

    @property
    def status(self) -> str:
        """``"not attempted"``, ``"not implemented"``, ``"correct"``, ``"incorrect"``, or one of :data:`FAILURES`."""
        if self.failure:
            return next(kind for kind in FAILURES if self.failure.startswith(kind))
        if not self.attempted:
            return "not attempted"
        if self.problems and all(p.kind == "not implemented" for p in self.problems) and not self.rows:
            return "not implemented"
        return "correct" if self.correct == self.total else "incorrect"

    def rows_for(self, tensor: str) -> list:
        return [row for row in self.rows if row.tensor == tensor]

    def section(self) -> str:
        if self.failure:
            return f"== {self.signature}: {self.failure}, 0 points"
        if self.status == "not attempted":
            return f"== {self.signature}: not attempted (not defined in the file), 0 points"
        if self.status == "not implemented":
            messages = dict.fromkeys(p.message for p in self.problems)
            return "\n".join([f"== {self.signature}: not implemented, 0 points"]
                             + [f"   {message}" for message in messages])
        lines = [f"== {self.signature}: {self.correct}/{self.total} tensors correct, {self.points:.2f} points"]
        if self.note:
            lines.append(f"   note: {self.note}")
        header = ("case", "tensor", "shape", "rel err vs FD", "abs diff vs npseq", "verdict")
        cells = []
        problems = {p.case: p for p in self.problems}
        for case in ("all cases",) + tuple(self.cases):
            if case in problems:
                p = problems[case]
                cells.append((case, "-", "-", "-", "-", f"{p.kind.upper()}: {p.message}"))
            for row in (r for r in self.rows if r.case == case):
                cells.append((case, row.tensor, "x".join(map(str, row.shape)) or "scalar",
                              _number(row.fd_error), _number(row.engine_diff),
                              "ok" if row.ok else f"FAIL ({row.problem})"))
        widths = [max(len(str(cell)) for cell in column) for column in zip(header, *cells)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines += ["   " + fmt.format(*header).rstrip(), "   " + "  ".join("-" * w for w in widths)]
        lines += ["   " + fmt.format(*cell).rstrip() for cell in cells]
        return "\n".join(lines)

    def output(self) -> str:
        """What this function's grade says, for an autograder's per-test output."""
        return self.section().split(": ", 1)[1] if self.failure else self.section()

    def to_dict(self) -> dict:
        return {"name": self.name, "signature": self.signature, "status": self.status,
                "points": self.points, "max_points": 1, "correct": self.correct, "total": self.total,
                "failure": self.failure, "note": self.note, "npseq_calls": list(self.npseq_calls),
                "problems": [dataclasses.asdict(p) for p in self.problems],
                "tensors": [row.to_dict() for row in self.rows]}


def _number(value: float) -> str:
    return "-" if value == float("inf") else f"{value:.1e}"


def _finite_or_none(value: float):
    """JSON has no inf or NaN: a value that cannot be compared is ``null``."""
    return value if value == value and abs(value) != float("inf") else None


@dataclasses.dataclass(repr=False)
class GradeReport:
    """The result of :func:`grade_file`; prints as one table per function and a score."""
    path: str
    functions: list  # FunctionGrade, in exercise order
    honesty: list = dataclasses.field(default_factory=list)  # lines of the file that import or name npseq's backward
    seconds: float = 0.0                                       # wall-clock time of the grading

    @property
    def score(self) -> float:
        """Total points as a percentage of the graded functions (each worth one point)."""
        return 100.0 * sum(f.points for f in self.functions) / len(self.functions) if self.functions else 0.0

    @property
    def points(self) -> float:
        return sum(f.points for f in self.functions)

    @property
    def ok(self) -> bool:
        """True when every graded function is entirely correct (100 %)."""
        return all(f.status == "correct" for f in self.functions)

    @property
    def missing(self) -> list:
        """Names of the exercise functions the file does not define."""
        return [f.name for f in self.functions if not f.attempted]

    @property
    def flagged(self) -> bool:
        """True when the file imports, names or calls npseq's own backward functions."""
        return bool(self.honesty) or any(f.npseq_calls for f in self.functions)

    def __getitem__(self, name: str) -> FunctionGrade:
        for function in self.functions:
            if function.name == name:
                return function
        raise KeyError(f"name: no function {name!r} in this report; it has {[f.name for f in self.functions]}")

    def honesty_lines(self) -> list:
        if not self.flagged:
            return []
        called = sorted({name for f in self.functions for name in f.npseq_calls})
        lines = ["honesty note (the score is unchanged; the instructor decides): this file uses npseq's own "
                 "backward functions"]
        lines += [f"   {line}" for line in self.honesty]
        if called:
            lines.append(f"   called while graded: {', '.join(called)}")
        return lines

    def table(self) -> str:
        lines = [f"grading {self.path}", ""]
        for function in self.functions:
            lines += [function.section(), ""]
        if self.missing:
            lines.append(f"not attempted (0 points): {', '.join(self.missing)}")
        lines += self.honesty_lines()
        unit = "point" if len(self.functions) == 1 else "points"
        lines.append(f"score: {self.points:.2f} / {len(self.functions)} {unit} = {self.score:.1f}%"
                     + ("  -- all correct" if self.ok else ""))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """The report as plain JSON data (``--format json``)."""
        return {"file": self.path, "score": self.score, "points": self.points, "max_points": len(self.functions),
                "all_correct": self.ok, "execution_time": round(self.seconds, 3),
                "flagged": self.flagged, "honesty": self.honesty,
                "exercises": [f.to_dict() for f in self.functions]}

    def gradescope(self) -> dict:
        """Gradescope's ``results.json``: one test per function, worth one point."""
        return {"score": round(self.points, 6), "execution_time": round(self.seconds, 3),
                "output": self.table(), "visibility": "visible", "stdout_visibility": "hidden",
                "tests": [{"name": f.signature, "score": round(f.points, 6), "max_score": 1.0,
                           "output": f.output(), "visibility": "visible"} for f in self.functions]}

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__


# -------------------------------------------------------------------- grading
def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _describe(exc: BaseException, path: str) -> str:
    """``Type: message (file.py, line n)``, the line being the deepest one in the learner's file."""
    message = _one_line(exc)
    return f"{type(exc).__name__}{': ' + message if message else ''}{_learner_line(exc, path)}"


def _learner_line(exc: BaseException, path: str) -> str:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if os.path.abspath(frame.filename) == path:
            return f" ({os.path.basename(path)}, line {frame.lineno})"
    return ""


def load_submission(path: str) -> types.ModuleType:
    """Import the learner's file as a fresh module (its ``if __name__ == "__main__":`` block does not run).

    This runs the learner's code in the calling process: :func:`grade_file` calls it
    only in a child process.

    Raises:
        SubmissionError: the file is missing or unreadable, has a syntax error, or
            raises while importing; the message is one line naming the learner's line.
    """
    given, path = path, os.path.abspath(path)
    shown = os.path.basename(path)
    if not os.path.isfile(path):
        raise SubmissionError(f"no such file: {given}")
    try:
        with open(path, "rb") as handle:
            source = handle.read()
        code = compile(source, path, "exec")
    except OSError as exc:
        raise SubmissionError(f"cannot read {given}: {exc.strerror}") from None
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes in the source
        line = f", line {exc.lineno}" if getattr(exc, "lineno", None) else ""
        text = getattr(exc, "msg", None) or _one_line(exc)
        raise SubmissionError(f"{shown}{line}: {type(exc).__name__}: {text}") from None
    name = "_npseq_submission"
    module = types.ModuleType(name)
    module.__file__ = path
    # Registered (dataclasses look their module up while it runs; the next file graded
    # replaces it), and its folder is importable, as when the learner runs it with python.
    sys.modules[name] = module
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, SyntaxError):  # in a module the learner's file imports
            raise SubmissionError(f"{os.path.basename(exc.filename or '?')}, line {exc.lineno}: "
                                  f"{type(exc).__name__}: {exc.msg}") from None
        raise SubmissionError(f"cannot import {shown}: {_describe(exc, path)}") from None
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return module


def _upstream(outputs, seed: int):
    rng = backend.numpy.random.default_rng(seed)
    return tuple(_normal(rng, *out.shape) for out in outputs)


def _numerical_grads(case: Case, douts) -> dict:
    inputs = case.make_inputs()

    def outputs_of(_):
        return case.forward(**inputs)[:case.outputs]

    return {name: numerical_gradient(outputs_of, inputs[name], df=douts, h=1e-3, order=4) for name in case.wrt}


def _call(fn, case: Case, douts):
    """Run ``fn`` on a fresh forward's cache and copies of the upstream gradients (it may edit either)."""
    *_, cache = case.forward(**case.make_inputs())
    return case.call(fn, tuple(d.copy() for d in douts), cache)


def _as_grads(result, names: tuple):
    """The returned gradients as a tuple, or a one-line reason why they cannot be checked."""
    if len(names) == 1 and hasattr(result, "shape"):
        return (result,), ""
    if not isinstance(result, (tuple, list)):
        return None, (f"returned {type(result).__name__}, expected a tuple of {len(names)} arrays "
                      f"({', '.join(names)})")
    if len(result) != len(names):
        return None, f"returned {len(result)} values, expected {len(names)} ({', '.join(names)})"
    return tuple(result), ""


def describe_index(name: str, index, shape: tuple, gates: tuple = (), time_axis: int | None = None) -> str:
    """Name one element so that a learner can act on it: ``dWx[0, 15]: gate g, unit 0`` or ``dx[1, 3, 0]: t=3``.

    Args:
        name: the tensor's name.
        index: the element's index.
        shape: the tensor's shape.
        gates: the gate names when the last axis holds ``len(gates)`` blocks of ``H`` columns.
        time_axis: the axis of the time steps, for a sequence gradient.
    """
    index = tuple(int(i) for i in index)
    where = []
    if time_axis is not None:
        where.append(f"t={index[time_axis]}")
    if gates and shape and shape[-1] % len(gates) == 0:
        hidden = shape[-1] // len(gates)
        where.append(f"gate {gates[index[-1] // hidden]}, unit {index[-1] % hidden}")
    return f"{name}[{', '.join(map(str, index))}]" + (f": {', '.join(where)}" if where else "")


def _not_finite(name: str, values, shape: tuple, gates: tuple, time_axis: int | None) -> str:
    """Count the NaN and inf and locate the one a backward pass meets first (the latest time step)."""
    xp = backend.numpy
    bad = xp.argwhere(~xp.isfinite(values))
    if time_axis is not None:  # backpropagation through time computes the last step first
        bad = bad[xp.argsort(-bad[:, time_axis], kind="stable")]
    first = tuple(bad[0])
    counts = [f"{int(xp.isnan(values).sum())} NaN", f"{int(xp.isinf(values).sum())} inf"]
    return (f"not finite: {' and '.join(counts)}; {'NaN' if xp.isnan(values[first]) else 'inf'} at "
            f"{describe_index(name, first, shape, gates, time_axis)}")


def _grade_tensor(case: str, name: str, given, numeric, engine, gates: tuple = (),
                  time_axis: int | None = None) -> TensorGrade:
    xp = backend.numpy
    shape = tuple(numeric.shape)
    try:
        row = compare(name, given, numeric, DEFAULT_TOL)
    except (TypeError, ValueError) as exc:  # e.g. an array of strings or objects
        return TensorGrade(case, name, shape, float("inf"), float("inf"), False,
                           f"not a float array: {_one_line(exc)}")
    if row.problem:
        return TensorGrade(case, name, shape, float("inf"), float("inf"), False, row.problem)
    if row.analytic.size == 0:
        return TensorGrade(case, name, shape, 0.0, 0.0, True)
    expected = backend.to_numpy(engine).astype(xp.float64)
    finite = bool(xp.all(xp.isfinite(row.analytic)))
    diff = float(xp.abs(row.analytic - expected).max()) if finite else float("inf")
    limit = ENGINE_TOL * max(1.0, float(xp.abs(expected).max()))
    ok = row.ok and diff <= limit
    problem = ""
    if not finite:
        problem = _not_finite(name, row.analytic, shape, gates, time_axis)
    elif not row.ok:
        problem = (f"worst at {describe_index(name, row.worst_index, shape, gates, time_axis)}; "
                   f"yours {row.analytic_value:+.6e}, finite differences {row.numeric_value:+.6e}")
    elif not ok:
        worst = tuple(int(i) for i in xp.unravel_index(int(xp.argmax(xp.abs(row.analytic - expected))), shape))
        problem = (f"differs from npseq at {describe_index(name, worst, shape, gates, time_axis)}; "
                   f"yours {float(row.analytic[worst]):+.6e}, npseq {float(expected[worst]):+.6e}")
    step = None if ok or time_axis is None else first_wrong_step(row.analytic, expected, time_axis, DEFAULT_TOL)
    return TensorGrade(case, name, shape, row.max_rel_error, diff, ok, problem, step)


def _source_of_wrong_step(fn, exercise: Exercise, case: Case, douts, grad_index: int, step: int, time_axis: int):
    """Tell apart a step wrong by itself from one handed a wrong gradient: ``"own"``, ``"handed back"`` or None.

    The learner's backward runs again with the upstream gradient zeroed after ``step``: a
    correct recurrence then hands nothing back to ``step``, so if the learner's gradient at
    ``step`` is now right, the error came from the later step (``None``: the rerun failed).
    """
    xp = backend.numpy
    probe = tuple(d.copy() for d in douts)
    later = [slice(None)] * probe[0].ndim
    later[exercise.upstream_time_axis] = slice(step + 1, None)
    probe[0][tuple(later)] = 0
    try:
        given = _as_grads(_call(fn, case, probe), exercise.grads)[0]
        mine = xp.take(backend.to_numpy(given[grad_index]).astype(xp.float64), step, axis=time_axis)
    except (Exception, SystemExit):  # the first run already reported whatever this one would
        return None
    engine = _as_grads(_call(exercise.engine, case, probe), exercise.grads)[0][grad_index]
    reference = xp.take(backend.to_numpy(engine).astype(xp.float64), step, axis=time_axis)
    if mine.shape != reference.shape:
        return None
    right = bool(xp.all(xp.isfinite(mine))) and (mine.size == 0 or
                                                 float(gradient_error(mine, reference).max()) < DEFAULT_TOL)
    return "handed back" if right else "own"


class _LearnerExit(Exception):
    """The learner's code called ``sys.exit``: the whole function scores 0."""


# ------------------------------------------------------------------- honesty
def npseq_backward_names() -> tuple:
    """The names whose use :func:`grade_file` flags: npseq's backward functions and gradient-returning losses.

    They are those of :mod:`npseq.functional` and the decoder step of :mod:`npseq.exercises`.
    """
    names = {name for name in dir(F) if name.endswith("_backward") and callable(getattr(F, name))}
    return tuple(sorted(names | {"softmax_loss", "temporal_softmax_loss", "bahdanau_decoder_step_backward"}))


def _watched_module(name: str) -> bool:
    return name in ("npseq.functional", "npseq.exercises") or name.startswith("npseq.functional.")


class _NpseqCallWatch:
    """Records which npseq backward functions the learner's code calls while it is graded.

    Every module of :mod:`npseq.functional` (and :mod:`npseq.exercises`) gets its backward functions replaced by
    wrappers before the learner's file is imported (so whatever the file imports is a
    wrapper); a wrapper records its name only while :attr:`active` (during the learner's
    call) and only for the outermost call (npseq's backward calling its own helpers is
    not the learner's doing).
    """

    def __init__(self):
        self.active = False
        self.calls = set()
        self._depth = 0

    def install(self) -> None:
        names = set(npseq_backward_names())
        wrappers = {}
        for module_name, module in list(sys.modules.items()):
            if not _watched_module(module_name):
                continue
            for name in names & set(vars(module)):
                original = getattr(module, name)
                if id(original) not in wrappers:
                    wrappers[id(original)] = self._wrap(original)
                setattr(module, name, wrappers[id(original)])

    def _wrap(self, original):
        watch = self

        @functools.wraps(original)
        def recorded(*args, **kwargs):
            if watch.active and watch._depth == 0:
                watch.calls.add(f"{original.__module__}.{original.__name__}")
            watch._depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                watch._depth -= 1
        return recorded

    def run(self, fn, *args):
        """Call the learner's ``fn`` with recording on."""
        self.active = True
        try:
            return fn(*args)
        finally:
            self.active = False


def scan_imports(path: str) -> list:
    """Lines of the learner's file that import or name one of :func:`npseq_backward_names` (read, not run)."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return []
    names = set(npseq_backward_names())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "npseq":
            for alias in node.names:
                if alias.name in names or alias.name == "*":
                    found.append((node.lineno, f"line {node.lineno}: imports {alias.name} from {node.module}"))
        elif isinstance(node, ast.Attribute) and node.attr in names:
            found.append((node.lineno, f"line {node.lineno}: uses {ast.unparse(node)}"))
    return [text for _, text in sorted(set(found))]


def grade_function(exercise: Exercise, fn, path: str, watch: _NpseqCallWatch | None = None) -> FunctionGrade:
    """Grade one learner function (``fn``; ``None`` when the file does not define it) in every case.

    This runs the learner's code in the calling process; :func:`grade_file` calls it in a child.
    """
    watch = watch or _NpseqCallWatch()
    grade = FunctionGrade(exercise.name, exercise.signature, attempted=fn is not None,
                          total=len(exercise.cases) * len(exercise.grads),
                          cases=tuple(case.label for case in exercise.cases))
    if fn is None:
        return grade
    if not callable(fn):
        grade.problems.append(CaseProblem("all cases", "error", f"{exercise.name} is not a function "
                                                                f"(it is of type {type(fn).__name__})"))
        return grade
    time_axes = dict(exercise.time_axes)
    for case in exercise.cases:
        outputs = case.forward(**case.make_inputs())[:case.outputs]
        # a loss function returns dLoss/dx itself: the upstream gradient of its loss is 1
        douts = tuple(backend.xp.ones_like(out) for out in outputs) if case.returns_loss else \
            _upstream(outputs, case.seed)
        try:
            result = _call(functools.partial(watch.run, fn), case, douts)
        except NotImplementedError as exc:
            grade.problems.append(CaseProblem(case.label, "not implemented", _describe(exc, path)))
            continue
        except SystemExit as exc:
            raise _LearnerExit(f"sys.exit: {exercise.name} called sys.exit({exc.code!r})"
                               f"{_learner_line(exc, path)}") from None
        except Exception as exc:
            grade.problems.append(CaseProblem(case.label, "error", _describe(exc, path)))
            continue
        grads, why = _as_grads(result, exercise.grads)
        if grads is None:
            grade.problems.append(CaseProblem(case.label, "error", why))
            continue
        numeric = _numerical_grads(case, douts)
        targets = case.wrt
        if case.returns_loss:  # the loss itself is checked against the forward's value
            numeric["loss"], targets = outputs[0], ("loss",) + case.wrt
        engine = _as_grads(_call(exercise.engine, case, douts), exercise.grads)[0]
        for index, (name, input_name, given, expected) in enumerate(zip(exercise.grads, targets, grads, engine)):
            gates = exercise.gates if name in exercise.gated else ()
            row = _grade_tensor(case.label, name, given, numeric[input_name], expected, gates, time_axes.get(name))
            if row.first_wrong_step is not None:
                steps, source = row.shape[time_axes[name]], None
                if exercise.upstream_time_axis is not None and row.first_wrong_step < steps - 1:
                    source = _source_of_wrong_step(functools.partial(watch.run, fn), exercise, case, douts, index,
                                                   row.first_wrong_step, time_axes[name])
                row.problem += f"; {step_report(row.first_wrong_step, steps, source)}"
            grade.rows.append(row)
    grade.npseq_calls = tuple(sorted(watch.calls))
    if grade.npseq_calls:
        grade.note = f"honesty: its code called npseq's own {', '.join(grade.npseq_calls)}"
    return grade


# ----------------------------------------------------------------- isolation
def _limit_memory(megabytes) -> None:
    """Cap the address space at what the process holds now plus ``megabytes`` (where ``resource`` exists)."""
    try:
        import resource
    except ImportError:  # Windows: no limit
        return
    if not megabytes or not hasattr(resource, "RLIMIT_AS"):
        return
    try:
        with open("/proc/self/statm") as handle:
            in_use = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        in_use = 0
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = in_use + int(megabytes) * 2 ** 20
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _child(connection, path: str, name, quiet: bool, memory_mb) -> None:
    """In the child process: import the file, grade ``name`` (or only list the names defined), send the answer."""
    if quiet:  # the learner's prints must not end up inside a JSON report on stdout
        os.dup2(2, 1)
    faulthandler.disable()  # a crash is reported in one line, not with the grader's own stack dump
    try:
        _limit_memory(memory_mb)
        watch = _NpseqCallWatch()
        watch.install()
        module = load_submission(path)
        if name is None:
            answer = ("loaded", [exercise for exercise in NAMES if hasattr(module, exercise)])
        else:
            answer = ("graded", grade_function(EXERCISE_BY_NAME[name], getattr(module, name, None), path, watch))
    except SubmissionError as exc:
        answer = ("unloadable", str(exc))
    except _LearnerExit as exc:
        answer = ("failed", str(exc))
    except BaseException as exc:  # a learner's KeyboardInterrupt, or a MemoryError outside a case
        answer = ("failed", f"crashed: {_describe(exc, path)}")
    connection.send(answer)
    connection.close()


def _context():
    # fork starts a child in milliseconds with npseq already imported; spawn where there is no fork
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


def _isolated(path: str, name, timeout: float, memory_mb, quiet: bool) -> tuple:
    """Run :func:`_child` with a time limit; returns its answer, or ``("failed", why)``."""
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, path, name, quiet, memory_mb), daemon=True)
    what = "importing the file" if name is None else name
    process.start()
    sender.close()
    try:
        if receiver.poll(timeout):
            try:
                return receiver.recv()
            except (EOFError, OSError):  # the child ended without answering
                pass
        else:
            return ("failed", f"time limit: {what} did not finish within {timeout:g} s (an endless loop?)")
        process.join(timeout=10)
        code = process.exitcode
        if code is not None and code < 0:
            try:
                signame = signal.Signals(-code).name
            except ValueError:
                signame = f"signal {-code}"
            return ("failed", f"crashed: the process running {what} died of {signame}")
        return ("failed", f"exited: the process running {what} ended with exit code {code} (os._exit?) "
                          f"before answering")
    finally:
        receiver.close()
        if process.is_alive():
            process.kill()
        process.join()


def grade_file(path: str, only=None, *, timeout: float = DEFAULT_TIMEOUT, memory_mb=DEFAULT_MEMORY_MB,
               quiet: bool = False) -> GradeReport:
    """Import the learner's file and grade every exercise function (or those named in ``only``).

    The import and each function run in their own child process, under ``timeout`` and
    ``memory_mb`` (see the module docstring), so nothing the learner's code does can stop
    the grading of the other functions.

    Args:
        path: a Python file defining some of :data:`NAMES`.
        only: ``None`` (all exercises) or an iterable of names from :data:`NAMES`.
        timeout: seconds for the import and for each function (all its cases).
        memory_mb: megabytes the child may add to its address space; ``None`` or 0 for no limit.
        quiet: send what the learner's code prints to standard error instead of standard output.

    Returns:
        A :class:`GradeReport` (``.score`` in percent, ``.ok``, ``report[name]``; prints as tables).

    Raises:
        SubmissionError: the file cannot be imported (one-line message).
        ValueError: ``only`` names something that is not an exercise, or ``timeout`` is not positive.
    """
    names = list(NAMES) if only is None else list(dict.fromkeys(only))
    unknown = [name for name in names if name not in NAMES]
    if unknown:
        raise ValueError(f"only: expected names from {list(NAMES)}, got {unknown}")
    if not timeout > 0:
        raise ValueError(f"timeout: expected a positive number of seconds, got {timeout!r}")
    started = time.monotonic()
    learner_path = os.path.abspath(path)
    if not os.path.isfile(learner_path):
        raise SubmissionError(f"no such file: {path}")
    kind, answer = _isolated(learner_path, None, timeout, memory_mb, quiet)
    if kind != "loaded":
        raise SubmissionError(answer if kind == "unloadable" else
                              f"cannot import {os.path.basename(path)}: {answer}")
    defined = set(answer)
    functions = []
    for exercise in EXERCISES:
        if exercise.name not in names:
            continue
        if exercise.name not in defined:
            functions.append(grade_function(exercise, None, learner_path))
            continue
        kind, answer = _isolated(learner_path, exercise.name, timeout, memory_mb, quiet)
        if kind == "graded":
            functions.append(answer)
        else:
            grade = grade_function(exercise, None, learner_path)
            grade.attempted, grade.failure = True, answer
            functions.append(grade)
    return GradeReport(path, functions, scan_imports(learner_path), time.monotonic() - started)


# ------------------------------------------------------------------------ CLI
HELP = "grade a learner's backward exercises against finite differences"
DESCRIPTION = ("Grade the backward functions in a course exercise file against finite differences and npseq's "
               "own backward, each in a child process with a time limit. Exit code 0 when every function is "
               "correct, 1 when some are not, 2 when the file cannot be graded.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``npseq grade``, added to its subcommand parser (the ``npseq`` command builds it)."""
    from ._arguments import positive
    parser.add_argument("file", help="the learner's Python file (defines some of: " + ", ".join(NAMES) + ")")
    parser.add_argument("--only", action="append", choices=NAMES, metavar="NAME",
                        help="grade only this function (repeatable); the score counts only these")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text: tables (default); json: one JSON object on stdout; gradescope: write "
                             "Gradescope's results.json (see --results) and print the tables")
    parser.add_argument("--results", default="results.json", metavar="PATH",
                        help="where --format gradescope writes (default: results.json; on Gradescope "
                             "/autograder/results/results.json)")
    parser.add_argument("--timeout", type=positive(float), default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time limit for the import and for each function (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--memory-mb", type=positive(int), default=DEFAULT_MEMORY_MB, metavar="MB",
                        help=f"memory each function may add, where the platform allows a limit "
                             f"(default {DEFAULT_MEMORY_MB})")


def _write_json(path: str, data: dict) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")


def main(argv=None) -> int:
    """``npseq grade FILE [--only NAME ...] [--format F] [--timeout S]``: the ``npseq grade`` command, for
    ``python -m npseq.grade`` and the skeleton's own ``__main__`` block; returns the exit code."""
    from .cli import main as npseq_main
    return npseq_main(["grade", *(sys.argv[1:] if argv is None else argv)])


def run(args) -> int:
    """Grade ``args.file`` as ``npseq grade`` parsed it: report; return the exit code."""
    machine = args.format != "text"
    try:
        report = grade_file(args.file, only=args.only, timeout=args.timeout, memory_mb=args.memory_mb,
                            quiet=machine)
    except SubmissionError as exc:
        message = f"npseq grade: {exc}"
        if args.format == "json":
            print(json.dumps({"file": args.file, "error": str(exc), "score": 0.0, "all_correct": False}), flush=True)
        elif args.format == "gradescope":
            try:
                _write_json(args.results, {"score": 0.0, "output": message, "visibility": "visible", "tests": []})
            except OSError as write_error:
                print(f"npseq grade: --results: cannot write {args.results} ({write_error.strerror})",
                      file=sys.stderr, flush=True)
        print(message, file=sys.stderr, flush=True)
        return 2
    if args.format == "json":
        print(json.dumps(report.to_dict()), flush=True)
    else:
        print(report, flush=True)
    if args.format == "gradescope":
        try:
            _write_json(args.results, report.gradescope())
        except OSError as exc:
            print(f"npseq grade: --results: cannot write {args.results} ({exc.strerror})", file=sys.stderr,
                  flush=True)
            return 2
        print(f"wrote {args.results}", flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
