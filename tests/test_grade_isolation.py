"""The grader survives what a submission can do to it, and speaks JSON and Gradescope."""
import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

from npseq.course import NAMES, SubmissionError, grade_file
from npseq.course.sheet import names_of_sets
from npseq.grade import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
SKELETON = ROOT / "tutorials" / "exercises" / "backprop_exercises.py"
CLASSIC = names_of_sets(["classic"])  # the shipped skeleton's
STEP_NAMES = NAMES[:5]  # the five step exercises, those MISBEHAVING defines

# Gradescope's documented keys (Autograder Specifications, "Output Format").
GRADESCOPE_TOP = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
                  "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
GRADESCOPE_TEST = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
                   "tags", "visibility", "extra_data"}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}

MISBEHAVING = """\
import ctypes
import os
import sys

from npseq import functional as F


def rnn_step_backward(dnext_h, cache):
    while True:
        pass


def lstm_step_backward(dnext_h, dnext_c, cache):
    print("a learner's debugging print")
    return F.lstm_step_backward(dnext_h, dnext_c, cache)


def gru_step_backward(dnext_h, cache):
    sys.exit(3)


def masked_softmax_backward(dweights, cache):
    return ctypes.string_at(0)  # reads address 0: a segmentation fault


def additive_attention_backward(dcontext, cache, dweights=None):
    os._exit(4)
"""


def write(tmp_path, text, name="learner.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def validate_gradescope(results: dict) -> None:
    assert set(results) <= GRADESCOPE_TOP, set(results) - GRADESCOPE_TOP
    assert isinstance(results["score"], (int, float)) and isinstance(results["tests"], list)
    assert results.get("visibility", "visible") in VISIBILITY
    for test in results["tests"]:
        assert set(test) <= GRADESCOPE_TEST, set(test) - GRADESCOPE_TEST
        assert isinstance(test["name"], str) and isinstance(test["output"], str)
        assert 0 <= test["score"] <= test["max_score"]
        assert test["visibility"] in VISIBILITY
    assert results["score"] == pytest.approx(sum(test["score"] for test in results["tests"]))


def per_exercise(results: dict) -> dict:
    """Gradescope's tests (one per exercise and case) gathered by exercise: name -> (score, max_score, outputs).
    The honesty note, a test of its own worth nothing, is left out."""
    gathered = {}
    for test in results["tests"]:
        if test["tags"][0] not in NAMES:
            continue
        score, most, outputs = gathered.get(test["tags"][0], (0.0, 0.0, ""))
        gathered[test["tags"][0]] = (score + test["score"], most + test["max_score"], outputs + test["output"])
    return gathered


@pytest.mark.slow
def test_a_hang_a_crash_an_exit_and_sys_exit_score_their_function_zero_and_the_rest_is_graded(tmp_path):
    path = write(tmp_path, MISBEHAVING)
    timeout = 3.0
    report = grade_file(path, only=STEP_NAMES, timeout=timeout)
    assert [f.status for f in report.functions] == ["time limit", "correct", "sys.exit", "crashed", "exited"]
    assert [f.points for f in report.functions] == [0, 1, 0, 0, 0]
    # the endless loop was stopped at the limit; the rest took a fraction of a second (bound: generous)
    assert timeout <= report.seconds < timeout + 10
    text = str(report)
    assert "rnn_step_backward(dnext_h, cache): time limit: rnn_step_backward did not finish within 3 s" in text
    assert "gru_step_backward(dnext_h, cache): sys.exit: gru_step_backward called sys.exit(3) (learner.py, " \
           "line 19), 0 points" in text
    assert "crashed: the process running masked_softmax_backward died of SIGSEGV, 0 points" in text
    assert "ended with exit code 4 (os._exit?) before answering, 0 points" in text
    assert text.rstrip().endswith("score: 1.00 / 5 points = 20.0%")


@pytest.mark.slow
def test_the_time_limit_holds_from_the_command_line_and_prints_stay_out_of_json(tmp_path):
    path = write(tmp_path, MISBEHAVING)
    result = subprocess.run([sys.executable, "-m", "npseq.grade", str(path), "--timeout", "2", "--format", "json",
                             "--only", "rnn_step_backward", "--only", "lstm_step_backward"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)  # one object: the learner's print went to stderr
    assert "a learner's debugging print" in result.stderr
    rnn, lstm = data["exercises"]
    assert (rnn["status"], rnn["points"], lstm["status"], lstm["points"]) == ("time limit", 0, "correct", 1)
    assert rnn["failure"].startswith("time limit: rnn_step_backward did not finish within 2 s")
    assert data["score"] == 50.0 and data["all_correct"] is False


def test_the_memory_limit_turns_a_huge_allocation_into_an_error_of_that_case(tmp_path):
    pytest.importorskip("resource", reason="no resource limits on this platform")
    path = write(tmp_path, """\
        import numpy as np

        def rnn_step_backward(dnext_h, cache):
            return np.ones(80 * 2 ** 20)  # 640 MB, over the 200 MB allowed
        """)
    report = grade_file(path, only=["rnn_step_backward"], memory_mb=200)
    rnn = report["rnn_step_backward"]
    assert rnn.points == 0 and len(rnn.problems) == 2
    assert all(p.kind == "error" and p.message.startswith("MemoryError") for p in rnn.problems)


@pytest.mark.slow
@pytest.mark.parametrize("source, expected", [
    ("while True:\n    pass\n", "npseq grade: cannot import learner.py: time limit: importing the file did not "
                                 "finish within 2 s"),
    ("import sys\nsys.exit(0)\n", "npseq grade: cannot import learner.py: SystemExit: 0 (learner.py, line 2)"),
    ("import os\nos._exit(0)\n", "npseq grade: cannot import learner.py: exited: the process running importing "
                                 "the file ended with exit code 0"),
])
def test_a_file_whose_import_hangs_or_ends_the_process_is_exit_code_2(tmp_path, capsys, source, expected):
    path = write(tmp_path, source)
    assert main([str(path), "--timeout", "2"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(expected), captured.err
    with pytest.raises(SubmissionError):
        grade_file(path, timeout=2)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "json", "gradescope"])
def test_the_untouched_skeleton_grades_to_zero_with_exit_1_in_every_format(tmp_path, fmt):
    results = tmp_path / "out" / "results.json"
    command = [sys.executable, str(SKELETON), "--format", fmt, "--results", str(results)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    if fmt == "json":
        data = json.loads(result.stdout)
        assert data["score"] == 0 and data["points"] == 0 and data["max_points"] == len(CLASSIC)
        assert [e["status"] for e in data["exercises"]] == ["not implemented"] * len(CLASSIC)
        assert not data["flagged"]
    else:
        assert f"score: 0.00 / {len(CLASSIC)} points = 0.0%" in result.stdout
    if fmt == "gradescope":
        data = json.loads(results.read_text())
        validate_gradescope(data)
        exercises = per_exercise(data)
        assert data["score"] == 0 and list(exercises) == CLASSIC
        assert all(most == pytest.approx(1.0) and "not implemented" in out for _, most, out in exercises.values())
    else:
        assert not results.exists()


@pytest.mark.slow
def test_gradescope_results_of_a_partly_right_file(tmp_path, capsys):
    path = write(tmp_path, MISBEHAVING)
    results = tmp_path / "results.json"
    only = [word for name in STEP_NAMES for word in ("--only", name)]
    assert main([str(path), "--timeout", "2", "--format", "gradescope", "--results", str(results)] + only) == 1
    assert f"wrote {results}" in capsys.readouterr().out
    data = json.loads(results.read_text())
    validate_gradescope(data)
    exercises = per_exercise(data)
    assert data["score"] == 1.0 and [score for score, _, _ in exercises.values()] == pytest.approx([0, 1, 0, 0, 0])
    assert "time limit: rnn_step_backward did not finish within 2 s" in exercises["rnn_step_backward"][2]


def test_a_file_that_cannot_be_loaded_is_exit_2_in_every_format(tmp_path, capsys):
    path = write(tmp_path, "def f(:\n")
    assert main([str(path), "--format", "json"]) == 2
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["score"] == 0 and data["error"].startswith("learner.py, line 1: SyntaxError")
    results = tmp_path / "results.json"
    assert main([str(path), "--format", "gradescope", "--results", str(results)]) == 2
    data = json.loads(results.read_text())
    validate_gradescope(data)
    assert data["score"] == 0 and all(test["score"] == 0 for test in data["tests"]) and "SyntaxError" in data["output"]


def test_help_and_bad_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "100%%" not in out and "--format {text,json,gradescope}" in out and "--timeout SECONDS" in out
    for bad in (["x.py", "--timeout", "0"], ["x.py", "--format", "xml"], ["x.py", "--memory-mb", "-1"]):
        with pytest.raises(SystemExit) as exit_info:
            main(bad)
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.slow
def test_the_time_limit_counts_the_learners_time_not_the_graders(tmp_path, monkeypatch):
    # The grader's own finite differences run between two answers of the child: however long they take, they
    # are not the learner's time (made slow here: 2.5 s a case, past the whole limit of 2 s before the second
    # case is even asked).
    import time as clock

    from npseq.course import grader
    numerical = grader._numerical_grads

    def slow(*args, **kwargs):
        clock.sleep(2.5)
        return numerical(*args, **kwargs)

    monkeypatch.setattr(grader, "_numerical_grads", slow)
    path = write(tmp_path, "from npseq.functional import rnn_step_backward  # noqa: F401\n")
    assert grade_file(path, only=["rnn_step_backward"], timeout=2).ok


def _others_can_read(folder: str) -> bool:
    """Whether a user who is neither the owner nor in the group may list ``folder`` and every folder above it."""
    import os
    import stat

    path = os.path.abspath(folder)
    while True:
        mode = os.stat(path).st_mode
        if not mode & stat.S_IXOTH or (path == os.path.abspath(folder) and not mode & stat.S_IROTH):
            return False
        if path == os.path.dirname(path):
            return True
        path = os.path.dirname(path)


def test_a_module_the_sandbox_cannot_read_is_the_graders_problem_not_the_files(tmp_path, capsys):
    # Graded as root, the child becomes a user of its own; a Python under a private home folder (pyenv's under
    # /root) is out of its reach, and `import xml` inside an honest function was "ModuleNotFoundError" and 0.
    import os

    from npseq.course.sandbox import running_as_root

    path = tmp_path / "learner.py"
    path.write_text(textwrap.dedent("""\
        def rnn_step_backward(dnext_h, cache):
            import xml.dom.minidom  # noqa: F401  (a module the grader has not loaded)
            da = dnext_h * (1 - cache.next_h ** 2)
            return da @ cache.Wx.T, da @ cache.Wh.T, cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0)
        """))
    rnn = grade_file(path, only=["rnn_step_backward"])["rnn_step_backward"]
    if running_as_root() and not _others_can_read(os.path.dirname(os.__file__)):
        assert rnn.diagnoses() == ["grader: the sandbox cannot read the Python installation"]
        for problem in rnn.problems:
            assert problem.kind == "grader" and "No module named 'xml" in problem.message
            assert f"the grader's sandbox cannot read the Python installation ({os.path.dirname(os.__file__)})" \
                in problem.message and "Not a mistake of this file" in problem.message
        assert "GRADER: ModuleNotFoundError" in rnn.section()
        top = tmp_path / "top.py"
        top.write_text("import xml.dom.minidom  # noqa: F401\n" + path.read_text())
        assert main([str(top), "--only", "rnn_step_backward"]) == 2
        assert "Not a mistake of this file" in capsys.readouterr().err
    else:  # the child can read the installation: the import works and the function is right
        assert rnn.status == "correct", rnn.section()


def test_only_an_import_error_from_an_unreadable_installation_is_the_graders(monkeypatch):
    import os

    from npseq.course import sandbox

    assert sandbox.python_unreadable(ValueError("no")) == ""
    monkeypatch.setattr(os, "access", lambda path, mode: True)
    assert sandbox.python_unreadable(ModuleNotFoundError("No module named 'xml'")) == ""  # a learner's typo
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    said = sandbox.python_unreadable(ModuleNotFoundError("No module named 'xml'"))
    assert said.startswith("; the grader's sandbox cannot read the Python installation (")


def test_the_graders_own_check_decides_a_problem_is_the_graders(tmp_path, monkeypatch):
    # "grader" is the child's word: where the grader sees the installation readable, a child saying so (a learner can
    # make its child say anything) is an error of the file's, as any other; and a module nobody has is a typo.
    from npseq.course import grader

    path = tmp_path / "learner.py"
    path.write_text("def rnn_step_backward(dnext_h, cache):\n    import no_such_module_anywhere  # noqa: F401\n")
    rnn = grade_file(path, only=["rnn_step_backward"])["rnn_step_backward"]
    assert {problem.kind for problem in rnn.problems} == {"error"}
    assert rnn.diagnoses() == ["error: ModuleNotFoundError"]
    path.write_text("def rnn_step_backward(dnext_h, cache):\n    import xml.dom.minidom  # noqa: F401\n")
    monkeypatch.setattr(grader, "others_cannot_read_python", lambda: False)
    rnn = grade_file(path, only=["rnn_step_backward"])["rnn_step_backward"]
    assert {problem.kind for problem in rnn.problems} == {"error"}
