"""PrairieLearn: the question folders a course copies into its ``questions/``, and the ``results.json`` of a grading.

PrairieLearn's external grading (its "External Grading" documentation) grades a question whose
``info.json`` says ``"gradingMethod": "External"`` in a Docker container that
``externalGradingOptions`` names: ``image``, ``entrypoint``, ``timeout`` (seconds; 30 by default,
600 at most) and ``enableNetworking`` (off by default). In the container, ``/grade/student`` holds
the files the student submitted, ``/grade/tests`` the question's ``tests/`` folder and
``/grade/data/data.json`` the variant's ``data`` (its ``params`` and ``variant_seed`` among them);
the entrypoint must leave ``/grade/results/results.json``: ``score`` in [0, 1], ``message`` and
``tests`` (each with ``name``, ``description``, ``points``, ``max_points``, ``message`` and
``output``, which ``<pl-external-grader-results>`` shows), or ``"gradable": false`` with
``format_errors`` for a submission that cannot be graded, which costs the student no attempt.

**One question per exercise set** (:func:`plans`), not one per exercise: a set's hand-out is one
file, whose later exercises call the student's own earlier ones (``rnn_backward`` calls their
``rnn_step_backward``), so the student writes and submits it once, the question grades it as
``npseq grade --set SET`` does, to the same score, and ``--points`` weighs exercises within it.
A question per exercise would hold the same helpers again in every question, and grade them again
at every submission. ``--only`` narrows a set's question (with what its exercises build on).

Each question's folder (:func:`question_files`):

- ``info.json``: external grading in PrairieLearn's Python grader image (:data:`IMAGE`), the
  entrypoint ``/grade/tests/run.sh``, no network, a timeout that covers the install and a file
  whose every function runs to its time limit (:attr:`Question.job_timeout`);
- ``question.html``: each exercise's text and equations, from the hand-out at its hint level, and
  an editor holding the hand-out's skeleton, ``backprop_exercises.py`` (also in the folder);
- ``server.py``: ``generate()`` gives each variant numbers of its own: ``params["seed"]``, from
  PrairieLearn's ``variant_seed``, is the seed of ``npseq grade --seed`` (:data:`SERVER_PY`);
- ``tests/``: ``run.sh``; ``config.json``, the question's :class:`~npseq.course.scoring.Scoring`;
  and the wheels of npseq and of its pure-Python requirements (:mod:`npseq.course.wheels`), which
  ``run.sh`` installs with ``pip install --no-index`` before it runs
  :mod:`npseq.course.prairielearn_grader`, which writes :func:`render` of the verdict.

Beside the folders: a ``Dockerfile`` for a course that builds its own image (npseq installed once,
not at each grading) and ``README.txt`` for the instructor.
"""
from __future__ import annotations

import ast
import dataclasses
import html
import json
import math
import os
import uuid

from .. import __version__
from ..language import _, speaking
from .files import write_atomically
from .handout import SKELETON_NAME, chosen_exercises, grade_command, skeleton, skeleton_source
from .scoring import Scoring
from .sheet import DEFAULT_SETS, EXERCISE_BY_NAME, SET_OF, names_of_sets, with_prerequisites
from .verdict import CaseScore, Verdict, capped, number_text
from .wheels import BundleError, requirement_wheels, requirements, wheel_bytes, wheel_name

IMAGE = "prairielearn/grader-python"
"""PrairieLearn's Python grader image: Python 3.13 with NumPy and Matplotlib, which npseq needs and no wheel carries."""

ENTRYPOINT = "/grade/tests/run.sh"

MAX_JOB_TIMEOUT = 600
"""The longest timeout PrairieLearn allows a grading job (seconds)."""

SETUP_SECONDS = 30
"""What a job's timeout allows, beyond the grading itself, for the container's start and the install of the wheels."""

MEMORY_MB = 1024
"""The memory a submission's process may add, unless ``--memory-mb`` says otherwise: PrairieLearn's grading container
holds 2 GiB in all, the grader's own included (npseq grade's default, 4096, is beyond it)."""

FOLDER_PREFIX = "npseq_"
TOPIC = "Backpropagation"
MARKER = "Written by npseq exercises --prairielearn"
"""How a question's ``info.json`` (its ``comment``), the ``Dockerfile`` and ``README.txt`` say npseq wrote them: such
files are written again without ``--force``."""

RESULTS_CHARS = 400_000
"""The text of all the tests of a results.json together, at most: PrairieLearn takes a file of 1 MB at most, and JSON
escapes may double what a learner's text takes."""

TEST_OUTPUT_CHARS = 20_000
"""The longest ``output`` of one test (a case's table), when the file has room for it."""

MESSAGE_CHARS = 20_000
NAME_CHARS = 1_000
POINT_DIGITS = 9   # a test's points, as Gradescope's: the even share of an exercise's points, to 1e-9
SCORE_DIGITS = 6   # the score: a perfect submission scores 1.0, not 0.9999999999

_UUIDS = uuid.uuid5(uuid.NAMESPACE_URL, "npseq:prairielearn:question")
"""The namespace of the questions' UUIDs: a set's question with the same exercises keeps its UUID from one writing to
the next, so PrairieLearn sees the same question (and keeps its students' submissions); other exercises, another."""


@dataclasses.dataclass(frozen=True)
class Question:
    """One PrairieLearn question: the exercises of one set that a submission is graded on, and how."""
    set_name: str
    scoring: Scoring

    @property
    def folder(self) -> str:
        """The question's folder name, its QID in the course: ``npseq_classic``."""
        return FOLDER_PREFIX + self.set_name

    @property
    def exercises(self) -> list:
        """The graded exercises, numbered as the hand-out and the tests number them."""
        return chosen_exercises(list(self.scoring.names))

    @property
    def uuid(self) -> str:
        return str(uuid.uuid5(_UUIDS, f"{self.set_name}:{','.join(self.scoring.names)}"))

    @property
    def worst_seconds(self) -> float:
        """How long a grading of a file whose import and every function run to the time limit takes, install aside."""
        return (len(self.scoring.names) + 1) * self.scoring.timeout

    @property
    def job_timeout(self) -> int:
        """``externalGradingOptions.timeout``: the install and the worst grading, within PrairieLearn's 600 s."""
        return min(MAX_JOB_TIMEOUT, SETUP_SECONDS + math.ceil(self.worst_seconds))


def plans(only, sets, scoring: Scoring, lang: str = "en") -> list:
    """The questions of a course's ``--only`` and ``--set``, one per set, each scored as ``scoring`` says.

    ``sets`` alone (or neither: the default sets): each set's every exercise, with what it builds
    on. ``only``: its names grouped by the set that holds them (one of ``sets``, given too, or their
    own), each group with what it builds on. ``scoring`` gives the points, hidden cases, limits,
    policy and hints of every exercise; a question keeps those of its own exercises. Gradescope's
    per-student seeds stay out: a variant's numbers are PrairieLearn's. ``lang`` is the language the students'
    results speak (the instructor's choice, carried in each question's ``config.json``: :attr:`Scoring.lang`).

    Raises:
        BundleError: a question whose exercises are worth 0 points in all (its score would be 0 / 0).
    """
    if only:
        homes = list(sets) if sets else list(dict.fromkeys(SET_OF[name] for name in only))
        groups = {home: [name for name in only if (name in names_of_sets([home]) if sets else SET_OF[name] == home)]
                  for home in homes}
        groups = {home: with_prerequisites(names) for home, names in groups.items() if names}
    else:
        groups = {home: names_of_sets([home]) for home in (sets or DEFAULT_SETS)}
    questions = []
    for home, names in groups.items():
        own = dataclasses.replace(scoring, only=tuple(names), per_student=False, secret="",
                                  lang=lang if lang != "en" else scoring.lang,
                                  points={name: p for name, p in scoring.points.items() if name in names},
                                  hidden={name: cases for name, cases in scoring.hidden.items() if name in names})
        if own.total <= 0:
            raise BundleError(f"--points: the question of the {home} set ({', '.join(names)}) is worth 0 points in "
                              "all; PrairieLearn's score is a fraction of them: give one of its exercises points")
        questions.append(Question(home, own))
    return questions


# --------------------------------------------------------------------------------------------- the question's files


def info_json(question: Question) -> str:
    """The question's ``info.json``: a v3 question graded externally, in :data:`IMAGE`, with no network."""
    names = question.scoring.names
    info = {"uuid": question.uuid,
            "title": f"Backpropagation by hand: {question.set_name} ({len(names)} exercise{'s' * (len(names) != 1)})",
            "topic": TOPIC, "type": "v3",
            "comment": f"{MARKER} (npseq {__version__}), which writes it again; the exercises: {', '.join(names)}",
            "gradingMethod": "External",
            "showCorrectAnswer": False,  # the answer is a file of code; the question shows no answer panel
            "externalGradingOptions": {"image": IMAGE, "entrypoint": ENTRYPOINT, "timeout": question.job_timeout,
                                       "enableNetworking": False}}
    return json.dumps(info, indent=2) + "\n"


def _html(text: str) -> str:
    """``text`` as HTML text that PrairieLearn's Mustache leaves alone: ``<`` and ``&`` escaped, and braces too (a
    ``{{`` in an equation would be a template's variable)."""
    return html.escape(text, quote=False).replace("{", "&#123;").replace("}", "&#125;")


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def question_html(question: Question) -> str:
    """The question's ``question.html``: what to do, the numbers of the variant, the scoring, each exercise's text
    and equations from the hand-out (in ``<pre>``, which MathJax leaves as it is), the editor and the results."""
    scoring, exercises = question.scoring, question.exercises
    hidden = sum(len(scoring.hidden_cases(name)) for name in scoring.names)
    sections = []
    for exercise in exercises:
        docstring = ast.get_docstring(ast.parse(skeleton_source(exercise, scoring.hints)).body[0])
        points = scoring.points_of(exercise.name)
        sections.append(f"<h4>{exercise.number}. <code>{_html(exercise.signature)}</code> "
                        f"({number_text(points)} point{'s' * (points != 1)})</h4>\n"
                        f"<p>{_html(exercise.summary)}; it practises {_html(exercise.practises.replace('`', ''))}."
                        f"</p>\n<pre>{_html(docstring)}</pre>")
    what = ("the backward pass of this exercise" if len(exercises) == 1 else
            f"the backward passes of these {len(exercises)} exercises")
    its = "its" if hidden == 1 else "their"
    hidden_text = (f" {_counted(hidden, 'case')} {'is' if hidden == 1 else 'are'} hidden: {its} numbers are drawn anew "
                   f"at each grading, and the results show {its} points, not {its} table." if hidden else "")
    return f"""\
<pl-question-panel>
<p>Write {what} in <code>{SKELETON_NAME}</code>, in the editor below: replace each
<code>raise NotImplementedError</code> by your code, keeping the names, the signatures and the order of the returned
gradients. The forward passes are npseq's own (the file imports them), so every cache has npseq's layout; each
exercise lists the fields you may use, and may call your own earlier functions.</p>
<p>Your cases are numbered <strong>{{{{params.seed}}}}</strong>: the same shapes as everyone's, numbers of your own.
Each submission grades your file on them, against finite differences and npseq's own backward; with npseq installed,
<code>{{{{params.grade_command}}}}</code> grades it on the same numbers on your machine, as often as you like.</p>
<p>An exercise's points are shared evenly by its cases, and a case earns the fraction of its gradients that are
correct. Each function may run {scoring.timeout:g} s, all its cases together.{hidden_text}
</p>
{chr(10).join(sections)}
<pl-file-editor file-name="{SKELETON_NAME}" ace-mode="ace/mode/python" source-file-name="{SKELETON_NAME}">
</pl-file-editor>
</pl-question-panel>

<pl-submission-panel>
<pl-external-grader-results></pl-external-grader-results>
<pl-file-preview></pl-file-preview>
</pl-submission-panel>
"""


SERVER_PY = '''\
"""npseq's backpropagation exercises, the {set_name} set: each variant's own numbers.

{marker} (npseq {version}).
"""

GRADE_COMMAND = {command!r}


def generate(data):
    # PrairieLearn draws a seed for every variant (each student's own, and each new variant asked for); it becomes the
    # seed of npseq's cases: the same shapes as everyone's, numbers of this variant's own. npseq's seed 0 is the
    # sheet's own numbers, which the public hand-out grades on, so a variant's seed is 1 and above, within the 48
    # bits of the seeds npseq makes of a student's address.
    seed = int(data["variant_seed"]) % (2**48 - 1) + 1
    data["params"]["seed"] = seed
    data["params"]["grade_command"] = f"{{GRADE_COMMAND}} --seed {{seed}}"
'''
"""``server.py``: a variant's seed in ``params`` (the grader reads it from ``/grade/data/data.json``), and the command
that grades on it on the student's machine, as :func:`~npseq.course.handout.grade_command` writes it."""


RUN_SH = """\
#!/usr/bin/env bash
# PrairieLearn runs this for every submission (info.json's entrypoint), as root, in its grading container, which has
# no network. It installs npseq {version} from the wheels beside it (--no-index: nothing is downloaded; the
# requirements the image holds are used as they are), then grades the file in $ROOT/student and writes
# $ROOT/results/results.json. NPSEQ_GRADE_ROOT (default /grade) and NPSEQ_PYTHON (default python3) let it run
# elsewhere.
set -uo pipefail

ROOT="${{NPSEQ_GRADE_ROOT:-/grade}}"
PYTHON="${{NPSEQ_PYTHON:-python3}}"

if ! "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-input --root-user-action=ignore \\
        --no-index --find-links "$ROOT/tests" "npseq=={version}"; then
    # the image lacks what npseq needs (pip said what, above, in the job's log): the instructor's to fix, so the
    # submission is not gradable and costs the student no attempt
    mkdir -p "$ROOT/results"
    cat > "$ROOT/results/results.json" <<'JSON'
{not_installed}
JSON
    exit 0
fi
# -I: the interpreter ignores PYTHON* variables and the working folder, so that no file shadows a module
exec "$PYTHON" -I -m npseq.course.prairielearn_grader --root "$ROOT"
"""


README_TXT = """\
{marker} (npseq {version}): PrairieLearn questions for npseq's backpropagation exercises.

Copy each npseq_* folder into your course's questions/ folder, sync, and add the question to an
assessment (in infoAssessment.json, "id": "npseq_classic", say, with the points it is worth).
Each question is one exercise set, graded as one file, backprop_exercises.py, which students
write in the question's editor (it starts as the hand-out's skeleton).

{questions}

The questions grade in PrairieLearn's Python grader image, {image}, with no network: it must
hold Python 3.10 or newer and {compiled} (it does). Each grading installs npseq from the wheels in
the question's tests/ folder, with {carried} for an image that lacks them, and reads each variant's
seed from /grade/data/data.json. A course that builds its own image can use the Dockerfile here:
docker build -t ORG/npseq-grader . && docker push ORG/npseq-grader, then "image": "ORG/npseq-grader"
in each info.json (npseq is then installed once, in the image).

To try a question without PrairieLearn: copy its tests/ folder to ROOT/tests, a student's file to
ROOT/student/backprop_exercises.py, write ROOT/data/data.json as {{"params": {{"seed": 7}}}}, then
    NPSEQ_GRADE_ROOT=ROOT bash ROOT/tests/run.sh
and read ROOT/results/results.json.
"""


DOCKERFILE = """\
# {marker} (npseq {version}): a grading image for a course that builds its own.
# PrairieLearn's Python grader image with npseq installed from the wheels of {folder}/tests, so that each
# grading's pip install finds npseq already there. Build it in this folder: docker build -t ORG/npseq-grader .
FROM {image}
COPY {folder}/tests/*.whl /tmp/npseq-wheels/
RUN python3 -m pip install --no-cache-dir --disable-pip-version-check --root-user-action=ignore --no-index \\
        --find-links /tmp/npseq-wheels "npseq=={version}" \\
    && rm -rf /tmp/npseq-wheels
"""


def not_installed() -> dict:
    """``results.json`` when npseq cannot be installed in the grading image: not gradable, since the instructor, not
    the student, must act."""
    return not_gradable("npseq could not be installed in the grading image (not your fault; tell your instructor: "
                         "the job's log says what the image lacks)")


def server_py(question: Question) -> str:
    return SERVER_PY.format(set_name=question.set_name, marker=MARKER, version=__version__,
                            command=grade_command(SKELETON_NAME, question.exercises))


def run_sh() -> str:
    return RUN_SH.format(version=__version__, not_installed=json.dumps(not_installed()))


def describe_question(question: Question) -> str:
    """One line per question for the instructor: its exercises, points, limits and job timeout."""
    scoring = question.scoring
    hidden = sum(len(scoring.hidden_cases(name)) for name in scoring.names)
    capped_note = (f" (a file whose every function runs to its limit needs {math.ceil(question.worst_seconds)} s "
                   f"of grading; --timeout {math.floor((MAX_JOB_TIMEOUT - SETUP_SECONDS) / (len(scoring.names) + 1))} "
                   "fits it)" if question.job_timeout == MAX_JOB_TIMEOUT else "")
    return (f"{question.folder}: {_counted(len(scoring.names), 'exercise')}, {number_text(scoring.total)} "
            f"point{'s' * (scoring.total != 1)}, "
            f"{scoring.timeout:g} s per function, a job timeout of {question.job_timeout} s{capped_note}"
            + (f", {_counted(hidden, 'case')} hidden" if hidden else ""))


def question_files(question: Question, wheels: dict) -> dict:
    """The files of ``question``'s folder, path (with ``/``) -> bytes; ``wheels`` is file name -> bytes. What the
    hand-out says in them speaks the question's language (:attr:`Scoring.lang`)."""
    with speaking(question.scoring.lang):
        files = {"info.json": info_json(question), "question.html": question_html(question),
                 "server.py": server_py(question),
                 SKELETON_NAME: skeleton(question.exercises, question.scoring.hints),
                 "tests/run.sh": run_sh(), "tests/config.json": question.scoring.to_json()}
    files = {name: text.encode("utf-8") for name, text in files.items()}
    return files | {f"tests/{name}": data for name, data in wheels.items()}


def course_files(questions: list) -> dict:
    """The question folders of ``questions``, a ``Dockerfile`` and ``README.txt``: path (with ``/``) -> bytes.

    Raises:
        BundleError: npseq or one of its requirements is not installed.
    """
    wheels = {wheel_name(): wheel_bytes()} | {entry.name: entry.data for entry in requirement_wheels()}
    files = {}
    for question in questions:
        files |= {f"{question.folder}/{name}": data for name, data in question_files(question, wheels).items()}
    found = requirements()
    readme = README_TXT.format(
        marker=MARKER, version=__version__, image=IMAGE,
        questions="\n".join(describe_question(question) for question in questions),
        compiled=" and ".join(r.specifier for r in found if not r.pure) or "nothing more",
        carried=" and ".join(r.name for r in found if r.pure) or "nothing more")
    files["README.txt"] = readme.encode("utf-8")
    files["Dockerfile"] = DOCKERFILE.format(marker=MARKER, version=__version__, image=IMAGE,
                                            folder=questions[0].folder).encode("utf-8")
    return files


def _ours(out: str, path: str) -> bool:
    """Whether npseq wrote the file at ``path`` (relative to ``out``): one of a question folder whose ``info.json``
    carries :data:`MARKER`, or the ``Dockerfile`` or ``README.txt`` beside them, which do."""
    top = path.split("/")[0]
    marked = os.path.join(out, top, "info.json") if "/" in path else os.path.join(out, path)
    if os.path.islink(marked) or not os.path.isfile(marked):
        return False
    try:
        with open(marked, encoding="utf-8") as handle:
            text = handle.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return False
    if "/" not in path:
        return MARKER in text.split("\n", 1)[0]
    try:
        comment = json.loads(text).get("comment", "")
    except (ValueError, AttributeError):
        return False
    return isinstance(comment, str) and comment.startswith(MARKER)


def _same(path: str, data: bytes) -> bool:
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read() == data
    except OSError:
        return False


def check_questions_target(out: str, files: dict, force: bool = False) -> None:
    """Refuse to write ``files`` (:func:`course_files`) into ``out`` over a file npseq did not write, unless ``force``.

    A file already there may be replaced when npseq wrote it: one of a question folder whose
    ``info.json`` says so, or the ``Dockerfile`` or ``README.txt`` that do. Any other (an
    instructor's own question, a link, a folder) is kept.

    Raises:
        BundleError: such a file is in the way and ``force`` is not given (one line).
    """
    targets = {name: os.path.join(out, *name.split("/")) for name in files}
    refused = [target for name, target in targets.items() if os.path.lexists(target) and not _same(target, files[name])
               and (os.path.isdir(target) or os.path.islink(target) or not _ours(out, name))]
    if refused and not force:
        raise BundleError(f"--prairielearn: {', '.join(refused[:5])}{' ...' if len(refused) > 5 else ''} already "
                          f"exist{'s' if len(refused) == 1 else ''} and npseq did not write "
                          f"{'it' if len(refused) == 1 else 'them'}; write into another folder, or add --force")


def write_questions(out: str, files: dict, force: bool = False) -> list:
    """Write ``files`` (:func:`course_files`: the question folders, a ``Dockerfile`` and ``README.txt``) into ``out``;
    the paths written.

    Every file is checked before any is written (:func:`check_questions_target`), so a refusal
    writes nothing; a file that already holds the same bytes is left alone, and other files in
    the folders are not touched. Each file is written whole
    (:func:`~npseq.course.files.write_atomically`), never through a link; ``run.sh`` is executable.

    Raises:
        BundleError: a file would be replaced, or ``out`` cannot be written (one line).
    """
    check_questions_target(out, files, force)
    written = []
    try:
        for name, data in files.items():
            target = os.path.join(out, *name.split("/"))
            if _same(target, data):
                continue
            if os.path.isdir(target) and not os.path.islink(target):
                raise BundleError(f"--prairielearn: {target} is a folder; remove it to write the file there")
            write_atomically(target, data)
            if name.endswith("/run.sh"):
                os.chmod(target, 0o755)
            written.append(target)
    except OSError as exc:
        raise BundleError(f"--prairielearn: cannot write to {out!r} ({exc.strerror})") from None
    return written


# --------------------------------------------------------------------------------------------- results.json


def not_gradable(reason: str) -> dict:
    """``results.json`` for a submission that cannot be graded: ``"gradable": false`` (PrairieLearn then counts no
    attempt and gives no score), the reason as the message and the format error."""
    return {"gradable": False, "message": capped(_("This submission cannot be graded, so it costs you no attempt: "
                                                   "{reason}").format(reason=reason), MESSAGE_CHARS),
            "format_errors": [capped(reason, MESSAGE_CHARS)]}


def _test(case: CaseScore, description: str, output_chars: int) -> dict:
    """One case as PrairieLearn's test: its line of points as the message, its table as the output; a hidden case's
    points alone, under a name that does not give its shapes away."""
    points = {"points": round(case.score, POINT_DIGITS) + 0.0, "max_points": round(case.max_score, POINT_DIGITS) + 0.0}
    if case.hidden:
        return {"name": f"{case.number} {case.exercise}: " + _("a hidden case"), "description": description,
                **points, "message": _("a hidden case: its numbers were drawn for this grading, and its table is not "
                                       "shown"), "output": ""}
    headline, _newline, table = case.output.partition("\n")
    return {"name": capped(case.name, NAME_CHARS), "description": description, **points,
            "message": capped(headline.removeprefix("== "), MESSAGE_CHARS), "output": capped(table, output_chars)}


def _message(verdict: Verdict, command: str) -> str:
    """The results' message: the score, the command that grades on the same numbers, the hidden cases, what was not
    attempted, what reading a notebook skipped."""
    hidden = len(verdict.cases) - len(verdict.visible)
    lines = [_("Score: {score} of {total} points.").format(score=number_text(verdict.earned),
                                                          total=number_text(verdict.total))]
    if command:
        lines.append(_("On your machine, {command} grades your file on the same numbers.").format(command=command))
    if hidden:
        worth = sum(case.max_score for case in verdict.cases if case.hidden)
        said = _("{count} case, worth {worth} points, is hidden: numbers drawn for this grading, tables not shown.") \
            if hidden == 1 else _("{count} cases, worth {worth} points, are hidden: numbers drawn for this grading, "
                                  "tables not shown.")
        lines.append(said.format(count=hidden, worth=number_text(worth)))
    if verdict.missing:
        lines.append(_("Not attempted (0 points, not defined in the file): {names}").format(
            names=", ".join(verdict.missing)))
    if verdict.notes:
        lines += [_("Skipped while reading the notebook (not Python):")] + [f"   {note}" for note in verdict.notes]
    return capped("\n".join(lines), MESSAGE_CHARS)


def render(verdict: Verdict, command: str = "") -> dict:
    """PrairieLearn's ``results.json`` for ``verdict``; ``command`` is the ``npseq grade`` line that grades the same
    numbers on the student's machine (``""``: none said).

    Gradable: ``score``, the verdict's points over its total (hidden cases included: it is the
    grade), a ``message`` and one test per (exercise, case), worth its points. Not gradable (the
    file does not import, no file, the grader failed): ``"gradable": false`` with the reason in
    ``message`` and ``format_errors``, and no score, so the submission costs no attempt. The honesty
    note is not in the file (PrairieLearn shows every test to the student): the grading's log, which
    only the course's staff see, holds it with the tables. Every string is capped, so that the file
    stays well under PrairieLearn's 1 MB.
    """
    if not verdict.gradable:
        return not_gradable(verdict.reason)
    output_chars = min(TEST_OUTPUT_CHARS, RESULTS_CHARS // max(len(verdict.cases), 1))
    score = verdict.earned / verdict.total if verdict.total else 0.0
    return {"gradable": True, "score": round(min(max(score, 0.0), 1.0), SCORE_DIGITS) + 0.0,
            "message": _message(verdict, command),
            "tests": [_test(case, EXERCISE_BY_NAME[case.exercise].summary, output_chars) for case in verdict.cases]}


__all__ = ["IMAGE", "MAX_JOB_TIMEOUT", "MEMORY_MB", "Question", "check_questions_target", "course_files",
           "describe_question", "info_json", "not_gradable", "not_installed", "plans", "question_files",
           "question_html", "render", "write_questions"]
