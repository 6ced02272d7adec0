"""``npseq exercises``: the instructor's hand-out is self-contained and its skeleton grades to 0."""
import ast
import json
import pathlib
import subprocess
import sys
import zipfile

import pytest

from npseq.cli import main as npseq_main
from npseq.course.handout import with_prerequisites
from npseq.course.mistakes import MISTAKES, mistakes_of
from npseq.course.sheet import SETS
from npseq.exercises import main

CLASSIC = SETS["classic"]  # a hand-out that names no set
SKELETON = pathlib.Path(__file__).resolve().parents[1] / "tutorials" / "exercises" / "backprop_exercises.py"


def functions_of(path) -> dict:
    source = pathlib.Path(path).read_text()
    return {node.name: ast.get_source_segment(source, node) for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef)}


def headers(text: str, header: str) -> int:
    """How many lines of ``text`` are the section header ``header`` (``Structure:``, ``Hints:``)."""
    return sum(line.strip() == header for line in text.splitlines())


@pytest.mark.slow
def test_a_handout_without_hints_has_the_equations_and_grades_to_zero(tmp_path, capsys):
    out = tmp_path / "handout"
    assert npseq_main(["exercises", "--out", str(out), "--hints", "none"]) == 0
    printed = capsys.readouterr().out
    assert "(10 exercises, hints: none)" in printed and "npseq grade backprop_exercises.py --set classic" in printed
    skeleton, readme = (out / "backprop_exercises.py").read_text(), (out / "README.md").read_text()
    for text in (skeleton, readme):
        assert headers(text, "Hints:") == headers(text, "Structure:") == 0 and "np.add.at" not in text
        assert "da_i    = dc * g * i (1 - i)" not in text and "broadcast over the N rows" not in text
    assert "## Reading a failing check" not in readme  # its lessons and titles say what the terms are
    assert "next_c  = f * prev_c + i * g" in readme and "cache.tanh_c  (N, H)" in readme  # forward and fields stay
    assert all(f"`{exercise.signature}`" in readme for exercise in CLASSIC)
    assert "npseq grade backprop_exercises.py --set classic\n" in readme
    assert list(functions_of(out / "backprop_exercises.py")) == [exercise.name for exercise in CLASSIC]
    # graded where it lands, as a learner would run it: 0 points, exit code 1
    result = subprocess.run([sys.executable, "backprop_exercises.py", "--format", "json"], cwd=out,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["score"] == 0 and {e["status"] for e in data["exercises"]} == {"not implemented"}
    assert npseq_main(["exercises", "--out", str(tmp_path / "same"), "--no-hints"]) == 0  # the older flag
    assert (tmp_path / "same" / "README.md").read_text() == readme


def test_the_default_hints_give_the_structure_and_leave_the_equations_to_the_learner(tmp_path):
    assert main(["--out", str(tmp_path)]) == 0
    assert functions_of(tmp_path / "backprop_exercises.py") == functions_of(SKELETON)
    readme = (tmp_path / "README.md").read_text()
    skeleton = (tmp_path / "backprop_exercises.py").read_text()
    for text in (skeleton, readme):
        assert headers(text, "Structure:") == len(CLASSIC) and headers(text, "Hints:") == 0
        assert "da      = dnext_h * (1 - next_h^2)" not in text and "da_i    = dc * g * i (1 - i)" not in text
        assert "tanh's derivative" in text or "derivative of tanh" in text
    assert "(the equations are yours to derive)" in readme
    # the classic mistakes stay, with what the grader says, but not the lessons that name the missing terms
    mistake = next(m for m in MISTAKES if m.exercise == "lstm_backward" and "cell state" in m.title)
    assert f"**{mistake.title}** (`lstm_backward`)\n" in readme and mistake.lesson not in readme
    assert "\n".join(mistake.diagnoses) in readme


def test_the_equations_level_gives_the_structure_and_the_equations(tmp_path):
    assert main(["--out", str(tmp_path), "--hints", "equations"]) == 0
    readme = (tmp_path / "README.md").read_text()
    skeleton = (tmp_path / "backprop_exercises.py").read_text()
    for text in (skeleton, readme):
        assert headers(text, "Structure:") == headers(text, "Hints:") == len(CLASSIC)
        assert text.index("Structure:") < text.index("Hints:")
        assert "da      = dnext_h * (1 - next_h^2)" in text
    assert all(mistake.lesson in readme for mistake in mistakes_of(CLASSIC))


def test_a_notebook_and_the_autograder_carry_the_level(tmp_path, capsys):
    assert main(["--out", str(tmp_path / "none"), "--notebook", "--hints", "none"]) == 0
    assert main(["--out", str(tmp_path / "default"), "--notebook"]) == 0
    cells = {level: json.loads((tmp_path / level / "backprop_exercises.ipynb").read_text())["cells"]
             for level in ("none", "default")}
    text = {level: "".join("".join(cell["source"]) for cell in cells[level]) for level in cells}
    assert headers(text["none"], "Structure:") == headers(text["none"], "Hints:") == 0
    assert headers(text["default"], "Structure:") == len(CLASSIC) and headers(text["default"], "Hints:") == 0
    zip_path = tmp_path / "autograder.zip"
    assert main(["--gradescope", str(zip_path), "--hints", "equations"]) == 0
    with zipfile.ZipFile(zip_path) as archive:
        assert json.loads(archive.read("config.json"))["hints"] == "equations"
    capsys.readouterr()
    assert main(["--solutions", str(tmp_path / "key"), "--hints", "none"]) == 2
    assert ("--hints: this shapes the hand-out and the autograder; add --out DIR, --gradescope ZIP or "
            "--prairielearn DIR") in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "x"), "--hints", "all"])
    assert "argument --hints: invalid choice: 'all'" in capsys.readouterr().err


@pytest.mark.slow
def test_only_hands_out_the_chosen_exercises_and_what_they_build_on(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--only", "bahdanau_decoder_step_backward", "rnn_backward"]) == 0
    names = ["rnn_step_backward", "gru_step_backward", "masked_softmax_backward", "additive_attention_backward",
             "rnn_backward", "bahdanau_decoder_step_backward"]
    assert with_prerequisites(["bahdanau_decoder_step_backward", "rnn_backward"]) == names
    assert list(functions_of(tmp_path / "backprop_exercises.py")) == names
    only = " ".join(f"--only {name}" for name in names)
    assert f"npseq grade backprop_exercises.py {only}" in capsys.readouterr().out
    skeleton = (tmp_path / "backprop_exercises.py").read_text()
    assert "6. ``bahdanau_decoder_step_backward``" in skeleton and "``lstm_backward``" not in skeleton
    result = subprocess.run([sys.executable, "backprop_exercises.py"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1 and result.stdout.rstrip().endswith("score: 0.00 / 6 points = 0.0%")


def test_bad_arguments_are_one_line_and_exit_2(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert main(["--out", str(blocker / "sub")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("npseq exercises: --out: cannot write to") and err.count("\n") == 1
    assert main([]) == 2  # asks for nothing: neither a hand-out nor an autograder
    assert capsys.readouterr().err == ("npseq exercises: expected --out DIR (the hand-out), --gradescope ZIP or "
                                       "--prairielearn DIR (its autograder), --solutions DIR (the instructor's key), "
                                       "or several\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(tmp_path), "--only", "softmax"])
    assert exit_info.value.code == 2 and capsys.readouterr().err.count("\n") == 1
