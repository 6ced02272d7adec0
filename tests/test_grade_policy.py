"""Honesty with teeth: npseq's own code handed in (imported, or pasted from a tutorial and renamed) is named in the
report, and with ``--policy zero`` scores 0 on that exercise; a learner's own work is never touched."""
import ast
import json
import os
import pathlib
import re
import stat
import sys

import pytest
from learners import honest_work

from npseq import functional as F
from npseq._checks import is_check_statement
from npseq.cli import main
from npseq.course import grade_file
from npseq.course.gradescope import Scoring, results
from npseq.course.handout import chosen_exercises, solutions

TUTORIALS = pathlib.Path(__file__).resolve().parents[1] / "tutorials"


def tutorial_code(function) -> str:
    """``function``'s source as the tutorials print it (``_common.code``: the file's text but the docstring), pasted
    into a learner's file and made to run there: the learner deletes the lines that use names their file does not
    define (the argument checks, ``xp = backend.get_array_module(...)``) and writes ``np.`` for ``xp.``."""
    sys.path.insert(0, str(TUTORIALS))
    try:
        from _common import code
    finally:
        sys.path.remove(str(TUTORIALS))
    lines = code(function).splitlines(keepends=True)
    plumbing = [statement for statement in ast.parse("".join(lines)).body[0].body if is_check_statement(statement)]
    dropped = {number for statement in plumbing for number in range(statement.lineno - 1, statement.end_lineno)}
    assert dropped, "the printed function has no plumbing: the paste needs no edit"
    return re.sub(r"\bxp\.", "np.", "".join(line for number, line in enumerate(lines) if number not in dropped))


PASTED = "import numpy as np\n\n\n" + tutorial_code(F.gru_step_backward)  # what tutorial 03 prints, pasted
IMPORTED = "from npseq.functional import gru_step_backward  # noqa: F401\n"
OWN = honest_work(["gru_step_backward"])
GRU = ["--only", "gru_step_backward"]


@pytest.mark.slow
@pytest.mark.parametrize("source, says", [
    (PASTED, "of its code is in npseq.functional.recurrent.gru_step_backward (what tutorial 03 prints)"),
    (IMPORTED, "called while graded: npseq.functional.recurrent.gru_step_backward"),
])
def test_npseqs_own_code_is_named_and_zeroed_by_the_policy(tmp_path, capsys, source, says):
    path = tmp_path / "learner.py"
    path.write_text(source)
    assert main(["grade", str(path), *GRU]) == 0  # policy note: graded as it is, and named
    out = capsys.readouterr().out
    assert says in out and "the score is unchanged" in out and "= 100.0%" in out
    assert main(["grade", str(path), *GRU, "--policy", "zero"]) == 1
    out = capsys.readouterr().out
    assert says in out and "score 0 (policy zero)" in out and out.rstrip().endswith("= 0.0%")
    gru = grade_file(path, only=["gru_step_backward"], policy="zero")["gru_step_backward"]
    assert gru.status == "honesty" and gru.points == 0 and gru.correct == gru.total  # right, and zeroed
    assert gru.diagnoses() == ["honesty: npseq's own code, zeroed"]
    scoring = Scoring(only=("gru_step_backward",), policy="zero")
    assert results(grade_file(path, only=["gru_step_backward"], policy="zero"), scoring)["score"] == 0


def test_a_learners_own_work_is_untouched_by_the_policy(tmp_path, capsys):
    path = tmp_path / "learner.py"
    path.write_text(OWN)
    assert main(["grade", str(path), *GRU, "--policy", "zero", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["score"] == 100 and not data["flagged"] and data["policy"] == "zero"


def test_the_sheets_own_solution_handed_in_is_named(tmp_path, capsys):
    path = tmp_path / "learner.py"
    path.write_text(solutions(chosen_exercises(["gru_step_backward"])))
    assert main(["grade", str(path), *GRU, "--policy", "zero"]) == 1
    assert "of its code is in the solutions key (npseq exercises --solutions): gru_step_backward" in \
        capsys.readouterr().out


def test_a_bad_policy_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["grade", str(tmp_path / "x.py"), "--policy", "harsh"])
    assert exit_info.value.code == 2 and capsys.readouterr().err.count("\n") == 1
    with pytest.raises(ValueError, match=r"policy: expected one of \['note', 'zero'\], got 'harsh'"):
        grade_file(tmp_path / "x.py", policy="harsh")


def test_the_instructors_key_is_written_apart_and_named_when_handed_in(tmp_path, capsys):
    assert main(["exercises", "--solutions", str(tmp_path / "key"), "--only", "gru_step_backward"]) == 0
    assert "for the instructor only" in capsys.readouterr().out
    key = tmp_path / "key" / "backprop_solutions.py"
    assert "raise NotImplementedError" not in key.read_text()
    assert main(["grade", str(key), *GRU]) == 0
    assert "of its code is in the solutions key (npseq exercises --solutions)" in capsys.readouterr().out
    assert main(["exercises", "--out", str(tmp_path / "h"), "--solutions", str(tmp_path / "h")]) == 2
    assert "--out and --solutions: expected a folder each" in capsys.readouterr().err


def test_the_instructors_key_is_readable_by_its_owner_only(tmp_path, capsys):
    key = tmp_path / "key" / "backprop_solutions.py"
    assert main(["exercises", "--solutions", str(tmp_path / "key"), "--only", "gru_step_backward"]) == 0
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600  # a shared course folder: students must not read the key
    key.chmod(0o644)  # a key written before the key was private, with the same content: made private all the same
    assert main(["exercises", "--solutions", str(tmp_path / "key"), "--only", "gru_step_backward"]) == 0
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert main(["exercises", "--out", str(tmp_path / "h"), "--only", "gru_step_backward"]) == 0
    assert stat.S_IMODE(os.stat(tmp_path / "h" / "backprop_exercises.py").st_mode) == 0o644  # the hand-out is shared
    capsys.readouterr()
    assert main(["exercises", "--solutions", str(tmp_path / "key"), "--only", "rnn_step_backward"]) == 2
    assert capsys.readouterr().err.startswith(f"npseq exercises: --solutions: {key} already exists with other content")
