"""The deep set (two stacked RNN layers, a bidirectional RNN layer, Nadaraya-Watson pooling): its references are
npseq's with every weight named, its solutions grade 100% and its skeleton 0, a hand-out carries its text, and each
classic mistake is told the layer or the direction where it enters and the step where it first goes wrong, walked
in that part's own order."""
import json
import re

import numpy as np
import pytest

from npseq import functional as F
from npseq.cli import main as npseq_main
from npseq.course import grade_file, grader, handout, sheet
from npseq.course.exercise import solution_source
from npseq.course.mistakes import Mistake, mistakes_of
from npseq.course.references import deep as R
from npseq.course.report import FunctionGrade
from npseq.course.sets import deep as deep_set
from npseq.gradcheck import step_report
from npseq.samples import lengths, normal

NAMES = [exercise.name for exercise in deep_set.EXERCISES]
STENCIL = {"h": 1e-3, "order": 4}


def _inputs(rng, n, t, d, hidden, suffixes):
    inputs = {"x": normal(rng, n, t, d), "h0": normal(rng, 2, n, hidden)}
    for suffix, rows in suffixes.items():
        inputs.update({f"Wx{suffix}": normal(rng, rows, hidden, scale=0.5),
                       f"Wh{suffix}": normal(rng, hidden, hidden, scale=0.5), f"b{suffix}": normal(rng, hidden)})
    return inputs


# ------------------------------------------------------------ the references: npseq's layers, every weight named
WRAPPERS = {  # the wrapper pair, npseq's pair, and the suffixes of the wrapper's weights (input size of each)
    "stacked": (R.stacked_rnn_forward, R.stacked_rnn_backward, F.stacked_forward, F.stacked_backward,
                {"1": 3, "2": 5}),
    "bidirectional": (R.bidirectional_rnn_forward, R.bidirectional_rnn_backward, F.bidirectional_forward,
                      F.bidirectional_backward, {"_f": 3, "_b": 3}),
}


@pytest.mark.parametrize("layer", sorted(WRAPPERS))
def test_the_wrappers_are_npseqs_layers_with_the_weights_named(layer):
    forward, backward, engine_forward, engine_backward, suffixes = WRAPPERS[layer]
    rng = np.random.default_rng(0)
    lens = lengths([4, 2])
    inputs = _inputs(rng, 2, 4, 3, 5, suffixes)
    y, cache = forward(**inputs, valid_lens=lens)
    params = [tuple(inputs[f"{w}{k}"] for w in ("Wx", "Wh", "b")) for k in suffixes]
    expected_y, expected_cache = engine_forward(inputs["x"], inputs["h0"], params, "rnn", lens)
    np.testing.assert_array_equal(y, expected_y)
    dy = rng.standard_normal(y.shape)
    grads, engine = backward(dy, cache), engine_backward(dy, expected_cache)
    for ours, theirs in zip(grads, (engine.dx, engine.dh0, *engine.dparams[0], *engine.dparams[1])):
        np.testing.assert_array_equal(ours, theirs)


def test_the_set_is_three_exercises_on_the_learners_own_recurrences_and_softmax():
    assert NAMES == ["stacked_rnn_backward", "bidirectional_rnn_backward", "nadaraya_watson_backward"]
    assert sheet.names_of_sets(["deep"]) == ["rnn_step_backward", "masked_softmax_backward", "rnn_backward"] + NAMES
    assert [exercise.builds_on for exercise in deep_set.EXERCISES] == [
        ("rnn_step_backward",), ("rnn_backward",), ("masked_softmax_backward",)]
    for exercise in deep_set.EXERCISES:
        assert all(exercise.grads[i] == "d" + name for case in exercise.cases for i, name in enumerate(case.wrt))
    for exercise in deep_set.EXERCISES[:2]:
        assert exercise.engine is getattr(R, exercise.name) and exercise.forwards_module == R.__name__
        owned = [name for part in exercise.parts for name in part.grads] + ["dh0", "dx"]
        assert sorted(owned) == sorted(exercise.grads)  # every weight is one part's, the rest shared
    nadaraya_watson = deep_set.EXERCISES[2]
    assert nadaraya_watson.engine is F.nadaraya_watson_backward and not nadaraya_watson.parts
    imports = handout.forwards_import(deep_set.EXERCISES)
    assert "from npseq.course.references.deep import (" in imports and "    nadaraya_watson_forward,\n" in imports


def test_the_text_names_the_learners_functions_not_numbers():
    """A hand-out numbers its exercises itself (the set alone, or after others), so a docstring cannot."""
    for exercise in deep_set.EXERCISES:
        assert not re.search(r"exercise \d", exercise.docstring), exercise.name
        for name in exercise.builds_on:
            assert f"your {name}" in exercise.docstring, (exercise.name, name)


def test_the_backward_direction_is_a_reversal_within_each_valid_length():
    """The hint's index is npseq's reversal; reversing all T steps agrees with it only where nothing is padded."""
    a = np.arange(2 * 5, dtype=float).reshape(2, 5, 1)
    lens = lengths([5, 2])
    order = np.where(np.arange(5) < lens[:, None], lens[:, None] - 1 - np.arange(5), np.arange(5))
    np.testing.assert_array_equal(a[np.arange(2)[:, None], order], F.reverse_sequences(a, lens))
    flipped = a[:, ::-1]
    assert (flipped[0] == F.reverse_sequences(a, lens)[0]).all() and not (flipped[1] == a[1, order[1]]).all()


# ------------------------------------------------------------ the grader's words for the parts
def test_a_backward_that_walks_up_is_reported_walking_up():
    assert step_report(0, 5, walks_up=True) == ("first wrong at t=0 (of 0..4), the first step: the error enters in "
                                               "the step's own backward, before anything is handed back")
    assert step_report(2, 5, "handed back", walks_up=True) == (
        "first wrong at t=2 (of 0..4, walking up from t=0; t=0..1 agree): the error enters in the gradient that "
        "step t=1 hands back to t=2 (with no upstream gradient before t=2, t=2 is right)")
    assert step_report(3, 5, "own") == ("first wrong at t=3 (of 0..4, walking back from t=4; t=4 agree): the error "
                                        "enters at step t=3 itself (it stays wrong with no upstream gradient after "
                                        "t=3)")


def _planted(tmp_path, mistake):
    path = tmp_path / "learner.py"
    path.write_text(mistake.planted_in(handout.solutions(handout.chosen_exercises([mistake.exercise]))))
    return grade_file(path, only=[mistake.exercise])[mistake.exercise]


MISTAKES = mistakes_of(NAMES)

NAMED = {
    "every layer fed the loss's gradient, not what the layer above hands down":
        ("dx: layer 1, first wrong at t=5", "the mistake enters in layer 1 (or in what layer 2 hands down to it)"),
    "the gradient from step t+1 not carried back in a layer":
        ("dx: layer 2, first wrong at t=4", "the mistake enters in layer 2;"),
    "the backward direction handed its gradient in the forward direction's time order":
        ("dx: the backward direction, first wrong at t=0", "the mistake enters in the backward direction;"),
    "each sequence reversed over all T steps, padding included":
        ("dx: the backward direction, first wrong at t=0", "the mistake enters in the backward direction;"),
    "the two halves of dy swapped between the directions":
        ("dx: the forward direction and the backward direction",
         "the mistake enters in the forward direction and the backward direction"),
}
"""For the mistakes in a layer or a direction: a diagnosis that names it, and the words of the report's row."""


def test_the_catalogue_has_the_deep_sets_classic_mistakes():
    assert set(NAMED) <= {mistake.title for mistake in MISTAKES}
    assert {mistake.exercise for mistake in MISTAKES} == set(NAMES)


def _graded_here(mistake) -> FunctionGrade:
    """The planted mistake graded case by case in this process (the child's part run here, on the same words), so
    that the grader's words for parts are checked without spawning anything."""
    exercise = sheet.EXERCISE_BY_NAME[mistake.exercise]
    namespace = {}
    exec(compile(mistake.planted_in(handout.solutions(handout.chosen_exercises([exercise.name]))), "<planted>",
                 "exec"), namespace)
    grade = FunctionGrade(exercise.name, exercise.signature, attempted=True,
                          total=len(exercise.cases) * len(exercise.grads))
    for index, case in enumerate(exercise.cases):
        def ask(header, arrays, case=case):
            return grader._returned(grader._call(namespace[exercise.name], case, arrays, header["variant"]),
                                    exercise.grads)
        grader._grade_case(grade, exercise, case, index, 0, ask)
    return grade


@pytest.mark.parametrize("title", NAMED)
def test_a_mistake_in_a_layer_or_a_direction_names_it(title):
    mistake = next(mistake for mistake in MISTAKES if mistake.title == title)
    graded = _graded_here(mistake)
    diagnosis, words = NAMED[title]
    assert diagnosis in graded.diagnoses()
    row = next(row for row in graded.rows if row.diagnosis == diagnosis)
    assert words in row.problem, row.problem


@pytest.mark.slow
@pytest.mark.parametrize("mistake", MISTAKES, ids=[mistake.title for mistake in MISTAKES])
def test_each_classic_mistake_is_told_where_it_enters(tmp_path, mistake):
    graded = _planted(tmp_path, mistake)
    assert graded.status == "incorrect" and 0 <= graded.points < 1
    assert tuple(graded.diagnoses()) == mistake.diagnoses
    if mistake.title in NAMED:
        diagnosis, words = NAMED[mistake.title]
        assert diagnosis in mistake.diagnoses
        row = next(row for row in graded.rows if row.diagnosis == diagnosis)
        assert words in row.problem, row.problem


def test_a_forgotten_direction_is_named_as_the_term_it_lacks():
    mistake = Mistake("the backward direction's input gradient not added", "bidirectional_rnn_backward",
                      "return dx_f + dx_r[rows, order],", "return dx_f,", ("dx: lacks the backward direction's term",),
                      "x feeds both directions")
    assert mistake.right in solution_source(deep_set.bidirectional_rnn_backward)
    assert _graded_here(mistake).diagnoses() == list(mistake.diagnoses)


# ------------------------------------------------------------ the hand-out, end to end
@pytest.mark.slow
def test_the_deep_handout_carries_the_text_and_grades_its_key_full_and_its_skeleton_zero(tmp_path, capsys):
    out, key = tmp_path / "handout", tmp_path / "key"
    assert npseq_main(["exercises", "--set", "deep", "--out", str(out), "--solutions", str(key),
                       "--hints", "equations"]) == 0
    assert "npseq grade backprop_exercises.py --set deep\n" in capsys.readouterr().out
    readme = (out / "README.md").read_text()
    for exercise in deep_set.EXERCISES:
        assert f"`{exercise.signature}`" in readme and exercise.docstring.splitlines()[0] in readme
    assert "H_t^(l) = f(H_{t-1}^(l), H_t^(l-1))" in readme and "rev(a)[n, t] = a[n, l - 1 - t]" in readme
    assert "## Reading a failing check" in readme and "the layer or the direction where a mistake enters" in readme
    for mistake in mistakes_of(NAMES):
        assert f"**{mistake.title}** (`{mistake.exercise}`): {mistake.lesson}" in readme
        assert "\n".join(mistake.diagnoses) in readme

    for path, score, code in ((out / "backprop_exercises.py", 0, 1), (key / "backprop_solutions.py", 100, 0)):
        assert npseq_main(["grade", str(path), "--set", "deep", "--format", "json"]) == code
        data = json.loads(capsys.readouterr().out)
        assert data["score"] == score and [e["name"] for e in data["exercises"]] == sheet.names_of_sets(["deep"])
