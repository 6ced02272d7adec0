"""``npseq tutorials --notebooks DIR``: the tutorials as notebooks that run from DIR.

The errors need nothing beyond npseq. Writing needs jupytext and running nbclient and
ipykernel (the ``notebooks`` extra, which CI installs); without them those tests skip.
The tutorials of ``tutorial_runs.AS_NOTEBOOKS`` (02 and 06) are executed here as notebooks in fast
mode, as a learner would open them, and only here: tests/test_tutorials.py leaves them out of its script
runs while the extra is installed, so this run makes its checks too.
"""
import json
import os
import pathlib
import sys

import pytest
from optional_tools import require
from tutorial_runs import AS_NOTEBOOKS, NOTEBOOK_MODULES, RAW_TEX, TUTORIALS_DIR, check_png

from npseq import tutorials
from npseq.cli import main

# Fast mode runs each in well under 30 s; the margin absorbs a busy shared machine.
CELL_TIMEOUT_S = 180


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_without_jupytext_the_command_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "jupytext", None)  # import jupytext now raises ImportError
    assert main(["tutorials", "--notebooks", str(tmp_path / "nb"), "--only", "02"]) == 2
    assert _error_line(capsys) == ('npseq tutorials: writing notebooks needs jupytext, which is not installed: '
                                   'pip install -e ".[notebooks]"')
    assert not (tmp_path / "nb").exists()


def test_an_unknown_tutorial_is_named_with_the_known_ones(tmp_path, capsys):
    assert main(["tutorials", "--notebooks", str(tmp_path), "--only", "02", "99", "attention"]) == 2
    line = _error_line(capsys)
    assert line.startswith("npseq tutorials: --only: expected tutorial numbers from ['00', '01', '02',")
    assert line.endswith("(or file names without .py), got ['99', 'attention']")


def test_without_the_tutorials_the_command_says_where_it_looked(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tutorials, "tutorials_dir", lambda: str(tmp_path / "site-packages" / "tutorials"))
    assert main(["tutorials", "--notebooks", str(tmp_path / "nb")]) == 2
    assert _error_line(capsys) == (f"npseq tutorials: the tutorials are not at {tmp_path}/site-packages/tutorials: "
                                   "this npseq was installed without them (reinstall it from its wheel or sdist, "
                                   "or from its repository with pip install -e .)")


def test_only_picks_by_number_or_name_in_order():
    chosen = tutorials.find_tutorials(["06_attention", "02"])
    assert [os.path.basename(path) for path in chosen] == ["02_rnn_by_hand.py", "06_attention.py"]
    assert len(tutorials.find_tutorials()) == len(list(TUTORIALS_DIR.glob("[0-9][0-9]_*.py"))) >= 8


def test_every_tutorial_becomes_a_plain_notebook_beside_its_helper(tmp_path, capsys):
    require("jupytext", "notebooks")
    out = tmp_path / "notebooks"
    assert main(["tutorials", "--notebooks", str(out)]) == 0
    printed = capsys.readouterr().out
    scripts = sorted(TUTORIALS_DIR.glob("[0-9][0-9]_*.py"))
    assert f"wrote {len(scripts)} notebooks to {out}: 00_" in printed and f"jupyter lab {out}" in printed
    assert (out / "_common.py").read_bytes() == (TUTORIALS_DIR / "_common.py").read_bytes()
    for script in scripts:
        notebook = json.loads((out / (script.stem + ".ipynb")).read_text(encoding="utf-8"))
        assert notebook["metadata"]["kernelspec"]["name"] == "python3" and "jupytext" not in notebook["metadata"]
        source = script.read_text(encoding="utf-8")
        markers = [line for line in source.splitlines() if line.startswith("# %%")]
        assert len(notebook["cells"]) == len(markers), script.name
        kinds = ["markdown" if "[markdown]" in marker else "code" for marker in markers]
        assert [cell["cell_type"] for cell in notebook["cells"]] == kinds, script.name
        assert not any(cell["cell_type"] == "code" and cell["outputs"] for cell in notebook["cells"])


def test_existing_notebooks_are_kept_unless_forced(tmp_path, capsys):
    require("jupytext", "notebooks")
    out = tmp_path / "nb"
    out.mkdir()
    (out / "02_rnn_by_hand.ipynb").write_text("a learner's work", encoding="utf-8")
    assert main(["tutorials", "--notebooks", str(out), "--only", "01", "02"]) == 2
    assert _error_line(capsys) == (f"npseq tutorials: --notebooks: {out} already holds 02_rnn_by_hand.ipynb with "
                                   "other content; add --force to replace them (edits in them are lost)")
    assert sorted(path.name for path in out.iterdir()) == ["02_rnn_by_hand.ipynb"]
    assert main(["tutorials", "--notebooks", str(out), "--only", "01", "02", "--force"]) == 0
    assert json.loads((out / "02_rnn_by_hand.ipynb").read_text(encoding="utf-8"))["cells"]


def test_notebooks_npseq_wrote_are_written_again_and_a_changed_helper_is_kept(tmp_path, capsys):
    require("jupytext", "notebooks")
    out = tmp_path / "nb"
    assert main(["tutorials", "--notebooks", str(out), "--only", "01"]) == 0
    assert main(["tutorials", "--notebooks", str(out), "--only", "01", "02"]) == 0  # 01 unchanged: no --force
    (out / "_common.py").write_text("# a learner's change\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["tutorials", "--notebooks", str(out), "--only", "01"]) == 2
    assert _error_line(capsys) == (f"npseq tutorials: --notebooks: {out} already holds _common.py with other content; "
                                   "add --force to replace them (edits in them are lost)")
    assert (out / "_common.py").read_text(encoding="utf-8") == "# a learner's change\n"


@pytest.fixture
def kernel_env(monkeypatch):
    """The environment the notebook kernel inherits: fast mode, figures beside the notebooks, one BLAS thread."""
    for module in NOTEBOOK_MODULES:
        require(module, "notebooks")
    monkeypatch.setenv("NPSEQ_FAST", "1")
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")
    for name in ("NPSEQ_FIGURES", "MPLBACKEND"):
        monkeypatch.delenv(name, raising=False)


def _outputs(path: pathlib.Path) -> list:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return [output for cell in notebook["cells"] if cell["cell_type"] == "code" for output in cell["outputs"]]


@pytest.mark.slow  # trains tutorial 06's models, as the scripts' run of the other tutorials does
def test_tutorials_02_and_06_run_as_notebooks_in_fast_mode(tmp_path, kernel_env, capfd):
    """Their one run in the suite: as notebooks, with the checks of a script run (no error, figures written, each a
    readable, non-blank PNG) and those of a notebook (figures inline, equations as Markdown), and nothing on the
    terminal but the command's own lines (capfd: the kernel is a process writing to the same stderr)."""
    out = tmp_path / "nb"
    code = main(["tutorials", "--notebooks", str(out), "--only", *AS_NOTEBOOKS, "--execute",
                 "--timeout", str(CELL_TIMEOUT_S)])
    printed, err = capfd.readouterr()
    assert code == 0, printed
    assert err == "", err  # the kernel's log (a warning about TCP) went to the terminal
    for name in AS_NOTEBOOKS:
        assert f"{name}.ipynb: ran in " in printed
        outputs = _outputs(out / f"{name}.ipynb")
        kinds = {kind for output in outputs for kind in output.get("data", {})}
        # In a kernel the figures display inline and equations() renders Markdown with LaTeX.
        assert {"image/png", "text/markdown"} <= kinds, (name, kinds)
        assert not [output for output in outputs if output["output_type"] == "error"]
        streams = "".join("".join(output["text"]) for output in outputs if output["output_type"] == "stream")
        assert "TqdmWarning" not in streams  # importing tqdm.auto without ipywidgets warns in a kernel
        left = RAW_TEX.search(streams)
        assert left is None, f"{name}: LaTeX printed as text: ...{streams[max(0, left.start() - 200):left.end()]}"
    figures = sorted((out / "figures").glob("*.png"))
    for name in AS_NOTEBOOKS:
        assert any(path.name.startswith(name[:3]) for path in figures), (name, [path.name for path in figures])
    for path in figures:
        check_png(path)


def test_a_failing_notebook_is_saved_up_to_its_error_and_named(tmp_path, kernel_env, monkeypatch, capsys):
    source = tmp_path / "tutorials"
    source.mkdir()
    (source / "_common.py").write_text("FAST = True\n", encoding="utf-8")
    (source / "01_broken.py").write_text("# %% [markdown]\n# A cell that divides by zero\n\n# %%\n"
                                         "from _common import FAST\nprint('fast', FAST)\n\n# %%\n1 / 0\n\n"
                                         "# %%\nprint('never')\n", encoding="utf-8")
    monkeypatch.setattr(tutorials, "tutorials_dir", lambda: str(source))
    out = tmp_path / "nb"
    assert main(["tutorials", "--notebooks", str(out), "--execute", "--timeout", str(CELL_TIMEOUT_S)]) == 1
    printed = capsys.readouterr().out
    assert "01_broken.ipynb: FAILED at code cell 2: ZeroDivisionError: division by zero in " in printed
    outputs = _outputs(out / "01_broken.ipynb")
    assert "".join(outputs[0]["text"]) == "fast True\n"
    assert outputs[-1]["ename"] == "ZeroDivisionError"  # the last cell did not run: no "never"


def test_a_link_among_the_notebooks_is_never_written_through(tmp_path, capsys):
    require("jupytext", "notebooks")
    out, outside = tmp_path / "nb", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    (out / "02_rnn_by_hand.ipynb").symlink_to(outside / "planted.ipynb")  # dangling: a plain open would create it
    (out / "_common.py").symlink_to(outside / "helper.py")
    assert main(["tutorials", "--notebooks", str(out), "--only", "02"]) == 2
    assert "already holds 02_rnn_by_hand.ipynb" in _error_line(capsys)
    assert list(outside.iterdir()) == []
    assert main(["tutorials", "--notebooks", str(out), "--only", "02", "--force"]) == 0
    capsys.readouterr()
    assert list(outside.iterdir()) == []  # the links themselves were replaced
    for name in ("02_rnn_by_hand.ipynb", "_common.py"):
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0
    assert json.loads((out / "02_rnn_by_hand.ipynb").read_text())["cells"]
