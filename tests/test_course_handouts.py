"""Hand-outs as a learner gets them: a notebook graded like a ``.py``, and no learner's work ever overwritten."""
import json
import os
import pathlib

import pytest

from npseq.cli import main
from npseq.course import grade_file
from npseq.course.exercise import solution_source
from npseq.course.handout import NOTEBOOK_NAME, SKELETON_NAME, chosen_exercises, solutions
from npseq.course.sheet import EXERCISE_BY_NAME

ONLY = ["rnn_step_backward", "lstm_step_backward"]
ONLY_ARGS = ["--only", *ONLY]  # npseq exercises takes several names after one --only
GRADE_ONLY = ["--only", ONLY[0], "--only", ONLY[1]]  # npseq grade takes one a time


def _handout(tmp_path, capsys, *extra):
    out = tmp_path / "hand"
    assert main(["exercises", "--out", str(out), *ONLY_ARGS, *extra]) == 0
    capsys.readouterr()
    return out


def _filled(notebook: dict) -> dict:
    """The notebook with every exercise's code cell replaced by the sheet's solution."""
    filled = json.loads(json.dumps(notebook))
    for cell in filled["cells"]:
        source = "".join(cell["source"])
        for name in ONLY:
            if cell["cell_type"] == "code" and source.startswith(f"def {name}("):
                cell["source"] = solution_source(EXERCISE_BY_NAME[name].solution).splitlines(keepends=True)
    return filled


def test_a_notebook_handout_grades_0_untouched_and_100_filled_in(tmp_path, capsys):
    out = _handout(tmp_path, capsys, "--notebook")
    assert sorted(os.listdir(out)) == ["README.md", NOTEBOOK_NAME]
    notebook = json.loads((out / NOTEBOOK_NAME).read_text())
    kinds = [cell["cell_type"] for cell in notebook["cells"]]
    assert kinds == ["markdown", "code"] + ["markdown", "code"] * len(ONLY) + ["markdown", "code"]
    markdown = "".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    assert "next_c  = f * prev_c + i * g" in markdown and "through the tanh to its pre-activation a" in markdown
    assert "da      = dnext_h * (1 - next_h^2)" not in markdown  # the default hints leave the equations out

    assert main(["grade", str(out / NOTEBOOK_NAME), *GRADE_ONLY]) == 1
    assert capsys.readouterr().out.rstrip().endswith("score: 0.00 / 2 points = 0.0%")

    filled = tmp_path / "filled.ipynb"
    filled.write_text(json.dumps(_filled(notebook)))
    assert main(["grade", str(filled), *GRADE_ONLY]) == 0
    assert capsys.readouterr().out.rstrip().endswith("score: 2.00 / 2 points = 100.0%  -- all correct")


def test_a_notebook_is_graded_exactly_as_the_same_code_in_a_py(tmp_path):
    planted = solutions(chosen_exercises(ONLY)).replace("dc * i * (1 - g ** 2)", "-dc * i * (1 - g ** 2)")
    script = tmp_path / "mine.py"
    script.write_text(planted)
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# my work"},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "%matplotlib inline\n!pip list\n" + planted},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "%%time\nlstm_step_backward = None\n"}]
    notebook = tmp_path / "mine.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    from_script, from_notebook = grade_file(script, only=ONLY), grade_file(notebook, only=ONLY)
    assert from_notebook.points == from_script.points and 1 < from_script.points < 2
    for mine, theirs in zip(from_notebook.functions, from_script.functions):
        assert [(r.case, r.tensor, r.ok, r.problem, r.diagnosis) for r in mine.rows] == \
               [(r.case, r.tensor, r.ok, r.problem, r.diagnosis) for r in theirs.rows]
    assert from_notebook.notes == ["cell 1, line 1: skipped the IPython line %matplotlib inline",
                                   "cell 1, line 2: skipped the IPython line !pip list",
                                   "cell 2: skipped the whole cell (cell magic %%time)"]
    assert "skipped while reading the notebook (not Python):" in str(from_notebook)
    assert "dWx: gate g, every unit" in from_notebook["lstm_step_backward"].diagnoses()


def test_an_error_in_a_notebook_names_the_cell_and_its_line(tmp_path):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": "x = 1\n"},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "def rnn_step_backward(dnext_h, cache):\n    return 1 / 0\n"}]
    notebook = tmp_path / "mine.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    rnn = grade_file(notebook, only=["rnn_step_backward"])["rnn_step_backward"]
    assert rnn.problems[0].message == "ZeroDivisionError: division by zero (mine.ipynb, cell 2, line 2)"


def test_the_notebooks_last_cell_grades_it_in_jupyter(tmp_path, capsys):
    nbclient = pytest.importorskip("nbclient", reason="needs the notebooks extra")
    nbformat = pytest.importorskip("nbformat", reason="needs the notebooks extra")
    pytest.importorskip("ipykernel", reason="needs the notebooks extra")
    out = _handout(tmp_path, capsys, "--notebook")
    path = out / NOTEBOOK_NAME
    path.write_text(json.dumps(_filled(json.loads(path.read_text()))))
    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(out)}}).execute()
    printed = "".join(output.get("text", "") for output in notebook.cells[-1].outputs)
    assert "score: 2.00 / 2 points = 100.0%  -- all correct" in printed


def test_a_py_and_a_notebook_handout_share_one_folder(tmp_path, capsys):
    out = _handout(tmp_path, capsys)
    assert main(["exercises", "--out", str(out), *ONLY_ARGS, "--notebook"]) == 0  # the README is the same
    assert "unchanged: " in capsys.readouterr().out
    assert sorted(os.listdir(out)) == ["README.md", NOTEBOOK_NAME, SKELETON_NAME]
    readme = (out / "README.md").read_text()
    assert f"npseq grade {SKELETON_NAME} --only" in readme and f"npseq grade {NOTEBOOK_NAME} --only" in readme


def test_a_handout_never_replaces_a_learners_work(tmp_path, capsys):
    out = _handout(tmp_path, capsys)
    (out / "notes.txt").write_text("mine")
    assert main(["exercises", "--out", str(out), *ONLY_ARGS]) == 0  # the same files again: nothing to do
    assert "unchanged" in capsys.readouterr().out
    skeleton = out / SKELETON_NAME
    skeleton.write_text(skeleton.read_text().replace('raise NotImplementedError("rnn_step_backward', 'return 0  # ('))
    work = skeleton.read_text()
    assert main(["exercises", "--out", str(out), *ONLY_ARGS]) == 2
    err = capsys.readouterr().err
    assert err == (f"npseq exercises: --out: {skeleton} already exists with other content (edited, or written for "
                   "other exercises?); write into another --out folder, or add --force to replace it\n")
    assert skeleton.read_text() == work  # refused before anything was written, README included
    assert main(["exercises", "--out", str(out), *ONLY_ARGS, "--no-hints"]) == 2
    assert skeleton.read_text() == work and "Structure:" in (out / "README.md").read_text()
    assert main(["exercises", "--out", str(out), *ONLY_ARGS, "--force"]) == 0
    assert skeleton.read_text() != work and (out / "notes.txt").read_text() == "mine"
    assert sorted(os.listdir(out)) == ["README.md", SKELETON_NAME, "notes.txt"]  # no scratch file left


def test_a_link_in_the_handout_folder_is_never_written_through(tmp_path, capsys):
    out = tmp_path / "hand"
    out.mkdir()
    outside = tmp_path / "outside.py"
    outside.write_text("someone else's file")
    (out / SKELETON_NAME).symlink_to(outside)
    (out / "README.md").symlink_to(tmp_path / "dangling.md")
    assert main(["exercises", "--out", str(out), *ONLY_ARGS]) == 2
    assert "already exist with other content" in capsys.readouterr().err
    assert main(["exercises", "--out", str(out), *ONLY_ARGS, "--force"]) == 0
    assert outside.read_text() == "someone else's file" and not (tmp_path / "dangling.md").exists()
    assert not (out / SKELETON_NAME).is_symlink() and "def rnn_step_backward" in (out / SKELETON_NAME).read_text()


def test_old_handouts_keep_working(tmp_path):
    # a skeleton written before the course moved imports the decoder step from npseq.exercises
    path = tmp_path / "old.py"
    path.write_text("from npseq.exercises import bahdanau_decoder_step_forward  # noqa: F401\n"
                    "from npseq.exercises import bahdanau_decoder_step_backward\n")
    report = grade_file(path, only=["bahdanau_decoder_step_backward"])
    # npseq's own, handed in: scored, and noted (what it builds on, graded with it, is not in the file)
    assert report["bahdanau_decoder_step_backward"].status == "correct" and report.flagged
    assert report.missing == [name for name in report.names if name != "bahdanau_decoder_step_backward"]
    assert pathlib.Path(path).read_text().startswith("from npseq.exercises")
