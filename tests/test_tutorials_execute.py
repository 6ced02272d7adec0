"""``npseq tutorials --notebooks DIR --execute``: the mode and its cost, Ctrl-C, and running again.

The notebooks here are a tiny tutorial of the tests' own (its ``_common.py`` reads ``NPSEQ_FAST`` as the real one
does), so that a run is seconds of kernel start-up and the moment of Ctrl-C is one the test waits for: the cell
that runs then writes a file and sleeps. Ctrl-C is sent as a terminal sends it, to the command's process group,
and the command must end with one line on stderr and exit code 130, its kernel gone and the notebook saved whole
with the outputs so far. A notebook exactly as npseq's run saved it is written again without ``--force``; one a
learner changed afterwards, in its code or its outputs, is not. The checks of the digest itself need no kernel.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from optional_tools import require
from tutorial_runs import NOTEBOOK_MODULES

from npseq import tutorials
from npseq.cli import main

# Generous: a kernel starts in seconds, but a shared 2-core machine running a test suite can take far longer.
START_DEADLINE_S = 180
STOP_DEADLINE_S = 120
COMMON = 'import os\n\nFAST = os.environ.get("NPSEQ_FAST") == "1"\n'
WAITING = ("# %% [markdown]\n# A tutorial whose second cell waits to be interrupted\n\n"
           "# %%\nfrom _common import FAST\nprint('fast', FAST)\n\n"
           "# %%\nimport os\nimport time\n\nwith open('running.tmp', 'w') as handle:\n"
           "    handle.write(str(os.getpid()))\nos.replace('running.tmp', 'running')\ntime.sleep(600)\n\n"
           "# %%\nprint('never')\n")
QUICK = ("# %% [markdown]\n# A tutorial that runs at once\n\n"
         "# %%\nfrom _common import FAST\nprint('fast', FAST)\n\n# %%\nprint(6 * 7)\n")
# What the CLI wrapper of the interrupted process runs: npseq's own command, over the tests' tutorials folder.
COMMAND = ("import sys\nfrom npseq import tutorials\ntutorials.tutorials_dir = lambda: sys.argv[1]\n"
           "from npseq.cli import main\nsys.exit(main(sys.argv[2:]))\n")


def _tutorials(folder: pathlib.Path, script: str) -> pathlib.Path:
    """A tutorials folder holding ``01_tiny.py`` with the text ``script``, and its helper."""
    folder.mkdir()
    (folder / "_common.py").write_text(COMMON, encoding="utf-8")
    (folder / "01_tiny.py").write_text(script, encoding="utf-8")
    return folder


def _code_outputs(path: pathlib.Path) -> list:
    """The text of each code cell's stream outputs, in order."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join("".join(output.get("text", "")) for output in cell["outputs"])
            for cell in cells if cell["cell_type"] == "code"]


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (npseq reaps the kernel it kills, so nothing of it is left)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def kernel_env(monkeypatch):
    """The notebooks extra, and an environment that selects no mode of its own (the command's flag does)."""
    for module in NOTEBOOK_MODULES:
        require(module, "notebooks")
    monkeypatch.delenv("NPSEQ_FAST", raising=False)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")


def test_the_help_says_what_each_mode_costs(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["tutorials", "--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the help to the terminal's width
    assert " ".join(tutorials.FULL_COST.split()) in text and " ".join(tutorials.FAST_COST.split()) in text
    assert "--fast" in text


def test_the_digest_tells_npseq_s_run_from_a_changed_copy(tmp_path):
    notebook = {"cells": [{"cell_type": "code", "source": "print(1)", "outputs": [{"text": "1\n"}]}],
                "metadata": {"kernelspec": dict(tutorials.KERNELSPEC)}, "nbformat": 4, "nbformat_minor": 5}
    notebook["metadata"][tutorials.RUN_MARK] = {"run_sha256": tutorials.run_digest(notebook)}
    saved = tmp_path / "saved.ipynb"
    saved.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    assert tutorials.saved_by_npseq_run(str(saved))
    (tmp_path / "link.ipynb").symlink_to(saved)
    assert not tutorials.saved_by_npseq_run(str(tmp_path / "link.ipynb"))
    for where, value in (("source", "print(2)"), ("outputs", [])):
        changed = json.loads(saved.read_text(encoding="utf-8"))
        changed["cells"][0][where] = value
        (tmp_path / "changed.ipynb").write_text(json.dumps(changed), encoding="utf-8")
        assert not tutorials.saved_by_npseq_run(str(tmp_path / "changed.ipynb")), where
    for text in ("a learner's work", "[1, 2]", '{"metadata": {"npseq": "no digest"}}'):
        (tmp_path / "other.ipynb").write_text(text, encoding="utf-8")
        assert not tutorials.saved_by_npseq_run(str(tmp_path / "other.ipynb")), text


@pytest.mark.slow
def test_ctrl_c_ends_the_run_in_one_line_with_130_and_a_whole_notebook(tmp_path, kernel_env):
    source = _tutorials(tmp_path / "tutorials", WAITING)
    out = tmp_path / "nb"
    command = [sys.executable, "-c", COMMAND, str(source), "tutorials", "--notebooks", str(out), "--execute",
               "--fast"]
    # A session of its own, as a shell gives a foreground job: the signal below reaches what Ctrl-C would reach.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        running, deadline = out / "running", time.monotonic() + START_DEADLINE_S
        while not running.exists():
            if process.poll() is not None:
                stdout, stderr = process.communicate()
                pytest.fail(f"ended with {process.returncode} before its cell ran\n{stdout}\n{stderr}")
            assert time.monotonic() < deadline, f"the cell had not started after {START_DEADLINE_S} s"
            time.sleep(0.1)
        kernel = int(running.read_text(encoding="utf-8"))
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=STOP_DEADLINE_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, (process.returncode, stdout, stderr)
    lines = stderr.strip().splitlines()
    assert lines == ["npseq tutorials: interrupted in 01_tiny.ipynb, saved with its outputs so far"], stderr
    assert "running 1 notebook in fast mode" in stdout, stdout
    deadline = time.monotonic() + STOP_DEADLINE_S
    while not _gone(kernel):
        assert time.monotonic() < deadline, f"the kernel {kernel} still runs {STOP_DEADLINE_S} s after Ctrl-C"
        time.sleep(0.1)
    import nbformat

    saved = out / "01_tiny.ipynb"
    nbformat.validate(nbformat.read(str(saved), as_version=4))
    outputs = _code_outputs(saved)
    assert outputs[0] == "fast True\n" and outputs[2] == "", outputs  # --fast reached the kernel; no 'never'
    assert sorted(path.name for path in out.iterdir()) == ["01_tiny.ipynb", "_common.py", "running"]  # no temp file
    assert tutorials.saved_by_npseq_run(str(saved))


@pytest.mark.slow
def test_notebooks_npseq_ran_are_written_again_without_force(tmp_path, kernel_env, monkeypatch, capsys):
    source = _tutorials(tmp_path / "tutorials", QUICK)
    monkeypatch.setattr(tutorials, "tutorials_dir", lambda: str(source))
    out = tmp_path / "nb"
    saved = out / "01_tiny.ipynb"
    assert main(["tutorials", "--notebooks", str(out), "--execute"]) == 0
    printed = capsys.readouterr().out
    assert "running 1 notebook in full mode" in printed and "--fast runs them in fast mode" in printed
    assert "ran 1 notebook in " in printed and " s, full mode" in printed
    assert _code_outputs(saved) == ["fast False\n", "42\n"]
    assert main(["tutorials", "--notebooks", str(out), "--execute", "--fast"]) == 0  # over its own run
    printed, err = capsys.readouterr()
    assert "running 1 notebook in fast mode" in printed and err == "", err
    assert _code_outputs(saved) == ["fast True\n", "42\n"]
    assert main(["tutorials", "--notebooks", str(out)]) == 0
    printed, err = capsys.readouterr()
    assert "edits in them are lost" not in printed + err and err == "", err
    assert _code_outputs(saved) == ["", ""]  # written again as npseq writes it: no outputs


@pytest.mark.slow
def test_a_notebook_changed_after_npseq_ran_it_is_kept(tmp_path, kernel_env, monkeypatch, capsys):
    source = _tutorials(tmp_path / "tutorials", QUICK)
    monkeypatch.setattr(tutorials, "tutorials_dir", lambda: str(source))
    out = tmp_path / "nb"
    saved = out / "01_tiny.ipynb"
    assert main(["tutorials", "--notebooks", str(out), "--execute", "--fast"]) == 0
    ran = saved.read_text(encoding="utf-8")
    for change in ("code", "outputs"):  # a learner's edit, and a learner's own run in Jupyter
        notebook = json.loads(ran)
        cell = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"][1]
        if change == "code":
            cell["source"] = "print(6 * 9)"
        else:
            cell["outputs"][0]["text"] = ["54\n"]
        saved.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
        edited = saved.read_text(encoding="utf-8")
        capsys.readouterr()
        assert main(["tutorials", "--notebooks", str(out)]) == 2, change
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"npseq tutorials: --notebooks: {out} already holds 01_tiny.ipynb with other content; "
                       "add --force to replace them (edits in them are lost)"], (change, err)
        assert saved.read_text(encoding="utf-8") == edited, change
    assert main(["tutorials", "--notebooks", str(out), "--force"]) == 0
    assert _code_outputs(saved) == ["", ""]
