"""What an exercise is: the :class:`Exercise` record, and :func:`declare`, which makes one of a solved function.

An exercise is declared once, in its set's module (:mod:`npseq.course.sets`), as its solved function under
``@declare(...)``. The function gives the name, the signature, the hand-out's text (its
docstring) and the solution (its body); the decorator gives what grading needs. What one
exercise builds on (the learner's earlier functions its solution calls) is read off the
solution itself, so it cannot fall out of step with it.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from typing import Callable


@dataclasses.dataclass(frozen=True)
class Term:
    """One term of a gradient that is a sum over the paths from an input to the loss."""
    gradient: str   # the returned gradient it is a term of: "dprev_h"
    path: str       # the path, as a learner would name it: "the direct path, the z * h of h'"
    value: object   # the term's array, of the gradient's shape


@dataclasses.dataclass(frozen=True)
class Part:
    """A part of the network that the backward runs through as a whole (a layer of a stack, a direction of a
    bidirectional layer): where a mistake enters, the grader names it."""
    words: str              # how a report names it: "layer 2", "the backward direction"
    grads: tuple            # the returned gradients that are its own (its weights): ("dWx2", "dWh2", "db2")
    rows: tuple = ()        # (gradient, index along its first axis): its own row of a gradient the parts share, stacked
    #                         as the initial states are, (L, N, H)
    fed_by: str = ""        # the words of the part that hands it its upstream gradient ("layer 2" for layer 1), "" for
    #                         the loss's: a part fed a wrong gradient is wrong too, and not where the mistake is
    walks_up: bool = False  # its backward walks the time steps from t=0 up, as a layer that read the sequence from its
    #                         end does; False: back from the last step


@dataclasses.dataclass(frozen=True)
class Exercise:
    """One graded function, as the sheet declares it."""
    name: str
    signature: str          # "rnn_step_backward(dnext_h, cache)", the solution's own
    title: str              # the heading of its section: "RNN"
    summary: str            # one line for the sheet's list of exercises
    practises: str          # what it practises, for the instructor's table
    grads: tuple            # the names of the returned gradients, in order
    engine: Callable        # npseq's reference backward, which every case is held to
    cases: tuple            # npseq.course.cases.Case records
    forwards: tuple         # the names the hand-out imports for it, from ``forwards_module``
    solution: Callable      # the solved function; its docstring is the hand-out's text
    gates: tuple = ()       # the gate names of the weights' column blocks, in order (LSTM: i, f, o, g)
    gated: tuple = ()       # the returned gradients whose last axis holds those blocks
    time_axes: tuple = ()   # (gradient name, axis of the time steps) for the sequence gradients
    upstream_time_axis: int | None = None  # a recurrence: the time axis of the first upstream gradient
    recurrent: tuple = ()   # the gradients of time_axes computed by a recurrence, walking back from the last step
    headed: tuple = ()      # (gradient name, axis that holds the attention heads' blocks), heads from each case
    caller_cases: tuple = ()  # cases in the shapes the exercises built on it hand it: never scored (its own cases are
    #                           its contract), run when one of those fails while it passed, to say which is at fault
    terms: Callable | None = None  # called as the backward is: the Term records of its gradients that sum over
    #                                paths (where one is missing, the grader names it)
    placeholder: str = ""   # the skeleton's body where ``raise NotImplementedError`` alone would say too little
    forwards_module: str = "npseq.functional"  # where its forwards are: a course's own cell lives with the course
    chained: bool = False   # its gradients are the links of one chain, in the order it runs: the first wrong one broke
    parts: tuple = ()       # Part records: the layers or directions its backward runs through, the top layer first
    builds_on: tuple = ()   # the exercises its solution calls (the learner's own), in the order of the sheet
    number: int = 0         # its number in a hand-out (from 1; 0 outside one): see npseq.course.handout

    @property
    def docstring(self) -> str:
        return inspect.getdoc(self.solution)


def declare(**fields) -> Callable:
    """Mark a solved function of the sheet as an exercise; ``fields`` are :class:`Exercise`'s (but the derived ones).

    The function is returned unchanged (a solutions copy is its source as written);
    :func:`exercise_table` turns the marks into records.
    """
    def mark(function):
        function.__exercise__ = fields
        return function
    return mark


def solution_source(function: Callable) -> str:
    """The function's source as a learner writes it: ``def`` to its last line, without the ``@declare`` above."""
    source = textwrap.dedent(inspect.getsource(function))
    node = ast.parse(source).body[0]
    return "".join(source.splitlines(keepends=True)[node.lineno - 1:node.end_lineno])


def called_names(function: Callable) -> set:
    """Every bare name the function's body calls (``f(...)``, not ``obj.f(...)``)."""
    tree = ast.parse(solution_source(function))
    return {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}


def exercise_table(namespace: dict) -> tuple:
    """The :class:`Exercise` records of the functions marked by :func:`declare` and defined in the module whose
    ``namespace`` this is, in its order.

    What one builds on may be an exercise of another set that the module imports (multi-head attention
    calls the classic set's masked softmax): every marked function in ``namespace`` counts.
    """
    marked = [value for value in namespace.values() if callable(value) and hasattr(value, "__exercise__")]
    names = [function.__name__ for function in marked]
    table = []
    for function in marked:
        if function.__module__ != namespace["__name__"]:
            continue
        calls = called_names(function)
        table.append(Exercise(name=function.__name__, signature=f"{function.__name__}{inspect.signature(function)}",
                              solution=function, builds_on=tuple(name for name in names if name in calls),
                              **function.__exercise__))
    return tuple(table)
