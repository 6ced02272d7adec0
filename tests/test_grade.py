"""The course grader: it scores skeletons 0, npseq's own backward 100, and pinpoints a planted bug."""
import json
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from npseq import functional as F
from npseq.course import EXERCISES, NAMES, SubmissionError, grade_file
from npseq.course.handout import skeleton_source
from npseq.course.sheet import names_of_sets
from npseq.gradcheck import distinct_numbers
from npseq.grade import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
SKELETON = ROOT / "tutorials" / "exercises" / "backprop_exercises.py"
CLASSIC = names_of_sets(["classic"])  # the shipped hand-out's

ENGINE = """\
from npseq.exercises import bahdanau_decoder_step_backward
from npseq.functional import (rnn_step_backward, lstm_step_backward, gru_step_backward,
                              masked_softmax_backward, additive_attention_backward, rnn_backward, lstm_backward,
                              word_embedding_backward, temporal_softmax_loss, layer_norm_backward,
                              multihead_attention_backward)
"""

PLANTED = ENGINE + """
from npseq import functional as F


def gru_step_backward(dnext_h, cache):
    dx, dprev_h, dWx, dWh, dbx, dbh = F.gru_step_backward(dnext_h, cache)
    dWh[1, 2] = -dWh[1, 2]  # the planted bug: one element of dWh has the wrong sign
    return dx, dprev_h, dWx, dWh, dbx, dbh
"""


def write(tmp_path, text, name="learner.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.slow
def test_the_shipped_skeleton_scores_zero_and_says_not_implemented(capsys):
    report = grade_file(SKELETON)
    assert [f.name for f in report.functions] == CLASSIC
    assert all(f.status == "not implemented" and f.points == 0 for f in report.functions)
    assert report.score == 0 and not report.ok and report.missing == []
    assert main([str(SKELETON)]) == 1
    out = capsys.readouterr().out
    assert out.count("not implemented, 0 points") == len(CLASSIC)
    assert "NotImplementedError" in out and "backprop_exercises.py, line" in out
    assert out.rstrip().endswith("score: 0.00 / 10 points = 0.0%")


@pytest.mark.slow
def test_npseq_own_functions_score_100(tmp_path, capsys):
    path = write(tmp_path, ENGINE)
    report = grade_file(path)
    assert report.ok and report.score == 100.0, report
    for function in report.functions:
        assert function.correct == function.total == len(EXERCISES[NAMES.index(function.name)].cases) * \
            len(EXERCISES[NAMES.index(function.name)].grads)
        assert all(row.fd_error < 1e-8 and row.engine_diff == 0 for row in function.rows), function.section()
        assert "npseq's own" in function.note  # an instructor sees that nothing was written by hand
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and "score: 12.00 / 12 points = 100.0%  -- all correct" in out
    for label in ("reset_after=False", "reset_after=True", "valid_lens=[4, 1, 0] (a zero-length row)",
                  "valid_lens per query (N, Q) with a 0, dweights given"):
        assert label in out


@pytest.mark.slow
def test_a_planted_sign_error_is_pinpointed(tmp_path, capsys):
    path = write(tmp_path, PLANTED)
    report = grade_file(path)
    gru = report["gru_step_backward"]
    assert gru.status == "incorrect"
    wrong = [row for row in gru.rows if not row.ok]
    assert [(row.case.split(",")[0], row.tensor) for row in wrong] == [("reset_after=False", "dWh"),
                                                                      ("reset_after=True", "dWh")]
    assert all("worst at dWh[1, 2]: gate r, unit 2; yours" in row.problem and row.fd_error > 0.5 for row in wrong)
    assert gru.points == pytest.approx(10 / 12)
    assert all(f.status == "correct" for f in report.functions if f.name != "gru_step_backward")
    assert 0 < report.score < 100 and report.score == pytest.approx(100 * (11 + 10 / 12) / 12)

    assert main([str(path)]) == 1
    out = capsys.readouterr().out
    section = out.split("== gru_step_backward")[1].split("\n\n")[0]
    fail_lines = [line for line in section.splitlines() if "FAIL" in line]
    assert len(fail_lines) == 2 and all(" dWh " in line and "[1, 2]" in line for line in fail_lines)
    assert "10/12 tensors correct, 0.83 points" in section
    assert "score: 11.83 / 12 points = 98.6%" in out


def test_learner_mistakes_are_reported_per_case_and_never_crash_the_grader(tmp_path):
    path = write(tmp_path, """\
        import numpy as np
        from npseq import functional as F

        def rnn_step_backward(dnext_h, cache):
            da = dnext_h * (1 - cache.next_h ** 2)
            return da @ cache.Wx, da @ cache.Wh.T, cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0)

        def lstm_step_backward(dnext_h, dnext_c, cache):
            dx, dprev_h, dprev_c, dWx, dWh, db = F.lstm_step_backward(dnext_h, dnext_c, cache)
            return dx, dprev_h, dprev_c, dWx.T, None, db

        def gru_step_backward(dnext_h, cache):
            if cache.reset_after:
                raise NotImplementedError("later")
            return F.gru_step_backward(dnext_h, cache)

        masked_softmax_backward = 3

        def additive_attention_backward(dcontext, cache, dweights=None):
            return F.additive_attention_backward(dcontext, cache, dweights)[:5]
        """)
    report = grade_file(path)

    rnn = report["rnn_step_backward"]
    assert rnn.points == 0 and rnn.rows == [] and len(rnn.problems) == 2
    assert all(p.kind == "error" and p.message.startswith("ValueError: matmul")
               and p.message.endswith("(learner.py, line 6)") for p in rnn.problems)

    lstm = report["lstm_step_backward"]
    assert {row.tensor for row in lstm.rows if not row.ok} == {"dWx", "dWh"}
    assert lstm.points == pytest.approx(8 / 12)
    assert [row.problem for row in lstm.rows_for("dWx")] == ["backward gave shape (20, 4), expected (4, 20)",
                                                            "backward gave shape (8, 2), expected (2, 8)"]
    assert lstm.rows_for("dWh")[0].problem == "backward gave shape None, expected (5, 20)"

    gru = report["gru_step_backward"]  # one variant done: half the points
    assert gru.status == "incorrect" and gru.points == pytest.approx(0.5)
    assert [(p.kind, p.message) for p in gru.problems] == [
        ("not implemented", "NotImplementedError: later (learner.py, line 14)")]

    assert report["masked_softmax_backward"].problems[0].message == \
        "masked_softmax_backward is not a function (it is of type int)"
    attention = report["additive_attention_backward"].problems
    assert {p.message for p in attention} == {
        "returned 5 values, expected 6 (dqueries, dkeys, dvalues, dWq, dWk, dwv)"}
    assert report.names == ("rnn_step_backward", "lstm_step_backward", "gru_step_backward", "masked_softmax_backward",
                            "additive_attention_backward")  # what the file defines
    assert report.score == pytest.approx(100 * (8 / 12 + 0.5) / 5)
    text = str(report)
    assert "NOT IMPLEMENTED: NotImplementedError: later (learner.py, line 14)" in text
    assert "ERROR: ValueError: matmul" in text


def test_missing_functions_are_listed_as_not_attempted(tmp_path, capsys):
    path = write(tmp_path, "from npseq.functional import masked_softmax_backward\n")
    report = grade_file(path, sets=["classic"])
    assert report.missing == [name for name in CLASSIC if name != "masked_softmax_backward"]
    assert report.score == pytest.approx(100 / 10)
    assert main([str(path), "--set", "classic"]) == 1
    out = capsys.readouterr().out
    assert out.count("not attempted (not defined in the file), 0 points") == len(CLASSIC) - 1
    assert "not attempted (0 points): rnn_step_backward, lstm_step_backward, gru_step_backward, " \
           "additive_attention_backward, rnn_backward, lstm_backward, word_embedding_backward, " \
           "temporal_softmax_loss, bahdanau_decoder_step_backward\n" in out


def test_only_grades_the_named_functions(tmp_path, capsys):
    path = write(tmp_path, "from npseq.functional import masked_softmax_backward\n")
    assert main([str(path), "--only", "masked_softmax_backward"]) == 0
    out = capsys.readouterr().out
    assert "rnn_step_backward" not in out and "score: 1.00 / 1 point = 100.0%" in out
    with pytest.raises(ValueError, match=r"only: expected names from \[.*\], got \['softmax'\]"):
        grade_file(path, only=["softmax"])


def test_a_backward_that_edits_its_inputs_in_place_is_graded_fairly(tmp_path):
    # Each call gets its own forward and its own copy of the upstream gradient, so a
    # learner who scribbles on the cache or on dnext_h spoils nothing for the comparison.
    path = write(tmp_path, """\
        from npseq import functional as F

        def rnn_step_backward(dnext_h, cache):
            grads = F.rnn_step_backward(dnext_h, cache)
            dnext_h[...] = 0
            cache.next_h[...] = 7.0
            cache.Wx[...] = 0
            return grads
        """)
    assert grade_file(path, only=["rnn_step_backward"]).ok


@pytest.mark.parametrize("source, expected", [
    ("import numpy as np\n\ndef rnn_step_backward(dnext_h, cache)\n    return 1\n",
     "npseq grade: learner.py, line 3: SyntaxError: expected ':'"),
    ("def f():\n  x = 1\n    y = 2\n", "npseq grade: learner.py, line 3: IndentationError: unexpected indent"),
    ("x = 1\nfrom npseq.functional import not_a_name\n",
     "npseq grade: cannot import learner.py: ImportError: cannot import name 'not_a_name' from "
     "'npseq.functional'"),
    ("def f():\n    return 1 / 0\n\nf()\n",
     "npseq grade: cannot import learner.py: ZeroDivisionError: division by zero (learner.py, line 2)"),
])
def test_a_file_that_does_not_import_is_one_line_and_exit_code_2(tmp_path, capsys, source, expected):
    path = tmp_path / "learner.py"
    path.write_text(source)
    assert main([str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith(expected), captured.err
    with pytest.raises(SubmissionError):
        grade_file(path)


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main([str(tmp_path / "nope.py")]) == 2
    assert capsys.readouterr().err == f"npseq grade: no such file: {tmp_path / 'nope.py'}\n"
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "required: file" in err


@pytest.mark.slow
def test_python_dash_m_npseq_grade_runs_as_a_program(tmp_path):
    path = write(tmp_path, ENGINE)
    result = subprocess.run([sys.executable, "-m", "npseq.grade", str(path)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith("score: 12.00 / 12 points = 100.0%  -- all correct")
    # The skeleton grades itself when run as a script, with the grader's exit code.
    result = subprocess.run([sys.executable, str(SKELETON)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and result.stdout.rstrip().endswith("score: 0.00 / 10 points = 0.0%")


# The skeleton tells learners which cache fields they get; if a cache changes, so must it.
GRU_FIELDS = ("x", "prev_h", "Wx", "Wh", "r", "z", "n")
# each cache (and nested cache, by attribute path) -> the field tuples its cases may have
DOCUMENTED_FIELDS = {
    "rnn_step_backward": {"": [("x", "prev_h", "Wx", "Wh", "next_h")]},
    "lstm_step_backward": {"": [("x", "prev_h", "prev_c", "Wx", "Wh", "i", "f", "o", "g", "tanh_c")]},
    "gru_step_backward": {"": [GRU_FIELDS, GRU_FIELDS + ("hn",)]},  # reset before, reset after
    "masked_softmax_backward": {"": [("weights", "mask")]},
    "additive_attention_backward": {"": [("scores", "pooling")],
                                    "scores.": [("queries", "keys", "Wq", "Wk", "wv", "features")],
                                    "pooling.": [("values", "softmax", "gain", "dropout", "pooled")]},
    "rnn_backward": {"": [("steps", "mask", "h_last")]},
    "lstm_backward": {"": [("steps", "mask", "h_last", "c_last")]},
    "word_embedding_backward": {"": [("x", "W")]},
    "temporal_softmax_loss": {},  # takes its inputs, no cache
    "bahdanau_decoder_step_backward": {"": [("attention", "gru", "context")]},
    "layer_norm_backward": {"": [("x_hat", "inv_sigma", "gamma")]},
    "multihead_attention_backward": {"": [("queries", "keys", "values", "params", "attention", "merged")],
                                     "attention.": [("queries", "keys", "values", "scale", "softmax", "dropout",
                                                     "pooled")]},
}


@pytest.mark.parametrize("exercise", [e for e in EXERCISES if e.name in DOCUMENTED_FIELDS],
                         ids=[name for name in NAMES if name in DOCUMENTED_FIELDS])
def test_the_skeleton_documents_every_cache_field(exercise):
    source = skeleton_source(exercise)
    documented = source.split(f"def {exercise.name}(")[1].split("raise NotImplementedError")[0]
    seen = set()
    for case in exercise.cases:
        cache = case.forward(**case.make_inputs())[-1]
        for prefix, allowed in DOCUMENTED_FIELDS[exercise.name].items():
            part = cache
            for name in filter(None, prefix.split(".")):
                part = getattr(part, name)
            fields = type(part)._fields
            assert fields in allowed
            seen.add((prefix, fields))
            for field in fields:
                assert f"cache.{prefix}{field}" in documented, f"{exercise.name}: cache.{prefix}{field}"
    assert seen == {(prefix, fields) for prefix, allowed in DOCUMENTED_FIELDS[exercise.name].items()
                    for fields in allowed}  # every kind of cache is met by some case
    assert f"def {exercise.signature}:" in source  # the engine's signature, exactly
    assert exercise.engine is getattr(F, exercise.name)  # npseq's own backward, public in npseq.functional


OWN_LSTM_STEP = """\
import numpy as np


def lstm_step_backward(dnext_h, dnext_c, cache):
    i, f, o, g, tanh_c = cache.i, cache.f, cache.o, cache.g, cache.tanh_c
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2)
    da = np.concatenate([dc * g * i * (1 - i), dc * cache.prev_c * f * (1 - f),
                         dnext_h * tanh_c * o * (1 - o), SIGN * dc * i * (1 - g ** 2)], axis=1)
    return (da @ cache.Wx.T, da @ cache.Wh.T, dc * f, cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0))
"""


def test_a_sign_flip_in_the_g_gate_is_reported_as_gate_g(tmp_path):
    path = write(tmp_path, "SIGN = -1\n" + OWN_LSTM_STEP)
    lstm = grade_file(path, only=["lstm_step_backward"])["lstm_step_backward"]
    wrong = {(row.case, row.tensor): row.problem for row in lstm.rows if not row.ok}
    assert {tensor for _, tensor in wrong} == {"dx", "dprev_h", "dWx", "dWh", "db"}
    for (_case, tensor), problem in wrong.items():
        if tensor in ("dWx", "dWh", "db"):  # H=5 in the first case: columns 15..19 are gate g
            assert ": gate g, unit " in problem, problem
        else:
            assert "gate" not in problem, problem
    assert "worst at db[" in wrong[("N=3 D=4 H=5", "db")] and "gate g" in wrong[("N=1 D=2 H=2", "dWx")]
    right = grade_file(write(tmp_path, "SIGN = 1\n" + OWN_LSTM_STEP, "right.py"), only=["lstm_step_backward"])
    assert right.ok and not right.flagged and "honesty" not in str(right)


def test_nan_and_inf_are_located(tmp_path):
    path = write(tmp_path, """\
        import numpy as np
        from npseq import functional as F

        def gru_step_backward(dnext_h, cache):
            dx, dprev_h, dWx, dWh, dbx, dbh = F.gru_step_backward(dnext_h, cache)
            dWx[1, 7] = np.nan  # H=5: column 7 is gate z, unit 2
            dbh[11] = np.inf
            return dx, dprev_h, dWx, dWh, dbx, dbh
        """)
    gru = grade_file(path, only=["gru_step_backward"])["gru_step_backward"]
    problems = {row.tensor: row.problem for row in gru.rows if not row.ok and row.case.startswith("reset_after=F")}
    assert problems == {"dWx": "not finite: 1 NaN and 0 inf; NaN at dWx[1, 7]: gate z, unit 2",
                        "dbh": "not finite: 0 NaN and 1 inf; inf at dbh[11]: gate n, unit 1"}


def test_a_float32_slip_prints_two_different_numbers_and_names_the_dtype(tmp_path):
    # Rounded to float32, dprev_h differs from float64's in the eighth digit: a report that prints six decimals
    # showed the learner two equal numbers side by side and called them different.
    path = write(tmp_path, """\
        from npseq import functional as F

        def rnn_step_backward(dnext_h, cache):
            dx, dprev_h, dWx, dWh, db = F.rnn_step_backward(dnext_h, cache)
            return dx, dprev_h.astype("float32"), dWx, dWh, db
        """)
    rnn = grade_file(path, only=["rnn_step_backward"])["rnn_step_backward"]
    wrong = [row for row in rnn.rows if not row.ok]
    assert wrong and {row.tensor for row in wrong} == {"dprev_h"}
    for row in wrong:
        yours, npseq = re.search(r"yours (\S+), (?:npseq|finite differences) (\S+?);", row.problem).groups()
        assert yours != npseq, row.problem
        assert row.problem.endswith("yours is float32, the case's arrays are float64"), row.problem
    assert rnn.diagnoses() == ["dprev_h: float32, not float64"]


@pytest.mark.parametrize("first, second", [(0.6619668612, 0.6619668834), (1.0, 1.0 + 2 ** -52), (-3e-9, -3.1e-9)])
def test_distinct_numbers_always_print_differently(first, second):
    shown = distinct_numbers(first, second)
    assert shown[0] != shown[1] and float(shown[0]) == pytest.approx(first, rel=1e-6)
    assert distinct_numbers(0.5, 0.25) == ("+5.000000e-01", "+2.500000e-01")  # seven digits when they do


def test_a_gradient_off_by_a_constant_factor_says_the_factor(tmp_path):
    path = write(tmp_path, """\
        from npseq import functional as F

        def rnn_step_backward(dnext_h, cache):
            dx, dprev_h, dWx, dWh, db = F.rnn_step_backward(dnext_h, cache)
            return dx / len(dnext_h), dprev_h, 2 * dWx, dWh, -db
        """)
    rnn = grade_file(path, only=["rnn_step_backward"])["rnn_step_backward"]
    # the first case has N=3, the second N=1 (where dx / N is right)
    assert rnn.diagnoses() == ["dx: 1/3 of npseq's", "dWx: 2 times npseq's", "db: the opposite sign"]
    problems = {(row.case, row.tensor): row.problem for row in rnn.rows if not row.ok}
    assert "dx is 1/3 of npseq's everywhere: the direction is right and the scale is not" in \
        problems[("N=3 D=4 H=5", "dx")]
    assert "db is -1 times npseq's everywhere: a sign" in problems[("N=1 D=2 H=1", "db")]


@pytest.mark.parametrize("exercise", [e for e in EXERCISES if e.terms], ids=lambda exercise: exercise.name)
def test_the_terms_of_a_sum_add_up_to_npseqs_gradient_and_none_is_zero(exercise):
    import numpy as np

    from npseq.course.grader import _as_grads, _call, _upstream
    nonzero = {}  # (gradient, path) -> in some case, the term is not zero (in an edge case it may be: one key)
    for case in exercise.cases:
        outputs = case.forward(**case.make_inputs())[:case.outputs]
        douts = _upstream(outputs, case.seed)
        engine = dict(zip(exercise.grads, _as_grads(_call(exercise.engine, case, douts), exercise.grads)[0]))
        terms = _call(exercise.terms, case, douts)
        assert terms and {term.gradient for term in terms} <= set(exercise.grads)
        assert all(term.value.shape == engine[term.gradient].shape for term in terms), case.label
        for term in terms:
            key = (term.gradient, term.path)
            nonzero[key] = nonzero.get(key, False) or bool(np.abs(term.value).max() > 0)
        for name in {term.gradient for term in terms}:
            parts = [term.value for term in terms if term.gradient == name]
            assert len(parts) >= 2, (case.label, name)
            np.testing.assert_allclose(sum(parts), engine[name], rtol=1e-10, atol=1e-12, err_msg=case.label)
    assert all(nonzero.values()), nonzero


@pytest.mark.slow
def test_a_path_left_out_of_a_sum_is_named(tmp_path):
    # Each learner's gradient is npseq's minus one term of a sum over paths: before, the report said "dprev_h: every
    # element" and left the learner to find which of the paths into h was missing.
    path = write(tmp_path, """\
        from npseq import functional as F

        def gru_step_backward(dnext_h, cache):
            dx, dprev_h, dWx, dWh, dbx, dbh = F.gru_step_backward(dnext_h, cache)
            return dx, dprev_h - dnext_h * cache.z, dWx, dWh, dbx, dbh

        def lstm_step_backward(dnext_h, dnext_c, cache):
            return F.lstm_step_backward(dnext_h, 0 * dnext_c, cache)

        def bahdanau_decoder_step_backward(dnext_h, cache):
            dx, dprev_h, denc, *weights = F.bahdanau_decoder_step_backward(dnext_h, cache)
            du = F.gru_step_backward(dnext_h, cache.gru)[0]
            width = cache.context.shape[1]
            dkeys = F.additive_attention_backward(du[:, None, :width], cache.attention)[1]
            return (dx, dprev_h, denc - dkeys, *weights)
        """)
    report = grade_file(path, only=["gru_step_backward", "lstm_step_backward", "bahdanau_decoder_step_backward"])
    assert report["gru_step_backward"].diagnoses() == ["dprev_h: lacks the direct path (the z * h of h')"]
    assert "dprev_c: lacks the cell's own path (dnext_c, through next_c = f * prev_c + ...)" in \
        report["lstm_step_backward"].diagnoses()
    assert report["bahdanau_decoder_step_backward"].diagnoses() == [
        "denc_outputs: lacks the keys' term (the encoder outputs scored against the query)"]
    norm = write(tmp_path, """\
        def layer_norm_backward(dy, cache):
            x_hat, s, gamma = cache.x_hat, cache.inv_sigma, cache.gamma
            rows, hats = dy.reshape(-1, dy.shape[-1]), x_hat.reshape(-1, x_hat.shape[-1])
            g = dy * gamma
            return s * (g - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)), (rows * hats).sum(axis=0), rows.sum(0)
        """, "norm.py")
    assert grade_file(norm, only=["layer_norm_backward"])["layer_norm_backward"].diagnoses() == [
        "dx: lacks the path through the mean mu"]
    for row in report["gru_step_backward"].rows:
        assert row.ok or "dprev_h is npseq's minus exactly one term of its sum, the direct path (the z * h of h'): " \
                         "that path is left out" in row.problem, row.problem


def test_steps_stacked_in_reverse_are_named_and_not_blamed_on_a_step(tmp_path):
    path = write(tmp_path, """\
        from npseq import functional as F

        def rnn_backward(dh, cache):
            dx, dh0, dWx, dWh, db = F.rnn_backward(dh, cache)
            return dx[:, ::-1], dh0, dWx, dWh, db
        """)
    rnn = grade_file(path, only=["rnn_backward"])["rnn_backward"]
    assert rnn.diagnoses() == ["dx: steps in reverse order"]
    for row in (row for row in rnn.rows if not row.ok):
        assert "steps are in reverse order: yours at t is npseq's at t=" in row.problem, row.problem
        assert "hands back" not in row.problem and row.first_wrong_step is None


def test_the_time_step_sentence_is_for_recurrences_only(tmp_path):
    # The loss's steps are computed each on its own: a wrong step is listed, never "handed back" by the next.
    path = write(tmp_path, """\
        from npseq import functional as F

        def temporal_softmax_loss(x, y, mask):
            loss, dx = F.temporal_softmax_loss(x, y, mask)
            dx = dx.copy()
            dx[:, :1] *= 3
            return loss, dx
        """)
    loss = grade_file(path, only=["temporal_softmax_loss"])["temporal_softmax_loss"]
    wrong = [row for row in loss.rows if not row.ok]
    assert wrong and all(row.tensor == "dx" for row in wrong)
    for row in wrong:
        assert "walking back" not in row.problem and "hands back" not in row.problem and "enters" not in row.problem
    listed = [row for row in wrong if row.shape[1] > 1]  # with one step, dx is 3 times npseq's
    assert listed and all(row.diagnosis == "dx: wrong at t=0" and "each step computed on its own here" in row.problem
                          for row in listed)


def test_a_crash_names_the_gradient_being_computed(tmp_path):
    # Wx untransposed: D != H, so the product raises; a bare "ValueError (learner.py, line 3)" left the learner to
    # work out which of the five returned tensors the line was computing.
    path = write(tmp_path, """\
        def rnn_step_backward(dnext_h, cache):
            da = dnext_h * (1 - cache.next_h ** 2)
            return da @ cache.Wx, da @ cache.Wh.T, cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0)
        """)
    rnn = grade_file(path, only=["rnn_step_backward"])["rnn_step_backward"]
    assert rnn.diagnoses() == ["error: ValueError computing dx"]
    for problem in rnn.problems:
        assert problem.message.startswith("ValueError: matmul")
        assert problem.message.endswith("; while computing dx: `da @ cache.Wx` (learner.py, line 3)"), problem.message


def test_a_wrapper_around_npseq_backward_is_flagged_even_when_hidden(tmp_path, capsys):
    path = write(tmp_path, """\
        import npseq.functional as F

        def lstm_step_backward(dnext_h, dnext_c, cache):
            return F.lstm_step_backward(dnext_h, dnext_c, cache)

        def rnn_step_backward(dnext_h, cache):
            return getattr(F, "rnn_step" + "_backward")(dnext_h, cache)  # no name to read in the source
        """)
    report = grade_file(path, only=["lstm_step_backward", "rnn_step_backward"])
    assert report.ok and report.score == 100 and report.flagged  # flagged, not penalised
    assert report.honesty == ["line 4: uses F.lstm_step_backward"]
    assert report["lstm_step_backward"].npseq_calls == ("npseq.functional.recurrent.lstm_step_backward",)
    assert report["rnn_step_backward"].npseq_calls == ("npseq.functional.recurrent.rnn_step_backward",)
    only = ["--only", "lstm_step_backward", "--only", "rnn_step_backward"]
    assert main([str(path), "--format", "json"] + only) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["flagged"] and data["honesty"] == ["line 4: uses F.lstm_step_backward"]
    assert [e["npseq_calls"] for e in data["exercises"]] == [["npseq.functional.recurrent.rnn_step_backward"],
                                                                 ["npseq.functional.recurrent.lstm_step_backward"]]
    assert main([str(path)] + only) == 0
    assert "honesty note (the score is unchanged; the instructor decides)" in capsys.readouterr().out


def test_a_grade_survives_its_json(tmp_path):
    from npseq.course.report import FunctionGrade
    report = grade_file(write(tmp_path, PLANTED), only=["gru_step_backward", "rnn_step_backward"])
    for function in report.functions:
        back = FunctionGrade.from_dict(function.to_dict())
        assert back.to_dict() == function.to_dict() and back.diagnoses() == function.diagnoses()
    assert report["gru_step_backward"].diagnoses() == ["dWh: gate r, unit 2"]
