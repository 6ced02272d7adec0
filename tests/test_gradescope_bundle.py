"""Gradescope: results.json against the specification, the autograder zip and its wheel, and a round trip through
setup.sh and run_autograder as Gradescope runs them (a fresh virtual environment, npseq from the zip's wheel)."""
import base64
import csv
import dataclasses
import hashlib
import importlib.metadata
import io
import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import zipfile

import pytest

from npseq.cli import main as npseq_main
from npseq.course import grade_file
from npseq.course.autograder import find_submission
from npseq.course.autograder import main as autograder_main
from npseq.course.exercise import solution_source
from npseq.course.gradescope import BundleError, Scoring, results, unloadable, write_bundle, write_results
from npseq.course.handout import NOTEBOOK_NAME, SKELETON_NAME, chosen_exercises, skeleton, solutions
from npseq.course.hints import hint_text
from npseq.course.scoring import ALL_CASES
from npseq.course.sheet import DEFAULT_SETS, EXERCISE_BY_NAME, SET_NAMES, names_of_sets
from npseq.course.submission import SubmissionError
from npseq.course.wheels import build_wheel
from npseq.errors import InvalidValueError
from npseq.exercises import main as exercises_main

# Gradescope's documented keys and values (Autograder Specifications, "Output Format").
GRADESCOPE_TOP = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
                  "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
GRADESCOPE_TEST = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
                   "tags", "visibility", "extra_data"}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
OUTPUT_FORMATS = {"text", "html", "simple_format", "md", "ansi"}
STATUS = {"passed", "failed"}

STEPS = ("rnn_step_backward", "lstm_step_backward")
SCORING = Scoring(only=STEPS, points={"rnn_step_backward": 2}, hidden={"lstm_step_backward": (2,)}, timeout=10)
TOTAL = 3.0  # rnn_step_backward 2, lstm_step_backward 1

SOLVED = solutions(chosen_exercises(list(STEPS)))  # the key's, as a learner may hand it in
# A planted sign error in rnn_step_backward's db (the first of the two returns that end so): 4 of its 5 tensors right.
assert SOLVED.count("da.sum(axis=0)") == 2
WRONG = SOLVED.replace("da.sum(axis=0)", "-da.sum(axis=0)", 1)
LOOPING = SOLVED + "\n\ndef lstm_step_backward(dnext_h, dnext_c, cache):\n    while True:\n        pass\n"
ONLY_RNN = solutions(chosen_exercises(["rnn_step_backward"]))
HANDED_IN_NPSEQ = (SOLVED + "\n\nfrom npseq.functional import lstm_step_backward as npseq_lstm\n\n\n"
                   "def lstm_step_backward(dnext_h, dnext_c, cache):\n"
                   "    return npseq_lstm(dnext_h, dnext_c, cache)\n")


def validate(data: dict, scoring: Scoring) -> None:
    """``data`` is a results.json that Gradescope accepts, and its scores and visibilities follow ``scoring``."""
    json.dumps(data, allow_nan=False)
    assert set(data) <= GRADESCOPE_TOP, set(data) - GRADESCOPE_TOP
    assert type(data["score"]) in (int, float) and isinstance(data["execution_time"], int)
    assert isinstance(data["output"], str) and len(data["output"]) <= 50_000
    assert data["output_format"] in OUTPUT_FORMATS and data["stdout_visibility"] in VISIBILITY
    assert isinstance(data["tests"], list)
    for test in data["tests"]:
        assert set(test) <= GRADESCOPE_TEST, set(test) - GRADESCOPE_TEST
        assert all(isinstance(test[key], str) for key in ("name", "output"))
        assert type(test["score"]) in (int, float) and type(test["max_score"]) in (int, float)
        assert 0 <= test["score"] <= test["max_score"]
        assert test["status"] in STATUS and test["output_format"] in OUTPUT_FORMATS
        assert test["visibility"] in VISIBILITY
        assert isinstance(test["tags"], list) and all(isinstance(tag, str) for tag in test["tags"])
        assert len(test["output"]) <= 20_000
        assert test["output"].startswith("```") and test["output"].endswith("```")  # a code block: tables stay
    graded = [test for test in data["tests"] if test["name"] != "honesty note"]
    assert data["score"] == pytest.approx(sum(test["score"] for test in data["tests"]))
    assert 0 <= data["score"] <= scoring.total
    assert sum(test["max_score"] for test in graded) == pytest.approx(scoring.total)
    for test in graded:
        exercise, case = test["tags"][0], int(test["number"].split(".")[1])
        assert test["number"] == f"{scoring.number_of(exercise)}.{case}" and test["name"].startswith(test["number"])
        hidden = case in scoring.hidden_cases(exercise)
        assert test["visibility"] == ("after_published" if hidden else "visible")
    for test in data["tests"]:
        if test["name"] == "honesty note":
            assert test["visibility"] == "hidden" and test["score"] == test["max_score"] == 0


def scores_of(data: dict) -> list:
    return [test["score"] for test in data["tests"]]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Reports of small files, graded once for the module: name -> GradeReport."""
    folder = tmp_path_factory.mktemp("graded")
    reports = {}
    for name, text in (("correct", SOLVED), ("wrong", WRONG), ("looping", LOOPING), ("not_attempted", ONLY_RNN),
                       ("npseq_inside", HANDED_IN_NPSEQ)):
        path = folder / f"{name}.py"
        path.write_text(text)
        reports[name] = grade_file(path, only=STEPS, timeout=2, quiet=True)
    return reports


@pytest.mark.slow
def test_a_correct_submission_scores_every_point_one_test_per_case(graded):
    data = results(graded["correct"], SCORING)
    validate(data, SCORING)
    assert data["score"] == TOTAL and scores_of(data) == [1.0, 1.0, 0.5, 0.5]
    assert [t["name"] for t in data["tests"]] == ["1.1 rnn_step_backward: N=3 D=4 H=5",
                                                  "1.2 rnn_step_backward: N=1 D=2 H=1",
                                                  "2.1 lstm_step_backward: N=3 D=4 H=5",
                                                  "2.2 lstm_step_backward: N=1 D=2 H=2"]
    assert [t["visibility"] for t in data["tests"]] == ["visible"] * 3 + ["after_published"]
    assert {t["status"] for t in data["tests"]} == {"passed"} and data["tests"][0]["tags"] == ["rnn_step_backward"]
    first = data["tests"][0]["output"]
    assert "case 1 (N=3 D=4 H=5): 5/5 tensors correct, 1 of 1 points" in first and "N=1 D=2 H=1" not in first
    assert "abs diff vs npseq" in first and "dprev_h" in first
    # the summary gives the visible score and the hidden cases' worth, never how they went
    assert data["output"].startswith("**Score on the visible cases: 2.5 of 2.5 points.** 1 more case, worth 0.5 "
                                     "points, is shown when grades are published.")
    assert data["output_format"] == "md" and data["stdout_visibility"] == "hidden"


def test_a_partly_wrong_submission_scores_the_fraction_of_correct_tensors_in_each_case(graded):
    data = results(graded["wrong"], SCORING)
    validate(data, SCORING)
    assert scores_of(data) == pytest.approx([0.8, 0.8, 0.5, 0.5]) and data["score"] == pytest.approx(2.6)
    assert [t["status"] for t in data["tests"]] == ["failed", "failed", "passed", "passed"]
    assert "4/5 tensors correct, 0.8 of 1 points" in data["tests"][0]["output"]
    assert "FAIL (worst at db[" in data["tests"][0]["output"]


def test_a_wrong_exercise_repeats_the_handouts_hints_at_its_level_and_never_more(graded):
    structure = hint_text(EXERCISE_BY_NAME["rnn_step_backward"].docstring, "structure")
    equations = hint_text(EXERCISE_BY_NAME["rnn_step_backward"].docstring, "equations")
    assert structure.startswith("Structure:") and "Hints:" not in structure and "Hints:" in equations
    for level, shown in (("none", ""), ("structure", structure), ("equations", equations)):
        scoring = dataclasses.replace(SCORING, hints=level)
        data = results(graded["wrong"], scoring)
        validate(data, scoring)
        outputs = [test["output"] for test in data["tests"]]
        with_hint = [output for output in outputs if "From your hand-out" in output]
        if level == "none":
            assert not with_hint and not any("Structure:" in output for output in outputs)
            continue
        # once, under the first failing case of the wrong exercise; none under a right one
        assert with_hint == [outputs[0]] and f"From your hand-out (hints: {level}):\n{shown}" in outputs[0]
        assert ("Hints:" in outputs[0]) == (level == "equations")
    assert Scoring.from_json(dataclasses.replace(SCORING, hints="none").to_json()).hints == "none"
    assert Scoring.from_json("{}").hints == "structure"
    with pytest.raises(InvalidValueError, match="hints: expected one of"):
        Scoring(hints="all")


def test_a_function_past_its_time_limit_scores_zero_in_every_case_and_says_why(graded):
    data = results(graded["looping"], SCORING)
    validate(data, SCORING)
    assert scores_of(data) == [1.0, 1.0, 0, 0] and data["score"] == 2.0
    for test in data["tests"][2:]:
        assert test["status"] == "failed" and "time limit: lstm_step_backward did not finish within 2 s" in \
            test["output"]


def test_a_function_not_defined_scores_zero_and_the_summary_lists_it(graded):
    data = results(graded["not_attempted"], SCORING)
    validate(data, SCORING)
    assert scores_of(data) == [1.0, 1.0, 0, 0] and data["score"] == 2.0
    assert all("not attempted (not defined in the file)" in t["output"] for t in data["tests"][2:])
    assert "Not attempted (0 points, not defined in the file): `lstm_step_backward`" in data["output"]


def test_the_honesty_note_is_one_more_test_that_only_the_instructor_sees(graded):
    report = graded["npseq_inside"]
    assert report.flagged
    data = results(report, SCORING)
    validate(data, SCORING)
    note = data["tests"][-1]
    assert note["name"] == "honesty note" and note["visibility"] == "hidden" and note["max_score"] == 0
    assert all(line in note["output"] for line in report.honesty_lines())
    assert data["score"] == TOTAL  # the score is unchanged; the instructor decides
    student_view = [data["output"]] + [t["output"] for t in data["tests"][:-1]]
    assert not any("honesty" in text for text in student_view)


def test_every_exercise_counts_one_point_by_default_and_hidden_all_hides_every_case(graded):
    scoring = Scoring(only=STEPS, hidden={"rnn_step_backward": ALL_CASES})
    data = results(graded["correct"], scoring)
    validate(data, scoring)
    assert scores_of(data) == [0.5, 0.5, 0.5, 0.5] and data["score"] == 2.0
    assert [t["visibility"] for t in data["tests"]] == ["after_published"] * 2 + ["visible"] * 2
    assert "visible cases: 1 of 1 points.** 2 more cases, worth 1 points, are shown" in data["output"]


def test_a_file_that_cannot_be_graded_shows_every_case_at_zero_with_the_reason(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def rnn_step_backward(:\n")
    with pytest.raises(SubmissionError) as error:
        grade_file(path, only=STEPS)
    data = unloadable(str(error.value), SCORING, seconds=1.4)
    validate(data, SCORING)
    assert data["score"] == 0 and len(data["tests"]) == 4 and data["execution_time"] == 1
    assert all("broken.py, line 1: SyntaxError" in t["output"] and t["status"] == "failed" for t in data["tests"])
    assert "**This file cannot be graded:**" in data["output"] and "SyntaxError" in data["output"]


def test_long_outputs_are_cut_with_a_note_and_stay_code_blocks(tmp_path):
    scoring = Scoring(only=["rnn_step_backward"])
    for length in (100_000, 100):  # a message far longer than a test's output, and one that fits
        path = tmp_path / f"loud{length}.py"
        path.write_text(f'def rnn_step_backward(dnext_h, cache):\n    raise ValueError("`" * 40 + "x" * {length})\n')
        data = results(grade_file(path, only=scoring.only, quiet=True), scoring)
        validate(data, scoring)
        output = data["tests"][0]["output"]
        assert output.startswith("```text\n") and output.endswith("\n```")  # 40 backticks inside do not end it
        # cut by the grader (a learner's message is 600 characters at most) or by the test's own cap
        cut = "more characters cut" in output or "(cut here: " in output
        assert cut == (length > 1000) and len(output) <= 20_000
    assert "ValueError: `...(40 backticks)xxx" in output


def test_a_scoring_reads_back_from_its_json_and_refuses_what_does_not_fit():
    scoring = Scoring(only=("lstm_step_backward", "rnn_step_backward"), points={"lstm_step_backward": 0.5},
                      hidden={"rnn_step_backward": [2, 1, 2], "lstm_step_backward": "all"}, timeout=5, memory_mb=None)
    assert scoring.only == STEPS and scoring.hidden == {"rnn_step_backward": (1, 2), "lstm_step_backward": "all"}
    assert Scoring.from_json(scoring.to_json()) == scoring and scoring.total == 1.5
    assert Scoring.from_json("{}") == Scoring() and Scoring().total == len(names_of_sets(DEFAULT_SETS))
    assert scoring.hidden_cases("lstm_step_backward") == {1, 2}
    bad = {
        '{"only": ["softmax"]}': "only: expected names from",
        '{"points": {"softmax": 1}}': "points: expected names of the graded exercises",
        '{"points": {"rnn_step_backward": -1}}': "points: rnn_step_backward: expected a number >= 0, got -1",
        '{"points": {"rnn_step_backward": true}}': "points: rnn_step_backward: expected a number >= 0, got True",
        '{"only": ["rnn_step_backward"], "points": {"lstm_step_backward": 2}}':
            "points: expected names of the graded exercises ['rnn_step_backward'], got ['lstm_step_backward']",
        '{"hidden": {"rnn_step_backward": [3]}}':
            'hidden: rnn_step_backward: expected case numbers from 1 to 2 or "all", got [3]',
        '{"hidden": {"rnn_step_backward": []}}': "hidden: rnn_step_backward: expected case numbers",
        '{"hidden": {"rnn_step_backward": "some"}}': "hidden: rnn_step_backward: expected case numbers",
        '{"timeout": 0}': "timeout: expected a positive number of seconds, got 0",
        '{"memory_mb": 1.5}': "memory_mb: expected a positive whole number",
        '{"colour": 1}': "config: expected fields from",
        '[1]': "config: expected a JSON object, got list",
        'nope': "config: expected JSON text",
    }
    for text, message in bad.items():
        with pytest.raises(InvalidValueError) as error:
            Scoring.from_json(text)
        assert str(error.value).startswith(message) and "\n" not in str(error.value), (text, str(error.value))


def test_results_are_written_whole_and_never_through_a_link(tmp_path):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("keep me")
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "results.json").symlink_to(elsewhere)
    write_results(str(folder / "results.json"), {"score": 1.0, "tests": []})
    assert elsewhere.read_text() == "keep me" and not (folder / "results.json").is_symlink()
    assert json.loads((folder / "results.json").read_text()) == {"score": 1.0, "tests": []}
    assert sorted(os.listdir(folder)) == ["results.json"]  # no temporary file left over
    write_results(str(tmp_path / "new" / "results.json"), {"tests": []})  # the folder is made


def test_grade_never_writes_its_results_over_a_learners_file(tmp_path, capsys):
    learner = tmp_path / "my_work.py"
    learner.write_text(SOLVED)
    before = learner.read_text()
    command = ["grade", str(learner), "--only", "rnn_step_backward", "--format", "gradescope"]
    assert npseq_main([*command, "--results", str(learner)]) == 2
    err = capsys.readouterr().err
    assert learner.read_text() == before and err.count("\n") == 1
    assert "--results: " in err and "is not a Gradescope results.json; refusing to replace it" in err
    results_path = tmp_path / "results.json"
    for _ in range(2):  # a results.json written before is replaced
        assert npseq_main([*command, "--results", str(results_path)]) == 0
        assert json.loads(results_path.read_text())["score"] == pytest.approx(1.0)
    capsys.readouterr()


def test_the_wheel_is_the_same_bytes_twice_and_its_record_matches_its_files(tmp_path):
    first, second = build_wheel(str(tmp_path / "a")), build_wheel(str(tmp_path / "b"))
    assert os.path.basename(first) == "npseq-0.1.0-py3-none-any.whl"
    assert pathlib.Path(first).read_bytes() == pathlib.Path(second).read_bytes()
    with zipfile.ZipFile(first) as wheel:
        names = wheel.namelist()
        info = "npseq-0.1.0.dist-info"
        assert names[-1] == f"{info}/RECORD" and "npseq/course/gradescope.py" in names
        assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)
        rows = list(csv.reader(io.StringIO(wheel.read(f"{info}/RECORD").decode())))
        assert [row[0] for row in rows] == names and rows[-1] == [f"{info}/RECORD", "", ""]
        for path, digest, size in rows[:-1]:
            data = wheel.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={expected}" and int(size) == len(data)
        metadata = wheel.read(f"{info}/METADATA").decode()
        assert metadata.startswith("Metadata-Version: 2.1\nName: npseq\nVersion: 0.1.0\n")
        assert "Requires-Dist: numpy>=1.23" in metadata and 'Requires-Dist: pytest>=7; extra == "test"' in metadata
        assert "Requires-Python: >=3.10" in metadata
        assert wheel.read(f"{info}/WHEEL").decode() == ("Wheel-Version: 1.0\nGenerator: npseq\nRoot-Is-Purelib: "
                                                        "true\nTag: py3-none-any\n")
        assert wheel.read(f"{info}/entry_points.txt") == b"[console_scripts]\nnpseq = npseq.cli:main\n"


def test_the_wheel_needs_npseqs_installed_metadata(tmp_path, monkeypatch):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "metadata", not_installed)
    with pytest.raises(BundleError, match="npseq's package metadata is not found \\(npseq is not installed\\)"):
        build_wheel(str(tmp_path))
    assert not list(tmp_path.iterdir())


def test_the_bundle_replaces_its_own_zip_but_not_a_foreign_file_without_force(tmp_path):
    path = tmp_path / "autograder.zip"
    assert write_bundle(str(path), SCORING) == str(path)
    first = path.read_bytes()
    write_bundle(str(path), SCORING)  # ours: replaced without force, and the same bytes
    assert path.read_bytes() == first
    with zipfile.ZipFile(path) as bundle:
        assert bundle.namelist() == ["README.txt", "config.json", "npseq-0.1.0-py3-none-any.whl", "run_autograder",
                                     "setup.sh"]
        assert Scoring.from_json(bundle.read("config.json").decode()) == SCORING
        for script in ("setup.sh", "run_autograder"):
            assert bundle.getinfo(script).external_attr >> 16 & stat.S_IXUSR
        assert "Configure Autograder > Zip file upload" in bundle.read("README.txt").decode()
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as archive:
        archive.writestr("config.json", "{}")  # a config.json alone does not make it ours
    for foreign in (other_zip, tmp_path / "notes.zip"):
        if not foreign.exists():
            foreign.write_text("a student's notes")
        before = foreign.read_bytes()
        with pytest.raises(BundleError, match="is not an autograder zip that npseq wrote; add --force"):
            write_bundle(str(foreign), SCORING)
        assert foreign.read_bytes() == before
        write_bundle(str(foreign), SCORING, force=True)
        assert foreign.read_bytes() == first


def test_the_command_needs_a_destination_and_its_autograder_options_need_the_zip(tmp_path, capsys):
    assert exercises_main([]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert exercises_main(["--out", str(tmp_path / "h"), "--points", "rnn_step_backward=2"]) == 2
    assert "--points: these set up the autograder; add --gradescope ZIP" in capsys.readouterr().err
    assert not (tmp_path / "h").exists()
    (tmp_path / "taken.zip").write_text("not ours")
    assert exercises_main(["--out", str(tmp_path / "h"), "--gradescope", str(tmp_path / "taken.zip")]) == 2
    assert "add --force" in capsys.readouterr().err and not (tmp_path / "h").exists()  # a refusal writes nothing
    for bad in (["--gradescope", "a.zip", "--hidden", "rnn_step_backward:3"], ["--gradescope", "a.zip", "--points",
                                                                               "rnn_step_backward=x"]):
        with pytest.raises(SystemExit) as exit_info:
            exercises_main(bad)
        assert exit_info.value.code == 2 and capsys.readouterr().err.count("\n") == 1


def test_the_submission_is_the_one_file_or_the_one_named_as_the_hand_out(tmp_path):
    folder = tmp_path / "submission"
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / ".ipynb_checkpoints" / "backprop_exercises-checkpoint.ipynb").write_text("{}")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.py").write_text("")
    (folder / ".hidden.py").write_text("")
    assert "holds no .py or .ipynb file" in find_submission(str(folder)).problem
    (folder / "nested").mkdir()
    (folder / "nested" / "mine.py").write_text("")
    assert find_submission(str(folder)).path == str(folder / "nested" / "mine.py")
    (folder / "helpers.py").write_text("")
    found = find_submission(str(folder))
    assert not found.path and "2 .py or .ipynb files (helpers.py, nested/mine.py)" in found.problem
    assert SKELETON_NAME in found.problem and NOTEBOOK_NAME in found.problem
    (folder / NOTEBOOK_NAME).write_text("{}")
    assert find_submission(str(folder)).path == str(folder / NOTEBOOK_NAME)


def test_the_autograder_writes_results_even_when_its_config_or_the_submission_is_missing(tmp_path, capsys):
    assert autograder_main(["--root", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    assert data["score"] == 0 and data["tests"] == [] and "config.json" in data["output"]
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "config.json").write_text(SCORING.to_json())
    assert autograder_main([f"--root={tmp_path}"]) == 0
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    validate(data, SCORING)
    assert data["score"] == 0 and "holds no .py or .ipynb file" in data["output"]
    assert autograder_main(["--root"]) == 2 and "expected --root ROOT" in capsys.readouterr().err


def test_the_autograders_printout_gives_the_score_its_results_json_carries(tmp_path, capsys):
    # rnn_step_backward is worth 2 points and has 4 of 5 tensors right in each case; lstm_step_backward, worth 1,
    # is right: results.json gives 1.6 + 1 = 2.6 of 3. The printout (what the instructor reads in Gradescope's
    # stdout) said "1.80 / 2 points", each exercise at one point: two scores for one submission.
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "config.json").write_text(SCORING.to_json())
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / SKELETON_NAME).write_text(WRONG)
    capsys.readouterr()
    assert autograder_main(["--root", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    printed = capsys.readouterr().out
    assert data["score"] == pytest.approx(2.6)
    score_line = [line for line in printed.splitlines() if line.startswith("score: ")]
    assert score_line == ["score: 2.6 / 3 points = 86.7%"], printed
    assert "rnn_step_backward(dnext_h, cache): 8/10 tensors correct, 1.6 of 2 points" in printed
    assert "lstm_step_backward(dnext_h, dnext_c, cache): 12/12 tensors correct, 1 of 1 points" in printed


def _filled_notebook(handout: pathlib.Path) -> str:
    """The hand-out notebook with each exercise's code cell replaced by its solution, as a learner would."""
    notebook = json.loads(handout.read_text())
    filled = 0
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        for name in STEPS:
            if cell["cell_type"] == "code" and source.startswith(f"def {name}("):
                cell["source"] = solution_source(EXERCISE_BY_NAME[name].solution).splitlines(keepends=True)
                filled += 1
    assert filled == len(STEPS)
    return json.dumps(notebook)


def _hostile(root: pathlib.Path) -> str:
    """A file that writes a score of its own into results.json when imported, then ends the process."""
    results_json = str(root / "results" / "results.json")
    return (f"import json, os\nos.makedirs(os.path.dirname({results_json!r}), exist_ok=True)\n"
            f"with open({results_json!r}, 'w') as handle:\n    json.dump({{'score': 1000, 'tests': []}}, handle)\n"
            "os._exit(0)\n")


@pytest.mark.slow
def test_round_trip_the_zip_installs_in_a_fresh_environment_and_grades_each_kind_of_submission(tmp_path, capsys):
    bundle = tmp_path / "made" / "autograder.zip"
    assert npseq_main(["exercises", "--gradescope", str(bundle), "--points", "rnn_step_backward=2", "--hidden",
                       "lstm_step_backward:2", "--only", *STEPS, "--timeout", "10"]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {bundle}: Gradescope's autograder for 2 exercises, 3 points in all" in printed
    assert "upload" in printed and "Configure Autograder > Zip file upload" in printed
    # as Gradescope does: the zip into ROOT/source, run_autograder to ROOT/, setup.sh once
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "run_autograder").chmod(0o755)  # zipfile does not restore modes; Gradescope's unzip does
    env = {**os.environ, "NPSEQ_AUTOGRADER_ROOT": str(root), "NPSEQ_PYTHON": sys.executable}
    setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                           timeout=1200)
    assert setup.returncode == 0, setup.stdout[-4000:] + setup.stderr[-4000:]
    where = subprocess.run([str(root / "venv" / "bin" / "python"), "-I", "-c", "import npseq; print(npseq.__file__)"],
                           capture_output=True, text=True, timeout=120)
    assert pathlib.Path(where.stdout.strip()).resolve().is_relative_to((root / "venv").resolve()), where

    handout = tmp_path / "handout"
    assert npseq_main(["exercises", "--out", str(handout), "--notebook", "--only", *STEPS]) == 0
    untouched = (handout / NOTEBOOK_NAME).read_text()
    submissions = [  # (file, text, expected scores per test, what the first test's output says)
        (SKELETON_NAME, SOLVED, [1.0, 1.0, 0.5, 0.5], "5/5 tensors correct"),
        (SKELETON_NAME, WRONG, [0.8, 0.8, 0.5, 0.5], "4/5 tensors correct"),
        (SKELETON_NAME, LOOPING, [1.0, 1.0, 0, 0], "5/5 tensors correct"),
        ("sneaky.py", _hostile(root), [0, 0, 0, 0], "cannot import sneaky.py"),  # exited, or refused its write
        (NOTEBOOK_NAME, _filled_notebook(handout / NOTEBOOK_NAME), [1.0, 1.0, 0.5, 0.5], "5/5 tensors correct"),
        (NOTEBOOK_NAME, untouched, [0, 0, 0, 0], "not implemented"),
    ]
    for name, text, expected, says in submissions:
        shutil.rmtree(root / "submission", ignore_errors=True)
        (root / "submission").mkdir()
        (root / "submission" / name).write_text(text)
        run = subprocess.run([str(root / "run_autograder")], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, (name, run.stderr[-4000:])
        data = json.loads((root / "results" / "results.json").read_text())
        validate(data, SCORING)
        assert scores_of(data) == pytest.approx(expected), (name, expected, data["output"])
        assert data["score"] == pytest.approx(sum(expected)), name
        assert says in data["tests"][0]["output"], (name, data["tests"][0]["output"])
        assert data["tests"][3]["visibility"] == "after_published"

    # Every other set through the same installed autograder: a bundle of them differs only in its config.json.
    sets = [name for name in SET_NAMES if name != "classic"]
    others = tmp_path / "others.zip"
    assert npseq_main(["exercises", "--gradescope", str(others), "--set", *sets, "--timeout", "60"]) == 0
    capsys.readouterr()
    with zipfile.ZipFile(others) as archive:
        (root / "source" / "config.json").write_bytes(archive.read("config.json"))
    scoring = Scoring.from_json((root / "source" / "config.json").read_text())
    assert scoring.names == tuple(names_of_sets(sets))
    exercises = chosen_exercises(sets=sets)
    for text, expected in ((solutions(exercises), scoring.total), (skeleton(exercises), 0)):
        shutil.rmtree(root / "submission", ignore_errors=True)
        (root / "submission").mkdir()
        (root / "submission" / SKELETON_NAME).write_text(text)
        run = subprocess.run([str(root / "run_autograder")], env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-4000:]
        data = json.loads((root / "results" / "results.json").read_text())
        validate(data, scoring)
        assert data["score"] == pytest.approx(expected), data["output"][-2000:]
