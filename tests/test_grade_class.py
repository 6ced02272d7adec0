"""Grading a whole class: a folder of submissions, each in its own process, counted into a CSV, a JSON and a summary.

One class of 40 generated submissions is graded once, through the ``npseq`` command, and
the tests after it read what that run printed and wrote. The learners' mistakes are
planted in the sheet's own solutions, so each one has a known diagnosis.
"""
import csv
import io
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from npseq.cli import main
from npseq.course.classroom import (
    MARKER,
    ClassReport,
    ClassroomError,
    ClassSubmission,
    StudentGrade,
    find_submissions,
    grade_class,
)
from npseq.course.exercise import solution_source
from npseq.course.mistakes import MISTAKES
from npseq.course.sheet import EXERCISE_BY_NAME

EXERCISES = ("rnn_step_backward", "lstm_step_backward")
ONLY = [word for name in EXERCISES for word in ("--only", name)]
TIMEOUT = "5"  # per function: the looping submissions stop here; the others need a fraction of a second


def solved(*names) -> str:
    """A file a learner who solved ``names`` hands in: the sheet's own solutions (too short to be judged copies)."""
    return "import numpy as np\n\n\n" + "\n\n".join(solution_source(EXERCISE_BY_NAME[name].solution)
                                                  for name in names)


def planted(source: str, right: str, wrong: str) -> str:
    """``source`` with its one ``right`` replaced by ``wrong``: one planted mistake."""
    assert source.count(right) == 1, right
    return source.replace(right, wrong)


CORRECT = solved(*EXERCISES)
GATE_G_SIGN = planted(CORRECT, "dc * i * (1 - g ** 2)", "-dc * i * (1 - g ** 2)")
UNTRANSPOSED_DX = planted(CORRECT, "return da @ cache.Wx.T, da @ cache.Wh.T, cache.x.T",
                          "return da @ cache.Wx, da @ cache.Wh.T, cache.x.T")
LOOPING = planted(CORRECT, "    da = dnext_h * (1 - cache.next_h ** 2)\n",
                  "    while True:\n        pass\n    da = dnext_h * (1 - cache.next_h ** 2)\n")
SYNTAX_ERROR = planted(CORRECT, "def lstm_step_backward(dnext_h, dnext_c, cache):",
                       "def lstm_step_backward(dnext_h, dnext_c, cache)")

KINDS = {"correct": (CORRECT, 20), "gate_g": (GATE_G_SIGN, 10), "dx": (UNTRANSPOSED_DX, 5),
         "looping": (LOOPING, 3), "syntax": (SYNTAX_ERROR, 2)}


def notebook(source: str) -> str:
    """``source`` as a notebook of one code cell."""
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": source.splitlines(keepends=True)}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def make_class(folder: pathlib.Path) -> dict:
    """40 submissions, some in a folder per student, one a notebook, and files that are not submissions.

    Returns each submission's name (relative to ``folder``) -> its kind.
    """
    kinds = {}
    for kind, (source, count) in KINDS.items():
        for index in range(count):
            if kind == "correct" and index == 0:
                name, text = f"{kind}{index:02d}/backprop.ipynb", notebook(source)
            elif index % 2:
                name, text = f"section1/{kind}{index:02d}/backprop.py", source
            else:
                name, text = f"{kind}{index:02d}.py", source
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
            kinds[name] = kind
    for skipped in (".hidden.py", "__pycache__/backprop.py", "section1/.ipynb_checkpoints/backprop-checkpoint.ipynb",
                    ".git/hook.py", "notes.txt", "section1/marks.csv"):
        (folder / skipped).parent.mkdir(parents=True, exist_ok=True)
        (folder / skipped).write_text(CORRECT)
    return kinds


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """The class graded once by ``npseq grade CLASS --jobs 2``: (the finished command, each name's kind, cwd)."""
    here = tmp_path_factory.mktemp("instructor")
    kinds = make_class(here / "class")
    result = subprocess.run([sys.executable, "-m", "npseq", "grade", "class", "--jobs", "2", "--timeout", TIMEOUT]
                            + ONLY, capture_output=True, text=True, cwd=here, timeout=900)
    return result, kinds, here


SYNTAX_ERROR_LINE = SYNTAX_ERROR.splitlines().index("def lstm_step_backward(dnext_h, dnext_c, cache)") + 1


def student_of(name: str) -> str:
    """The student a submission of make_class's is named for: its own folder, else its file without the suffix."""
    return pathlib.PurePath(name).parent.name or pathlib.PurePath(name).stem


def students_of(kind: str, kinds: dict) -> str:
    """The students of one kind, as a summary line lists them: in the order of the submissions (their paths)."""
    return ", ".join(student_of(name) for name in sorted(kinds) if kinds[name] == kind)


@pytest.mark.slow
def test_the_summary_groups_the_class_by_mistake_with_its_students(graded_class):
    # One line per mistake: the sign slip in gate g's block is one mistake of ten students (five tensors wrong
    # together), not five lines of counts cut at three; every student is named by their folder or file.
    result, kinds, _ = graded_class
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        "graded 40 submissions: 20 entirely correct, 2 ungradable",
        "not graded: 2 of 40",  # said once, with the students, not under every exercise
        f"   syntax01: SyntaxError, line {SYNTAX_ERROR_LINE}",
        f"   syntax00: SyntaxError, line {SYNTAX_ERROR_LINE}",
        "past the time limit: 3 of 40",
        "   looping00: rnn_step_backward",
        "   looping02: rnn_step_backward",
        "   looping01: rnn_step_backward",
        "rnn_step_backward: 30 of 40 correct",
        f"   5 of 40: error: ValueError computing dx -- {students_of('dx', kinds)}",
        f"   3 of 40: time limit -- {students_of('looping', kinds)}",
        "lstm_step_backward: 28 of 40 correct",
        "   10 of 40: dx: every element + dprev_h: every element + dWx: gate g, every unit + dWh: gate g, every "
        f"unit + db: gate g, every unit -- {students_of('gate_g', kinds)}",
        "wrote grades.csv and grades.json",
    ]
    assert result.stderr == ""  # no progress bar: standard error is not a terminal


@pytest.mark.slow  # grades a whole class, as the summary's test does
def test_the_csv_has_a_row_per_student_and_a_column_per_exercise(graded_class):
    _, kinds, here = graded_class
    rows = list(csv.reader(io.StringIO((here / "grades.csv").read_text())))
    assert rows[0] == ["student", "file", "percent", "points", "max_points", *EXERCISES, "flagged", "similar_to",
                       "error"]
    students = {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}
    # the student, not a path; in the order of the files, and nothing skipped counts
    assert len(rows) == 41 and [row[0] for row in rows[1:]] == [student_of(name) for name in sorted(kinds)]
    # percent, points of max_points, then each exercise's points out of 1
    expected = {"correct": ("100", "2", "2", "1", "1"),
                "gate_g": ("58.33", "1.1667", "2", "1", "0.1667"),  # only dprev_c right: 2 of 12
                "dx": ("50", "1", "2", "0", "1"), "looping": ("50", "1", "2", "0", "1"),
                "syntax": ("0", "0", "2", "0", "0")}
    for name, kind in kinds.items():
        row = students[student_of(name)]
        assert row["file"] == os.path.join("class", name) and row["flagged"] == ""
        assert (row["percent"], row["points"], row["max_points"], row["rnn_step_backward"],
                row["lstm_step_backward"]) == expected[kind], name
        if kind == "syntax":
            assert row["error"] == \
                f"ungradable: {os.path.basename(name)}, line {SYNTAX_ERROR_LINE}: SyntaxError: expected ':'"
        else:
            assert row["error"] == ""


@pytest.mark.slow  # grades a whole class, as the summary's test does
def test_the_json_holds_the_summary_and_every_students_full_grade(graded_class):
    _, kinds, here = graded_class
    data = json.loads((here / "grades.json").read_text())
    assert data["npseq"] == MARKER and data["exercises"] == list(EXERCISES) and data["submissions"] == 40
    assert data["all_correct"] is False
    summary = {e["exercise"]: (e["correct"], e["students"], [(d["diagnosis"], d["students"]) for d in e["diagnoses"]])
               for e in data["summary"]}
    assert summary == {
        "rnn_step_backward": (30, 40, [("error: ValueError computing dx", 5), ("time limit", 3)]),
        "lstm_step_backward": (28, 40, [("dWh: gate g, every unit", 10), ("dWx: gate g, every unit", 10),
                                        ("db: gate g, every unit", 10), ("dprev_h: every element", 10),
                                        ("dx: every element", 10)]),
    }
    groups = {e["exercise"]: [(g["diagnoses"], g["known_mistake"], len(g["students"])) for g in e["groups"]]
              for e in data["summary"]}
    assert groups == {"rnn_step_backward": [(["error: ValueError computing dx"], "", 5), (["time limit"], "", 3)],
                      "lstm_step_backward": [(["dx: every element", "dprev_h: every element", "dWx: gate g, every unit",
                                               "dWh: gate g, every unit", "db: gate g, every unit"], "", 10)]}
    expected = {
        "correct": ({"rnn_step_backward": "correct", "lstm_step_backward": "correct"},
                    {"rnn_step_backward": [], "lstm_step_backward": []}),
        "gate_g": ({"rnn_step_backward": "correct", "lstm_step_backward": "incorrect"},
                   {"rnn_step_backward": [], "lstm_step_backward": [
                       "dx: every element", "dprev_h: every element", "dWx: gate g, every unit",
                       "dWh: gate g, every unit", "db: gate g, every unit"]}),
        "dx": ({"rnn_step_backward": "incorrect", "lstm_step_backward": "correct"},
               {"rnn_step_backward": ["error: ValueError computing dx"], "lstm_step_backward": []}),
        "looping": ({"rnn_step_backward": "time limit", "lstm_step_backward": "correct"},
                    {"rnn_step_backward": ["time limit"], "lstm_step_backward": []}),
        "syntax": ({"rnn_step_backward": "ungradable", "lstm_step_backward": "ungradable"},
                   {"rnn_step_backward": ["ungradable: SyntaxError"],
                    "lstm_step_backward": ["ungradable: SyntaxError"]}),
    }
    files = {student_of(name): name for name in kinds}
    assert [student["student"] for student in data["students"]] == [student_of(name) for name in sorted(kinds)]
    for student in data["students"]:
        kind = kinds[files[student["student"]]]
        assert (student["statuses"], student["diagnoses"]) == expected[kind], student["student"]
        grade = student["grade"]  # what `npseq grade FILE --format json` printed for this file
        assert grade["file"] == student["file"] == os.path.join("class", files[student["student"]])
        if kind == "syntax":
            assert set(grade) == {"file", "error", "score", "all_correct"} and "SyntaxError" in grade["error"]
        else:
            assert [e["name"] for e in grade["exercises"]] == list(EXERCISES)
            assert [e["status"] for e in grade["exercises"]] == list(expected[kind][0].values())
            assert grade["score"] == student["score"] and student["error"] == ""
            assert (grade["points"], grade["max_points"]) == (student["total_points"], student["max_points"]) == \
                (sum(student["points"].values()), 2)
        if kind == "looping":
            assert grade["exercises"][0]["failure"].startswith(
                f"time limit: rnn_step_backward did not finish within {TIMEOUT} s")


def test_the_summary_of_a_large_class_names_ten_students_per_list_and_says_where_the_others_are():
    def student(name, error="", statuses=("correct", "correct")):
        statuses = dict(zip(EXERCISES, statuses))
        diagnoses = {exercise: [] if status == "correct" else [status] for exercise, status in statuses.items()}
        if error:  # as grade_class records a file that got no grade: the same status and diagnosis everywhere
            kind = error.split(":")[0]
            statuses, diagnoses = dict.fromkeys(EXERCISES, kind), {exercise: [kind] for exercise in EXERCISES}
        points = {exercise: float(status == "correct") for exercise, status in statuses.items()}
        return StudentGrade(name, os.path.join("class", name), 50.0 * sum(points.values()), points, statuses,
                            diagnoses, False, error=error)

    students = [student(f"s{index:03d}.py", f"ungradable: s{index:03d}.py, line 3: SyntaxError: expected ':'")
                for index in range(11)]
    students += [student("import.py", "ungradable: cannot import import.py: ValueError: no"),
                 student(os.path.join("nb", "hw.ipynb"), "ungradable: hw.ipynb, cell 2, line 4: SyntaxError: bad"),
                 student("sleeps.py", "time limit: grading did not finish within 45 s"),
                 student("killed.py", "crashed: the grading process died of SIGKILL and gave no report it could read")]
    students += [student(f"loop{index:02d}.py", statuses=("time limit", "correct")) for index in range(12)]
    students += [student(f"ok{index:03d}.py") for index in range(200 - len(students))]
    lines = ClassReport(EXERCISES, students).summary_lines()
    assert lines == [
        "graded 200 submissions: 173 entirely correct, 1 crashed, 1 time limit, 13 ungradable",
        "not graded: 15 of 200",
        *[f"   s{index:03d}.py: SyntaxError, line 3" for index in range(10)],
        "   (and 5 more; the CSV's error column has them all)",
        "past the time limit: 12 of 200",
        *[f"   loop{index:02d}.py: rnn_step_backward" for index in range(10)],
        "   (and 2 more; the JSON report's statuses have them all)",
        "rnn_step_backward: 173 of 200 correct",
        "   12 of 200: time limit -- " + ", ".join(f"loop{index:02d}.py" for index in range(10))
        + " and 2 more (the JSON report's groups have them all)",
        "lstm_step_backward: 185 of 200 correct",
    ]
    later = ClassReport(EXERCISES, students[10:15]).summary_lines()  # the reasons of the names cut above
    assert later[1:7] == ["not graded: 5 of 5", "   s010.py: SyntaxError, line 3", "   import.py: ValueError",
                          f"   {os.path.join('nb', 'hw.ipynb')}: SyntaxError, cell 2, line 4",
                          "   sleeps.py: time limit", "   killed.py: crashed"]


def test_a_known_mistake_is_named_and_two_mistakes_are_two_groups():
    # Two students swapped the LSTM's gates i and f (the hand-out's "two gates swapped": the same five diagnoses),
    # one wrote sigma' as sigma, one made both tensors' mistakes of another kind: three groups, never merged.
    swapped, sigma = (next(m for m in MISTAKES if m.title == title) for title in ("two gates swapped",
                                                                                "sigma' written as sigma"))

    def student(name, lstm_diagnoses):
        statuses = {"rnn_step_backward": "correct", "lstm_step_backward": "incorrect"}
        return StudentGrade(name, os.path.join("class", name, "hw.py"), 50.0, dict.fromkeys(EXERCISES, 0.5), statuses,
                            {"rnn_step_backward": [], "lstm_step_backward": list(lstm_diagnoses)}, False)

    students = [student("ann", swapped.diagnoses), student("ben", sigma.diagnoses), student("cat", swapped.diagnoses),
                student("dan", ("dx: every element", "dWx: gate g, every unit"))]
    lines = ClassReport(EXERCISES, students).summary_lines()
    assert lines[-4:] == [
        "lstm_step_backward: 0 of 4 correct",
        f"   2 of 4: {' + '.join(swapped.diagnoses)} (the known mistake \"two gates swapped\") -- ann, cat",
        "   1 of 4: dx: every element + dWx: gate g, every unit -- dan",
        f"   1 of 4: {' + '.join(sigma.diagnoses)} (the known mistake \"sigma' written as sigma\") -- ben",
    ]


def test_find_submissions_names_each_student_by_their_folder_or_file(tmp_path):
    for name in ("section1/alice/hw/backprop.py", "section1/bob.ipynb", "carol/a.py", "carol/b.py", "dave/hw.py",
                 "erin/hw.py"):
        (tmp_path / "class" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "class" / name).write_text("")
    found = find_submissions([tmp_path / "class"])
    # the outermost folder that holds one submission alone; files whose folders hold others keep their paths
    assert [submission.name for submission in found] == [
        os.path.join("carol", "a.py"), os.path.join("carol", "b.py"), "dave", "erin", "alice",
        os.path.join("section1", "bob.ipynb")]
    assert [os.path.relpath(submission.path, tmp_path / "class") for submission in found] == [
        os.path.join(*name.split("/")) for name in ("carol/a.py", "carol/b.py", "dave/hw.py", "erin/hw.py",
                                                    "section1/alice/hw/backprop.py", "section1/bob.ipynb")]


def test_find_submissions_names_each_file_from_the_folder_given(tmp_path):
    (tmp_path / "class" / "bob" / ".ipynb_checkpoints").mkdir(parents=True)
    for name in ("alice.py", "bob/hw.ipynb", "bob/.ipynb_checkpoints/hw-checkpoint.ipynb", "bob/readme.md"):
        (tmp_path / "class" / name).write_text("")
    (tmp_path / "late.py").write_text("")
    found = find_submissions([tmp_path / "class", tmp_path / "late.py", tmp_path / "class" / "alice.py"])
    assert found == [ClassSubmission("alice", str(tmp_path / "class" / "alice.py")),
                     ClassSubmission("bob", str(tmp_path / "class" / "bob" / "hw.ipynb")),
                     ClassSubmission("late", str(tmp_path / "late.py"))]  # alice.py only once
    (tmp_path / "empty" / ".hidden").mkdir(parents=True)
    (tmp_path / "empty" / ".hidden" / "x.py").write_text("")
    for paths, message in (([tmp_path / "nope"], f"no such file or folder: {tmp_path / 'nope'}"),
                           ([tmp_path / "empty"], f"no .py or .ipynb file in the folder {tmp_path / 'empty'}"),
                           ([tmp_path / "class" / "bob" / "readme.md"], "expected a .py or .ipynb file or a folder")):
        with pytest.raises(ClassroomError, match="^" + message):
            find_submissions(paths)


GRADESCOPE_METADATA = """\
---
submission_1001:
  :submitters:
  - :name: Jane Doe
    :sid: '1001'
    :email: jane@uni.example
  :created_at: 2026-11-30 21:14:05.000000000 -08:00
  :score: 1.0
  :history:
  - :id: 77
    :created_at: 2026-11-29 10:00:00.000000000 -08:00
    :score: 0.5
submission_1002:
  :submitters:
  - :name: "Zo\\u00EB O'Neil"
    :sid: '1002'
    :email: zoe@uni.example
  - :name: 'Li ''Lee'' Wei'
    :email: li@uni.example
  :created_at: 2026-11-30 22:00:00.000000000 -08:00
submission_1003:
  :submitters:
  - :name: Jane Doe
    :email: jane.d@uni.example
submission_1004:
  :created_at: 2026-11-30 23:00:00.000000000 -08:00
"""


@pytest.mark.slow
def test_a_gradescope_export_names_each_student_as_gradescope_does(tmp_path, capsys):
    export = tmp_path / "assignment_55_export"
    for folder, source in (("submission_1001", CORRECT), ("submission_1002", UNTRANSPOSED_DX),
                           ("submission_1003", CORRECT), ("submission_1004", CORRECT)):
        (export / folder).mkdir(parents=True)
        (export / folder / "backprop_exercises.py").write_text(source)
    (export / "submission_metadata.yml").write_text(GRADESCOPE_METADATA)
    names = [submission.name for submission in find_submissions([export])]
    # namesakes told apart by their folders; a folder the metadata names nobody for keeps its own name
    assert names == ["Jane Doe (submission_1001)", "Zoë O'Neil, Li 'Lee' Wei", "Jane Doe (submission_1003)",
                     "submission_1004"]
    assert main(["grade", str(export), "--only", "rnn_step_backward", "--timeout", TIMEOUT,
                 "--csv", str(tmp_path / "g.csv"), "--json", str(tmp_path / "g.json")]) == 1
    rows = list(csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text())))
    assert [(row["student"], row["percent"]) for row in rows] == [
        ("Jane Doe (submission_1001)", "100"), ("Zoë O'Neil, Li 'Lee' Wei", "0"), ("Jane Doe (submission_1003)", "100"),
        ("submission_1004", "100")]
    printed = capsys.readouterr().out
    assert "1 of 4: error: ValueError computing dx -- Zoë O'Neil, Li 'Lee' Wei" in printed, printed


def test_a_missing_path_or_an_option_of_the_other_mode_is_one_line_and_exit_code_2(tmp_path, capsys):
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "a.py").write_text(CORRECT)
    for argv, message in (
            ([str(tmp_path / "class"), str(tmp_path / "nope")], f"no such file or folder: {tmp_path / 'nope'}"),
            ([str(tmp_path / "class"), "--format", "json"], "--format json: only for grading one file"),
            ([str(tmp_path / "class" / "a.py"), "--csv", "x.csv"], "--csv: only for grading a class"),
            ([str(tmp_path / "class"), "--csv", "same", "--json", "same"], "--csv and --json: expected two")):
        assert main(["grade", *argv]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1, captured
        assert captured.err.startswith(f"npseq grade: {message}"), captured.err
    assert not (tmp_path / "grades.csv").exists()


@pytest.mark.slow
def test_only_reports_it_wrote_are_replaced_without_force(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "a.py").write_text(CORRECT)
    command = ["grade", "class", "--only", "rnn_step_backward", "--timeout", "60"]
    foreign = "name,grade\nalice,A\n"
    (tmp_path / "grades.csv").write_text(foreign)
    assert main(command) == 2
    captured = capsys.readouterr()
    assert captured.err == "npseq grade: grades.csv exists and is not a CSV report of npseq grade: not replaced " \
                           "(use --force to replace it, or give another path)\n"
    assert (tmp_path / "grades.csv").read_text() == foreign and not (tmp_path / "grades.json").exists()

    assert main(command + ["--force"]) == 0
    assert capsys.readouterr().out.endswith("wrote grades.csv and grades.json\n")
    assert (tmp_path / "grades.csv").read_text().startswith(
        "student,file,percent,points,max_points,rnn_step_backward,flagged,similar_to,error\n")
    assert main(command) == 0  # its own reports, from the run before: replaced
    (tmp_path / "grades.csv").write_text("student,file,score,rnn_step_backward,flagged,error\n"
                                         "a.py,class/a.py,100,1,no,\n")
    assert main(command) == 0  # its own report as written before the CSV said percent and points: replaced too
    assert (tmp_path / "grades.csv").read_text().startswith("student,file,percent,")
    capsys.readouterr()

    # a link is never taken for a report, and a report replaces the link, never what it points to
    (tmp_path / "notes.json").write_text("{}")
    (tmp_path / "grades.json").unlink()
    (tmp_path / "grades.json").symlink_to(tmp_path / "notes.json")
    assert main(command) == 2
    assert "grades.json exists and is not a JSON report of npseq grade" in capsys.readouterr().err
    assert main(command + ["--force"]) == 0
    assert not (tmp_path / "grades.json").is_symlink() and (tmp_path / "notes.json").read_text() == "{}"
    assert json.loads((tmp_path / "grades.json").read_text())["npseq"] == MARKER
    assert [name for name in os.listdir(tmp_path) if name.startswith(".npseq-")] == []  # no temporary file left


@pytest.mark.slow
def test_the_progress_bar_shows_only_where_asked_or_on_a_terminal(tmp_path, capsys):
    (tmp_path / "a.py").write_text(CORRECT)
    submissions = find_submissions([tmp_path / "a.py"])
    report = grade_class(submissions, only=["rnn_step_backward"], jobs=1, timeout=60, progress=True)
    assert report.all_correct and "grading: 100%" in capsys.readouterr().err
    grade_class(submissions, only=["rnn_step_backward"], jobs=1, timeout=60)  # stderr here is not a terminal
    assert capsys.readouterr().err == ""


def gone(pid: int) -> bool:
    """Whether the process ``pid`` has ended (a zombie waiting for its reaper has)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def wait_until_gone(pids) -> bool:
    for _ in range(300):  # SIGKILL takes effect in milliseconds; this only bounds a test that would fail
        if all(gone(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


def processes_of(path) -> list:
    """The processes whose command line names ``path``: a grading of it (``python -m npseq.grade ... PATH``) and
    every process forked from one, a submission's included (a fork keeps its parent's command line)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                if str(path).encode() in handle.read() and not gone(int(name)):
                    found.append(int(name))
        except OSError:
            pass
    return found


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads process states from /proc")
def test_each_grading_is_a_process_tree_killed_whole_past_its_deadline_or_when_done(tmp_path):
    (tmp_path / "sleeps.py").write_text("import time\ntime.sleep(600)\n")
    # a process left running: forked while the file is imported, it would hold the grading's output pipes
    (tmp_path / "leaves_a_process.py").write_text(
        "import os, time\nif os.fork() == 0:\n    time.sleep(600)\n    os._exit(0)\n\n" + CORRECT)
    (tmp_path / "kills_the_grader.py").write_text("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n")
    submissions = find_submissions([tmp_path])
    assert [submission.name for submission in submissions] == ["kills_the_grader", "leaves_a_process", "sleeps"]
    # the import would be stopped at 120 s: the deadline comes first
    [sleeps] = grade_class(submissions[2:], only=["rnn_step_backward"], timeout=120, deadline=5).students
    assert sleeps.error == "time limit: grading did not finish within 5 s"
    assert sleeps.statuses == {"rnn_step_backward": "time limit"} and sleeps.score == 0
    assert sleeps.diagnoses == {"rnn_step_backward": ["time limit"]}

    report = grade_class(submissions[:2], only=["rnn_step_backward"], jobs=2, timeout=60)
    students = {student.name: student for student in report.students}
    assert students["leaves_a_process"].all_correct
    killer = students["kills_the_grader"]
    if os.geteuid() == 0:  # its user is not the grader's: the kill is refused, and the file does not import
        assert killer.error.startswith("ungradable: cannot import kills_the_grader.py: PermissionError")
        assert killer.diagnoses == {"rnn_step_backward": ["ungradable: PermissionError"]}
        assert report.summary_lines()[0] == "graded 2 submissions: 1 entirely correct, 1 ungradable"
    else:  # the same user: the grader dies, and the class goes on
        assert killer.error.startswith("crashed: the grading process died of SIGKILL and gave no report it could read")
        assert killer.diagnoses == {"rnn_step_backward": ["crashed"]}
        assert report.summary_lines()[0] == "graded 2 submissions: 1 entirely correct, 1 crashed"

    for path in ("sleeps.py", "leaves_a_process.py"):
        assert wait_until_gone(processes_of(tmp_path / path)), path
