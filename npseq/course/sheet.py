"""The exercise sheet: every set's exercises in one table, the order in which hand-outs list them.

Each exercise is a function with npseq's exact signature, declared in its set's module
(:mod:`npseq.course.sets`): its docstring the hand-out's text (the forward equations, the
cache fields with their shapes, and under ``Hints:`` the backward equations), its body a
solution written from that docstring alone, in plain NumPy, calling the learner's own
earlier exercises where one builds on another.
:func:`~npseq.course.exercise.declare` adds what the grader needs: the returned
gradients' names, npseq's reference backward, the seeded cases
(:mod:`npseq.course.cases`), how the weights' columns split into gates, the time axes of
sequence gradients, and the forwards the hand-out imports.

From these declarations come the skeleton (each body replaced by ``raise
NotImplementedError``), the hand-out's README and notebook, the solutions copy, and the
grader's table (:data:`EXERCISES`, the sets in the order of :data:`~npseq.course.sets.SETS`).
The grader grades every exercise a file defines, whatever set it comes from.

The bodies are a learner's code, so they use NumPy (``np``, which is NumPy whatever
backend npseq computes on: a hand-out runs on the CPU), as the solved copy does.
"""
from .sets import DEFAULT_SETS, SET_NAMES, SETS

EXERCISES = tuple(exercise for exercises in SETS.values() for exercise in exercises)
"""The graded functions of every set, in the order of the sheet (:class:`~npseq.course.exercise.Exercise` records)."""

NAMES = tuple(exercise.name for exercise in EXERCISES)

EXERCISE_BY_NAME = {exercise.name: exercise for exercise in EXERCISES}

SET_OF = {exercise.name: set_name for set_name, exercises in SETS.items() for exercise in exercises}
"""The set each exercise belongs to."""



def with_prerequisites(names) -> list:
    """``names`` and every exercise they build on (``Exercise.builds_on``, transitively), in the order of the sheet."""
    chosen, pending = set(), list(names)
    while pending:
        name = pending.pop()
        if name not in chosen:
            chosen.add(name)
            pending.extend(EXERCISE_BY_NAME[name].builds_on)
    return [name for name in NAMES if name in chosen]


def names_of_sets(sets) -> list:
    """The exercises of the sets named, with what they build on from other sets, in the order of the sheet.

    Raises:
        ValueError: a name that is not a set's.
    """
    unknown = [name for name in sets if name not in SETS]
    if unknown:
        raise ValueError(f"sets: expected names from {list(SET_NAMES)}, got {unknown}")
    return with_prerequisites(exercise.name for name in sets for exercise in SETS[name])


def graded_names(only=None, sets=None) -> list:
    """The exercises a grading or a hand-out of ``only`` (names) and ``sets`` covers, in the order of the sheet.

    ``only`` chooses: those exercises and what they build on; ``sets``, given too, says which hand-out they come
    from, and must hold them. ``sets`` alone: every exercise of the sets, with what they build on. ``None`` for
    both means "those the file defines", which the grader reads off the file.

    Raises:
        ValueError: a name that is not an exercise's, or not a set's; a name of ``only`` that ``sets`` lack.
    """
    unknown = [name for name in (only or ()) if name not in NAMES]
    if unknown:
        raise ValueError(f"only: expected names from {list(NAMES)}, got {unknown}")
    within = names_of_sets(sets or ())
    if not only:
        return within
    outside = [name for name in only if name not in within]
    if sets and outside:
        raise ValueError(f"only: expected exercises of the set{'s' if len(sets) > 1 else ''} {', '.join(sets)} "
                         f"({', '.join(within)}), got {', '.join(outside)}; name them without a set, or with theirs "
                         f"({', '.join(dict.fromkeys(SET_OF[name] for name in outside))})")
    return with_prerequisites(only)


__all__ = ["DEFAULT_SETS", "EXERCISES", "EXERCISE_BY_NAME", "NAMES", "SETS", "SET_NAMES", "SET_OF", "graded_names",
           "names_of_sets", "with_prerequisites"]
