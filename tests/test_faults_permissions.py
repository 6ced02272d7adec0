"""Faults of permissions: a corpus or a checkpoint that cannot be read, a folder that cannot be written, a picture
path that names a folder. Each ends with exit code 2 and one line on stderr that names the file, no traceback, and
nothing written where it should not be. A picture into a folder that does not exist is the last case of the kind,
tested in tests/test_faults.py (test_attention_png_into_a_missing_folder_is_one_line).

The commands run as real child processes on real files made unreadable or read-only with chmod. Root ignores
file permissions, and tests (CI among them) often run as root: there a child runs under util-linux's setpriv,
without the two capabilities by which root reads and writes what the permissions refuse, and without setpriv the
tests skip (NPSEQ_REQUIRE_TOOLS=setpriv makes that a failure).
"""
import os
import shutil
import subprocess
import sys

import pytest
from optional_tools import skip_reason
from tiny_runs import SMALL_MODEL, TINY

QUIET_BLAS = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
AS_ROOT = os.geteuid() == 0
SETPRIV = shutil.which("setpriv")
# At exec, root is given every capability of its bounding set and of its inheritable one: both lose them.
ROOT_BYPASS = "-dac_override,-dac_read_search"

pytestmark = pytest.mark.skipif(AS_ROOT and SETPRIV is None, reason=skip_reason("setpriv"))


def npseq(folder, *args):
    """``npseq ARGS`` in a child process in ``folder``, bound by file permissions even as root: the result."""
    bound = [SETPRIV, f"--bounding-set={ROOT_BYPASS}", f"--inh-caps={ROOT_BYPASS}"] if AS_ROOT else []
    return subprocess.run([*bound, sys.executable, "-m", "npseq", *map(str, args)], capture_output=True, text=True,
                          cwd=folder, env=QUIET_BLAS, timeout=300)


def assert_one_line(result, command, words):
    """Exit code 2 and one line on stderr, ``npseq COMMAND: `` and then ``words`` in it, no traceback."""
    err = result.stderr
    assert result.returncode == 2, (result.returncode, result.stdout, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"npseq {command}: ") and "Traceback" not in err, err
    assert words in lines[0], err


def locked_copy(checkpoint, folder):
    """A copy of ``checkpoint`` in ``folder`` that no one may read: (its path, its bytes)."""
    path = folder / "locked.npz"
    shutil.copyfile(checkpoint, path)
    path.chmod(0o000)
    return path, checkpoint.read_bytes()


def test_training_on_an_unreadable_corpus_is_one_line_and_saves_nothing(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("go .\tva !\nhi .\tsalut !\nrun .\tcours !\n", encoding="utf-8")
    corpus.chmod(0o000)
    result = npseq(tmp_path, "train", "--data", corpus, *SMALL_MODEL, "--epochs", "1", "--save", tmp_path / "ck.npz")
    assert_one_line(result, "train", f"Permission denied: {str(corpus)!r}")
    assert os.listdir(tmp_path) == ["corpus.txt"]


@pytest.mark.parametrize("save_to_itself", [False, True])
def test_resuming_from_an_unreadable_checkpoint_is_one_line_and_keeps_it(checkpoint, tmp_path, save_to_itself):
    # Saved to itself (--save naming the checkpoint too, as a resumed run usually is), the check of --save meets
    # the unreadable file before --resume does, and must say the same.
    path, before = locked_copy(checkpoint, tmp_path)
    save = ["--save", path] if save_to_itself else []
    result = npseq(tmp_path, "train", *TINY, "--epochs", "2", "--resume", path, *save)
    assert_one_line(result, "train", f"Permission denied: {str(path)!r}")
    assert os.listdir(tmp_path) == ["locked.npz"]  # no temporary file of a save left behind
    path.chmod(0o600)
    assert path.read_bytes() == before


def test_translating_with_an_unreadable_checkpoint_is_one_line_and_prints_nothing(checkpoint, tmp_path):
    path, _ = locked_copy(checkpoint, tmp_path)
    result = npseq(tmp_path, "translate", path, "one two")
    assert_one_line(result, "translate", f"Permission denied: {str(path)!r}")
    assert result.stdout == ""


def test_attention_png_into_a_read_only_folder_is_one_line_and_draws_nothing(checkpoint, tmp_path):
    folder = tmp_path / "pictures"
    folder.mkdir()
    folder.chmod(0o555)
    picture = folder / "a.png"
    result = npseq(tmp_path, "translate", checkpoint, "one two", "--attention-png", picture)
    assert_one_line(result, "translate", f"Permission denied: {str(picture)!r}")
    assert os.listdir(folder) == []


def test_attention_png_naming_a_folder_is_one_line_and_leaves_it_alone(checkpoint, tmp_path):
    folder = tmp_path / "pictures"
    folder.mkdir()
    result = npseq(tmp_path, "translate", checkpoint, "one two", "--attention-png", folder)
    assert_one_line(result, "translate", f"--attention-png: {folder} exists and is not a regular file")
    assert result.stdout == "" and folder.is_dir() and os.listdir(folder) == []
