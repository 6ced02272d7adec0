"""The exercise sets, as an instructor hands them out: each set's skeleton grades 0%, its solutions 100%, through
``npseq grade``; several sets make one hand-out, numbered through; the grader grades what a file defines."""
import json
import pathlib
import sys

import numpy as np
import pytest
from learners import honest_work

import npseq
from npseq import functional as F
from npseq.cli import main as npseq_main
from npseq.course import grader
from npseq.course.cases import seed_of
from npseq.course.gradescope import Scoring, unloadable
from npseq.course.handout import chosen_exercises, grade_arguments
from npseq.course.sheet import EXERCISES, NAMES, SET_NAMES, SETS, names_of_sets

ROOT = pathlib.Path(__file__).resolve().parents[1]
REFERENCES = "npseq.course.references"


def _graded(capsys, *arguments) -> tuple:
    """``npseq grade ... --format json``: its exit code and the report's data."""
    code = npseq_main(["grade", *arguments, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", SET_NAMES)
def test_a_sets_skeleton_grades_zero_and_its_solutions_full(name, tmp_path, capsys):
    out, key = tmp_path / "handout", tmp_path / "key"
    assert npseq_main(["exercises", "--set", name, "--out", str(out), "--solutions", str(key)]) == 0
    printed = capsys.readouterr().out
    names = names_of_sets([name])
    assert f"({len(names)} exercises, hints: structure)" in printed
    assert f"npseq grade backprop_exercises.py --set {name}\n" in printed
    assert all(exercise.name in names for exercise in SETS[name]) and len(SETS[name]) >= 3

    code, skeleton = _graded(capsys, str(out / "backprop_exercises.py"), "--set", name)
    assert code == 1 and skeleton["score"] == 0
    assert [e["name"] for e in skeleton["exercises"]] == names
    assert {e["status"] for e in skeleton["exercises"]} == {"not implemented"}

    solved = tmp_path / "solved.py"
    solved.write_text(honest_work(names))
    code, solutions = _graded(capsys, str(solved), "--set", name)
    assert code == 0 and solutions["score"] == 100 and not solutions["flagged"], solutions
    assert [e["name"] for e in solutions["exercises"]] == names


def test_several_sets_are_one_handout_numbered_through(tmp_path, capsys):
    exercises = chosen_exercises(sets=["classic", "transformer"])
    assert [e.name for e in exercises] == names_of_sets(["classic", "transformer"])
    assert [e.number for e in exercises] == list(range(1, len(exercises) + 1))
    assert grade_arguments(exercises) == ["--set", "classic", "--set", "transformer"]
    alone = chosen_exercises(sets=["transformer"])  # what it builds on comes along, numbered first
    assert alone[0].name == "masked_softmax_backward" and alone[0].number == 1
    assert grade_arguments(alone) == ["--set", "transformer"]
    assert npseq_main(["exercises", "--set", "classic", "transformer", "--out", str(tmp_path)]) == 0
    skeleton = (tmp_path / "backprop_exercises.py").read_text()
    assert "npseq grade backprop_exercises.py --set classic --set transformer" in skeleton
    capsys.readouterr()


def test_only_with_a_set_grades_and_hands_out_those_functions_and_what_they_build_on(tmp_path, capsys):
    # --set variants --only F graded the whole set besides F: the set's three others "not implemented", the score
    # out of 4. --only chooses, the set says which hand-out the names come from, and both commands agree.
    skeleton = ROOT / "tutorials" / "exercises" / "backprop_exercises.py"
    code, data = _graded(capsys, str(skeleton), "--set", "variants", "--only", "minimal_gated_unit_step_backward")
    assert code == 1 and [e["name"] for e in data["exercises"]] == ["minimal_gated_unit_step_backward"]
    assert data["max_points"] == 1
    code, data = _graded(capsys, str(skeleton), "--set", "transformer", "--only", "multihead_attention_backward")
    built_on = ["masked_softmax_backward", "scaled_dot_product_attention_backward", "multihead_attention_backward"]
    assert [e["name"] for e in data["exercises"]] == built_on  # what it builds on comes along, from any set
    exercises = chosen_exercises(only=["multihead_attention_backward"], sets=["transformer"])
    assert [(e.number, e.name) for e in exercises] == list(enumerate(built_on, 1))
    assert grade_arguments(exercises) == [word for name in built_on for word in ("--only", name)]
    scoring = Scoring(only=tuple(e.name for e in exercises))
    tests = unloadable("no file", scoring)["tests"]
    assert {test["number"].split(".")[0] + " " + test["name"].split()[1].rstrip(":") for test in tests} == \
        {f"{e.number} {e.name}" for e in exercises}


def test_only_outside_its_set_is_refused_before_grading(tmp_path, capsys):
    skeleton = ROOT / "tutorials" / "exercises" / "backprop_exercises.py"
    assert npseq_main(["grade", str(skeleton), "--set", "transformer", "--only", "rnn_step_backward"]) == 2
    error = capsys.readouterr().err
    assert "--only: expected exercises of the set transformer" in error and "got rnn_step_backward" in error
    assert "with theirs (classic)" in error and "Traceback" not in error
    assert npseq_main(["exercises", "--set", "transformer", "--only", "rnn_step_backward", "--out",
                       str(tmp_path / "h")]) == 2
    assert "--only: expected exercises of the set transformer" in capsys.readouterr().err
    assert not (tmp_path / "h").exists()


def test_the_help_of_both_commands_says_what_only_grades(capsys):
    for command in ("grade", "exercises"):
        with pytest.raises(SystemExit):
            npseq_main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert ("builds on" in text or "build on" in text) and "with --set, " in text, command


def test_without_set_or_only_the_grader_grades_what_the_file_defines(tmp_path, capsys):
    part = tmp_path / "part.py"
    part.write_text("def layer_norm_backward(dy, cache):\n    raise NotImplementedError\n")
    code, data = _graded(capsys, str(part))
    assert code == 1 and [e["name"] for e in data["exercises"]] == ["layer_norm_backward"]
    code, data = _graded(capsys, str(part), "--set", "transformer")  # the set's others count, as not attempted
    assert [e["name"] for e in data["exercises"]] == names_of_sets(["transformer"])
    assert {e["status"] for e in data["exercises"] if e["name"] != "layer_norm_backward"} == {"not attempted"}


def test_an_unknown_set_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as stopped:
        npseq_main(["exercises", "--set", "recurrent", "--out", "x"])
    assert stopped.value.code == 2
    assert "invalid choice: 'recurrent'" in capsys.readouterr().err


@pytest.mark.parametrize("exercise", EXERCISES, ids=NAMES)
def test_each_solution_is_its_reference_in_every_case_and_a_students_variant(exercise):
    for case in exercise.cases:
        for variant in (0, 1):
            *outputs, _ = case.forward(**case.make_inputs(variant))
            douts = grader._upstream(outputs, seed_of(case.seed, variant))
            mine = grader._as_grads(grader._call(exercise.solution, case, douts, variant), exercise.grads)[0]
            engine = grader._as_grads(grader._call(exercise.engine, case, douts, variant), exercise.grads)[0]
            assert len(mine) == len(engine) == len(exercise.grads)
            for name, ours, expected in zip(exercise.grads, mine, engine):
                ours, expected = np.asarray(ours, dtype=float), np.asarray(expected, dtype=float)
                assert ours.shape == expected.shape, (case.label, name)
                assert np.abs(ours - expected).max() <= 1e-9 * max(1.0, np.abs(expected).max()), (case.label, name)


def test_the_courses_own_references_are_not_npseqs_api_nor_in_any_tutorial():
    modules = {sys.modules[e.engine.__module__] for e in EXERCISES if e.engine.__module__.startswith(REFERENCES)}
    assert {module.__name__ for module in modules} == {f"{REFERENCES}.{name}" for name in
                                                       ("variants", "attention", "transformer", "chain", "deep")}
    named = set()
    for module in modules:
        public = [name for name in vars(module) if not name.startswith("_") and callable(getattr(module, name))
                  and getattr(getattr(module, name), "__module__", None) == module.__name__]
        assert public and not [name for name in public if hasattr(npseq, name) or hasattr(F, name)], module
        named |= set(public) | {module.__name__.removeprefix("npseq.")}
    # every tutorial and its helper; tutorials/exercises/ is the instructor's folder, which lists every exercise
    for path in sorted((ROOT / "tutorials").rglob("*")):
        if path.is_file() and path.relative_to(ROOT / "tutorials").parts[0] != "exercises":
            text = path.read_text(encoding="utf-8", errors="replace")
            assert not [name for name in named if name in text], path
