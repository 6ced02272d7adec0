"""``npseq exercises --out DIR --gradescope ZIP --prairielearn DIR``: write a hand-out of the backward exercises,
and the autograders that grade it.

``--out`` writes the hand-out (a ``.py`` or a notebook, and a README:
:mod:`npseq.course.handout`); ``--gradescope`` writes the Gradescope autograder zip that
grades it (:mod:`npseq.course.gradescope`), ``--prairielearn`` PrairieLearn's question
folders, one per exercise set (:mod:`npseq.course.prairielearn`); both scored by ``--points``,
``--hidden`` and ``--timeout``; any of them, or several. This module parses and prints. A file
of the hand-out that a learner has already changed, a file at the zip's path that is not an
autograder zip npseq wrote, and a file in the questions' folder that npseq did not write, are
never replaced without ``--force``.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os

from ..course.gradescope import BundleError, Scoring, check_bundle_target, write_bundle
from ..course.handout import (
    HandoutError,
    chosen_exercises,
    grade_command,
    handout_files,
    write_files,
    write_solutions,
)
from ..course.hints import DEFAULT_HINTS, HINT_LEVELS
from ..course.prairielearn import (
    IMAGE,
    MEMORY_MB,
    check_questions_target,
    course_files,
    describe_question,
    plans,
    write_questions,
)
from ..course.report import POLICIES
from ..course.scoring import ALL_CASES
from ..course.secret import course_secret
from ..course.sets import DEFAULT_SETS, SET_NAMES, SET_SUMMARIES
from ..course.sheet import EXERCISE_BY_NAME, NAMES
from ..errors import UserError
from ..language import LANGUAGES, language_of
from .arguments import UsageError, folder_path, new_file_path, positive, say
from .course_options import chosen_seed, seed_or_student

DESCRIPTION = ("Write a hand-out of the backpropagation exercises: the skeleton file (or a notebook), a README "
               "with each exercise's equations, and the command that grades it (--out); and/or the autograders "
               "that grade it: Gradescope's zip (--gradescope), PrairieLearn's question folders (--prairielearn).")

NEXT_STEP = "upload {zip} as the assignment's autograder (Gradescope: Configure Autograder > Zip file upload)"

PRAIRIELEARN_NEXT_STEP = ("copy {folders} into your PrairieLearn course's questions/ and add {them} to an assessment "
                          "({out}/README.txt says more)")


class _HandoutRefused(UserError):
    """A hand-out or an autograder that cannot be written, reported in one line with exit code 2."""


@dataclasses.dataclass(frozen=True)
class PointsOption:
    """One ``--points NAME=P``."""
    name: str
    points: float


@dataclasses.dataclass(frozen=True)
class HiddenOption:
    """One ``--hidden NAME[:K]``: case ``K`` (from 1) of the exercise, or every case when ``case`` is None."""
    name: str
    case: int | None


def _exercise_name(text: str, option: str, form: str) -> str:
    if text not in NAMES:
        raise argparse.ArgumentTypeError(f"expected {form} with NAME from {', '.join(NAMES)}; got {option!r}")
    return text


def points_option(text: str) -> PointsOption:
    """An argparse type: ``NAME=P``, an exercise and its points (a number >= 0)."""
    name, equals, value = text.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError(f"expected NAME=POINTS (rnn_step_backward=2), got {text!r}")
    try:
        points = float(value)
    except ValueError:
        points = math.nan
    if not 0 <= points < math.inf:
        raise argparse.ArgumentTypeError(f"expected NAME=POINTS with POINTS a number >= 0, got {text!r}")
    return PointsOption(_exercise_name(name, text, "NAME=POINTS"), points)


def hidden_option(text: str) -> HiddenOption:
    """An argparse type: ``NAME`` (every case of the exercise) or ``NAME:K`` (its case ``K``, from 1)."""
    name, colon, number = text.partition(":")
    name = _exercise_name(name, text, "NAME or NAME:K")
    if not colon:
        return HiddenOption(name, None)
    count = len(EXERCISE_BY_NAME[name].cases)
    if not number.isdigit() or not 1 <= int(number) <= count:
        raise argparse.ArgumentTypeError(f"expected NAME:K with K a case number from 1 to {count} ({name} has "
                                         f"{count} cases), got {text!r}")
    return HiddenOption(name, int(number))


def add_arguments(parser) -> None:
    """The options of ``npseq exercises``."""
    parser.add_argument("--out", metavar="DIR", help="write the hand-out into this folder (made if missing)")
    seed_or_student(parser, "the hand-out")
    parser.add_argument("--solutions", metavar="DIR",
                        help="for the instructor only: write the solved copy, backprop_solutions.py, into DIR (the "
                             "grader names it as npseq's own if a learner hands it in)")
    parser.add_argument("--gradescope", type=new_file_path, metavar="ZIP",
                        help="write the Gradescope autograder zip that grades the hand-out (e.g. autograder.zip)")
    parser.add_argument("--prairielearn", type=folder_path, metavar="DIR",
                        help="write PrairieLearn questions that grade the hand-out into DIR: one folder per exercise "
                             "set (npseq_classic, ...), to copy into the course's questions/, with a Dockerfile and "
                             "a README.txt beside them")
    parser.add_argument("--lang", choices=LANGUAGES, metavar="{" + ",".join(LANGUAGES) + "}",
                        help="the language of the hand-out's prose (its README, the exercises' text, the notebook's "
                             "Markdown) and of the autograders' feedback: en (English) or zh (Chinese, 中文); the "
                             "code, the equations and the names stay as they are; default: zh in a Chinese locale "
                             "(LANG=zh_CN.UTF-8), else en")
    parser.add_argument("--notebook", action="store_true",
                        help="write the skeleton as a Jupyter notebook (backprop_exercises.ipynb) instead of a .py")
    parser.add_argument("--hints", choices=HINT_LEVELS, metavar="none|structure|equations",
                        help="how much of the derivation the hand-out gives, and the autograder repeats under a wrong "
                             "exercise: none (the forward equations, the cache fields and the shapes), structure "
                             "(and which way the gradients flow), equations (and the backward equations); default: "
                             f"{DEFAULT_HINTS}")
    parser.add_argument("--no-hints", dest="hints", action="store_const", const="none",
                        help="the same as --hints none")
    parser.add_argument("--set", dest="sets", action="extend", nargs="+", choices=SET_NAMES, metavar="SET",
                        help="the exercise sets of the hand-out and the autograder (several allowed): "
                             + "; ".join(f"{name}: {SET_SUMMARIES[name]}" for name in SET_NAMES)
                             + f" (default: {', '.join(DEFAULT_SETS)})")
    parser.add_argument("--only", nargs="+", choices=NAMES, metavar="NAME",
                        help="these exercises (and those they build on), in the hand-out and the autograder; with "
                             "--set, exercises of those sets; default: every exercise of the sets")
    parser.add_argument("--points", action="append", type=points_option, default=[], metavar="NAME=P",
                        help="the autograders: exercise NAME is worth P points (repeatable; default 1 each), "
                             "shared evenly by its cases")
    parser.add_argument("--hidden", action="append", type=hidden_option, default=[], metavar="NAME[:K]",
                        help="the autograders: students see case K of NAME (every case without :K) only once "
                             "grades are published (Gradescope), or its points but not its table (PrairieLearn); "
                             "its numbers are drawn at each grading (repeatable)")
    parser.add_argument("--timeout", type=positive(float), metavar="SECONDS",
                        help="the autograders: seconds each function may run, all its cases together "
                             "(default: npseq grade's)")
    parser.add_argument("--policy", choices=POLICIES, metavar="note|zero",
                        help="the autograders: a function that uses npseq's own backward (calls it, or is a renamed "
                             "copy of it) is graded with a note (note, the default) or scores 0 (zero)")
    parser.add_argument("--per-student", action="store_true",
                        help="Gradescope's autograder: grade each student on cases of their own (the seed of their "
                             "e-mail address; hand each one `npseq exercises --out DIR --student EMAIL`); "
                             "PrairieLearn's questions give every variant numbers of its own without it")
    parser.add_argument("--memory-mb", type=positive(int), metavar="MB",
                        help="the autograders: memory each function may add (default: npseq grade's; "
                             f"PrairieLearn's, {MEMORY_MB}, within its container's 2 GiB)")
    parser.add_argument("--force", action="store_true",
                        help="replace files of the hand-out that hold other content (a learner's work is lost), "
                             "a file at --gradescope's path that is not an autograder zip npseq wrote, and files in "
                             "--prairielearn's folder that npseq did not write")


def scoring_of(args) -> Scoring:
    """The autograders' :class:`~npseq.course.scoring.Scoring` from the parsed options (PrairieLearn's questions
    each keep their own exercises' part of it: :func:`~npseq.course.prairielearn.plans`).

    Raises:
        UsageError: ``--points`` given twice for one exercise, or ``--points`` or ``--hidden``
            for an exercise that ``--only`` leaves out.
    """
    names = [exercise.name for exercise in chosen_exercises(args.only, args.sets)]
    points = {}
    for option in args.points:
        if option.name in points:
            raise UsageError(f"--points: expected one value per exercise, got {option.name} twice")
        points[option.name] = option.points
    hidden = {}
    for option in args.hidden:
        cases = hidden.get(option.name, ())
        hidden[option.name] = ALL_CASES if option.case is None or cases == ALL_CASES else cases + (option.case,)
    for flag, named in (("--points", points), ("--hidden", hidden)):
        left_out = [name for name in named if name not in names]
        if left_out:
            raise UsageError(f"{flag}: expected exercises of the autograder ({', '.join(names)}: --set, --only and "
                             f"what they build on), got {', '.join(left_out)}")
    limits = {"timeout": args.timeout, "memory_mb": args.memory_mb, "policy": args.policy, "hints": args.hints,
              "per_student": args.per_student or None}
    if args.per_student:  # the students' seeds need the secret their hand-outs were made with
        limits["secret"] = course_secret(create=True)
    return Scoring(only=tuple(names) if args.only or args.sets else None, points=points, hidden=hidden,
                   **{name: value for name, value in limits.items() if value is not None})


def _check_options(args) -> None:
    """Refuse a command line that writes nothing, and options that shape what is not written (``--points``
    without an autograder, ...)."""
    autograder = args.gradescope is not None or args.prairielearn is not None
    if args.out is None and not autograder and args.solutions is None:
        raise UsageError("expected --out DIR (the hand-out), --gradescope ZIP or --prairielearn DIR (its autograder), "
                         "--solutions DIR (the instructor's key), or several")
    folders = {"--out": args.out, "--solutions": args.solutions, "--prairielearn": args.prairielearn}
    given = {flag: os.path.abspath(folder) for flag, folder in folders.items() if folder}
    shared = [flag for flag, folder in given.items() if list(given.values()).count(folder) > 1]
    if shared:
        raise UsageError(f"{' and '.join(shared)}: expected a folder each (the hand-out is the students', the key "
                         f"and the questions are the instructor's), got {folders[shared[0]]} for "
                         f"{'both' if len(shared) == 2 else 'all'}")
    if not autograder:
        given = [flag for flag, value in (("--points", args.points), ("--hidden", args.hidden),
                                          ("--timeout", args.timeout), ("--memory-mb", args.memory_mb),
                                          ("--policy", args.policy), ("--per-student", args.per_student)) if value]
        if given:
            raise UsageError(f"{', '.join(given)}: these set up the autograder; add --gradescope ZIP or "
                             "--prairielearn DIR")
    if args.per_student and args.gradescope is None:
        raise UsageError("--per-student: this sets up Gradescope's autograder (students' e-mail addresses); add "
                         "--gradescope ZIP (a PrairieLearn question gives every variant numbers of its own)")
    if args.out is None and args.notebook:
        raise UsageError("--notebook: this shapes the hand-out; add --out DIR")
    if args.out is None and not autograder and args.hints is not None:
        raise UsageError("--hints: this shapes the hand-out and the autograder; add --out DIR, --gradescope ZIP or "
                         "--prairielearn DIR")
    if args.out == "":
        raise UsageError("--out: expected a folder, got an empty string")


def _describe(scoring: Scoring) -> str:
    hidden = sum(len(scoring.hidden_cases(name)) for name in scoring.names)
    return (f"Gradescope's autograder for {len(scoring.names)} exercise{'s' if len(scoring.names) != 1 else ''}, "
            f"{scoring.total:g} points in all, {scoring.timeout:g} s per function"
            + (f", {hidden} case{'s' if hidden != 1 else ''} hidden until grades are published" if hidden else ""))


def _questions(args, scoring: Scoring, lang: str = "en") -> list:
    """PrairieLearn's questions: ``scoring``'s exercises, one question per set, each process limited to
    PrairieLearn's memory unless ``--memory-mb`` says otherwise, speaking ``lang``."""
    return plans(args.only, args.sets, dataclasses.replace(scoring, memory_mb=args.memory_mb or MEMORY_MB), lang=lang)


def run(args) -> int:
    """Write the hand-out and/or the autograders as ``npseq exercises`` parsed them; return the exit code."""
    _check_options(args)
    lang = language_of(args.lang)
    scoring = scoring_of(args) if args.gradescope is not None or args.prairielearn is not None else None
    seed = chosen_seed(args, make_secret=True) if args.out is not None else 0
    try:
        questions = _questions(args, scoring, lang) if args.prairielearn is not None else []
        course = course_files(questions) if questions else {}
        # refused before the hand-out is written: a refusal writes nothing
        if args.gradescope:
            check_bundle_target(args.gradescope, args.force)
        if questions:
            check_questions_target(args.prairielearn, course, args.force)
        if args.out is not None:
            files = handout_files(args.only, hints=args.hints or DEFAULT_HINTS, as_notebook=args.notebook,
                                  seed=seed, sets=args.sets, lang=lang)
            result = write_files(args.out, files, force=args.force)
        if args.gradescope:
            write_bundle(args.gradescope, scoring, force=args.force, lang=lang)
        if questions:
            written = write_questions(args.prairielearn, course, force=args.force)
        if args.solutions is not None:
            key = write_solutions(args.solutions, args.only, force=args.force, sets=args.sets)
    except (HandoutError, BundleError) as exc:
        raise _HandoutRefused(str(exc)) from None
    exercises = chosen_exercises(args.only, args.sets)
    if args.out is not None:
        kept = f"; unchanged: {', '.join(result.unchanged)}" if result.unchanged else ""
        say(f"wrote {', '.join(result.written) or 'nothing new'}{kept} "
            f"({len(exercises)} exercises, hints: {args.hints or DEFAULT_HINTS})")
        skeleton = next(iter(files))
        say(f"grade with: cd {args.out} && {grade_command(skeleton, exercises, seed)}")
    if args.gradescope:
        say(f"wrote {args.gradescope}: {_describe(scoring)}")
        say("next: " + NEXT_STEP.format(zip=args.gradescope))
    if questions:
        say(f"wrote {args.prairielearn}: PrairieLearn's questions ({len(written)} files written, "
            f"{len(course) - len(written)} unchanged), graded in {IMAGE} with no network")
        for question in questions:
            say(f"   {describe_question(question)}")
        folders = ", ".join(os.path.join(args.prairielearn, question.folder) for question in questions)
        say("next: " + PRAIRIELEARN_NEXT_STEP.format(folders=folders, them="it" if len(questions) == 1 else "them",
                                                     out=args.prairielearn))
    if args.solutions is not None:
        say(f"wrote {', '.join(key.written + key.unchanged)}: the solved copy, for the instructor only (a learner "
            "who hands it in is named as handing in npseq's own)")
    return 0
