"""``npseq grade FILE``: grade a learner's backward exercises (a ``.py`` or a notebook) against finite differences.

The grading is :func:`npseq.course.grader.grade_file`'s; this module parses, prints the
report in the format asked for and returns the exit code: 0 when every graded function
is correct, 1 when some are not, 2 when the file cannot be graded.

``npseq grade DIR/`` (or several files and folders) grades a whole class instead
(:mod:`npseq.course.classroom`): every submission in a process of its own, ``--jobs`` at a
time; it writes a CSV (``--csv``) and a JSON (``--json``) report and prints, per exercise,
the most common mistakes with the number of students who made them. Exit code 0 when
every submission is entirely correct, 1 when some are not, 2 for a usage error.
"""
from __future__ import annotations

import json
import os
import signal
import sys

from ..course.classroom import find_submissions, grade_class, refuse_foreign, write_reports
from ..course.grader import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, grade_file
from ..course.gradescope import Scoring, is_results_file, results, unloadable, write_results
from ..course.report import POLICIES
from ..course.sheet import NAMES, SET_NAMES, graded_names
from ..course.submission import SubmissionError
from ..language import _, language_of, speaking
from .arguments import UsageError, new_file_path, positive, say
from .course_options import chosen_seed, language_option, seed_or_student

FORMATS = ("text", "json", "gradescope")

DEFAULT_CSV = "grades.csv"
DEFAULT_JSON = "grades.json"
CLASS_OPTIONS = ("jobs", "csv", "json", "force")
"""The options only a class takes (their defaults are None or False, so that a single file given one is told)."""

DESCRIPTION = ("Grade the backward functions in a course exercise file (.py or .ipynb) against finite differences "
               "and npseq's own backward, each in a child process with a time limit. Exit code 0 when every "
               "function is correct, 1 when some are not, 2 when the file cannot be graded. Given a folder or "
               "several paths, grade a whole class: every .py and .ipynb file, each in its own process, write "
               "a CSV and a JSON report and print the most common mistakes per exercise (exit code 0 when every "
               "submission is entirely correct, 1 otherwise).")


def add_arguments(parser) -> None:
    """The options of ``npseq grade``."""
    # shown as "file" (one file is what a learner grades), and so named in argparse's "required: file"
    parser.add_argument("paths", nargs="+", metavar="file",
                        help="the learner's .py file or notebook (defines some of: " + ", ".join(NAMES) + "); "
                             "or a class: a folder of them (at any depth), or several files and folders")
    parser.add_argument("--set", dest="sets", action="extend", nargs="+", choices=SET_NAMES, metavar="SET",
                        help="grade every exercise of these sets (" + ", ".join(SET_NAMES) + "), defined in the "
                             "file or not, as their hand-out lists them; default: the exercises the file defines")
    parser.add_argument("--only", action="append", choices=NAMES, metavar="NAME",
                        help="grade this function and those it builds on (repeatable), defined in the file or "
                             "not; with --set, a function of those sets (and only these are graded)")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text: tables (default); json: one JSON object on stdout; gradescope: write "
                             "Gradescope's results.json (see --results) and print the tables")
    parser.add_argument("--results", default="results.json", metavar="PATH",
                        help="where --format gradescope writes (default: results.json; on Gradescope "
                             "/autograder/results/results.json)")
    seed_or_student(parser, "the cases graded")
    language_option(parser, "the report (one file; a class's summary stays English)")
    parser.add_argument("--policy", choices=POLICIES, default="note",
                        help="a function that uses npseq's own backward (calls it, or is a renamed copy of it): "
                             "note: graded as it is, with a note (default); zero: it scores 0")
    parser.add_argument("--timeout", type=positive(float), default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time limit for the import and for each function (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--memory-mb", type=positive(int), default=DEFAULT_MEMORY_MB, metavar="MB",
                        help=f"memory each function may add, where the platform allows a limit "
                             f"(default {DEFAULT_MEMORY_MB})")
    group = parser.add_argument_group("grading a class (a folder, or several paths)")
    group.add_argument("--jobs", type=positive(int), metavar="N",
                       help="submissions graded at once, one process each (default: the number of CPU cores)")
    group.add_argument("--csv", type=new_file_path, metavar="PATH",
                       help=f"where the class's grades go, a row per student (default: {DEFAULT_CSV})")
    group.add_argument("--json", type=new_file_path, metavar="PATH",
                       help=f"where every student's full grade and the summary go (default: {DEFAULT_JSON})")
    group.add_argument("--force", action="store_true",
                       help="replace --csv and --json even when they are not reports npseq grade wrote")


def _write_results(path: str, data: dict) -> bool:
    try:
        write_results(path, data)
    except OSError as exc:
        say(f"npseq grade: --results: cannot write {path} ({exc.strerror})", file=sys.stderr)
        return False
    return True


def _scoring(args) -> Scoring:
    """The Gradescope scoring of one file graded on ``--only`` and ``--set`` (the default sets' without either)."""
    return Scoring(only=tuple(graded_names(args.only, args.sets)) if args.only or args.sets else None)


def _stop(signum, frame):
    """SIGTERM: end like ``sys.exit`` (143, as 128 + SIGTERM), so that the grader's cleanup kills its sandboxed
    children, which run in sessions of their own, before it goes."""
    raise SystemExit(128 + signum)


def run(args) -> int:
    """Grade ``args.paths`` as ``npseq grade`` parsed them: one file, or a class; return the exit code."""
    signal.signal(signal.SIGTERM, _stop)
    try:
        graded_names(args.only, args.sets)
    except ValueError as exc:  # refused before any grading
        raise UsageError(f"--{exc}") from None
    if len(args.paths) > 1 or os.path.isdir(args.paths[0]):
        return _run_class(args)
    given = [f"--{name}" for name in CLASS_OPTIONS if getattr(args, name) not in (None, False)]
    if given:
        raise UsageError(f"{', '.join(given)}: only for grading a class (a folder, or several paths)")
    path = args.paths[0]
    if args.format == "gradescope" and os.path.lexists(args.results) and not is_results_file(args.results):
        raise UsageError(f"--results: {args.results} exists and is not a Gradescope results.json; refusing to "
                         "replace it (a learner's file?): remove it or choose another path")
    with speaking(language_of(getattr(args, "lang", None))):
        return _run_file(args, path)


def _run_file(args, path: str) -> int:
    """Grade one file, ``args`` as parsed, in the language spoken; return the exit code."""
    machine = args.format != "text"
    try:
        report = grade_file(path, only=args.only, sets=args.sets, timeout=args.timeout, memory_mb=args.memory_mb,
                            quiet=machine, policy=args.policy, seed=chosen_seed(args))
    except SubmissionError as exc:
        message = f"npseq grade: {exc}"
        if args.format == "json":
            say(json.dumps({"file": path, "error": str(exc), "score": 0.0, "all_correct": False}))
        elif args.format == "gradescope":
            _write_results(args.results, unloadable(message, _scoring(args)))
        say(message, file=sys.stderr)
        return 2
    say(json.dumps(report.to_dict()) if args.format == "json" else report)
    if args.format == "gradescope":
        scoring = _scoring(args) if args.only or args.sets else Scoring(only=tuple(report.names))
        if not _write_results(args.results, results(report, scoring)):
            return 2
        say(_("wrote {path}").format(path=args.results))
    return 0 if report.ok else 1


def _run_class(args) -> int:
    """Grade every submission in ``args.paths``; print the summary, write the CSV and the JSON."""
    if args.format != "text":
        raise UsageError(f"--format {args.format}: only for grading one file; a class gets --csv and --json")
    csv_path, json_path = args.csv or DEFAULT_CSV, args.json or DEFAULT_JSON
    if os.path.abspath(csv_path) == os.path.abspath(json_path):
        raise UsageError(f"--csv and --json: expected two different files, got {csv_path} for both")
    submissions = find_submissions(args.paths)
    # refused now, not after grading the whole class
    refuse_foreign(csv_path, "csv", args.force)
    refuse_foreign(json_path, "json", args.force)
    if args.student is not None:
        raise UsageError("--student: for one student's file; a class is graded with one --seed for all")
    only = graded_names(args.only, args.sets) if args.only or args.sets else None
    report = grade_class(submissions, only=only, jobs=args.jobs, timeout=args.timeout,
                         memory_mb=args.memory_mb, policy=args.policy, seed=args.seed)
    say("\n".join(report.summary_lines()))
    write_reports(report, csv_path, json_path, force=args.force)
    say(f"wrote {csv_path} and {json_path}")
    return 0 if report.all_correct else 1
