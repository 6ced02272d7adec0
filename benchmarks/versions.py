"""Several revisions of npseq in one process: each revision's ``npseq/`` exported under a package name of its own.

npseq imports itself only relatively, so a copy of ``npseq/`` named ``npseq_v1`` is a whole npseq of its own;
``bench_ab.py`` and ``regression.py`` load the revisions they compare this way and run them side by side.
"""
import importlib
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKTREE = "WORKTREE"
"""The version that is the files as they are now, not a git revision."""


def export_version(version: str, index: int, into: str):
    """Copy ``npseq/`` at ``version`` (a git revision, or :data:`WORKTREE`) into ``into/npseq_v{index}`` and import
    it, with the subpackages the benchmarks use."""
    name = f"npseq_v{index}"
    if version == WORKTREE:
        shutil.copytree(os.path.join(REPO, "npseq"), os.path.join(into, name),
                        ignore=shutil.ignore_patterns("__pycache__"))
    else:
        staging = os.path.join(into, f"staging{index}")
        os.makedirs(staging)
        archive = subprocess.run(["git", "-C", REPO, "archive", version, "npseq"], capture_output=True)
        if archive.returncode != 0:
            sys.exit(f"{os.path.basename(sys.argv[0])}: version {version!r}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", staging], input=archive.stdout, check=True)
        os.rename(os.path.join(staging, "npseq"), os.path.join(into, name))
    return import_version(index)


def import_version(index: int):
    """The exported copy ``npseq_v{index}`` (its folder on ``sys.path``), with the subpackages the benchmarks use."""
    name = f"npseq_v{index}"
    package = importlib.import_module(name)
    for module in ("data", "decode", "models", "nn", "optim", "train"):
        importlib.import_module(f"{name}.{module}")
    return package
