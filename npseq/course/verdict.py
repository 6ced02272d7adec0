"""The verdict on one submission under a :class:`~npseq.course.scoring.Scoring`: built once, shown by every platform.

A platform's results file is a rendering of one :class:`Verdict`: Gradescope's ``results.json``
(:func:`npseq.course.gradescope.render`) and PrairieLearn's (:func:`npseq.course.prairielearn.render`)
read the same numbers, so a submission scores the same on both, and the same as ``npseq grade``
when every exercise is worth one point.

Each graded (exercise, case) is one :class:`CaseScore`, numbered as on the hand-out's sheet
(``3.2``: exercise 3, case 2). An exercise's points (the scoring's) are shared evenly by its
cases, and a case earns its share times the fraction of its tensors that are correct; a function
that failed as a whole (time limit, crash), one not attempted, one zeroed by the honesty policy
and a case in which it gave nothing to check earn 0. A file that cannot be graded at all (it does
not import, no file was handed in, the grader failed) is a verdict with a ``reason`` and every case
at 0: each platform says what that costs the student.

:func:`judge` is what an autograder runs, whatever its platform: it draws the numbers of the cases
hidden until grades are published, grades the file in the sandbox and prints the text tables (the
platform keeps them for the instructor), with the scores the verdict carries.
"""
from __future__ import annotations

import dataclasses
import secrets
import time
import traceback

from ..language import _
from .grader import grade_file
from .hints import hint_text
from .report import FunctionGrade, GradeReport, Scored
from .scoring import Scoring
from .sheet import EXERCISE_BY_NAME
from .submission import SubmissionError, one_line

GRADER_FAILED = "the grader failed (not your fault; tell your instructor)"
"""How a verdict's reason begins when the grader, not the file, is at fault (in English: :func:`grader_failed` says it
in the language spoken)."""


def grader_failed() -> str:
    """:data:`GRADER_FAILED` in the language spoken."""
    return _("the grader failed (not your fault; tell your instructor)")


def capped(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: cut, with a note saying how much, when longer.

    Characters that UTF-8 cannot hold (lone surrogates, from a learner's bytes) become
    escapes, so that every reader of the JSON file can parse it.
    """
    text = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) <= limit:
        return text
    note = "\n" + _("... (cut here: {count} characters in all, {limit} shown at most)").format(count=len(text),
                                                                                              limit=limit)
    return text[:max(limit - len(note), 0)] + note


def number_text(value: float) -> str:
    """A number of points as the reports print it: at most four decimals, no trailing zeros (``0.8``, ``1``)."""
    return f"{round(value, 4):g}"


@dataclasses.dataclass(frozen=True)
class CaseScore:
    """One (exercise, case) of a verdict: one test on every platform."""
    number: str           # "3.2": the exercise's number on the sheet, the case's number from 1
    name: str             # "3.2 gru_step_backward: reset_after=True, N=3 D=4 H=5"
    exercise: str
    score: float          # in [0, max_score]
    max_score: float      # the exercise's points / its number of cases
    passed: bool          # every tensor of the case correct
    output: str           # plain text: the case's line of points, its rows of the table, the hand-out's hint
    hidden: bool          # shown to students only once grades are published


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What a submission earned under a scoring: every case's score, and what the platforms say beside it.

    ``total`` is what a perfect submission earns (the graded exercises' points); ``reason`` is why the
    file could not be graded (``""`` when it was); ``honesty`` holds the honesty note's lines, for the
    instructor alone; ``notes`` what reading a notebook skipped; ``missing`` the exercises the file does
    not define.
    """
    cases: tuple
    total: float
    seconds: float
    reason: str = ""
    honesty: tuple = ()
    notes: tuple = ()
    missing: tuple = ()

    @property
    def gradable(self) -> bool:
        return not self.reason

    @property
    def earned(self) -> float:
        """The points earned, hidden cases included (it is the grade), within ``[0, total]``."""
        return min(max(sum(case.score for case in self.cases), 0.0), self.total)

    @property
    def visible(self) -> tuple:
        """The cases students see before grades are published."""
        return tuple(case for case in self.cases if not case.hidden)

    def exercise_scores(self) -> dict:
        """``{exercise: Scored(earned, worth)}``, for a text report that gives the score the platform's file gives."""
        scored = {}
        for case in self.cases:
            earned, worth = scored.get(case.exercise, (0.0, 0.0))
            scored[case.exercise] = Scored(earned + case.score, worth + case.max_score)
        return scored


def _case_view(function: FunctionGrade, label: str) -> FunctionGrade:
    """``function`` as if it had only the case ``label`` (and any problem of all its cases), for its table."""
    return dataclasses.replace(function, rows=[row for row in function.rows if row.case == label],
                               problems=[p for p in function.problems if p.case in (label, "all cases")],
                               total=len(EXERCISE_BY_NAME[function.name].grads), cases=(label,), note="")


def case_scores(function: FunctionGrade, scoring: Scoring) -> list:
    """The :class:`CaseScore` of each case of ``function``, in the order of its cases.

    The first case that fails (a visible one, if any fails) ends with the hand-out's hints for the
    function, at the level ``scoring.hints``.
    """
    exercise = EXERCISE_BY_NAME[function.name]
    labels = function.cases or tuple(case.label for case in exercise.cases)
    share = scoring.points_of(function.name) / len(labels)
    hidden = scoring.hidden_cases(function.name)
    scores = []
    for index, label in enumerate(labels, 1):
        number = f"{scoring.number_of(function.name)}.{index}"
        view = _case_view(function, label)
        gives_nothing = bool(function.failure or function.penalty) or not function.attempted or bool(view.problems)
        correct = 0 if gives_nothing else view.correct
        score = min(max(share * correct / len(exercise.grads), 0.0), share)
        passed = not gives_nothing and correct == len(exercise.grads)
        table = view.section()
        if view.status in ("correct", "incorrect", "honesty"):  # the table's first line: the case's score, in points
            zeroed = f" ({function.penalty})" if function.penalty else ""
            headline = _("{signature}, case {index} ({label}): {correct}/{total} tensors correct, {score} of {share} "
                         "points{zeroed}").format(signature=function.signature, index=index, label=label,
                                                  correct=view.correct, total=len(exercise.grads),
                                                  score=number_text(score), share=number_text(share), zeroed=zeroed)
            table = "\n".join(["== " + headline] + table.splitlines()[1:])
        scores.append(CaseScore(number, f"{number} {function.name}: {label}", function.name, score, share, passed,
                                table, index in hidden))
    failing = sorted((score.hidden, position) for position, score in enumerate(scores) if not score.passed)
    hint = _hint(function, scoring)
    if failing and hint:  # once per exercise, under the first failing case students see before grades are out
        position = failing[0][1]
        scores[position] = dataclasses.replace(scores[position], output=f"{scores[position].output}\n\n{hint}")
    return scores


def _hint(function: FunctionGrade, scoring: Scoring) -> str:
    """What the hand-out's hints (at ``scoring.hints``) say of ``function``, to repeat under its first failing case;
    ``""`` for none, and for a function not attempted or zeroed for honesty."""
    text = hint_text(EXERCISE_BY_NAME[function.name].docstring, scoring.hints)
    if not text or not function.attempted or function.penalty:
        return ""
    return _("From your hand-out (hints: {level}):").format(level=scoring.hints) + f"\n{text}"


def verdict_of(report: GradeReport, scoring: Scoring) -> Verdict:
    """The verdict on ``report``'s file, scored as ``scoring`` says (the exercises graded are the report's)."""
    cases = tuple(score for function in report.functions for score in case_scores(function, scoring))
    return Verdict(cases, sum(scoring.points_of(function.name) for function in report.functions), report.seconds,
                   honesty=tuple(report.honesty_lines()), notes=tuple(report.notes), missing=tuple(report.missing))


def ungradable(reason: str, scoring: Scoring, seconds: float = 0.0) -> Verdict:
    """The verdict on a file that cannot be graded: every graded exercise's cases at 0, each saying why.

    ``reason`` is one line, as :class:`~npseq.course.submission.SubmissionError` says it.
    """
    cases = []
    for name in scoring.names:
        exercise, hidden = EXERCISE_BY_NAME[name], scoring.hidden_cases(name)
        share = scoring.points_of(name) / len(exercise.cases)
        for index, case in enumerate(exercise.cases, 1):
            number = f"{scoring.number_of(name)}.{index}"
            output = "== " + _("{signature}, case {index} ({label}): 0 of {share} points").format(
                signature=exercise.signature, index=index, label=case.label, share=number_text(share)) + "\n   " + \
                _("the file cannot be graded: {reason}").format(reason=reason)
            cases.append(CaseScore(number, f"{number} {name}: {case.label}", name, 0.0, share, False, output,
                                   index in hidden))
    return Verdict(tuple(cases), scoring.total, seconds, reason=reason)


def hidden_case_seeds(scoring: Scoring) -> dict:
    """``(exercise, case number) -> seed`` for every hidden case: numbers drawn now, from the operating system's
    randomness, which no hand-out and no earlier grading has shown."""
    return {(name, number): secrets.randbelow(2 ** 48) + 1 for name in scoring.names
            for number in sorted(scoring.hidden_cases(name))}


def judge(path: str, scoring: Scoring, *, seed: int = 0, private: tuple = ()) -> Verdict:
    """Grade the file at ``path`` as ``scoring`` says and print its text tables; its verdict, whatever happens.

    The cases are those of ``seed`` (a student's or a variant's own numbers; 0, the sheet's), but the
    hidden ones, drawn now (:func:`hidden_case_seeds`). The folders ``private`` (the autograder's own
    files) are out of the submission's sight where the platform allows it. A file that cannot be
    graded, and a bug of the grader's (whose traceback is printed for the instructor), give an
    :func:`ungradable` verdict with the reason.
    """
    started = time.monotonic()
    try:
        report = grade_file(path, only=scoring.names, timeout=scoring.timeout, memory_mb=scoring.memory_mb,
                            quiet=True, private=private, policy=scoring.policy, seed=seed,
                            case_seeds=hidden_case_seeds(scoring))
        verdict = verdict_of(report, scoring)
        print(report.table(scored=verdict.exercise_scores()))  # the score the platform's file carries
    except SubmissionError as exc:
        print(_("cannot grade {path}: {reason}").format(path=path, reason=exc))
        return ungradable(str(exc), scoring, time.monotonic() - started)
    except Exception as exc:  # a bug of the grader's: the student still gets a verdict, the instructor the traceback
        traceback.print_exc()
        return ungradable(f"{grader_failed()}: {type(exc).__name__}: {one_line(exc)}", scoring,
                          time.monotonic() - started)
    return verdict


__all__ = ["GRADER_FAILED", "CaseScore", "Verdict", "capped", "case_scores", "grader_failed", "hidden_case_seeds",
           "judge", "number_text", "ungradable", "verdict_of"]
