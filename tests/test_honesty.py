"""The copy check as an instructor meets it: honest work is never accused, copies are named with their source and
the lines they share, classmates who share a solution are paired, and the corpus's rates hold (issue: honesty that
accuses no honest student and is not fooled by deleting a line)."""
import csv
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
from learners import HONEST, honest_work

from npseq.cli import main
from npseq.course import grade_file
from npseq.course.copies import closest_copy
from npseq.course.similarity import SIMILAR_AT, SIZE_FLOOR

BENCHMARK = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "honesty" / "measure.py"

# Written as the hand-outs' hints say (the transformer hand-out's masked softmax, the classic one's embedding and RNN
# step), each by a learner who followed them: npseq's own code is the same few lines.
FROM_THE_HINTS = {
    "masked_softmax_backward": (
        "def masked_softmax_backward(dweights, cache):\n"
        "    a = cache.weights\n"
        "    return a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))\n"),
    "word_embedding_backward": (
        "def word_embedding_backward(dout, cache):\n"
        "    dW = np.zeros_like(cache.W)\n"
        "    np.add.at(dW, cache.x, dout)\n"
        "    return dW\n"),
    "rnn_step_backward": (
        "def rnn_step_backward(dnext_h, cache):\n"
        "    da = dnext_h * (1 - cache.next_h ** 2)\n"
        "    dx = da @ cache.Wx.T\n"
        "    dprev_h = da @ cache.Wh.T\n"
        "    dWx = cache.x.T @ da\n"
        "    dWh = cache.prev_h.T @ da\n"
        "    db = da.sum(axis=0)\n"
        "    return dx, dprev_h, dWx, dWh, db\n"),
}


@pytest.mark.parametrize("name", sorted(FROM_THE_HINTS))
def test_a_function_written_from_the_hints_gets_full_marks_under_policy_zero(tmp_path, capsys, name):
    path = tmp_path / "learner.py"
    path.write_text("import numpy as np\n\n\n" + FROM_THE_HINTS[name])
    assert main(["grade", str(path), "--only", name, "--policy", "zero"]) == 0
    out = capsys.readouterr().out
    assert "-- all correct" in out and "honesty" not in out
    assert re.search(rf"copy check: too short to compare \(\d+ tokens of its own, under {SIZE_FLOOR}\)", out)
    report = grade_file(path, only=[name], policy="zero")
    assert report.score == 100 and not report.flagged and report[name].likeness.too_short


def test_the_report_shows_the_source_and_the_shared_lines_side_by_side(tmp_path):
    path = tmp_path / "learner.py"
    key = (HONEST.parent / "copies" / "gru_step_backward" / "key__rename.py").read_text()
    path.write_text(key)
    report = grade_file(path, only=["gru_step_backward"], policy="zero")
    gru = report["gru_step_backward"]
    assert gru.status == "honesty" and gru.points == 0 and gru.likeness.score >= SIMILAR_AT
    assert gru.copied == "the solutions key (npseq exercises --solutions): gru_step_backward"
    text = str(report)
    assert f"gru_step_backward: {gru.likeness.score:.0%} of its code is in the solutions key" in text
    side = [line for line in text.splitlines() if " | " in line]
    assert side and any("yours, line" in line and "theirs, line" in line for line in side)
    renamed = [line for line in side if "np.concatenate" in line]
    assert renamed, side  # the copied lines themselves, the learner's beside the key's
    data = report.to_dict()
    assert data["flagged_because"] == [f"gru_step_backward: {gru.likeness.summary()}"]
    assert data["exercises"][0]["likeness"]["lines"][0]["your_text"]


def _disguised(source: str) -> str:
    """``source`` as a classmate hands it in: every name of its own renamed, comments added, a line that does
    nothing, two independent lines swapped."""
    renames = {"g_z": "grad_update", "g_n": "grad_cand", "g_r": "grad_reset", "side": "branch", "g_in": "stacked",
               "dh_W": "dh_hidden", "g_rh": "grad_rh", "g_hid": "hidden_grads", "_split3": "_three_blocks"}
    for old, new in renames.items():
        source = re.sub(rf"\b{old}\b", new, source)
    source = source.replace("    dx = np.einsum", "    # the input side\n    unused = 0\n    dx = np.einsum")
    return re.sub(r"(    dWx = [^\n]*\n)(    dbx = [^\n]*\n)", r"\2\1", source)


@pytest.mark.slow
def test_a_class_where_two_students_share_a_disguised_solution_shows_the_pair(tmp_path):
    alice = (HONEST / "gru_step_backward" / "einsum_blocks.py").read_text()
    bob = _disguised(alice)
    assert bob != alice
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.py").write_text(alice)
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": bob.splitlines(keepends=True)}
    (folder / "bob.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                  "nbformat_minor": 5}))
    (folder / "carol.py").write_text(honest_work(["gru_step_backward"], style=1))
    (folder / "dave.py").write_text(honest_work(["gru_step_backward"], style=2))
    result = subprocess.run([sys.executable, "-m", "npseq", "grade", "class", "--only", "gru_step_backward",
                             "--csv", "g.csv", "--json", "g.json"], capture_output=True, text=True, cwd=tmp_path,
                            timeout=600)
    assert result.returncode == 0, result.stderr  # all four are correct: the pair is a note, not a grade
    out = result.stdout
    assert "similar pairs (one's code largely the other's): 1" in out
    pair_line = next(line for line in out.splitlines() if " ~ " in line)
    assert re.search(r"(alice ~ bob|bob ~ alice): ", pair_line), pair_line  # the students, by their files' names
    assert "gru_step_backward" in pair_line and "carol" not in out and "dave" not in out
    assert any(re.search(r"(alice|bob), (line|cell).* \| (alice|bob), (line|cell)", line)
               for line in out.splitlines()), out
    rows = {row["student"]: row for row in csv.DictReader((tmp_path / "g.csv").open())}
    assert rows["alice"]["similar_to"].startswith("bob: gru_step_backward ")
    assert rows["bob"]["similar_to"].startswith("alice: gru_step_backward ")
    assert rows["bob"]["file"] == os.path.join("class", "bob.ipynb")
    assert rows["carol"]["similar_to"] == rows["dave"]["similar_to"] == ""
    assert rows["carol"]["flagged"] == rows["dave"]["flagged"] == ""
    assert "gru_step_backward: shares" in rows["alice"]["flagged"] and "with" in rows["bob"]["flagged"]
    data = json.loads((tmp_path / "g.json").read_text())
    [pair] = data["similar_pairs"]
    assert set(pair["students"]) == {"alice", "bob"} and pair["score"] >= SIMILAR_AT
    assert pair["lines"] and all(shared["your_text"] and shared["their_text"] for shared in pair["lines"])


def _measure():
    spec = importlib.util.spec_from_file_location("honesty_measure", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.measure()


@pytest.mark.slow
def test_the_corpus_rates_hold_no_honest_function_flagged_nine_copies_in_ten_found():
    measured = _measure()
    honest, copies, pairs = measured["honest"], measured["copies"], measured["pairs"]
    assert len(honest) >= 60 and len(copies) >= 60 and measured["exercises"] == 29
    assert [path for _, path, check in honest if check.copied] == []
    assert [(a.label, b.label) for a, b, s in pairs if s.own >= SIZE_FLOOR and s.score >= SIMILAR_AT] == []
    judged = [check for _, _, check in copies if not check.too_short]
    assert len(judged) >= 40 and sum(check.copied for check in judged) >= 0.9 * len(judged)


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(HONEST.glob("*/*.py")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_honest_solution_of_the_corpus_is_correct(path):
    name = path.parent.name
    report = grade_file(path, only=[name], timeout=60, quiet=True)
    assert report.ok, str(report)
    assert closest_copy(path.read_text(), name).copied is False
