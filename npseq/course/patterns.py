"""Patterns that name a mistake in a wrong gradient, beyond where it is wrong.

A wrong tensor is located by its elements (which gate, which unit, which step); some
mistakes leave a shape in the whole tensor that says more. Each recogniser here takes the
learner's gradient :math:`G` and npseq's :math:`E` (float64 arrays of one shape) and returns
a :class:`Pattern` or ``None``:

* a constant factor, :math:`G = c\\,E` with :math:`c \\ne 1`: a normalisation that differs
  (a mean for a sum, :math:`1/N`), a factor left out, or :math:`c = -1`, a sign;
* the steps in reverse order along the time axis, :math:`G_{t} = E_{T-1-t}`: a list of
  per-step gradients stacked as they were computed, walking back;
* two gate blocks swapped, :math:`G_{[a]} = E_{[b]}` and :math:`G_{[b]} = E_{[a]}` for the
  column blocks of gates :math:`a \\ne b`, every other block right;
* the attention heads' blocks in another layout: their order, or the head axis and the width
  within a head swapped (a reshape when splitting or merging the heads);
* a term missing from a gradient that sums over paths, :math:`G = E - T_k` for one of its
  terms :math:`E = \\sum_j T_j` (:class:`~npseq.course.exercise.Term`): a path left out.

"Equal" is the grader's own test: :func:`~npseq.gradcheck.gradient_error` below
:data:`~npseq.gradcheck.DEFAULT_TOL` at every element.
"""
from __future__ import annotations

import dataclasses
import fractions

from .. import backend
from ..gradcheck import DEFAULT_TOL, gradient_error
from ..language import _


@dataclasses.dataclass(frozen=True)
class Pattern:
    """A recognised mistake: its diagnosis (the words a class report counts) and the sentence the report prints."""
    diagnosis: str   # "dWx: gates i and f swapped" (class-wide words: English, whatever the language spoken)
    sentence: str    # "yours for gate i is npseq's for gate f, and yours for f npseq's for i" (the language spoken)


def _equal(given, expected) -> bool:
    return given.shape == expected.shape and (given.size == 0 or
                                              float(gradient_error(given, expected).max()) < DEFAULT_TOL)


def _factor_words(factor: float) -> tuple:
    """``factor`` as a reader says it, the number and its word: "-1 times", "3 times", "1/4 of", "0.37 times"."""
    near = fractions.Fraction(factor).limit_denominator(64)
    if abs(float(near) - factor) <= 1e-9 * abs(factor):
        if near.denominator == 1:
            return f"{near.numerator}", "times"
        if abs(near.numerator) == 1:
            return f"{near}", "of"
    return f"{factor:.6g}", "times"


def constant_factor(name: str, given, expected) -> Pattern | None:
    """:math:`G = c\\,E` for one :math:`c \\ne 1` (the least-squares :math:`c = G \\cdot E / E \\cdot E`), over a
    tensor with at least two nonzero elements (one number is always some multiple of another); with one, only
    :math:`c = -1`."""
    xp = backend.numpy
    flat_given, flat_expected = given.reshape(-1), expected.reshape(-1)
    if not xp.count_nonzero(flat_expected):
        return None
    factor = float(flat_given @ flat_expected) / float(flat_expected @ flat_expected)
    if int(xp.count_nonzero(flat_expected)) < 2 and abs(factor + 1.0) >= 1e-6:
        return None  # but the commonest slip, a sign, which one number shows as well
    if abs(factor - 1.0) < 1e-6 or not _equal(given, factor * expected):
        return None
    if abs(factor) < 1e-12:
        return Pattern(f"{name}: zero", _("{name} is zero everywhere: the path that should carry it is not "
                                          "connected").format(name=name))
    if abs(factor + 1.0) < 1e-6:
        return Pattern(f"{name}: the opposite sign",
                       _("{name} is -1 times npseq's everywhere: a sign").format(name=name))
    number, word = _factor_words(factor)
    said = _("{name} is {factor} times npseq's everywhere: the direction is right and the scale is not (a "
             "normalisation that differs from the loss's, a mean for a sum, or a factor left out)") if word == "times" \
        else _("{name} is {factor} of npseq's everywhere: the direction is right and the scale is not (a normalisation "
               "that differs from the loss's, a mean for a sum, or a factor left out)")
    return Pattern(f"{name}: {number} {word} npseq's", said.format(name=name, factor=number))


def reversed_steps(name: str, given, expected, time_axis: int) -> Pattern | None:
    """:math:`G_t = E_{T-1-t}` along ``time_axis`` (:math:`T \\ge 2`), while :math:`G \\ne E`."""
    if given.ndim <= time_axis or given.shape[time_axis] < 2:
        return None
    if not _equal(backend.numpy.flip(given, axis=time_axis), expected):
        return None
    last = given.shape[time_axis] - 1
    return Pattern(f"{name}: steps in reverse order",
                   _("{name}'s steps are in reverse order: yours at t is npseq's at t={last}-t (stacked in the order "
                     "the backward computed them, walking back?)").format(name=name, last=last))


def swapped_gates(name: str, given, expected, gates: tuple) -> Pattern | None:
    """:math:`G_{[a]} = E_{[b]}`, :math:`G_{[b]} = E_{[a]}` and every other gate block right, for the last axis's
    ``len(gates)`` column blocks."""
    if not gates or not given.shape or given.shape[-1] % len(gates):
        return None
    hidden = given.shape[-1] // len(gates)

    def block(array, k):
        return array[..., k * hidden:(k + 1) * hidden]

    wrong = [k for k in range(len(gates)) if not _equal(block(given, k), block(expected, k))]
    if len(wrong) != 2:
        return None
    a, b = wrong
    if not (_equal(block(given, a), block(expected, b)) and _equal(block(given, b), block(expected, a))):
        return None
    return Pattern(f"{name}: gates {gates[a]} and {gates[b]} swapped",
                   _("gates {a} and {b} are swapped in {name}: yours for {a} is npseq's for {b}, and yours for {b} "
                     "npseq's for {a}").format(a=gates[a], b=gates[b], name=name))


def _head_blocks(array, heads: int, axis: int):
    """``array`` with ``axis`` split into ``(heads, width)`` and moved last: ``[..., k, :]`` is head ``k``'s block."""
    moved = backend.numpy.moveaxis(array, axis, -1)
    return moved.reshape(*moved.shape[:-1], heads, moved.shape[-1] // heads)


def heads_layout(name: str, given, expected, heads: int, axis: int) -> Pattern | None:
    """The heads' blocks along ``axis`` in another layout: another order of the heads (:math:`G_{[k]} =
    E_{[\\pi(k)]}`), or the head axis and the width within a head swapped (the columns read as ``(width, heads)``
    where ``(heads, width)`` is due)."""
    if heads < 2 or given.ndim == 0 or given.shape[axis] % heads:
        return None
    mine, theirs = _head_blocks(given, heads, axis), _head_blocks(expected, heads, axis)
    width = mine.shape[-1]
    interleaved = mine.reshape(*mine.shape[:-2], width, heads).swapaxes(-1, -2)
    if width > 1 and _equal(interleaved, theirs):
        return Pattern(f"{name}: heads and their width swapped",
                       _("{name}'s columns are laid out as (width, heads) where (heads, width) is due: head k's unit "
                         "j is npseq's column k*{width} + j, and yours j*{heads} + k (a reshape or a transpose when "
                         "splitting or merging the heads)").format(name=name, width=width, heads=heads))
    order = []
    for k in range(heads):
        matches = [j for j in range(heads) if _equal(mine[..., k, :], theirs[..., j, :])]
        if not matches:
            return None
        order.append(matches[0])
    if order == list(range(heads)):
        return None
    pairs = ", ".join(_("yours {k} is npseq's {j}").format(k=k, j=j) for k, j in enumerate(order) if k != j)
    return Pattern(f"{name}: heads in another order",
                   _("{name}'s heads are each right but in another order ({pairs})").format(name=name, pairs=pairs))


def wrong_heads(given, expected, heads: int, axis: int) -> list:
    """The heads whose block along ``axis`` leaves ``expected`` somewhere."""
    mine, theirs = _head_blocks(given, heads, axis), _head_blocks(expected, heads, axis)
    return [k for k in range(heads) if not _equal(mine[..., k, :], theirs[..., k, :])]


def wrong_rows(given, expected, rows: tuple) -> list:
    """The indices of ``rows`` (along the first axis) whose slice leaves ``expected`` somewhere."""
    return [index for index in rows if not _equal(given[index], expected[index])]


def missing_term(name: str, given, expected, terms: tuple) -> Pattern | None:
    """:math:`G = E - T_k` for one term :math:`T_k` of ``terms`` (``(path, array)`` pairs that sum to :math:`E`) that
    is not zero: the path ``k`` left out of the sum."""
    xp = backend.numpy
    for path, term in terms:
        term = xp.asarray(backend.to_numpy(term), dtype=xp.float64)
        if term.shape == expected.shape and float(xp.abs(term).max(initial=0.0)) > 0 and \
                _equal(given, expected - term):
            return Pattern(f"{name}: lacks {path}",
                           _("{name} is npseq's minus exactly one term of its sum, {path}: that path is left out")
                           .format(name=name, path=_(path)))
    return None


def recognised(name: str, given, expected, gates: tuple = (), time_axis: int | None = None, heads: int = 0,
               head_axis: int | None = None, terms: tuple = ()) -> Pattern | None:
    """The first pattern that ``given`` (wrong, finite, of ``expected``'s shape) shows, or ``None``: a term of the sum
    missing, the heads' layout, two gates swapped, the steps reversed, a constant factor."""
    return (missing_term(name, given, expected, terms)
            or (heads_layout(name, given, expected, heads, head_axis) if head_axis is not None else None)
            or swapped_gates(name, given, expected, gates)
            or (reversed_steps(name, given, expected, time_axis) if time_axis is not None else None)
            or constant_factor(name, given, expected))
