"""What the instructor sets for an autograder: the exercises graded, their points, the cases hidden, the limits.

One :class:`Scoring` serves every platform: Gradescope's zip carries it as ``config.json`` and
so does each PrairieLearn question (in its ``tests/`` folder), and a submission's
:class:`~npseq.course.verdict.Verdict` is computed under it, whatever the platform that shows it.
"""
from __future__ import annotations

import dataclasses
import json
import math

from ..errors import InvalidValueError
from ..language import LANGUAGES
from .grader import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT
from .hints import DEFAULT_HINTS, HINT_LEVELS
from .report import POLICIES
from .secret import is_secret
from .sheet import DEFAULT_SETS, EXERCISE_BY_NAME, NAMES, names_of_sets

ALL_CASES = "all"
"""In :attr:`Scoring.hidden`, the value that hides every case of an exercise (else a tuple of case numbers)."""


@dataclasses.dataclass(frozen=True)
class Scoring:
    """What the instructor sets for an autograder; its ``config.json`` (Gradescope's zip, a PrairieLearn question).

    Fields:
        only: the exercises graded, names from :data:`~npseq.course.sheet.NAMES` (in the
            sheet's order; ``names_of_sets`` gives a set's), or ``None`` for the default sets'.
        points: exercise name -> its points (a number >= 0); an exercise not named is worth 1.
        hidden: exercise name -> the case numbers (from 1, as in the tests' numbers ``3.2``)
            whose tests students see only once grades are published, as a tuple, or
            :data:`ALL_CASES` (``"all"``) for every case of that exercise.
        timeout: seconds each function may run, all its cases together (and the import of the file).
        memory_mb: megabytes each function may add to its process, or ``None`` for no limit.
        policy: the honesty policy (:data:`~npseq.course.report.POLICIES`): ``"note"`` or ``"zero"``.
        per_student: (Gradescope) grade each student on cases of their own: the seed of their e-mail address, from
            Gradescope's submission metadata, and of ``secret`` (``npseq exercises --student EMAIL`` writes the
            matching hand-out on the machine that holds the secret).
        secret: the course secret (:mod:`npseq.course.secret`) ``per_student`` needs; never shown to students
            (the configuration lies in the autograder's own folder).
        hints: the hand-out's level of hints (:data:`~npseq.course.hints.HINT_LEVELS`): a wrong exercise's first
            failing case repeats what the hand-out gave of it, never more.
        lang: the language the students' results speak (:data:`~npseq.language.LANGUAGES`): ``"en"``
            (the default, and then left out of ``config.json``) or ``"zh"``.

    The fields are checked when the record is made (:class:`~npseq.errors.InvalidValueError`,
    one line naming the field, the expected and the given), and ``points`` and ``hidden``
    are put in the sheet's order, so that two equal scorings write the same JSON.
    """
    only: tuple | None = None
    points: dict = dataclasses.field(default_factory=dict)
    hidden: dict = dataclasses.field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int | None = DEFAULT_MEMORY_MB
    policy: str = "note"
    per_student: bool = False
    secret: str = ""
    hints: str = DEFAULT_HINTS
    lang: str = "en"

    def __post_init__(self):
        only = self.only
        if only is not None:
            if not isinstance(only, (tuple, list)) or not all(isinstance(name, str) for name in only):
                raise InvalidValueError(f"only: expected a list of exercise names or null, got {only!r}")
            _check_names("only", only, NAMES)
            only = tuple(name for name in NAMES if name in only)
            if not only:
                raise InvalidValueError("only: expected at least one exercise name (or null for the default sets), "
                                        "got []")
        object.__setattr__(self, "only", only)
        graded = only or tuple(names_of_sets(DEFAULT_SETS))
        for field in ("points", "hidden"):
            if not isinstance(getattr(self, field), dict):
                raise InvalidValueError(f"{field}: expected an object of exercise name -> value, "
                                        f"got {getattr(self, field)!r}")
        object.__setattr__(self, "points", _checked_points(self.points, graded))
        object.__setattr__(self, "hidden", _checked_hidden(self.hidden, graded))
        timeout = self.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
            raise InvalidValueError(f"timeout: expected a positive number of seconds, got {timeout!r}")
        object.__setattr__(self, "timeout", float(timeout))
        memory = self.memory_mb
        if memory is not None and (isinstance(memory, bool) or not isinstance(memory, int) or memory <= 0):
            raise InvalidValueError(f"memory_mb: expected a positive whole number of megabytes or null, got {memory!r}")
        if self.policy not in POLICIES:
            raise InvalidValueError(f"policy: expected one of {list(POLICIES)}, got {self.policy!r}")
        if not isinstance(self.per_student, bool):
            raise InvalidValueError(f"per_student: expected true or false, got {self.per_student!r}")
        if self.hints not in HINT_LEVELS:
            raise InvalidValueError(f"hints: expected one of {list(HINT_LEVELS)}, got {self.hints!r}")
        if self.lang not in LANGUAGES:
            raise InvalidValueError(f"lang: expected one of {list(LANGUAGES)}, got {self.lang!r}")
        if self.secret and not is_secret(self.secret) or self.per_student and not self.secret:
            raise InvalidValueError("secret: expected the course secret (64 hex digits) with per_student, got "
                                    f"{'another text' if self.secret else 'none'}; make the autograder again with "
                                    "npseq exercises --gradescope ... --per-student")

    @property
    def names(self) -> tuple:
        """The exercises graded, in the order of the sheet."""
        return self.only or tuple(names_of_sets(DEFAULT_SETS))

    def number_of(self, name: str) -> int:
        """The exercise's number (from 1) among those graded: its number in the hand-out of these exercises."""
        return self.names.index(name) + 1

    def points_of(self, name: str) -> float:
        return self.points.get(name, 1.0)

    @property
    def total(self) -> float:
        """The points of all the graded exercises: what a perfect submission scores."""
        return sum(self.points_of(name) for name in self.names)

    def hidden_cases(self, name: str) -> frozenset:
        """The numbers (from 1) of the cases of ``name`` that are hidden until grades are published."""
        hidden = self.hidden.get(name, ())
        count = len(EXERCISE_BY_NAME[name].cases)
        return frozenset(range(1, count + 1) if hidden == ALL_CASES else hidden)

    def to_json(self) -> str:
        """The scoring as ``config.json`` text: every field, ``hidden``'s case numbers as lists (or ``"all"``)."""
        hidden = {name: cases if cases == ALL_CASES else list(cases) for name, cases in self.hidden.items()}
        data = {"only": None if self.only is None else list(self.only), "points": dict(self.points),
                "hidden": hidden, "timeout": self.timeout, "memory_mb": self.memory_mb, "policy": self.policy,
                "per_student": self.per_student, "secret": self.secret, "hints": self.hints}
        if self.lang != "en":  # an English autograder's config.json stays what it was before the field
            data["lang"] = self.lang
        return json.dumps(data, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Scoring:
        """The scoring that :meth:`to_json` wrote; a field left out takes its default.

        Raises:
            InvalidValueError: not JSON, not an object, an unknown field, or a field's value
                out of range (an unknown exercise, negative points, a case number the exercise
                does not have); one line naming the field.
        """
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidValueError(f"config: expected JSON text, got an error at {exc}") from None
        if not isinstance(data, dict):
            raise InvalidValueError(f"config: expected a JSON object, got {type(data).__name__}")
        fields = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise InvalidValueError(f"config: expected fields from {fields}, got {unknown}")
        return cls(**data)


def _check_names(field: str, names, allowed) -> None:
    unknown = [name for name in names if name not in allowed]
    if unknown:
        which = "names from" if allowed is NAMES else "names of the graded exercises"
        raise InvalidValueError(f"{field}: expected {which} {list(allowed)}, got {unknown}")


def _checked_points(points: dict, graded: tuple) -> dict:
    _check_names("points", points, graded)
    for name, value in points.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            raise InvalidValueError(f"points: {name}: expected a number >= 0, got {value!r}")
    return {name: float(points[name]) for name in NAMES if name in points}


def _checked_hidden(hidden: dict, graded: tuple) -> dict:
    _check_names("hidden", hidden, graded)
    checked = {}
    for name in (name for name in NAMES if name in hidden):
        cases, count = hidden[name], len(EXERCISE_BY_NAME[name].cases)
        if cases != ALL_CASES:
            numbers = tuple(cases) if isinstance(cases, (tuple, list)) else None
            if not numbers or not all(isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= count
                                      for k in numbers):
                raise InvalidValueError(f"hidden: {name}: expected case numbers from 1 to {count} or "
                                        f"\"{ALL_CASES}\", got {cases!r}")
            cases = tuple(sorted(set(numbers)))
        checked[name] = cases
    return checked


__all__ = ["ALL_CASES", "Scoring"]
