"""npseq as a wheel, installed into a fresh virtual environment, used from outside the repository.

The repository's packaging files, ``npseq/`` and ``tutorials/`` are copied to a temporary folder (so that
nothing is built inside the checkout); there an sdist is made (``setup.py sdist``, with its MANIFEST.in) and
a wheel twice, from the copy and from the sdist, with pip as a user's ``pip install .`` would. The wheel from
the copy is installed, not editable, into a new venv (NumPy, matplotlib, tqdm and the notebooks' tools come
from the package index first), and from a working folder outside the checkout, with no PYTHONPATH: npseq is
imported from the venv, ``npseq tutorials --notebooks`` writes and runs tutorial 02 from the wheel's own copy
of the tutorials (``npseq/_tutorials``, which setup.py's build step makes), ``npseq exercises`` writes a
hand-out whose untouched skeleton ``npseq grade`` scores 0, and a one-epoch demo trains, saves and translates.

Skips when the package index cannot be reached. About a minute, most of it pip.
"""
import json
import os
import pathlib
import shutil
import ssl
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from typing import NamedTuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "tutorials"
BIN = "Scripts" if os.name == "nt" else "bin"
# What the fresh venv gets from the index before the wheel (--no-deps): npseq's requirements, the notebooks'
# writing and running tools, and setuptools and wheel for setup.py sdist (Python 3.12's venv has no setuptools).
REQUIREMENTS = ["numpy", "matplotlib", "tqdm", "jupytext", "nbformat", "nbclient", "ipykernel",
                "setuptools>=64", "wheel"]
JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "figures", "fra.txt")


def _index_answers(index: str) -> bool:
    """Whether the package index answers a request for one project's page within a few seconds (a bare connect
    proves nothing where a proxy takes every connection)."""
    context = ssl.create_default_context(cafile=os.environ.get("PIP_CERT") or None)
    try:
        with urllib.request.urlopen(index.rstrip("/") + "/pip/", timeout=5, context=context) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def _run(command, timeout=120, **kwargs) -> subprocess.CompletedProcess:
    """Run ``command``; fail with its output when it exits non-zero."""
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=timeout,
                            **kwargs)
    assert result.returncode == 0, f"{command} exited {result.returncode}:\n{result.stdout[-3000:]}\n" \
                                   f"{result.stderr[-3000:]}"
    return result


def _tutorial_files() -> dict:
    """``{name: bytes}`` of what the wheel must ship: the repository's NN_*.py and _common.py."""
    paths = sorted(TUTORIALS.glob("[0-9][0-9]_*.py")) + [TUTORIALS / "_common.py"]
    return {path.name: path.read_bytes() for path in paths}


class Installed(NamedTuple):
    venv: pathlib.Path
    work: pathlib.Path       # the working folder of the commands, outside the checkout
    env: dict                # their environment: no PYTHONPATH, no NPSEQ_ settings of the caller
    wheel: pathlib.Path      # built from the copy of the checkout (and installed)
    from_sdist: pathlib.Path  # built from the sdist
    sdist: pathlib.Path

    def npseq(self, *args, expect=0, extra_env=None) -> subprocess.CompletedProcess:
        result = subprocess.run([str(self.venv / BIN / "npseq"), *map(str, args)], capture_output=True, text=True,
                                timeout=180, cwd=self.work, env=dict(self.env, **(extra_env or {})))
        assert result.returncode == expect, f"npseq {args} exited {result.returncode}, not {expect}:\n" \
                                            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        return result


@pytest.mark.slow
def test_the_wheel_installs_and_runs_outside_the_repository(tmp_path):
    index = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    if not _index_answers(index):
        pytest.skip(f"the package index ({index}) cannot be reached: the wheel's venv needs its dependencies")
    installed = _build_and_install(tmp_path)
    _the_wheel_and_the_sdist_carry_the_tutorials_and_the_license(installed)
    _npseq_is_imported_from_the_venv_not_the_checkout(installed)
    _the_tutorials_become_notebooks_that_run(installed)
    _a_handout_grades_zero_untouched(installed)
    _the_demo_trains_saves_and_translates(installed)


def _build_and_install(tmp: pathlib.Path) -> Installed:
    """Copy, build the sdist and both wheels, and install the wheel from the copy into a new venv."""
    source, dist, venv, work = tmp / "source", tmp / "dist", tmp / "venv", tmp / "work"
    source.mkdir()
    for path in ROOT.iterdir():  # the packaging files at the top, the package and the tutorials
        if path.is_file() and not JUNK(str(ROOT), [path.name]):
            shutil.copy2(path, source / path.name)
    for folder in ("npseq", "tutorials"):
        shutil.copytree(ROOT / folder, source / folder, ignore=JUNK)

    _run([sys.executable, "-m", "venv", venv])
    python = venv / BIN / "python"
    pip = [python, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    _run(pip + ["install", *REQUIREMENTS], timeout=600)
    _run([python, "setup.py", "--quiet", "sdist", "--dist-dir", dist / "sdist"], cwd=source, timeout=300)
    (sdist,) = (dist / "sdist").glob("npseq-*.tar.gz")
    _run(pip + ["wheel", "--no-deps", "--wheel-dir", dist / "tree", source], timeout=300)
    _run(pip + ["wheel", "--no-deps", "--wheel-dir", dist / "from_sdist", sdist], timeout=300)
    (wheel,) = (dist / "tree").glob("npseq-*.whl")
    (from_sdist,) = (dist / "from_sdist").glob("npseq-*.whl")
    _run(pip + ["install", "--no-deps", wheel], timeout=300)

    work.mkdir()
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PYTHON", "NPSEQ_", "VIRTUAL_ENV", "MPLBACKEND"))}
    env.update(MPLBACKEND="Agg", NPSEQ_DATA=str(tmp / "data"),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return Installed(venv, work, env, wheel, from_sdist, sdist)


def _the_wheel_and_the_sdist_carry_the_tutorials_and_the_license(installed: Installed):
    with zipfile.ZipFile(installed.wheel) as archive:
        names = set(archive.namelist())
        packaged = {name.split("/")[-1]: archive.read(name) for name in names
                    if name.startswith("npseq/_tutorials/")}
    assert packaged == _tutorial_files()  # the repository's files, byte for byte: one source
    assert any(name.endswith(".dist-info/licenses/LICENSE") or name.endswith(".dist-info/LICENSE")
               for name in names), sorted(names)
    with zipfile.ZipFile(installed.from_sdist) as archive:
        assert set(archive.namelist()) == names  # the sdist holds all that the wheel is built from
    with tarfile.open(installed.sdist) as archive:
        inside = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "setup.py", "MANIFEST.in"} <= inside
    assert {f"tutorials/{name}" for name in _tutorial_files()} <= inside


def _npseq_is_imported_from_the_venv_not_the_checkout(installed: Installed):
    code = "import npseq, npseq.tutorials as t; print(npseq.__file__); print(t.tutorials_dir())"
    result = _run([installed.venv / BIN / "python", "-I", "-c", code], cwd=installed.work, env=installed.env)
    package, tutorials = (pathlib.Path(line).resolve() for line in result.stdout.splitlines())
    venv = installed.venv.resolve()
    assert package.is_relative_to(venv) and package.name == "__init__.py", package
    assert tutorials == package.parent / "_tutorials", tutorials


def _the_tutorials_become_notebooks_that_run(installed: Installed):
    result = installed.npseq("tutorials", "--notebooks", "nb", "--only", "02", "--execute", "--timeout", "120",
                             extra_env={"NPSEQ_FAST": "1"})
    notebook = installed.work / "nb" / "02_rnn_by_hand.ipynb"
    assert (installed.work / "nb" / "_common.py").read_bytes() == (TUTORIALS / "_common.py").read_bytes()
    cells = json.loads(notebook.read_text())["cells"]
    assert any(cell.get("outputs") for cell in cells if cell["cell_type"] == "code")  # saved with its outputs
    # a wheel has no repository to pip install -e from: the hint names the extra's packages
    assert "pip install jupytext" in result.stdout + result.stderr


def _a_handout_grades_zero_untouched(installed: Installed):
    installed.npseq("exercises", "--out", "hand")
    result = installed.npseq("grade", "hand/backprop_exercises.py", "--format", "json", expect=1)
    report = json.loads(result.stdout)
    assert report["score"] == 0 and not report["all_correct"], report


def _the_demo_trains_saves_and_translates(installed: Installed):
    installed.npseq("demo", "--epochs", "1", "--num-examples", "300", "--no-progress", "--out", "demo")
    installed.npseq("translate", "demo/numbers/model.npz", "one")
