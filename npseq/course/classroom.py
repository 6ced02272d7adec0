"""A whole class at once: every submission graded in its own process, and what the class got wrong, counted.

An instructor hands in a folder (a Gradescope export has one folder per student) or a
list of files. :func:`find_submissions` lists the ``.py`` and ``.ipynb`` files in it;
:func:`grade_class` grades each one with ``python -m npseq.grade FILE --format json`` in a
process of its own, at most ``jobs`` at a time; :class:`ClassReport` holds one
:class:`StudentGrade` per file and, per exercise, the number of students who got it right
and each diagnosis (:meth:`npseq.course.report.FunctionGrade.diagnoses`: ``"dWx: gate g,
every unit"``, ``"time limit"``, ``"error: ValueError"``) with the number of students who
have it, most common first: what to explain again (a file that got no grade at all is named once, with
why, not counted as every exercise's mistake). It renders as text, CSV and JSON;
:func:`write_reports` writes the CSV and the JSON without ever losing a file it did not write.

**Why a process per student.** Each submission's grading is a fresh process tree in a
session of its own: whatever one learner's code does (an endless loop, a crash, a
process left running, a huge allocation) ends with that tree, which is killed whole
(:func:`os.killpg`) when it is done or past its deadline, and never reaches another
submission's grading or this process. The children run NumPy on one thread each
(``OPENBLAS_NUM_THREADS=1`` and the like), so that ``jobs`` children use ``jobs`` cores.
"""
from __future__ import annotations

import collections
import concurrent.futures
import csv
import dataclasses
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time

from tqdm.auto import tqdm

from ..errors import UserError
from .copies import similar_pairs
from .export import display_name, export_students
from .files import write_atomically
from .grader import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT
from .mistakes import MISTAKES
from .report import POLICIES, FunctionGrade
from .sandbox import check_memory_room
from .search import MAX_DEPTH, MAX_ENTRIES, search
from .sheet import DEFAULT_SETS, graded_names, names_of_sets
from .submission import SubmissionError, read_submission

SUBMISSION_SUFFIXES = (".py", ".ipynb")
"""The files of a folder that are submissions."""

SKIPPED_FOLDERS = ("__pycache__", ".ipynb_checkpoints")
"""Folders that hold copies a tool made, not a learner's work (hidden folders are skipped too)."""

MARKER = "class report"
"""The value of the ``"npseq"`` key that opens :meth:`ClassReport.to_dict`: how a JSON file is known as ours."""

CSV_FIXED_COLUMNS = ("student", "file", "percent", "points", "max_points")
"""The first columns of :meth:`ClassReport.to_csv`: how a CSV file is known as ours (then one per exercise)."""

CSV_EARLIER_FIXED_COLUMNS = ("student", "file", "score")
"""The first columns of the CSV before it said percent and points: a report of ours all the same, replaced freely."""

NAMED_AT_MOST = 10
"""The most students the summary names in one list (a class may have hundreds); the reports name them all."""

DEADLINE_MARGIN_S = 30.0
"""Seconds a grading process gets beyond its time limits: starting Python and npseq on a busy machine."""

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Set to 1 for every grading process: one core each, so that ``jobs`` processes use ``jobs`` cores."""

REPORT_BYTES_LIMIT = 64 * 2 ** 20
"""The most of a grading process's standard output kept (its JSON report is some kilobytes)."""

STDERR_BYTES_LIMIT = 4000
"""The most of a grading process's standard error kept: its end, where a traceback ends."""

POLL_S = 0.1
"""How often a worker looks at its process, the deadline and a request to stop."""

READ_GRACE_S = 5.0
"""After its process group is killed, how long the output of a grading is read for (a process that left the
group may hold its pipes open forever)."""


class ClassroomError(UserError):
    """A path given for a class that cannot be graded, or an output file that may not be replaced; one line."""


@dataclasses.dataclass(frozen=True)
class ClassSubmission:
    """One student's file."""
    name: str   # the student in the reports: the submission's folder, or the file's name without its suffix
    path: str   # where the file is, as found from the path given
    refused: str = ""  # why it is listed as not graded without being run (a link, a folder too deep), or ""


@dataclasses.dataclass
class StudentGrade:
    """One student's grade, as the class report counts it."""
    name: str
    path: str
    score: float       # percent of the graded exercises
    points: dict       # exercise name -> points in [0, 1]: every exercise is worth one point
    statuses: dict     # exercise name -> FunctionGrade.status, or "ungradable", "time limit", "crashed" for all
    diagnoses: dict    # exercise name -> its distinct mistakes in class-wide words (empty when correct)
    flagged: bool      # the file uses npseq's own code (the score is unchanged unless the policy is zero)
    error: str = ""    # why nothing could be graded, one line ("ungradable: ...", "time limit: ...", "crashed: ...")
    grade: dict | None = None  # the whole JSON of ``npseq grade FILE --format json``, None when it gave none
    stderr: str = ""   # the end of what the grading process wrote to standard error (the learner's prints)
    flagged_because: list = dataclasses.field(default_factory=list)  # why flagged, a line each (the grader's words)
    similar_to: list = dataclasses.field(default_factory=list)  # "bob: lstm_step_backward 95%", a classmate each

    @property
    def all_correct(self) -> bool:
        return not self.error and all(status == "correct" for status in self.statuses.values())

    @property
    def total_points(self) -> float:
        """The points earned over every exercise graded."""
        return sum(self.points.values())

    @property
    def max_points(self) -> int:
        """The points possible: one per exercise graded."""
        return len(self.points)

    def to_dict(self) -> dict:
        """Plain JSON data: ``"score"`` in percent (as ``npseq grade --format json`` has it), ``"points"`` per
        exercise, ``"total_points"`` of ``"max_points"``, the statuses, diagnoses and the file's whole grade."""
        return {"student": self.name, "file": self.path, "score": self.score, "points": self.points,
                "total_points": self.total_points, "max_points": self.max_points,
                "statuses": self.statuses, "diagnoses": self.diagnoses, "flagged": self.flagged,
                "flagged_because": self.flagged_because, "similar_to": self.similar_to,
                "error": self.error, "stderr": self.stderr, "grade": self.grade}


@dataclasses.dataclass(frozen=True)
class MistakeGroup:
    """The students of one exercise whose functions went wrong the same way: the same diagnoses, all together."""
    diagnoses: tuple    # FunctionGrade.diagnoses(): the tensors, gates, steps or links wrong together
    students: tuple     # their names, in the order of the submissions
    known: str = ""     # the title of the hand-out's known mistake that gives exactly these diagnoses, if one does

    def line(self, count: int) -> str:
        """``4 of 40: dWx: gate g, every unit + db: gate g, every unit (the known mistake "...") -- alice, bob``."""
        known = f' (the known mistake "{self.known}")' if self.known else ""
        names = ", ".join(self.students[:NAMED_AT_MOST])
        if len(self.students) > NAMED_AT_MOST:
            names += f" and {len(self.students) - NAMED_AT_MOST} more (the JSON report's groups have them all)"
        return f"{len(self.students)} of {count}: {' + '.join(self.diagnoses)}{known} -- {names}"


@dataclasses.dataclass(frozen=True)
class ExerciseSummary:
    """One exercise over the class."""
    name: str
    correct: int        # students whose function is entirely correct
    students: int       # students in the class
    diagnoses: tuple    # (diagnosis, number of students who have it), most common first, ties in alphabetical order;
                        # of the files graded (a file that got no grade at all is no mistake of this exercise)
    groups: tuple = ()  # MistakeGroup, the largest first (ties in the order of their diagnoses), of the files graded


@dataclasses.dataclass
class ClassReport:
    """The result of :func:`grade_class`: one :class:`StudentGrade` per submission, and what they have in common."""
    exercises: tuple   # the names of the exercises graded, in the order of the sheet
    students: list     # StudentGrade, in the order of the submissions
    pairs: list = dataclasses.field(default_factory=list)  # SimilarPair: classmates whose functions are copies

    @property
    def all_correct(self) -> bool:
        """True when every submission is entirely correct."""
        return all(student.all_correct for student in self.students)

    @property
    def summary(self) -> list:
        """One :class:`ExerciseSummary` per exercise graded; a file that got no grade is not correct, and its
        failure (:attr:`StudentGrade.error`) is said once, by :meth:`summary_lines`, not as every exercise's mistake."""
        graded = [student for student in self.students if not student.error]
        summaries = []
        for name in self.exercises:
            counts = collections.Counter(diagnosis for student in graded for diagnosis in student.diagnoses[name])
            together = collections.defaultdict(list)
            for student in graded:
                if student.statuses[name] != "correct" and student.diagnoses[name]:
                    together[tuple(student.diagnoses[name])].append(student.name)
            groups = tuple(MistakeGroup(diagnoses, tuple(names), _known_mistake(name, diagnoses))
                           for diagnoses, names in sorted(together.items(), key=lambda item: (-len(item[1]), item[0])))
            summaries.append(ExerciseSummary(
                name, sum(student.statuses[name] == "correct" for student in self.students), len(self.students),
                tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))), groups))
        return summaries

    def summary_lines(self) -> list:
        """The class at a glance: a line of totals, who got no grade and who ran past a time limit (at most
        :data:`NAMED_AT_MOST` names each), then per exercise its correct count and one line per mistake, its
        students grouped by what went wrong together (:class:`MistakeGroup`).

        ``not graded: 1 of 40`` then, indented, ``carol: SyntaxError, line 3``; ``past the time limit: 1 of 40``
        then ``dave: rnn_step_backward``; ``lstm_step_backward: 31 of 40 correct`` then
        ``4 of 40: dWx: gate g, every unit + db: gate g, every unit -- alice, bob, erin, frank``. Returns the lines,
        without line ends.
        """
        count = len(self.students)
        totals = [f"{sum(s.all_correct for s in self.students)} entirely correct"]
        errors = collections.Counter(student.error.split(":")[0] for student in self.students if student.error)
        totals += [f"{number} {kind}" for kind, number in sorted(errors.items())]
        flagged = sum(student.flagged for student in self.students)
        if flagged:
            totals.append(f"{flagged} flagged (npseq's own code, or a classmate's)")
        lines = [f"graded {count} submission{'s' if count != 1 else ''}: {', '.join(totals)}"]
        not_graded = [student for student in self.students if student.error]
        if not_graded:
            lines.append(f"not graded: {len(not_graded)} of {count}")
            lines += _named([f"{student.name}: {_short_reason(student.error)}" for student in not_graded],
                            "the CSV's error column has them all")
        if self.pairs:
            lines.append(f"similar pairs (one's code largely the other's): {len(self.pairs)}")
            for pair in self.pairs[:NAMED_AT_MOST]:
                lines.append(f"   {pair.first} ~ {pair.second}: {pair.exercise}, {pair.check.score:.0%} of "
                             f"{pair.first}'s own code is in {pair.second}'s")
                lines += pair.check.side_by_side(names=(pair.first, pair.second))
            if len(self.pairs) > NAMED_AT_MOST:
                lines.append(f"   (and {len(self.pairs) - NAMED_AT_MOST} more; the JSON report's similar_pairs "
                             "have them all)")
        timed_out = [(student.name, [name for name, status in student.statuses.items() if status == "time limit"])
                     for student in self.students if not student.error]
        past_limit = [f"{student}: {', '.join(exercises)}" for student, exercises in timed_out if exercises]
        if past_limit:
            lines.append(f"past the time limit: {len(past_limit)} of {count}")
            lines += _named(past_limit, "the JSON report's statuses have them all")
        for exercise in self.summary:
            lines.append(f"{exercise.name}: {exercise.correct} of {count} correct")
            lines += [f"   {group.line(count)}" for group in exercise.groups]
        return lines

    def to_csv(self) -> str:
        """One row per student: student, file, percent, points (earned), max_points (one per exercise), the points of
        each exercise (out of 1), flagged (why, empty when not), similar_to (classmates and how much), error."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_FIXED_COLUMNS + self.exercises + ("flagged", "similar_to", "error"))
        for student in self.students:
            writer.writerow([student.name, student.path, _number(student.score, 2),
                             _number(student.total_points, 4), student.max_points]
                            + [_number(student.points[name], 4) for name in self.exercises]
                            + ["; ".join(student.flagged_because), "; ".join(student.similar_to), student.error])
        return out.getvalue()

    def to_dict(self) -> dict:
        """Plain JSON data: the marker, the summary (:attr:`summary`), and every student's full grade."""
        return {"npseq": MARKER, "exercises": list(self.exercises), "submissions": len(self.students),
                "all_correct": self.all_correct,
                "summary": [{"exercise": e.name, "correct": e.correct, "students": e.students,
                             "diagnoses": [{"diagnosis": d, "students": n} for d, n in e.diagnoses],
                             "groups": [{"diagnoses": list(g.diagnoses), "known_mistake": g.known,
                                         "students": list(g.students)} for g in e.groups]}
                            for e in self.summary],
                "similar_pairs": [pair.to_dict() for pair in self.pairs],
                "students": [student.to_dict() for student in self.students]}


def _named(entries: list, where_all: str) -> list:
    """The summary's indented lines for ``entries``: the first :data:`NAMED_AT_MOST`, then how many more and
    ``where_all`` (where the others are)."""
    lines = [f"   {entry}" for entry in entries[:NAMED_AT_MOST]]
    if len(entries) > NAMED_AT_MOST:
        lines.append(f"   (and {len(entries) - NAMED_AT_MOST} more; {where_all})")
    return lines


def _number(value: float, digits: int) -> str:
    """A spreadsheet's number: ``1``, ``0``, ``0.8333``."""
    return f"{round(value, digits):g}"


def find_submissions(paths) -> list:
    """The submissions in ``paths``, each a ``.py`` or ``.ipynb`` file or a folder, as :class:`ClassSubmission`.

    A folder gives every ``.py`` and ``.ipynb`` file at any depth, sorted, but hidden files and
    folders, ``__pycache__`` and ``.ipynb_checkpoints``. Each is named for its student: the
    outermost folder that holds it and no other submission (``alice`` for
    ``section1/alice/hw/backprop.py``); a file right in the folder given, or given by itself, by
    its own name without the suffix (``bob`` for ``bob.ipynb``); a file whose every folder holds
    other submissions too by its path relative to the folder given (``carol/a.py``), as are files
    that would share a name. In a Gradescope export (a folder given holds ``submission_metadata.yml``), a
    submission's folder names its submitters as Gradescope does (``Jane Doe``; a group's names joined;
    two namesakes with their folders). A file found twice is graded once.

    Raises:
        ClassroomError: a path that does not exist, a file that is not ``.py`` or ``.ipynb``, or a
            folder without a submission (one line naming it).
    """
    found, exported = [], {}
    for given in map(os.fspath, paths):
        if os.path.islink(given):
            found.append((os.path.basename(given), given, f"{LINK_REFUSED} (to {os.readlink(given)})"))
        elif os.path.isdir(given):
            result = search(given, SUBMISSION_SUFFIXES, SKIPPED_FOLDERS)
            if not (result.files or result.links or result.too_deep):
                raise ClassroomError(f"no .py or .ipynb file in the folder {given}")
            here = [(name, os.path.join(given, name), "") for name in result.files]
            here += [(name, os.path.join(given, name), f"{LINK_REFUSED} (to {target})")
                     for name, target in result.links]
            here += [(name, os.path.join(given, name), f"its folders go deeper than {MAX_DEPTH} levels: not searched")
                     for name in result.too_deep]
            found += sorted(here)
            exported.update(_exported_names(given, here))
            if result.stopped:
                found.append((os.path.join(os.path.basename(os.path.normpath(given)), "..."), given,
                              f"more than {MAX_ENTRIES} files and folders in {given}: the rest was not searched"))
        elif os.path.isfile(given):
            if not given.endswith(SUBMISSION_SUFFIXES):
                raise ClassroomError(f"expected a .py or .ipynb file or a folder, got {given}")
            found.append((os.path.basename(given), given, ""))
        else:
            raise ClassroomError(f"no such file or folder: {given}")
    seen, unique = set(), []
    for relative, path, refused in found:
        key = path if refused else os.path.realpath(path)  # a refused entry is listed as found, never resolved
        if key not in seen:
            seen.add(key)
            unique.append((relative, path, refused))
    holding = collections.Counter(folder for relative, _, _ in unique for folder in _folders_of(relative))
    students = [exported.get(path) or _student_of(relative, holding) for relative, path, _ in unique]
    shared = {name for name, count in collections.Counter(students).items() if count > 1}
    named = [(_told_apart(student, relative, path in exported) if student in shared else student, path, refused)
             for student, (relative, path, refused) in zip(students, unique)]
    twice = {name for name, count in collections.Counter(name for name, _, _ in named).items() if count > 1}
    return [ClassSubmission(os.path.normpath(path) if name in twice else name, path, refused)
            for name, path, refused in named]


def _exported_names(given: str, found: list) -> dict:
    """``{path: the submitters' names}`` for the submissions ``found`` (``(relative, path, refused)``) in the
    folders of a Gradescope export whose ``submission_metadata.yml`` lies in ``given``."""
    students = export_students(given)
    names = {}
    for relative, path, _ in found:
        folders = _folders_of(relative)
        submitters = students.get(folders[0]) if folders else None
        if submitters:
            names[path] = display_name(submitters)
    return names


def _told_apart(student: str, relative: str, exported: bool) -> str:
    """A name two submissions share, told apart: an export's name with its submission's folder, else the path."""
    return f"{student} ({_folders_of(relative)[0]})" if exported else relative


LINK_REFUSED = "a link: a submission is graded from a file of its own, never through a link"
"""Why a link met in a class's folder is listed as not graded: followed, it gave one student's file another's name."""


def _folders_of(relative: str) -> list:
    """The folders above a submission's path relative to the class folder, outermost first: ``a/b/c.py`` gives
    ``a`` and ``a/b`` (a file given by itself, named by its base name, has none)."""
    parts = os.path.normpath(relative).split(os.sep)[:-1]
    return [os.sep.join(parts[:depth]) for depth in range(1, len(parts) + 1)]


def _student_of(relative: str, holding: collections.Counter) -> str:
    """The student a submission names (``holding``: how many submissions each folder holds): the outermost of its
    folders that holds it alone, else its path when it is in a folder, else its name without the suffix."""
    folders = _folders_of(relative)
    alone = next((folder for folder in folders if holding[folder] == 1), None)
    if alone is not None:
        return os.path.basename(alone)
    return relative if folders else os.path.splitext(os.path.basename(relative))[0]


def default_jobs() -> int:
    """The number of CPU cores this process may use, at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def grade_class(submissions, only=None, *, jobs: int | None = None, timeout: float = DEFAULT_TIMEOUT,
                memory_mb: int = DEFAULT_MEMORY_MB, deadline: float | None = None,
                progress: bool | None = None, policy: str = "note", seed: int = 0) -> ClassReport:
    """Grade every submission, each in a process tree of its own, at most ``jobs`` at a time.

    Each one is ``python -m npseq.grade FILE --format json --timeout T --memory-mb M --lang en [--only NAME ...]``
    (:func:`npseq.course.grader.grade_file`), in a new session; its report is read from its
    standard output, the end of its standard error is kept. A grading past ``deadline`` is
    killed (its whole process group) and scores 0 as "time limit"; one that says the file
    cannot be graded is "ungradable: <reason>"; one that gives no report it can read is "crashed".
    Then the files are held against each other, exercise by exercise (:func:`_compared`), and the
    pairs whose code is one the other's are listed (:attr:`ClassReport.pairs`).

    Args:
        submissions: :class:`ClassSubmission` records (:func:`find_submissions`).
        only: names from :data:`~npseq.course.sheet.NAMES` (``names_of_sets`` gives a set's), or ``None`` for
            the default sets' (:data:`~npseq.course.sheet.DEFAULT_SETS`); every submission is graded on all of them.
        jobs: gradings at once (default :func:`default_jobs`).
        timeout: seconds for the import and for each function of one submission.
        memory_mb: megabytes each grading's functions may add (a positive number).
        deadline: seconds one submission's grading may take in all; default ``timeout`` times
            (exercises graded + 1), plus :data:`DEADLINE_MARGIN_S`.
        progress: a progress bar on standard error; default: when standard error is a terminal.
        policy: the honesty policy, as for :func:`~npseq.course.grader.grade_file`.
        seed: the cases' numbers, as for :func:`~npseq.course.grader.grade_file`.

    Raises:
        ValueError: no submissions, an unknown name in ``only``, or a limit that is not a positive number.
    """
    submissions = list(submissions)
    names = names_of_sets(DEFAULT_SETS) if only is None else graded_names(only)
    if not submissions:
        raise ValueError("submissions: expected at least one, got none")
    jobs = default_jobs() if jobs is None else jobs
    if not (isinstance(jobs, int) and jobs > 0):
        raise ValueError(f"jobs: expected a positive int, got {jobs!r}")
    for label, value in (("timeout", timeout), ("memory_mb", memory_mb), ("deadline", deadline)):
        if value is not None and not (isinstance(value, (int, float)) and 0 < value < math.inf):
            raise ValueError(f"{label}: expected a positive number, got {value!r}")
    exercises = tuple(names)
    check_memory_room(memory_mb)  # every grading process inherits this process's limit
    if policy not in POLICIES:
        raise ValueError(f"policy: expected one of {list(POLICIES)}, got {policy!r}")
    # --lang en: the class report reads and groups the English texts, whatever the instructor's locale says.
    command = [sys.executable, "-m", "npseq.grade", "--format", "json", "--policy", policy, "--seed", str(int(seed)),
               "--timeout", repr(float(timeout)),
               "--memory-mb", str(int(memory_mb)), "--lang", "en"]
    command += [word for name in exercises for word in ("--only", name)]
    grading = _Grading(command, exercises, deadline or timeout * (len(exercises) + 1) + DEADLINE_MARGIN_S,
                       _environment(), threading.Event())
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="npseq-grade")
    try:
        futures = [executor.submit(_grade_one, submission, grading) for submission in submissions]
        show = sys.stderr.isatty() if progress is None else progress
        with tqdm(total=len(futures), desc="grading", unit="file", file=sys.stderr, disable=not show) as bar:
            for _ in concurrent.futures.as_completed(futures):
                bar.update()
        students = [future.result() for future in futures]
    finally:
        # After Ctrl-C (or anything else raised here) the workers kill what they run and take nothing more;
        # they do so by themselves, so a second Ctrl-C that cuts this wait short leaves no grading behind.
        grading.stop.set()
        executor.shutdown(wait=True, cancel_futures=True)
    return ClassReport(exercises, students, _compared(submissions, students, exercises))


def _compared(submissions: list, students: list, exercises: tuple) -> list:
    """Every pair of classmates whose functions are copies of each other
    (:func:`~npseq.course.copies.similar_pairs`), each student told who (:attr:`StudentGrade.similar_to`). The files
    are read, never run; one that cannot be read is compared with nobody."""
    sources = {}
    for submission in submissions:
        if submission.refused:
            continue
        try:
            sources[submission.name] = read_submission(submission.path).text
        except SubmissionError:
            continue
    pairs = similar_pairs(sources, exercises)
    by_name = {student.name: student for student in students if student is not None}
    for pair in pairs:
        for one, other in ((pair.first, pair.second), (pair.second, pair.first)):
            by_name[one].similar_to.append(f"{other}: {pair.exercise} {pair.check.score:.0%}")
            by_name[one].flagged_because.append(f"{pair.exercise}: shares {pair.check.score:.0%} of "
                                                f"{pair.first}'s code with {pair.second}")
            by_name[one].flagged = True
    return pairs


@dataclasses.dataclass(frozen=True)
class _Grading:
    """What every worker of one :func:`grade_class` shares."""
    command: list          # python -m npseq.grade and its options, but the file
    exercises: tuple       # the names graded
    deadline: float        # seconds one grading may take in all
    environment: dict      # of the grading processes
    stop: threading.Event  # set: kill what runs, start nothing more


def _environment() -> dict:
    """The grading processes' environment: ours, NumPy on one thread, and this very npseq importable first."""
    environment = dict(os.environ, **{name: "1" for name in THREAD_VARIABLES})
    # npseq may be run from a source tree that is not installed: the children must grade with the same code
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, environment.get("PYTHONPATH")]))
    return environment


class _Drain:
    """Read a child's pipe to its end in a thread, so that the child never blocks on a full pipe.

    Keeps at most ``limit`` bytes: the first ones (a report is complete or useless) or, with
    ``keep_end``, the last ones (a traceback ends there).
    """

    def __init__(self, pipe, limit: int, keep_end: bool = False):
        self.pipe, self.limit, self.keep_end = pipe, limit, keep_end
        self.data = bytearray()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with self.pipe:
            for chunk in iter(lambda: self.pipe.read1(65536), b""):
                if self.keep_end:
                    self.data += chunk
                    del self.data[:-self.limit]
                elif len(self.data) < self.limit:
                    self.data += chunk[:self.limit - len(self.data)]

    def text(self) -> str:
        self.thread.join(READ_GRACE_S)
        return bytes(self.data).decode("utf-8", "replace")


TERMINATE_GRACE_S = 5.0
"""How long a grading process told to stop (SIGTERM) has to end its sandboxed children before it is killed."""


def _kill_group(process: subprocess.Popen) -> None:
    """Stop the grading process and everything it started: SIGTERM first, so that the grader ends its sandboxed
    children (they run in sessions of their own, out of this group's reach), then SIGKILL to its process group."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(TERMINATE_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    try:
        # Safe after the leader is reaped: the group's id stays reserved while any member lives, and with
        # none left killpg finds nothing.
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # nothing left to kill (some systems say so for zombies)
        pass


def _grade_one(submission: ClassSubmission, grading: _Grading) -> StudentGrade | None:
    """In a worker thread: grade one submission in a new session and read its report (None when stopped)."""
    if grading.stop.is_set():
        return None
    if submission.refused:  # listed, not run
        return _ungraded(submission, grading.exercises, "ungradable", f"ungradable: {submission.refused.split(':')[0]}",
                         f"ungradable: {submission.refused}", "", None)
    # "--" ends the options: a file named "-x.py" is still a file
    process = subprocess.Popen(grading.command + ["--", submission.path], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=grading.environment,
                               start_new_session=True)
    report = _Drain(process.stdout, REPORT_BYTES_LIMIT)
    stderr = _Drain(process.stderr, STDERR_BYTES_LIMIT, keep_end=True)
    ends, timed_out = time.monotonic() + grading.deadline, False
    try:
        while process.poll() is None:
            if time.monotonic() >= ends:
                timed_out = True
                break
            if grading.stop.wait(POLL_S):
                return None
    finally:
        _kill_group(process)  # also when it ended: a process the learner's code started must not outlive it
        process.wait()
    time_limit = f"time limit: grading did not finish within {grading.deadline:g} s" if timed_out else ""
    return _student(submission, grading.exercises, process.returncode, report.text(), stderr.text(), time_limit)


def _student(submission: ClassSubmission, exercises: tuple, returncode: int, stdout: str, stderr: str,
             time_limit: str) -> StudentGrade:
    """A :class:`StudentGrade` from what the grading process said: a report, a reason it could not grade, or neither.

    ``time_limit`` is the error when the process was killed at its deadline, else empty.
    """
    try:
        data = json.loads(stdout)
    except ValueError:
        data = None
    data = data if isinstance(data, dict) else None
    if time_limit:
        return _ungraded(submission, exercises, "time limit", "time limit", time_limit, stderr, data)
    if data is not None and returncode in (0, 1):
        try:
            graded = {exercise["name"]: exercise for exercise in data["exercises"]}
            return StudentGrade(submission.name, submission.path, float(data["score"]),
                                {name: graded[name]["points"] for name in exercises},
                                {name: graded[name]["status"] for name in exercises},
                                {name: _diagnoses(graded[name]) for name in exercises},
                                bool(data.get("flagged")), grade=data, stderr=stderr,
                                flagged_because=[str(line) for line in data.get("flagged_because", [])])
        except (KeyError, TypeError, ValueError):  # JSON, but not the report npseq grade prints: a crash
            pass
    if data is not None and returncode == 2 and isinstance(data.get("error"), str):
        return _ungraded(submission, exercises, "ungradable", f"ungradable: {_class_wide_reason(data['error'])}",
                         f"ungradable: {data['error']}", stderr, data)
    last_words = stderr.strip().splitlines()[-1:] or ["nothing on standard error"]
    ended = f"died of {_signal_name(-returncode)}" if returncode < 0 else f"ended with exit code {returncode}"
    return _ungraded(submission, exercises, "crashed", "crashed",
                     f"crashed: the grading process {ended} and gave no report it could read ({last_words[0]})",
                     stderr, data)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _ungraded(submission: ClassSubmission, exercises: tuple, status: str, diagnosis: str, error: str, stderr: str,
              data) -> StudentGrade:
    """A submission that got no grade: 0 points, and the same status and diagnosis for every exercise."""
    return StudentGrade(submission.name, submission.path, 0.0, dict.fromkeys(exercises, 0.0),
                        dict.fromkeys(exercises, status), {name: [diagnosis] for name in exercises}, False,
                        error=error, grade=data, stderr=stderr)


# Where the grader's message for an ungradable file names the file and the place:
# "cannot import hw.py: ...", "hw.py, line 3: ...", "hw.ipynb, cell 2, line 3: ...".
_FILE_AND_PLACE = re.compile(r"^(?:cannot import .+?: )?(?:[^:]+?, (?P<place>(?:cell \d+, )?line \d+): )?")


def _class_wide_reason(error: str) -> str:
    """What makes a file ungradable in words shared by every file: ``SyntaxError``, ``ImportError``, ``time limit``."""
    return _FILE_AND_PLACE.sub("", error, count=1).split(":")[0].split(" (")[0]


def _short_reason(error: str) -> str:
    """Why a file got no grade, from :attr:`StudentGrade.error`, in a few words: ``SyntaxError, line 3``,
    ``ImportError``, ``time limit``, ``crashed``."""
    kind, _, detail = error.partition(": ")
    if kind != "ungradable":
        return kind
    place = _FILE_AND_PLACE.match(detail).group("place")
    return _class_wide_reason(detail) + (f", {place}" if place else "")


def _known_mistake(exercise: str, diagnoses: tuple) -> str:
    """The title of the hand-out's known mistake of ``exercise`` whose diagnoses are exactly ``diagnoses``, or ""."""
    return next((mistake.title for mistake in MISTAKES if mistake.exercise == exercise
                 and tuple(mistake.diagnoses) == tuple(diagnoses)), "")


def _diagnoses(exercise: dict) -> list:
    """One exercise's mistakes in class-wide words, from its JSON: those of :meth:`FunctionGrade.diagnoses`.

    The JSON is turned back into a :class:`FunctionGrade`, so that a class is counted in the very
    words the grader gives one file; a function the file does not define is "not attempted".
    """
    attempted = exercise["status"] != "not attempted"
    return FunctionGrade.from_dict(exercise).diagnoses() or ([] if attempted else ["not attempted"])


def refuse_foreign(path: str, kind: str, force: bool = False) -> None:
    """Refuse to replace ``path`` unless it is absent, a ``kind`` report (``"csv"``, ``"json"``) we wrote, or forced.

    Ours is known by its start (:data:`CSV_FIXED_COLUMNS`, :data:`CSV_EARLIER_FIXED_COLUMNS` or :data:`MARKER`);
    a link is never ours (a report replaces the link, never writes through it), nor is a folder.

    Raises:
        ClassroomError: one line naming the file and the way out (``--force`` or another path).
    """
    if os.path.isdir(path) and not os.path.islink(path):
        raise ClassroomError(f"cannot write the {kind.upper()} report to {path}: it is a folder")
    if force or not os.path.lexists(path):
        return
    if not os.path.islink(path):
        openings = ([",".join(columns) + "," for columns in (CSV_FIXED_COLUMNS, CSV_EARLIER_FIXED_COLUMNS)]
                    if kind == "csv" else [_json_opening()])
        try:
            with open(path, "rb") as handle:
                start = handle.read(max(len(opening.encode()) for opening in openings))
            if any(start.startswith(opening.encode()) for opening in openings):
                return
        except OSError:
            pass
    raise ClassroomError(f"{path} exists and is not a {kind.upper()} report of npseq grade: not replaced "
                         f"(use --force to replace it, or give another path)")


def _json_opening() -> str:
    """How every JSON report of ours starts, the marker first (:meth:`ClassReport.to_dict`, indented by 2)."""
    return "{\n" + f'  "npseq": {json.dumps(MARKER)},'


def write_reports(report: ClassReport, csv_path: str, json_path: str, force: bool = False) -> None:
    """Write the class's CSV and JSON, after checking that neither replaces a file we did not write.

    Raises:
        ClassroomError: a file that may not be replaced (see :func:`refuse_foreign`), or one that cannot be written.
    """
    refuse_foreign(csv_path, "csv", force)
    refuse_foreign(json_path, "json", force)
    for path, text in ((csv_path, report.to_csv()), (json_path, json.dumps(report.to_dict(), indent=2) + "\n")):
        try:
            write_atomically(path, text, private=True)  # a report holds grades
        except OSError as exc:
            raise ClassroomError(f"cannot write {path} ({exc.strerror or exc})") from None
