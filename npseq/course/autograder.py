"""Gradescope's side: ``python -m npseq.course.autograder --root ROOT`` grades one submission and writes its results.

``run_autograder`` (:mod:`npseq.course.gradescope`) runs this for every submission. It
reads the instructor's scoring from ``ROOT/source/config.json``, finds the student's file
under ``ROOT/submission/`` (:func:`find_submission`), grades it with
:func:`~npseq.course.verdict.judge` under the scoring's exercises and limits (which prints the
text tables: Gradescope keeps them for the instructor; ``stdout_visibility`` is hidden), and
writes ``ROOT/results/results.json`` (:func:`~npseq.course.gradescope.render` of the verdict).

The student's code runs in the grader's sandbox (:mod:`npseq.course.sandbox`: on Gradescope,
as root, a user of its own, with ``ROOT/source`` and ``ROOT/results`` out of its sight where
the platform allows it), and the results are written by this process *after* the grading,
when no process of the submission is left. Whatever happens, a ``results.json`` is written, a
bug of the grader's included (score 0, with the reason for the instructor), and the exit code
is 0; only a results folder that cannot be written, or a bad command line, exits otherwise.

What any platform's grading command does the same way lives here too, and PrairieLearn's
(:mod:`npseq.course.prairielearn_grader`) uses it: the search for the one file handed in,
the results folder made anew, and the command line (:func:`run`). The one option is parsed by
hand: argparse lives in :mod:`npseq.commands` only.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
import traceback
from typing import Callable

from ..language import _, speaking
from .cases import student_seed
from .gradescope import OUTPUT_CHARS, Scoring, render, write_results
from .handout import NOTEBOOK_NAME, SKELETON_NAME
from .search import search
from .submission import one_line
from .verdict import capped, grader_failed, judge, ungradable

DEFAULT_ROOT = "/autograder"
"""Gradescope's folder: ``source`` (the unpacked zip), ``submission``, ``results``."""

SUFFIXES = (".py", ".ipynb")
SKIPPED_FOLDERS = ("__pycache__", ".ipynb_checkpoints")
LISTED_CANDIDATES = 20  # a message names at most this many of the files found


@dataclasses.dataclass(frozen=True)
class Found:
    """What :func:`find_submission` found: the file to grade, or why there is none to pick."""
    path: str = ""     # the submission to grade, or "" when there is none to pick
    problem: str = ""  # one line for the student when ``path`` is ""


def _candidates(folder: str) -> list:
    """The ``.py`` and ``.ipynb`` files under ``folder``, relative to it and sorted, hidden ones, caches and links
    left out, at most :data:`~npseq.course.search.MAX_DEPTH` folders down (:func:`~npseq.course.search.search`)."""
    return search(folder, SUFFIXES, SKIPPED_FOLDERS).files


def find_submission(folder: str) -> Found:
    """The one file to grade under ``folder``: the only ``.py`` or ``.ipynb`` there, or the one named as the hand-out.

    Files and folders whose names start with ``.``, ``__pycache__`` and ``.ipynb_checkpoints``
    are not looked at; a link is not followed; folders deeper than
    :data:`~npseq.course.search.MAX_DEPTH` levels are not searched.
    """
    expected = _("expected one .py or .ipynb file, or one named {skeleton} or {notebook}").format(
        skeleton=SKELETON_NAME, notebook=NOTEBOOK_NAME)
    candidates = _candidates(folder) if os.path.isdir(folder) else []
    if len(candidates) == 1:
        return Found(os.path.join(folder, candidates[0]))
    if not candidates:
        return Found(problem=_("the submission holds no .py or .ipynb file; {expected}").format(expected=expected))
    named = [name for name in candidates if os.path.basename(name) in (SKELETON_NAME, NOTEBOOK_NAME)]
    if len(named) == 1:
        return Found(os.path.join(folder, named[0]))
    listed = candidates[:LISTED_CANDIDATES]
    files = ", ".join(listed)
    if len(candidates) > len(listed):
        files = _("{files} and {count} more").format(files=files, count=len(candidates) - len(listed))
    return Found(problem=_("the submission holds {count} .py or .ipynb files ({files}); {expected}").format(
        count=len(candidates), files=files, expected=expected))


def submitters(root: str) -> str:
    """Who handed the submission in, from Gradescope's ``ROOT/submission_metadata.json``: the users' e-mail
    addresses, sorted and joined (a group's seed is its members'), or ``""`` when the file does not say."""
    try:
        with open(os.path.join(root, "submission_metadata.json"), encoding="utf-8") as handle:
            users = json.load(handle).get("users") or []
        return ",".join(sorted(str(user.get("email") or user.get("name") or "").strip().lower() for user in users
                               if isinstance(user, dict)))
    except (OSError, ValueError, AttributeError):
        return ""


def _results_of(root: str, started: float) -> dict:
    """Grade the submission under ``root`` as its config says; the ``results.json`` data, whatever happens."""
    try:
        with open(os.path.join(root, "source", "config.json"), encoding="utf-8") as handle:
            scoring = Scoring.from_json(handle.read())
    except (OSError, ValueError) as exc:
        return _setup_failure(f"the autograder is set up wrongly (not your fault; tell your instructor): "
                              f"config.json: {exc}")
    with speaking(scoring.lang):  # the instructor's choice (npseq exercises --gradescope ... --lang)
        return _graded(root, scoring, started)


def _graded(root: str, scoring: Scoring, started: float) -> dict:
    """The ``results.json`` data of the submission under ``root``, graded as ``scoring`` says."""
    found = find_submission(os.path.join(root, "submission"))
    if not found.path:
        print(found.problem)
        return render(ungradable(found.problem, scoring, time.monotonic() - started))
    seed = student_seed(submitters(root), scoring.secret) if scoring.per_student and submitters(root) else 0
    # the instructor's files (the scoring, the hidden cases) are out of the submission's sight
    return render(judge(found.path, scoring, seed=seed,
                        private=(os.path.join(root, "source"), os.path.join(root, "results"))))


def _setup_failure(message: str) -> dict:
    """``results.json`` when there is no scoring to list the tests by: score 0, the reason for the instructor."""
    print(message, file=sys.stderr)
    return {"score": 0.0, "output": capped(message, OUTPUT_CHARS), "stdout_visibility": "hidden", "tests": []}


def fresh_results_folder(root: str) -> str:
    """``ROOT/results``, a folder: a link or a file that the student's code put in its place is removed."""
    folder = os.path.join(root, "results")
    if os.path.islink(folder) or (os.path.exists(folder) and not os.path.isdir(folder)):
        os.unlink(folder)
    return folder


def grade_submission(root: str) -> dict:
    """Grade ``root``'s submission and write ``root/results/results.json``; the data written.

    Raises:
        OSError: the results cannot be written.
    """
    try:
        data = _results_of(root, time.monotonic())
    except Exception as exc:  # a bug outside the grading itself: still a results.json, and the traceback
        traceback.print_exc()
        data = _setup_failure(f"{grader_failed()}: {type(exc).__name__}: {one_line(exc)}")
    write_results(os.path.join(fresh_results_folder(root), "results.json"), data)
    return data


def parse_root(argv: list, default: str = DEFAULT_ROOT) -> str:
    """``--root ROOT`` or ``--root=ROOT`` from ``argv`` (``default`` without it).

    Raises:
        ValueError: anything else on the command line (one line).
    """
    root, words = default, list(argv)
    while words:
        word = words.pop(0)
        if word == "--root" and words and words[0]:
            root = words.pop(0)
        elif word.startswith("--root=") and len(word) > len("--root="):
            root = word[len("--root="):]
        else:
            raise ValueError(f"expected --root ROOT, got {word!r}")
    return root


def run(argv: list, module: str, default_root: str, grade: Callable[[str], dict]) -> int:
    """``python -m MODULE [--root ROOT]``: ``grade(root)`` writes the results; 0 once they are written, 1 if they
    cannot be, 2 for bad usage (``-h`` prints the usage)."""
    usage = f"usage: python -m {module} [--root ROOT]   (default root: {default_root})"
    if argv in (["-h"], ["--help"]):
        print(usage)
        return 0
    try:
        root = parse_root(argv, default_root)
    except ValueError as exc:
        print(f"{module}: {exc}\n{usage}", file=sys.stderr)
        return 2
    try:
        grade(root)
    except OSError as exc:
        print(f"{module}: cannot write {os.path.join(root, 'results', 'results.json')} ({exc.strerror or exc})",
              file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    """Grade the submission under ``--root``; 0 once ``results.json`` is written, 1 if it cannot be, 2 for bad usage."""
    return run(sys.argv[1:] if argv is None else argv, "npseq.course.autograder", DEFAULT_ROOT, grade_submission)


if __name__ == "__main__":
    sys.exit(main())
