"""Hints in levels: how much of the derivation an exercise's text gives away.

Each exercise's docstring ends with two sections, each a level of hints:

``Structure:``
    the chain rule's structure: which quantities the gradient passes back through, in what
    order, where contributions add up; no equation;
``Hints:``
    the backward equations themselves.

A hand-out shows the sections up to the level the instructor chose
(:data:`HINT_LEVELS`): ``none`` shows neither, ``structure`` the first (the default, which
leaves the derivation to the learner), ``equations`` both. The autograder repeats, under a
wrong exercise, what the hand-out gave of it, never more.
"""
from __future__ import annotations

HINT_LEVELS = ("none", "structure", "equations")
"""The levels, from the least given away to the most."""

DEFAULT_HINTS = "structure"

SECTION_OF_LEVEL = {"structure": "Structure:", "equations": "Hints:"}
"""The docstring section each level adds to the one below it."""


def check_level(level: str) -> None:
    """Raise ``ValueError`` naming ``hints`` unless ``level`` is one of :data:`HINT_LEVELS`."""
    if level not in HINT_LEVELS:
        raise ValueError(f"hints: expected one of {list(HINT_LEVELS)}, got {level!r}")


def _shown_sections(level: str) -> set:
    """The section headers a hand-out at ``level`` shows: those of its level and the levels below it."""
    check_level(level)
    shown = HINT_LEVELS[:HINT_LEVELS.index(level) + 1]
    return {header for name, header in SECTION_OF_LEVEL.items() if name in shown}


def at_level(source: str, level: str) -> str:
    """``source`` (a function's source, or its docstring) with the hint sections above ``level`` left out.

    A section runs from its header line (``Structure:``, ``Hints:``) to the next header of a
    level or the docstring's closing quotes.
    """
    shown, kept, skipping = _shown_sections(level), [], False
    for line in source.splitlines(keepends=True):
        if line.strip() in SECTION_OF_LEVEL.values():
            skipping = line.strip() not in shown
        elif line.strip() == '"""':
            skipping = False
        if not skipping:
            kept.append(line)
    return "".join(kept)


def hint_text(docstring: str, level: str) -> str:
    """The hint sections of ``docstring`` that a hand-out at ``level`` shows, headers included; ``""`` for none."""
    shown, kept, keeping = _shown_sections(level), [], False
    for line in docstring.splitlines():
        if line.strip() in SECTION_OF_LEVEL.values():
            keeping = line.strip() in shown
        if keeping:
            kept.append(line)
    return "\n".join(kept).rstrip()


__all__ = ["DEFAULT_HINTS", "HINT_LEVELS", "at_level", "check_level", "hint_text"]
