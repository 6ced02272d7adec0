"""The situations every exercise is graded in: seeded float64 inputs, npseq's forward, how to call a backward.

A :class:`Case` builds fresh inputs from its seed each time it is asked (a learner's
backward may scribble on what it is handed), runs npseq's forward on them and says
how the learner's function is called on the cache. The edge cases are here: N=1,
T=1, H=1, a row of all padding, per-query lengths, repeated ids, large scores. Weights
are scaled so that no gate saturates, where finite differences would see only noise.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Callable

from ... import backend, samples


@dataclasses.dataclass(frozen=True)
class Case:
    """One fixed situation a backward is graded in."""
    label: str
    make_inputs: Callable[..., dict]  # make_inputs(variant=0): fresh float64 inputs, the forward's arguments by name
    forward: Callable                # npseq's forward: forward(**inputs) -> (*outputs, cache)
    outputs: int                     # how many leading outputs get an upstream gradient
    wrt: tuple                       # inputs whose gradients the backward returns, in order
    call: Callable                   # call(backward, douts, cache) -> what the backward returns
    seed: int                        # seeds the upstream gradients
    returns_loss: bool = False       # a loss function: returns (loss, gradients); upstream gradient 1
    numerical: Callable | None = None  # numerical(inputs, douts) -> {gradient: finite differences}, for gradients
    #                                    of what is not an input (a chain's intermediates); None: of ``wrt``
    heads: int = 0                   # attention heads, whose blocks the exercise's ``headed`` gradients hold

def seed_of(seed: int, variant: int = 0):
    """The seed of a case's numbers: its own (variant 0, the sheet's), or ``[seed, variant]`` for a student's own
    variant of it: the same shapes, other numbers."""
    return seed if not variant else [seed, variant]


def student_seed(name: str, secret: str) -> int:
    """A student's seed from their name or e-mail address (case and surrounding spaces aside) and the course
    ``secret`` (:mod:`npseq.course.secret`): the same wherever the secret is, so that a hand-out made for a name and
    the autograder reading that name agree, and no one without it can make a classmate's numbers."""
    text = f"{secret}\n{name.strip().lower()}".encode("utf-8")
    return int.from_bytes(hashlib.sha256(text).digest()[:6], "big") or 1


@dataclasses.dataclass(frozen=True)
class Seeded:
    """``build(rng)`` with a generator seeded by :func:`seed_of`: the inputs of a case, for any variant."""
    seed: int
    build: Callable

    def __call__(self, variant: int = 0) -> dict:
        return self.build(backend.numpy.random.default_rng(seed_of(self.seed, variant)))


def seeded(seed: int, build: Callable) -> Seeded:
    return Seeded(seed, build)


def one_upstream(fn, douts, cache):
    return fn(douts[0], cache)


def two_upstream(fn, douts, cache):
    return fn(douts[0], douts[1], cache)


def with_dweights(fn, douts, cache):
    return samples.with_dweights(fn)(*douts, cache)
