"""``npseq.course.notebook``: a learner's notebook read as one Python source, and the hand-out written as one."""
import json

import pytest

from npseq.course import notebook
from npseq.course.notebook import NotebookError, NotebookExercise, handout_notebook, notebook_text, read_notebook_code

SETUP = "import numpy as np\n\nfrom npseq import functional"
EXERCISES = [
    NotebookExercise("RNN step", "Fill in the backward of one step.\n\n$h' = \\tanh(x W_x + h W_h + b)$",
                     "def rnn_step_backward(dnext_h, cache):\n    raise NotImplementedError"),
    NotebookExercise("Softmax", "Masked, with é and ∑ kept as they are.",
                     'def masked_softmax_backward(dweights, cache):\n    """The gradient of the scores."""\n'
                     "    raise NotImplementedError\n"),
]
GRADING = "from npseq.grade import main\n\nmain([__file__])"


def handout():
    return handout_notebook("Backprop by hand", "Twelve backward passes.", SETUP, EXERCISES,
                            "Run the next cell to grade your functions.", GRADING)


def code_cell(source):
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}


def write(tmp_path, cells, name="hand.ipynb"):
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_a_handout_reads_back_as_its_code_cells_in_order(tmp_path):
    path = tmp_path / "hand.ipynb"
    path.write_text(notebook_text(handout()), encoding="utf-8")
    code = read_notebook_code(path)
    pieces = [SETUP] + [exercise.code.rstrip("\n") for exercise in EXERCISES] + [GRADING]
    assert code.source == "\n\n".join(pieces) + "\n"
    assert code.notes == ()
    compile(code.source, str(path), "exec")
    assert code.where(1) == "cell 1, line 1" and code.where(5) == "cell 2, line 1"


def test_a_handout_is_plain_nbformat_4_5_with_stable_ids(tmp_path):
    nb = handout()
    assert (nb["nbformat"], nb["nbformat_minor"]) == (4, 5)
    assert nb["metadata"] == {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                              "language_info": {"name": "python"}}
    assert [cell["cell_type"] for cell in nb["cells"]] == ["markdown", "code"] * 4
    assert [cell["id"] for cell in nb["cells"]] == [f"cell-{n}" for n in range(1, 9)]
    for cell in nb["cells"]:
        assert cell["metadata"] == {} and cell["source"][-1][-1:] != "\n"
        assert all(line.endswith("\n") for line in cell["source"][:-1])
        if cell["cell_type"] == "code":
            assert cell["execution_count"] is None and cell["outputs"] == []
    assert nb["cells"][0]["source"] == ["# Backprop by hand\n", "\n", "Twelve backward passes."]
    assert nb["cells"][2]["source"][0] == "## RNN step\n"
    assert "".join(nb["cells"][5]["source"]) == EXERCISES[1].code.rstrip("\n")
    text = notebook_text(nb)
    assert text.endswith("}\n") and "é and ∑" in text and json.loads(text) == nb
    assert notebook_text(handout()) == text  # the same hand-out, the same file
    nb["metadata"]["kernelspec"]["name"] = "edited"
    assert handout()["metadata"]["kernelspec"]["name"] == "python3"


def test_a_handout_is_valid_for_nbformat(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    path = tmp_path / "hand.ipynb"
    path.write_text(notebook_text(handout()), encoding="utf-8")
    nbformat.validate(nbformat.read(str(path), as_version=4))


def test_ipython_lines_become_empty_lines_with_a_note_each(tmp_path):
    long_command = "!pip install " + " ".join(f"package{n}" for n in range(20))
    path = write(tmp_path, [
        code_cell(["import math\n", "%matplotlib inline\n", "!pip install tqdm\n", "files = !ls -l\n",
                   "t, u = %timeit -o math.sqrt(2)\n", "math.sqrt?\n", "??math\n", "math.fsum??\n",
                   "x = 5 % 3  # is this magic?\n", "y = x != 2"]),
        {"cell_type": "markdown", "metadata": {}, "source": "%matplotlib is for plots\n!not code either"},
        code_cell("%%time\nz = sum(range(10))\n"),
        {"cell_type": "raw", "metadata": {}, "source": "%%bash\nls"},
        code_cell(f"def f():\n    return 1\n{long_command}\n%load_ext autoreload\nw = f()"),
    ])
    code = read_notebook_code(path)
    lines = code.source.split("\n")
    assert lines[:11] == ["import math", "", "", "", "", "", "", "", "x = 5 % 3  # is this magic?", "y = x != 2",
                          ""]
    assert lines[11:14] == ["", "", ""]  # the cell magic's cell, and the blank line after it
    assert lines[14:] == ["def f():", "    return 1", "", "", "w = f()", ""]
    compile(code.source, "hand.ipynb", "exec")
    quoted = long_command[:57] + "..."
    assert code.notes == (
        "cell 1, line 2: skipped the IPython line %matplotlib inline",
        "cell 1, line 3: skipped the IPython line !pip install tqdm",
        "cell 1, line 4: skipped the IPython line files = !ls -l",
        "cell 1, line 5: skipped the IPython line t, u = %timeit -o math.sqrt(2)",
        "cell 1, line 6: skipped the IPython line math.sqrt?",
        "cell 1, line 7: skipped the IPython line ??math",
        "cell 1, line 8: skipped the IPython line math.fsum??",
        "cell 2: skipped the whole cell (cell magic %%time)",
        f"cell 3, line 3: skipped the IPython line {quoted}",
        "cell 3, line 4: skipped the IPython line %load_ext autoreload",
    )
    assert len(quoted) == 60
    # line numbers stay aligned: a traceback's line in the 3rd code cell names it
    assert code.where(lines.index("w = f()") + 1) == "cell 3, line 5"
    assert code.where(15) == "cell 3, line 1" and code.where(9) == "cell 1, line 9"
    assert code.where(11) == "cell 1, line 10"  # the blank line between cells: where the cell before ends
    for outside in (0, len(code.source.split("\n"))):
        with pytest.raises(ValueError, match=f"line {outside} is not in the notebook's code, which has 19 lines"):
            code.where(outside)


def test_lines_inside_strings_brackets_and_continuations_are_python_and_kept(tmp_path):
    cell = ('doc = """Usage:\n%prog [options]\n!important\n  ?what\n"""\n'
            "fmt = '''head\n%s'''\n"
            "%matplotlib inline\n"
            "ratio = (7\n         % 4)\n"
            "total = 7 \\\n    % 4\n"
            "text = 'one \\\n%two'\n"
            "%who\n")
    code = read_notebook_code(write(tmp_path, [code_cell(cell)]))
    expected = cell.replace("%matplotlib inline", "").replace("%who", "")
    assert code.source == expected
    assert code.notes == ("cell 1, line 8: skipped the IPython line %matplotlib inline",
                          "cell 1, line 15: skipped the IPython line %who")
    namespace = {}
    exec(compile(code.source, "hand.ipynb", "exec"), namespace)
    assert namespace["doc"] == "Usage:\n%prog [options]\n!important\n  ?what\n"
    assert (namespace["fmt"], namespace["ratio"], namespace["total"], namespace["text"]) == ("head\n%s", 3, 3,
                                                                                            "one %two")


def test_an_indented_ipython_line_becomes_pass_so_its_block_still_compiles(tmp_path):
    cell = "for i in range(3):\n    %time sum(range(i))\n  # a comment?\nelse:\n    !echo done\n"
    code = read_notebook_code(write(tmp_path, [code_cell(cell)]))
    assert code.source == "for i in range(3):\n    pass\n  # a comment?\nelse:\n    pass\n"
    assert [note.split(":")[0] for note in code.notes] == ["cell 1, line 2", "cell 1, line 5"]
    compile(code.source, "hand.ipynb", "exec")
    # An indented first line has nothing above it to need a statement: it becomes an empty line.
    assert read_notebook_code(write(tmp_path, [code_cell("  %matplotlib inline\nx = 1")])).source == "\nx = 1\n"


def test_sources_as_strings_or_lists_and_empty_cells(tmp_path):
    path = write(tmp_path, [code_cell(["a = 1\n", "b = 2"]), code_cell(""), code_cell([]),
                            code_cell("c = 3\r\nd = 4\n\n"), {"cell_type": "markdown", "source": ["# x"]},
                            code_cell(["e = 5"])])
    code = read_notebook_code(path)
    assert code.source == "a = 1\nb = 2\n\nc = 3\nd = 4\n\n\ne = 5\n"
    assert [code.where(line) for line in (4, 6, 7, 8)] == ["cell 4, line 1", "cell 4, line 3", "cell 4, line 3",
                                                           "cell 5, line 1"]
    assert read_notebook_code(write(tmp_path, [{"cell_type": "markdown", "source": "text"}])).source == ""


@pytest.mark.parametrize("text, problem", [
    ('{"cells": [\n{"cell_type": "code"}\n{"cell_type": "code"}]}',
     "hand.ipynb is not a notebook: invalid JSON at line 3 (Expecting ',' delimiter)"),
    ("[1, 2]", "hand.ipynb is not a notebook: its JSON is a list, not an object with a list of cells"),
    ('{"nbformat": 4}', 'hand.ipynb is not a notebook: it has no "cells", not a list of cells (nbformat 4)'),
    ('{"cells": "print(1)"}',
     'hand.ipynb is not a notebook: it has a string as "cells", not a list of cells (nbformat 4)'),
    ('{"cells": [7]}', "hand.ipynb is not a notebook: cells[0] is a number, not a cell"),
    ('{"cells": [{"cell_type": "code", "source": ["x = 1", 2]}]}',
     "hand.ipynb is not a notebook: the source of code cell 1 is neither a string nor a list of strings"),
    ("[" * 100_000, "hand.ipynb is not a notebook: its JSON is nested too deeply"),
])
def test_a_file_that_is_not_a_notebook_is_one_line_naming_it(tmp_path, text, problem):
    path = tmp_path / "hand.ipynb"
    path.write_text(text)
    with pytest.raises(NotebookError) as raised:
        read_notebook_code(path)
    assert str(raised.value) == problem


def test_bytes_that_are_not_utf8_are_named(tmp_path):
    path = tmp_path / "hand.ipynb"
    path.write_bytes(b'{"cells": ["\xff"]}')
    with pytest.raises(NotebookError, match=r"^hand.ipynb is not a notebook: not UTF-8 text \(byte 12\)$"):
        read_notebook_code(path)


def test_an_unreadable_or_oversized_file_is_one_line(tmp_path, monkeypatch):
    with pytest.raises(NotebookError, match="^cannot read missing.ipynb: No such file or directory$"):
        read_notebook_code(tmp_path / "missing.ipynb")
    (tmp_path / "folder.ipynb").mkdir()
    with pytest.raises(NotebookError, match="^cannot read folder.ipynb: Is a directory$"):
        read_notebook_code(tmp_path / "folder.ipynb")
    path = write(tmp_path, [code_cell("x = 1")])
    monkeypatch.setattr(notebook, "MAX_NOTEBOOK_BYTES", 3 * 2**20)
    assert read_notebook_code(path).source == "x = 1\n"
    path.write_bytes(b" " * (3 * 2**20 + 1))
    with pytest.raises(NotebookError) as raised:
        read_notebook_code(path)
    assert str(raised.value) == ("hand.ipynb is not read: it is larger than 3 MB, far more than a notebook of "
                                 "exercises")
