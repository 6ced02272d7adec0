"""Numbers a student cannot copy: a seed (or a student's name) gives every case the same shapes and other numbers,
the hand-out carries it to the grader, and the autograder grades each student on their own and draws hidden cases
when it grades."""
import json
import subprocess
import sys
import zipfile

import pytest

from npseq.cli import main
from npseq.course import grade_file
from npseq.course.autograder import main as autograder_main
from npseq.course.autograder import submitters
from npseq.course.cases import student_seed
from npseq.course.gradescope import Scoring
from npseq.course.handout import SKELETON_NAME, chosen_exercises, solutions
from npseq.course.secret import SECRET_VARIABLE, CourseSecretError, course_secret
from npseq.course.sheet import EXERCISE_BY_NAME, EXERCISES

LSTM = "lstm_step_backward"
SECRET = "5e" * 32  # a course secret, as npseq.course.secret writes one
WRONG = solutions(chosen_exercises([LSTM])).replace("dc * i * (1 - g ** 2)", "-dc * i * (1 - g ** 2)")


def _arrays(inputs: dict) -> dict:
    """A case's inputs by name, a dict of them (a model's parameters) opened up: ``params.W_out``."""
    arrays = {}
    for name, value in inputs.items():
        if isinstance(value, dict):
            arrays.update({f"{name}.{key}": part for key, part in value.items()})
        else:
            arrays[name] = value
    return arrays


def test_a_seed_keeps_every_shape_and_changes_every_number():
    for exercise in EXERCISES:
        for case in exercise.cases:
            sheet, alice, again = (_arrays(case.make_inputs(variant))
                                   for variant in (0, student_seed("alice", SECRET), 7))
            assert sheet.keys() == alice.keys()
            for name, value in sheet.items():
                if hasattr(value, "shape"):
                    assert value.shape == alice[name].shape and value.dtype == alice[name].dtype, (case.label, name)
            floats = [name for name, value in sheet.items() if getattr(value, "dtype", None) is not None
                      and value.dtype.kind == "f"]
            assert floats and all((sheet[name] != alice[name]).any() for name in floats), case.label
            assert all((again[name] == _arrays(case.make_inputs(7))[name]).all() for name in floats)  # a seed is a seed


@pytest.mark.slow
def test_two_students_handouts_grade_on_numbers_of_their_own(tmp_path, capsys):
    reports = {}
    for student in ("alice@uni.example", "bob@uni.example"):
        out = tmp_path / student.split("@")[0]
        assert main(["exercises", "--out", str(out), "--only", LSTM, "--student", student]) == 0
        seed = student_seed(student, course_secret())  # the secret the first hand-out made
        assert f"--seed {seed}" in capsys.readouterr().out
        assert f"Your cases are numbered {seed}" in (out / "README.md").read_text()
        (out / "mine.py").write_text(WRONG)
        # the hand-out grades itself with its student's numbers
        skeleton = (out / SKELETON_NAME).read_text()
        assert f"'--seed', '{seed}'" in skeleton
        reports[student] = grade_file(out / "mine.py", only=[LSTM], seed=seed)[LSTM]
    alice, bob = reports.values()
    assert [row.case for row in alice.rows] == [row.case for row in bob.rows]  # the same cases, by their shapes
    assert alice.diagnoses() == bob.diagnoses() == ["dx: every element", "dprev_h: every element",
                                                    "dWx: gate g, every unit", "dWh: gate g, every unit",
                                                    "db: gate g, every unit"]
    assert [row.problem for row in alice.rows] != [row.problem for row in bob.rows]  # the numbers in them differ
    right = tmp_path / "right.py"
    right.write_text(solutions(chosen_exercises([LSTM])))
    assert all(grade_file(right, only=[LSTM], seed=seed).ok for seed in (0, 1, student_seed("carol", SECRET)))


@pytest.mark.slow
def test_the_skeleton_run_as_a_script_uses_its_seed(tmp_path, capsys):
    out = tmp_path / "hand"
    assert main(["exercises", "--out", str(out), "--only", LSTM, "--seed", "12345"]) == 0
    result = subprocess.run([sys.executable, SKELETON_NAME, "--format", "json"], cwd=out, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 1 and json.loads(result.stdout)["score"] == 0


def test_bad_seeds_are_one_line(tmp_path, capsys):
    for argv in (["--seed", "-1"], ["--seed", "x"], ["--seed", "1", "--student", "a"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["grade", str(tmp_path / "x.py"), *argv])
        assert exit_info.value.code == 2 and capsys.readouterr().err.count("\n") == 1
    assert main(["grade", str(tmp_path / "x.py"), "--student", " "]) == 2
    assert "--student: expected a name" in capsys.readouterr().err


def test_the_autograder_grades_each_student_on_their_own_and_draws_hidden_cases_now(tmp_path):
    (tmp_path / "source").mkdir()
    scoring = Scoring(only=(LSTM,), hidden={LSTM: (2,)}, per_student=True, secret=SECRET)
    (tmp_path / "source" / "config.json").write_text(scoring.to_json())
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / SKELETON_NAME).write_text(WRONG)
    metadata = {"users": [{"email": "Alice@Uni.Example ", "name": "Alice"}]}
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata))
    assert submitters(str(tmp_path)) == "alice@uni.example"
    outputs = []
    for _ in range(2):
        assert autograder_main(["--root", str(tmp_path)]) == 0
        tests = json.loads((tmp_path / "results" / "results.json").read_text())["tests"]
        outputs.append([test["output"] for test in tests])
    expected = grade_file(tmp_path / "submission" / SKELETON_NAME, only=[LSTM],
                          seed=student_seed("alice@uni.example", SECRET))
    first = EXERCISE_BY_NAME[LSTM].cases[0].label
    visible_row = next(row for row in expected[LSTM].rows if not row.ok and row.case == first)
    assert visible_row.problem in outputs[0][0]  # case 1: Alice's own numbers
    assert outputs[0][0] == outputs[1][0] and outputs[0][1] != outputs[1][1]  # case 2, hidden: drawn at grading


def test_a_classmates_numbers_need_the_course_secret(tmp_path, monkeypatch, capsys):
    # The seed was the e-mail's alone: anyone who knew a classmate's address made that classmate's hand-out.
    instructor, other = tmp_path / "instructor" / "secret", tmp_path / "student" / "secret"
    hand_outs = {}
    for who, secret_file in (("instructor", instructor), ("student", other)):
        monkeypatch.setenv(SECRET_VARIABLE, str(secret_file))
        out = tmp_path / who / "hand"
        assert main(["exercises", "--out", str(out), "--only", LSTM, "--student", "carol@uni.example"]) == 0
        hand_outs[who] = (out / SKELETON_NAME).read_text()
        assert oct(secret_file.stat().st_mode & 0o777) == "0o600"  # like the key: its owner's only
    capsys.readouterr()
    assert hand_outs["instructor"] != hand_outs["student"]  # another secret, other numbers
    assert instructor.read_text() != other.read_text()
    monkeypatch.setenv(SECRET_VARIABLE, str(instructor))
    assert main(["exercises", "--out", str(tmp_path / "again"), "--only", LSTM, "--student", "carol@uni.example"]) == 0
    assert (tmp_path / "again" / SKELETON_NAME).read_text() == hand_outs["instructor"]  # made once, then read
    capsys.readouterr()
    # the autograder holds the instructor's secret, and grading --student without one is refused in one line
    bundle = tmp_path / "autograder.zip"
    assert main(["exercises", "--gradescope", str(bundle), "--only", LSTM, "--per-student"]) == 0
    config = json.loads(zipfile.ZipFile(bundle).read("config.json"))
    assert config["per_student"] is True and config["secret"] == instructor.read_text().strip()
    monkeypatch.setenv(SECRET_VARIABLE, str(tmp_path / "nowhere" / "secret"))
    right = tmp_path / "right.py"
    right.write_text(solutions(chosen_exercises([LSTM])))
    capsys.readouterr()
    assert main(["grade", str(right), "--only", LSTM, "--student", "carol@uni.example"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "no course secret at" in error and "--seed" in error
    with pytest.raises(CourseSecretError):
        course_secret()
    with pytest.raises(ValueError, match="secret: expected the course secret"):
        Scoring(only=(LSTM,), per_student=True)
