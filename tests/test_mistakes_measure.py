"""The grader on mistakes it was not written for: ``benchmarks/mistakes/measure.py``'s edits of the solutions."""
import importlib.util
import pathlib

import pytest

from npseq.course.report import CaseProblem, FunctionGrade, TensorGrade
from npseq.course.sheet import EXERCISE_BY_NAME

BENCHMARK = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "mistakes" / "measure.py"


def _module():
    spec = importlib.util.spec_from_file_location("mistakes_measure", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_every_edit_of_the_chain_and_transformer_sets_is_detected_and_located():
    measured = _module().measure(["chain", "transformer"])
    for counts in measured.values():
        assert counts["mutants"] >= 8
        assert counts["detected"] == counts["mutants"] and counts["located"] >= 0.99 * counts["mutants"]


def test_the_judge_calls_a_report_naming_other_tensors_not_located():
    judge = _module().judge
    exercise = EXERCISE_BY_NAME["rnn_step_backward"]

    def graded(*diagnoses):
        rows = [TensorGrade("case", d.split(":")[0], (2,), 1.0, 1.0, False, "wrong", diagnosis=d) for d in diagnoses]
        return FunctionGrade(exercise.name, exercise.signature, True, rows=rows, total=5, cases=("case",))

    assert judge(exercise, [("dx",)], graded("dx: gate g, unit 1")) == (True, True, True)
    assert judge(exercise, [("dx",)], graded("dx: every element")) == (True, True, False)
    assert judge(exercise, [("dx", "db")], graded("dx: every element")) == (True, False, False)
    crashed = FunctionGrade(exercise.name, exercise.signature, True, total=5, cases=("case",),
                            problems=[CaseProblem("case", "error", "ValueError: no", computing="dx")])
    assert judge(exercise, ["crash"], crashed) == (True, True, True)
