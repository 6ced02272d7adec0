"""PrairieLearn's side: ``python -m npseq.course.prairielearn_grader --root ROOT`` grades one submission.

A question's ``tests/run.sh`` (:mod:`npseq.course.prairielearn`) runs this for every submission, once
npseq is installed. It reads the question's scoring from ``ROOT/tests/config.json`` and the variant's
seed from ``ROOT/data/data.json`` (``params["seed"]``, which the question's ``server.py`` drew from
PrairieLearn's ``variant_seed``), finds the student's file under ``ROOT/student/``
(:func:`~npseq.course.autograder.find_submission`), grades it on the variant's numbers with
:func:`~npseq.course.verdict.judge`, the same grader and verdict as Gradescope's (the text tables go
to the job's log, which only the course's staff see), and writes ``ROOT/results/results.json``
(:func:`~npseq.course.prairielearn.render`).

The student's code runs in the grader's sandbox (:mod:`npseq.course.sandbox`: as root in the
container, a user of its own, with ``ROOT/tests``, ``ROOT/data``, ``ROOT/results`` and the course's
files out of its sight where the kernel allows it), and the results are written by this process
*after* the grading, when no process of the submission is left. Whatever happens a ``results.json``
is written, and the exit code is 0: a file that cannot be graded, or a question set up wrongly, or a
bug of the grader's, is ``"gradable": false`` with the reason, which costs the student no attempt.
"""
from __future__ import annotations

import json
import os
import sys
import traceback

from ..language import speaking
from .autograder import find_submission, fresh_results_folder, run
from .files import write_atomically
from .handout import SKELETON_NAME, grade_command
from .prairielearn import not_gradable, render
from .scoring import Scoring
from .sheet import EXERCISE_BY_NAME
from .submission import one_line
from .verdict import grader_failed, judge, ungradable

DEFAULT_ROOT = "/grade"
"""PrairieLearn's folder: ``student``, ``tests`` (the question's), ``data/data.json``, ``results``."""

PRIVATE = ("tests", "data", "results", "serverFilesCourse", "shared")
"""The folders under the root that a submission may not see: the grader's own files, the variant's data, the course's
shared files (``shared`` is their old name)."""

MAX_DATA_BYTES = 16 << 20
"""A ``data.json`` larger than this is none PrairieLearn wrote for these questions (their params are two fields)."""


class SetupError(Exception):
    """The question is set up wrongly (its config or the variant's data): the instructor's to fix, in one line."""


def variant_seed(root: str) -> int:
    """The variant's seed, ``params["seed"]`` of ``ROOT/data/data.json``.

    Raises:
        SetupError: the file cannot be read, is not PrairieLearn's data of a question npseq wrote, or its seed
            is not an int in [1, 2**63).
    """
    path = os.path.join(root, "data", "data.json")
    try:
        if os.path.getsize(path) > MAX_DATA_BYTES:
            raise SetupError(f"data.json: expected PrairieLearn's data of a variant, got {os.path.getsize(path)} "
                             "bytes")
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise SetupError(f"data.json: expected PrairieLearn's data of a variant, got {one_line(exc)}") from None
    params = data.get("params") if isinstance(data, dict) else None
    seed = params.get("seed") if isinstance(params, dict) else None
    if isinstance(seed, bool) or not isinstance(seed, int) or not 1 <= seed < 2 ** 63:
        raise SetupError(f"data.json: expected params.seed, an int from 1 (the question's server.py draws it), got "
                         f"{seed!r}")
    return seed


def _scoring(root: str) -> Scoring:
    try:
        with open(os.path.join(root, "tests", "config.json"), encoding="utf-8") as handle:
            return Scoring.from_json(handle.read())
    except (OSError, ValueError) as exc:
        raise SetupError(f"config.json: {one_line(exc)}") from None


def _results_of(root: str) -> dict:
    """Grade the submission under ``root`` on its variant's numbers; the ``results.json`` data, whatever happens."""
    try:
        scoring, seed = _scoring(root), variant_seed(root)
    except SetupError as exc:
        return _setup_failure(str(exc))
    with speaking(scoring.lang):  # the instructor's choice (npseq exercises --prairielearn ... --lang)
        return _graded(root, scoring, seed)


def _graded(root: str, scoring: Scoring, seed: int) -> dict:
    """The ``results.json`` data of the submission under ``root``, graded on ``seed``'s numbers as ``scoring`` says."""
    command = grade_command(SKELETON_NAME, [EXERCISE_BY_NAME[name] for name in scoring.names], seed)
    found = find_submission(os.path.join(root, "student"))
    if not found.path:
        print(found.problem)
        return render(ungradable(found.problem, scoring))
    print(f"grading on the variant's seed {seed}: {command}")
    verdict = judge(found.path, scoring, seed=seed, private=tuple(os.path.join(root, name) for name in PRIVATE))
    return render(verdict, command)


def _setup_failure(message: str) -> dict:
    """``results.json`` for a question set up wrongly: not gradable (no attempt counted); the reason in the log too."""
    print(message, file=sys.stderr)
    return not_gradable(f"the question is set up wrongly (not your fault; tell your instructor): {message}")


def grade_question(root: str) -> dict:
    """Grade ``root``'s submission and write ``root/results/results.json``; the data written.

    Raises:
        OSError: the results cannot be written.
    """
    try:
        data = _results_of(root)
    except Exception as exc:  # a bug outside the grading itself: still a results.json, and the traceback
        traceback.print_exc()
        data = not_gradable(f"{grader_failed()}: {type(exc).__name__}: {one_line(exc)}")
    write_atomically(os.path.join(fresh_results_folder(root), "results.json"), json.dumps(data, indent=2) + "\n")
    return data


def main(argv=None) -> int:
    """Grade the submission under ``--root``; 0 once ``results.json`` is written, 1 if it cannot be, 2 for bad usage."""
    return run(sys.argv[1:] if argv is None else argv, "npseq.course.prairielearn_grader", DEFAULT_ROOT,
               grade_question)


if __name__ == "__main__":
    sys.exit(main())
