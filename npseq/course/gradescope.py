"""Gradescope: the autograder zip an instructor uploads, and the ``results.json`` it writes for each submission.

Gradescope's autograder (its "Autograder Specifications") is a zip with ``setup.sh`` and
``run_autograder`` at its root. Gradescope unpacks the zip into ``/autograder/source``, runs
``setup.sh`` once, as root, when it builds the image, copies ``run_autograder`` to
``/autograder/run_autograder`` and runs it for every submission, the student's files being
in ``/autograder/submission``; what it reports is ``/autograder/results/results.json``.

The zip :func:`write_bundle` writes holds npseq itself, as a wheel built here from the
installed package (:func:`build_wheel`: it works from an editable install and needs no
build tools), so the image grades with exactly the npseq that wrote the hand-out; its
requirements (numpy, matplotlib, tqdm) come from the package index, npseq never does.
``config.json`` is the instructor's :class:`Scoring`; ``run_autograder`` runs
:mod:`npseq.course.autograder`, which grades the submission and writes :func:`results`.

In ``results.json`` each (exercise, case) is one test, named and numbered as on the sheet
(``3.2 gru_step_backward: reset_after=True, N=3 D=4 H=5``), worth the exercise's points
shared evenly by its cases, and scored by the fraction of that case's tensors that are
correct. A case the instructor hides is shown once grades are published. Nothing in the
file is longer than Gradescope shows: each string is capped, with a note where it was cut.
"""
from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import importlib.metadata
import io
import json
import math
import os
import re
import zipfile

from .. import __version__
from ..errors import InvalidValueError, UserError
from .files import write_atomically
from .grader import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT
from .hints import DEFAULT_HINTS, HINT_LEVELS, hint_text
from .report import POLICIES, FunctionGrade, GradeReport, Scored
from .secret import is_secret
from .sheet import DEFAULT_SETS, EXERCISE_BY_NAME, NAMES, names_of_sets

ALL_CASES = "all"
"""In :attr:`Scoring.hidden`, the value that hides every case of an exercise (else a tuple of case numbers)."""

TEST_OUTPUT_CHARS = 20_000
"""The longest ``output`` of one test (a case's table); a longer one is cut, with a note saying so."""

OUTPUT_CHARS = 50_000
"""The longest top-level ``output`` (the summary)."""

NAME_CHARS = 1_000
"""The longest test name (the case labels are far shorter; the cap only bounds what a file can hold)."""

SCORE_DIGITS = 9
"""Decimals of a test's ``score`` and ``max_score``: the even share of an exercise's points, to 1e-9."""

TOTAL_DIGITS = 6
"""Decimals of the top-level ``score`` (a perfect submission scores its total, not 2.9999999999)."""

BUNDLE_MARKER = frozenset({"config.json", "run_autograder", "setup.sh"})
"""The names that make a zip one :func:`write_bundle` wrote, and so one it may replace without ``force``."""

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip can hold: the same tree gives the same bytes
_LONGEST_FENCE = 10                 # backticks; a longer run in a message is abbreviated (see _code_block)


class BundleError(UserError):
    """The autograder zip or npseq's wheel cannot be written (npseq not installed, a file in the way); one line."""


@dataclasses.dataclass(frozen=True)
class Scoring:
    """What the instructor sets for the autograder; ``config.json`` in the zip.

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
        per_student: grade each student on cases of their own: the seed of their e-mail address, from
            Gradescope's submission metadata, and of ``secret`` (``npseq exercises --student EMAIL`` writes the
            matching hand-out on the machine that holds the secret).
        secret: the course secret (:mod:`npseq.course.secret`) ``per_student`` needs; never shown to students
            (the configuration lies in the autograder's own folder).
        hints: the hand-out's level of hints (:data:`~npseq.course.hints.HINT_LEVELS`): a wrong exercise's first
            failing case repeats what the hand-out gave of it, never more.

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


# --------------------------------------------------------------------------------------------- results.json


def capped(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: cut, with a note saying how much, when longer.

    Characters that UTF-8 cannot hold (lone surrogates, from a learner's bytes) become
    escapes, so that every reader of the JSON file can parse it.
    """
    text = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) <= limit:
        return text
    note = f"\n... (cut here: {len(text)} characters in all, {limit} shown at most)"
    return text[:max(limit - len(note), 0)] + note


def _code_block(text: str, limit: int) -> str:
    """``text`` as a Markdown fenced code block of at most ``limit`` characters, so that tables stay aligned.

    The fence is longer than any run of backticks inside; a run longer than
    :data:`_LONGEST_FENCE` (only a learner's message can hold one) is abbreviated, so that
    the fence stays short.
    """
    text = re.sub(f"`{{{_LONGEST_FENCE},}}", lambda run: f"`...({len(run.group())} backticks)", text)
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", text)), default=0))
    body = capped(text.rstrip("\n"), limit - 2 * len(fence) - len("text\n\n"))
    return f"{fence}text\n{body}\n{fence}"


def _rounded(value: float, digits: int) -> float:
    return round(float(value), digits) + 0.0  # + 0.0: never -0.0


def _number_text(value: float) -> str:
    return f"{round(value, 4):g}"


@dataclasses.dataclass(frozen=True)
class CaseScore:
    """One (exercise, case) as Gradescope's test: what :func:`results` computes before it writes the dict."""
    number: str           # "3.2": the exercise's number on the sheet, the case's number from 1
    name: str             # "3.2 gru_step_backward: reset_after=True, N=3 D=4 H=5"
    exercise: str
    score: float          # in [0, max_score]
    max_score: float      # the exercise's points / its number of cases
    passed: bool          # every tensor of the case correct
    output: str           # plain text; the test's output is this in a fenced code block
    hidden: bool          # shown to students only once grades are published

    def to_test(self) -> dict:
        return {"name": capped(self.name, NAME_CHARS), "number": self.number,
                "score": _rounded(self.score, SCORE_DIGITS), "max_score": _rounded(self.max_score, SCORE_DIGITS),
                "status": "passed" if self.passed else "failed",
                "output": _code_block(self.output, TEST_OUTPUT_CHARS), "output_format": "md",
                "visibility": "after_published" if self.hidden else "visible", "tags": [self.exercise]}


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
            table = "\n".join([f"== {function.signature}, case {index} ({label}): {view.correct}/{len(exercise.grads)} "
                               f"tensors correct, {_number_text(score)} of {_number_text(share)} points{zeroed}"]
                              + table.splitlines()[1:])
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
    return f"From your hand-out (hints: {scoring.hints}):\n{text}"


def exercise_scores(data: dict, scoring: Scoring) -> dict:
    """``{exercise: Scored(earned, worth)}`` read off :func:`results`' ``data`` (each exercise's tests, tagged with
    its name, as rounded there), for a text report that says the same score as ``results.json``."""
    earned = {}
    for test in data["tests"]:
        if test["name"] != "honesty note":
            earned[test["tags"][0]] = earned.get(test["tags"][0], 0.0) + test["score"]
    return {name: Scored(points, scoring.points_of(name)) for name, points in earned.items()}


def _summary(scores: list, total: float, report: GradeReport | None = None, reason: str = "") -> str:
    """The top-level output: the score on the visible cases, what was skipped, what was not attempted.

    It says how many points the hidden cases are worth, never how they went.
    """
    shown = [s for s in scores if not s.hidden]
    lines = []
    if reason:
        lines += ["**This file cannot be graded:**", "", _code_block(reason, OUTPUT_CHARS // 2), ""]
    score, worth = sum(s.score for s in shown), sum(s.max_score for s in shown)
    if len(shown) == len(scores):
        lines.append(f"**Score: {_number_text(score)} of {_number_text(total)} points.**")
    else:
        held = len(scores) - len(shown)
        lines.append(f"**Score on the visible cases: {_number_text(score)} of {_number_text(worth)} points.** "
                     f"{held} more case{'s' if held != 1 else ''}, worth {_number_text(total - worth)} points, "
                     f"{'are' if held != 1 else 'is'} shown when grades are published.")
    if report is not None and report.notes:
        lines += ["", "Skipped while reading the notebook (not Python):", "", _code_block("\n".join(report.notes),
                                                                                           OUTPUT_CHARS // 2)]
    if report is not None and report.missing:
        lines += ["", f"Not attempted (0 points, not defined in the file): "
                      f"{', '.join(f'`{name}`' for name in report.missing)}"]
    return capped("\n".join(lines), OUTPUT_CHARS)


def _top_level(tests: list, total: float, output: str, seconds: float) -> dict:
    score = min(max(sum(test["score"] for test in tests), 0.0), total)
    return {"score": _rounded(score, TOTAL_DIGITS), "execution_time": int(round(seconds)), "output": output,
            "output_format": "md", "stdout_visibility": "hidden", "tests": tests}


def results(report: GradeReport, scoring: Scoring) -> dict:
    """Gradescope's ``results.json`` for ``report``, scored as ``scoring`` says.

    One test per (exercise, case) of the report (:func:`case_scores`); its ``output`` is
    that case's rows of the text table, with the case's problem or the function's failure,
    as a Markdown code block. A function that failed as a whole (time limit, crash), one not
    attempted and a case in which it gave nothing to check score 0. The top-level ``score``
    is the sum of the tests' (hidden cases included: it is the grade), clamped to the total
    points; the top-level ``output`` is a summary that says nothing of how hidden cases went.
    A report flagged by the honesty watch gets one more test, ``"honesty note"``, worth
    nothing and hidden from students, with the lines for the instructor.
    """
    scores = [score for function in report.functions for score in case_scores(function, scoring)]
    total = sum(scoring.points_of(function.name) for function in report.functions)
    tests = [score.to_test() for score in scores]
    if report.flagged:
        # "failed", although it costs nothing: the instructor's view then marks it, so it is not missed
        tests.append({"name": "honesty note", "score": 0.0, "max_score": 0.0, "status": "failed",
                      "output": _code_block("\n".join(report.honesty_lines()), TEST_OUTPUT_CHARS),
                      "output_format": "md", "visibility": "hidden", "tags": ["honesty"]})
    return _top_level(tests, total, _summary(scores, total, report), report.seconds)


def unloadable(message: str, scoring: Scoring, seconds: float = 0.0) -> dict:
    """``results.json`` for a file that cannot be graded: every graded exercise's cases at 0, each saying why.

    The student sees the whole breakdown (what each exercise and case is worth) and the
    reason, ``message`` (one line, as :class:`~npseq.course.submission.SubmissionError` says it).
    """
    scores = []
    for name in scoring.names:
        exercise, hidden = EXERCISE_BY_NAME[name], scoring.hidden_cases(name)
        share = scoring.points_of(name) / len(exercise.cases)
        for index, case in enumerate(exercise.cases, 1):
            number = f"{scoring.number_of(name)}.{index}"
            output = f"== {exercise.signature}, case {index} ({case.label}): 0 of {_number_text(share)} points\n" \
                     f"   the file cannot be graded: {message}"
            scores.append(CaseScore(number, f"{number} {name}: {case.label}", name, 0.0, share, False, output,
                                    index in hidden))
    return _top_level([score.to_test() for score in scores], scoring.total,
                      _summary(scores, scoring.total, reason=message), seconds)


# --------------------------------------------------------------------------------------------- files


def write_results(path: str, data: dict) -> None:
    """Write ``results.json`` (``data``) to ``path`` atomically, making its folder (see :func:`write_atomically`).

    Raises:
        OSError: the folder cannot be made or written.
    """
    write_atomically(path, json.dumps(data, indent=2) + "\n")


def is_results_file(path: str) -> bool:
    """Whether ``path`` holds a Gradescope ``results.json`` (a JSON object with a list of ``tests`` and a
    ``score``), the one kind of file :func:`write_results` may replace: not a learner's work that happens to
    sit there."""
    try:
        if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > MAX_RESULTS_BYTES:
            return False
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and isinstance(data.get("tests"), list) and "score" in data


MAX_RESULTS_BYTES = 16 * 2 ** 20
"""A results.json larger than this is none npseq wrote (each test's output is capped)."""


@dataclasses.dataclass(frozen=True)
class ZipEntry:
    """One file of a zip that :func:`zip_bytes` writes."""
    name: str                # its path in the zip, with "/"
    data: bytes
    executable: bool = False  # mode 755 instead of 644 (a script Gradescope runs)


def zip_bytes(entries) -> bytes:
    """A zip of ``entries``, in their order, with a fixed date and modes: the same entries give the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for entry in entries:
            info = zipfile.ZipInfo(entry.name, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so that unzip honours the modes below
            info.external_attr = (0o100755 if entry.executable else 0o100644) << 16
            archive.writestr(info, entry.data, compresslevel=9)
    return buffer.getvalue()


def _package_folder() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _package_entries() -> list:
    """Every file of the npseq package (but ``__pycache__`` and ``*.pyc``), sorted by its path in the wheel."""
    folder = _package_folder()
    entries = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        for name in files:
            if name.endswith(".pyc"):
                continue
            path = os.path.join(top, name)
            with open(path, "rb") as handle:
                data = handle.read()
            entries.append(ZipEntry("npseq/" + os.path.relpath(path, folder).replace(os.sep, "/"), data))
    return sorted(entries, key=lambda entry: entry.name)


def _metadata_text(version: str) -> str:
    """The wheel's METADATA: name, version, summary, Python and requirements (the extras' markers kept)."""
    try:
        installed = importlib.metadata.metadata("npseq")
        requires = importlib.metadata.requires("npseq") or []
    except importlib.metadata.PackageNotFoundError:
        raise BundleError("npseq's wheel: npseq's package metadata is not found (npseq is not installed); "
                          "install it first: pip install -e . in its repository, or pip install its wheel") from None
    lines = ["Metadata-Version: 2.1", "Name: npseq", f"Version: {version}"]
    lines += [f"{field}: {installed.get(field)}" for field in ("Summary", "Requires-Python") if installed.get(field)]
    lines += [f"Provides-Extra: {extra}" for extra in installed.get_all("Provides-Extra") or []]
    lines += [f"Requires-Dist: {requirement}" for requirement in requires]
    return "\n".join(lines) + "\n"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def wheel_name(version: str = __version__) -> str:
    """``npseq-<version>-py3-none-any.whl``, the wheel's file name (a ``-`` in the version becomes ``_``)."""
    return f"npseq-{version.replace('-', '_')}-py3-none-any.whl"


def wheel_bytes(version: str = __version__) -> bytes:
    """npseq's wheel, built from the installed package's files and metadata (see :func:`build_wheel`)."""
    info = f"npseq-{version.replace('-', '_')}.dist-info"
    entries = _package_entries() + [
        ZipEntry(f"{info}/METADATA", _metadata_text(version).encode("utf-8")),
        ZipEntry(f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: npseq\nRoot-Is-Purelib: true\n"
                                  b"Tag: py3-none-any\n"),
        ZipEntry(f"{info}/entry_points.txt", b"[console_scripts]\nnpseq = npseq.cli:main\n")]
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    writer.writerows([entry.name, _record_hash(entry.data), len(entry.data)] for entry in entries)
    writer.writerow([f"{info}/RECORD", "", ""])
    return zip_bytes(entries + [ZipEntry(f"{info}/RECORD", record.getvalue().encode("utf-8"))])


def build_wheel(folder: str) -> str:
    """Write npseq's own wheel into ``folder`` (made if missing); its path.

    The wheel is built by hand from the installed package: every file under the ``npseq``
    package folder (but ``__pycache__`` and ``*.pyc``) and a ``.dist-info`` with METADATA
    (from npseq's installed metadata: summary, Python, requirements), WHEEL, entry_points.txt
    (the ``npseq`` command) and RECORD. So it works from an editable install as from a wheel
    install, with no build tools; with a fixed date and sorted entries, the same tree gives
    the same bytes.

    Raises:
        BundleError: npseq's metadata is not found (npseq is not installed), or ``folder``
            cannot be written.
    """
    path = os.path.join(folder, wheel_name())
    data = wheel_bytes()
    try:
        write_atomically(path, data)
    except OSError as exc:
        raise BundleError(f"npseq's wheel: cannot write {path} ({exc.strerror})") from None
    return path


SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image: it installs npseq
# from the wheel beside this script into a virtual environment, $ROOT/venv, which run_autograder uses.
# NPSEQ_AUTOGRADER_ROOT (default /autograder) and NPSEQ_PYTHON (default python3) let it run elsewhere.
set -euo pipefail

ROOT="${{NPSEQ_AUTOGRADER_ROOT:-/autograder}}"
PYTHON="${{NPSEQ_PYTHON:-python3}}"
WHEEL="$ROOT/source/{wheel}"

venv_usable() {{
    command -v "$PYTHON" >/dev/null 2>&1 && "$PYTHON" -c "import ensurepip, venv" >/dev/null 2>&1
}}

if ! venv_usable && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    # Ubuntu's python3 comes without venv (python3-venv), and some images without pip
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv python3-pip
fi
if ! venv_usable; then
    echo "setup.sh: $PYTHON cannot make a virtual environment; install python3 and python3-venv" >&2
    exit 1
fi

"$PYTHON" -m venv --clear "$ROOT/venv"
# npseq from the wheel file, never from the package index; its requirements come from the index
"$ROOT/venv/bin/python" -m pip install --disable-pip-version-check "$WHEEL"
# fail here, when the image is built, rather than at the first submission
"$ROOT/venv/bin/python" -I -c "import npseq.course.autograder"
echo "setup.sh: npseq {version} installed in $ROOT/venv"
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission: grade $ROOT/submission, write $ROOT/results/results.json.
# -I: the interpreter ignores PYTHON* variables and the working folder, so a file cannot shadow a module.
set -euo pipefail

ROOT="${NPSEQ_AUTOGRADER_ROOT:-/autograder}"
exec "$ROOT/venv/bin/python" -I -m npseq.course.autograder --root "$ROOT"
"""

README_TXT = """\
Gradescope autograder for npseq's backpropagation exercises (npseq {version}).

Upload this zip as the assignment's autograder: on Gradescope, a Programming Assignment,
Configure Autograder > Zip file upload. Choose a base image with Python 3.10 or newer
(Ubuntu 22.04 or later). The zip holds:

  setup.sh         installs npseq from the wheel below into /autograder/venv (run once, as root)
  run_autograder   grades the submission (backprop_exercises.py or .ipynb) and writes results.json
  config.json      the scoring: exercises, points, hidden cases, time limit per function
  {wheel}  npseq itself

Graded: {exercises}, {total} points in all; each exercise's points are shared evenly by
its cases, one Gradescope test per case. {hidden}
Each function may run {timeout:g} s; a submission running every function to its limit takes
about {worst}, so keep Gradescope's autograder timeout above that.

To try it without Gradescope: unzip into ROOT/source, copy run_autograder to ROOT/, then
    NPSEQ_AUTOGRADER_ROOT=ROOT bash ROOT/source/setup.sh
put a file into ROOT/submission/ and run NPSEQ_AUTOGRADER_ROOT=ROOT ROOT/run_autograder;
the results are in ROOT/results/results.json.
"""


def _readme(scoring: Scoring) -> str:
    hidden = sum(len(scoring.hidden_cases(name)) for name in scoring.names)
    worst = math.ceil((len(scoring.names) + 1) * scoring.timeout / 60)
    return README_TXT.format(
        version=__version__, wheel=wheel_name(), exercises=_counted(len(scoring.names), "exercise"),
        total=_number_text(scoring.total), timeout=scoring.timeout, worst=_counted(worst, "minute"),
        hidden=(f"Students see {_counted(hidden, 'case')} only once grades are published." if hidden
                else "Every case is visible to students."))


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def bundle_entries(scoring: Scoring) -> list:
    """The files of the autograder zip, sorted by name: README.txt, config.json, the wheel and the two scripts."""
    wheel = wheel_name()
    entries = [ZipEntry("README.txt", _readme(scoring).encode("utf-8")),
               ZipEntry("config.json", scoring.to_json().encode("utf-8")),
               ZipEntry(wheel, wheel_bytes()),
               ZipEntry("run_autograder", RUN_AUTOGRADER.encode("utf-8"), executable=True),
               ZipEntry("setup.sh", SETUP_SH.format(wheel=wheel, version=__version__).encode("utf-8"),
                        executable=True)]
    return sorted(entries, key=lambda entry: entry.name)


def check_bundle_target(zip_path: str, force: bool = False) -> None:
    """Refuse ``zip_path`` unless it is new, an autograder zip :func:`write_bundle` wrote, or ``force`` is given.

    A zip of ours holds every name of :data:`BUNDLE_MARKER`; anything else there (another
    zip, a file that is no zip, a folder, a link) may be someone's work, and is kept.

    Raises:
        BundleError: the path holds something else and ``force`` is not given.
    """
    if force or not os.path.lexists(zip_path):
        return
    if os.path.isdir(zip_path) and not os.path.islink(zip_path):
        raise BundleError(f"--gradescope: {zip_path} is a folder; expected the path of a zip file to write")
    ours = False
    if os.path.isfile(zip_path) and not os.path.islink(zip_path):
        try:
            with zipfile.ZipFile(zip_path) as archive:
                ours = BUNDLE_MARKER <= set(archive.namelist())
        except (OSError, zipfile.BadZipFile):
            ours = False
    if not ours:
        raise BundleError(f"--gradescope: {zip_path} already exists and is not an autograder zip that npseq "
                          "wrote; add --force to replace it")


def write_bundle(zip_path: str, scoring: Scoring, force: bool = False) -> str:
    """Write the Gradescope autograder zip to ``zip_path`` (its folder made if missing); its path.

    At the zip's root: ``setup.sh``, ``run_autograder``, ``config.json`` (``scoring``),
    npseq's wheel (:func:`build_wheel`) and ``README.txt`` for the instructor. A file
    already at ``zip_path`` is replaced only if it is an autograder zip this function wrote,
    or with ``force`` (:func:`check_bundle_target`); the zip is written atomically.

    Raises:
        BundleError: the path holds something else, npseq is not installed, or the folder
            cannot be written.
    """
    check_bundle_target(zip_path, force)
    data = zip_bytes(bundle_entries(scoring))
    try:
        write_atomically(zip_path, data)
    except OSError as exc:
        raise BundleError(f"--gradescope: cannot write {zip_path} ({exc.strerror})") from None
    return zip_path


__all__ = ["ALL_CASES", "BundleError", "CaseScore", "Scoring", "build_wheel", "bundle_entries", "case_scores",
           "is_results_file", "check_bundle_target", "results", "unloadable", "wheel_bytes", "wheel_name",
           "write_bundle", "write_results"]
