"""Gradescope: the autograder zip an instructor uploads, and the ``results.json`` it writes for each submission.

Gradescope's autograder (its "Autograder Specifications") is a zip with ``setup.sh`` and
``run_autograder`` at its root. Gradescope unpacks the zip into ``/autograder/source``, runs
``setup.sh`` once, as root, when it builds the image, copies ``run_autograder`` to
``/autograder/run_autograder`` and runs it for every submission, the student's files being
in ``/autograder/submission``; what it reports is ``/autograder/results/results.json``.

The zip :func:`write_bundle` writes holds npseq itself, as a wheel built from the installed
package (:mod:`npseq.course.wheels`), so the image grades with exactly the npseq that wrote the
hand-out; its requirements (numpy, matplotlib, tqdm, threadpoolctl) come from the package index,
npseq never does. ``config.json`` is the instructor's :class:`~npseq.course.scoring.Scoring`;
``run_autograder`` runs :mod:`npseq.course.autograder`, which grades the submission and writes
:func:`render` of its :class:`~npseq.course.verdict.Verdict`.

In ``results.json`` each (exercise, case) is one test, named and numbered as on the sheet
(``3.2 gru_step_backward: reset_after=True, N=3 D=4 H=5``), worth the exercise's points
shared evenly by its cases, and scored by the fraction of that case's tensors that are
correct. A case the instructor hides is shown once grades are published. Nothing in the
file is longer than Gradescope shows: each string is capped, with a note where it was cut.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import zipfile

from .. import __version__
from ..language import _
from .files import write_atomically
from .report import GradeReport
from .scoring import Scoring
from .verdict import CaseScore, Verdict, capped, number_text, ungradable, verdict_of
from .wheels import BundleError, ZipEntry, wheel_bytes, wheel_name, zip_bytes

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

_LONGEST_FENCE = 10  # backticks; a longer run in a message is abbreviated (see _code_block)


# --------------------------------------------------------------------------------------------- results.json


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


def _test(case: CaseScore) -> dict:
    """One case as Gradescope's test: its table as a Markdown code block, shown once grades are published if hidden."""
    return {"name": capped(case.name, NAME_CHARS), "number": case.number,
            "score": _rounded(case.score, SCORE_DIGITS), "max_score": _rounded(case.max_score, SCORE_DIGITS),
            "status": "passed" if case.passed else "failed",
            "output": _code_block(case.output, TEST_OUTPUT_CHARS), "output_format": "md",
            "visibility": "after_published" if case.hidden else "visible", "tags": [case.exercise]}


def _summary(verdict: Verdict) -> str:
    """The top-level output: the score on the visible cases, what was skipped, what was not attempted.

    It says how many points the hidden cases are worth, never how they went.
    """
    shown = verdict.visible
    lines = []
    if verdict.reason:
        lines += ["**" + _("This file cannot be graded:") + "**", "", _code_block(verdict.reason, OUTPUT_CHARS // 2),
                  ""]
    score, worth = sum(s.score for s in shown), sum(s.max_score for s in shown)
    if len(shown) == len(verdict.cases):
        lines.append("**" + _("Score: {score} of {total} points.").format(score=number_text(score),
                                                                          total=number_text(verdict.total)) + "**")
    else:
        held = len(verdict.cases) - len(shown)
        more = _("{count} more cases, worth {worth} points, are shown when grades are published.") if held != 1 else \
            _("{count} more case, worth {worth} points, is shown when grades are published.")
        lines.append("**" + _("Score on the visible cases: {score} of {worth} points.").format(
            score=number_text(score), worth=number_text(worth)) + "** "
            + more.format(count=held, worth=number_text(verdict.total - worth)))
    if verdict.notes:
        lines += ["", _("Skipped while reading the notebook (not Python):"), "",
                  _code_block("\n".join(verdict.notes), OUTPUT_CHARS // 2)]
    if verdict.missing:
        lines += ["", _("Not attempted (0 points, not defined in the file): {names}").format(
            names=", ".join(f"`{name}`" for name in verdict.missing))]
    return capped("\n".join(lines), OUTPUT_CHARS)


def render(verdict: Verdict) -> dict:
    """Gradescope's ``results.json`` for ``verdict``.

    One test per (exercise, case); its ``output`` is that case's rows of the text table, with the
    case's problem or the function's failure, as a Markdown code block. The top-level ``score`` is
    the verdict's (hidden cases included: it is the grade); the top-level ``output`` is a summary
    that says nothing of how hidden cases went. A verdict with an honesty note gets one more test,
    ``"honesty note"``, worth nothing and hidden from students, with the lines for the instructor.
    A file that cannot be graded lists every case at 0, each saying why.
    """
    tests = [_test(case) for case in verdict.cases]
    if verdict.honesty:
        # "failed", although it costs nothing: the instructor's view then marks it, so it is not missed
        tests.append({"name": "honesty note", "score": 0.0, "max_score": 0.0, "status": "failed",
                      "output": _code_block("\n".join(verdict.honesty), TEST_OUTPUT_CHARS),
                      "output_format": "md", "visibility": "hidden", "tags": ["honesty"]})
    return {"score": _rounded(verdict.earned, TOTAL_DIGITS), "execution_time": int(round(verdict.seconds)),
            "output": _summary(verdict), "output_format": "md", "stdout_visibility": "hidden", "tests": tests}


def results(report: GradeReport, scoring: Scoring) -> dict:
    """Gradescope's ``results.json`` for ``report``, scored as ``scoring`` says: :func:`render` of its verdict."""
    return render(verdict_of(report, scoring))


def unloadable(message: str, scoring: Scoring, seconds: float = 0.0) -> dict:
    """``results.json`` for a file that cannot be graded: every graded exercise's cases at 0, each saying why.

    The student sees the whole breakdown (what each exercise and case is worth) and the
    reason, ``message`` (one line, as :class:`~npseq.course.submission.SubmissionError` says it).
    """
    return render(ungradable(message, scoring, seconds))


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
        total=number_text(scoring.total), timeout=scoring.timeout, worst=_counted(worst, "minute"),
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


def write_bundle(zip_path: str, scoring: Scoring, force: bool = False, lang: str = "en") -> str:
    """Write the Gradescope autograder zip to ``zip_path`` (its folder made if missing); its path.

    ``lang`` is the language the students' results speak (:data:`~npseq.language.LANGUAGES`): the
    instructor's choice, carried in ``config.json`` (:attr:`Scoring.lang`).

    At the zip's root: ``setup.sh``, ``run_autograder``, ``config.json`` (``scoring``),
    npseq's wheel (:func:`~npseq.course.wheels.build_wheel`) and ``README.txt`` for the instructor. A file
    already at ``zip_path`` is replaced only if it is an autograder zip this function wrote,
    or with ``force`` (:func:`check_bundle_target`); the zip is written atomically.

    Raises:
        BundleError: the path holds something else, npseq is not installed, or the folder
            cannot be written.
    """
    check_bundle_target(zip_path, force)
    data = zip_bytes(bundle_entries(dataclasses.replace(scoring, lang=lang) if lang != "en" else scoring))
    try:
        write_atomically(zip_path, data)
    except OSError as exc:
        raise BundleError(f"--gradescope: cannot write {zip_path} ({exc.strerror})") from None
    return zip_path


__all__ = ["BundleError", "Scoring", "bundle_entries", "check_bundle_target", "is_results_file", "render", "results",
           "unloadable", "write_bundle", "write_results"]
