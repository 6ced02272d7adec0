"""The sequence-level and Transformer exercises: solvable by hand, and a mistake in them is located."""
import pathlib

import pytest

from npseq.course import NAMES, grade_file
from npseq.course.handout import chosen_exercises, solutions, with_prerequisites
from npseq.course.sheet import names_of_sets

SOLUTIONS = solutions(chosen_exercises(sets=["classic", "transformer"]))  # the instructor's key
SKELETON = pathlib.Path(__file__).resolve().parents[1] / "tutorials" / "exercises" / "backprop_exercises.py"
SEQUENCE_NAMES = ["rnn_backward", "lstm_backward", "word_embedding_backward", "temporal_softmax_loss",
                  "bahdanau_decoder_step_backward"]
RNN_STEP = "        dx_t, dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(m * g, cache.steps[t])\n"


def planted(tmp_path, old, new, name="learner.py"):
    """The solutions with one mistake planted: ``old`` replaced by ``new``."""
    assert SOLUTIONS.count(old) == 1
    path = tmp_path / name
    path.write_text(SOLUTIONS.replace(old, new))
    return path


@pytest.mark.slow
def test_every_exercise_can_be_solved_from_its_docstring_without_npseq_backward(tmp_path):
    path = tmp_path / "backprop_solutions.py"
    path.write_text(SOLUTIONS)
    report = grade_file(path, sets=["classic"])
    assert [f.name for f in report.functions] == names_of_sets(["classic"]) and set(SEQUENCE_NAMES) <= set(NAMES)
    assert report.ok and report.score == 100.0, report
    # no npseq backward called, imported or rebuilt at run time (the key's functions are the file's own text, which
    # the copy check judges): each function long enough to judge is named a copy of the key (or of npseq's source,
    # which it matches as closely), the short ones are not judged
    assert report.honesty == [] and all(not f.npseq_calls and not f.evasions for f in report.functions)
    assert all(f.likeness.too_short or f.copied for f in report.functions), report
    assert report["masked_softmax_backward"].likeness.too_short  # one line, the same as npseq's: never judged
    assert any(f.copied.startswith("the solutions key") for f in report.functions)
    cases = {label for name in SEQUENCE_NAMES for label in report[name].cases}
    for edge in ("N=1 T=1", "a row of all padding", "repeated ids", "one all padding", "N=1 S=1"):
        assert any(edge in label for label in cases), edge


def test_an_error_in_what_step_3_hands_back_is_reported_at_t_3(tmp_path):
    # only the steps before t=3 are affected: dx is first wrong at t=2, and the report says why
    path = planted(tmp_path, RNN_STEP, RNN_STEP + "        if t == 3:\n            dprev_h = -dprev_h\n")
    rnn = grade_file(path, only=["rnn_backward"])["rnn_backward"]
    dx = [row for row in rnn.rows if row.tensor == "dx" and not row.ok]
    assert len(dx) == 1 and dx[0].first_wrong_step == 2
    assert ("first wrong at t=2 (of 0..5, walking back from t=5; t=5..3 agree): the error enters in the gradient "
            "that step t=3 hands back to t=2 (with no upstream gradient after t=2, t=2 is right)") in dx[0].problem
    assert rnn.rows_for("dx")[1].ok  # the T=1 case has no step 3


def test_an_error_inside_step_3_is_reported_at_t_3(tmp_path):
    path = planted(tmp_path, RNN_STEP, "        if t == 3:\n            g = 1.5 * g\n" + RNN_STEP)
    dx = grade_file(path, only=["rnn_backward"])["rnn_backward"].rows_for("dx")[0]
    assert not dx.ok and dx.first_wrong_step == 3
    assert ("first wrong at t=3 (of 0..5, walking back from t=5; t=5..4 agree): the error enters at step t=3 "
            "itself (it stays wrong with no upstream gradient after t=3)") in dx.problem


def test_the_last_step_wrong_in_lstm_backward_names_t_last_and_the_gate(tmp_path):
    path = planted(tmp_path, "        g = delta_h + m * dh[:, t]\n",
                   "        g = delta_h + m * dh[:, t]\n        if t == dh.shape[1] - 1:\n            g = -g\n")
    lstm = grade_file(path, only=["lstm_backward"])["lstm_backward"]
    first = {row.tensor: row for row in lstm.rows if row.case.startswith("N=3")}
    assert first["dx"].first_wrong_step == 5 and "first wrong at t=5 (of 0..5), the last step" in first["dx"].problem
    assert ": gate " in first["dWx"].problem and "t=" not in first["dWx"].problem  # summed over time: no step


def test_fancy_index_assignment_loses_repeated_ids(tmp_path):
    path = planted(tmp_path, "    np.add.at(dW, cache.x, dout)\n", "    dW[cache.x] += dout\n")
    embedding = grade_file(path, only=["word_embedding_backward"])["word_embedding_backward"]
    repeated, single = embedding.rows
    assert not repeated.ok and single.ok  # N=1 T=1 has nothing repeated
    assert repeated.problem[:len("worst at dW[0, ")] in ("worst at dW[0, ", "worst at dW[3, ")  # the repeated ids
    assert embedding.points == 0.5


def test_a_loss_averaged_over_valid_steps_instead_of_n_is_caught(tmp_path):
    path = planted(tmp_path, "    loss = -(mask * picked).sum() / n\n",
                   "    loss = -(mask * picked).sum() / mask.sum()\n")
    loss = grade_file(path, only=["temporal_softmax_loss"])["temporal_softmax_loss"]
    wrong = [(row.case.split(",")[0], row.tensor) for row in loss.rows if not row.ok]
    assert ("N=3 T=4 V=5", "loss") in wrong and all(tensor == "loss" for _, tensor in wrong)
    assert loss.rows_for("loss")[1].ok  # N=1 T=1 with its one step valid: the same number


@pytest.mark.slow
@pytest.mark.parametrize("name", SEQUENCE_NAMES)
def test_the_skeleton_leaves_each_sequence_exercise_to_the_learner(name):
    function = grade_file(SKELETON, only=[name])[name]
    assert function.status == "not implemented" and function.points == 0


def test_attention_without_the_scale_fails_where_the_scores_feed_in_every_head(tmp_path):
    path = planted(tmp_path, "    dS = masked_softmax_backward(dA, cache.softmax) * cache.scale\n",
                   "    dS = masked_softmax_backward(dA, cache.softmax)\n")
    report = grade_file(path, only=["scaled_dot_product_attention_backward", "multihead_attention_backward"])
    attention, mha = report["scaled_dot_product_attention_backward"], report["multihead_attention_backward"]
    assert {row.tensor for row in attention.rows if not row.ok} == {"dqueries", "dkeys"}
    wrong = {row.tensor for row in mha.rows if not row.ok}
    assert wrong == {"dqueries", "dkeys", "dW_q", "dW_k", "db_q"}  # values and the output side are untouched
    assert mha.status == "incorrect"


def test_a_softmax_backward_summed_over_axis_2_breaks_the_four_dimensional_weights(tmp_path):
    path = planted(tmp_path, "    return a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))\n",
                   "    return a * (dweights - (dweights * a).sum(axis=2, keepdims=True))\n")
    report = grade_file(path, only=["masked_softmax_backward", "multihead_attention_backward"])
    assert report["masked_softmax_backward"].status == "correct"  # right for (N, Q, K) ...
    assert report["multihead_attention_backward"].status == "incorrect"  # ... wrong for (N, h, T_q, T_k)


def test_with_prerequisites_brings_the_masked_softmax_to_multihead_attention():
    assert with_prerequisites(["multihead_attention_backward"]) == [
        "masked_softmax_backward", "scaled_dot_product_attention_backward", "multihead_attention_backward"]
