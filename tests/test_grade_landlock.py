"""Landlock keeps a submission in where mounts cannot: no CAP_SYS_ADMIN (a default container), or no root at all.

The child of a grader that cannot make a mount namespace once read the autograder's folder and
other students' files and wrote into ``/tmp``. These tests run the child's confinement as the
current user (no privilege at all) and the whole grader with CAP_SYS_ADMIN dropped.
"""
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap

import pytest

from npseq.course.landlock import abi_version, confine, readable_around
from npseq.course.sandbox import hideable, running_as_root

ABI = abi_version()
needs_landlock = pytest.mark.skipif(ABI == 0, reason="this kernel has no Landlock (Linux >= 5.13 with it enabled)")

ATTEMPTS = """\
import os, socket
import numpy
def attempts(secret_file, hidden_folder, escape, port):
    seen = {}
    def attempt(name, action):
        try:
            action()
            seen[name] = "allowed"
        except OSError as exc:
            seen[name] = type(exc).__name__
    attempt("read", lambda: open(secret_file).read())
    attempt("list", lambda: os.listdir(hidden_folder))
    attempt("write", lambda: open(escape, "w").write("escaped"))
    attempt("scratch", lambda: open("mine.txt", "w").write("mine"))
    attempt("devnull", lambda: open(os.devnull, "w").write("gone"))
    attempt("tcp", lambda: connect(port))
    attempt("numpy", lambda: open(numpy.__file__).read())
    return seen
def connect(port):
    with socket.socket() as connection:  # an address, not a name: no lookup, no codec to import
        connection.settimeout(5)
        connection.connect(("127.0.0.1", port))
"""


def run_attempts(namespace: dict, folder: pathlib.Path, listener: socket.socket) -> dict:
    return namespace["attempts"](str(folder / "alice.py"), str(folder), f"/tmp/npseq-escape-{os.getpid()}",
                                 listener.getsockname()[1])


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server
    server.close()


@pytest.fixture
def class_folder():
    """A class's folder that every user may read (pytest's own are the owner's only), inside a grader's working
    folder: only the confinement keeps a submission out of it."""
    grader = pathlib.Path(tempfile.mkdtemp(prefix="npseq-grader-"))
    folder = grader / "class"
    folder.mkdir()
    (folder / "alice.py").write_text("SECRET = 'alice'\n")
    for path in (grader, folder):
        path.chmod(0o755)
    yield folder
    shutil.rmtree(grader, ignore_errors=True)


def test_readable_around_holds_everything_but_the_hidden_folders(tmp_path):
    for path in ("a/b/c", "a/d", "e"):
        (tmp_path / path).mkdir(parents=True)
    (tmp_path / "a" / "file").write_text("")
    around = readable_around((str(tmp_path / "a" / "b"),), str(tmp_path))
    assert sorted(around) == [str(tmp_path / name) for name in ("a/d", "a/file", "e")]
    assert readable_around((), str(tmp_path)) == [str(tmp_path)]
    assert readable_around((str(tmp_path),), str(tmp_path)) == []


@needs_landlock
def test_a_confined_process_reads_and_writes_only_what_it_is_given(class_folder, tmp_path, listener):
    """As the current user, with no privilege: without Landlock every attempt below would succeed."""
    namespace = {}
    exec(ATTEMPTS, namespace)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: confine, attempt, report, exit
        try:
            os.chdir(scratch)
            import ctypes
            ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, as the sandbox sets it
            seen = {"abi": confine((str(class_folder),), str(scratch))}
            seen.update(run_attempts(namespace, class_folder, listener))
            try:
                os.kill(os.getppid(), 0)
                seen["signal"] = "allowed"
            except OSError as exc:
                seen["signal"] = type(exc).__name__
            os.write(write_end, json.dumps(seen).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        seen = json.loads(pipe.read())
    os.waitpid(pid, 0)
    assert seen["abi"] == ABI
    assert seen["read"] == seen["list"] == seen["write"] == "PermissionError", seen
    assert seen["scratch"] == seen["devnull"] == seen["numpy"] == "allowed", seen
    assert (scratch / "mine.txt").read_text() == "mine"
    assert not pathlib.Path(f"/tmp/npseq-escape-{os.getpid()}").exists()
    if ABI >= 4:
        assert seen["tcp"] == "PermissionError", seen
    if ABI >= 6:
        assert seen["signal"] == "PermissionError", seen


@pytest.mark.slow
@needs_landlock
@pytest.mark.skipif(not running_as_root() or shutil.which("setpriv") is None or shutil.which("unshare") is None,
                    reason="drops CAP_SYS_ADMIN from a root grader with util-linux's setpriv (as a default "
                           "container runs it)")
def test_a_grader_without_cap_sys_admin_keeps_the_submission_in(class_folder, listener):
    without = ["setpriv", "--bounding-set", "-sys_admin"]
    refused = subprocess.run(without + ["unshare", "-m", "true"], capture_output=True)
    assert refused.returncode != 0  # the capability is gone: no mount namespace for the grader either
    escape = f"/tmp/npseq-escape-{os.getpid()}"
    bob = class_folder / "bob.py"
    bob.write_text(ATTEMPTS + textwrap.dedent(f"""\
        def rnn_step_backward(dnext_h, cache):
            seen = attempts({str(class_folder / 'alice.py')!r}, {str(class_folder)!r}, {escape!r},
                            {listener.getsockname()[1]})
            raise ValueError(" ".join(f"{{name}}:{{verdict}}" for name, verdict in seen.items()))
        """))
    result = subprocess.run(without + [sys.executable, "-m", "npseq", "grade", str(bob), "--only",
                                       "rnn_step_backward"], cwd=class_folder.parent, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1, result.stderr
    seen = dict(word.split(":") for word in result.stdout.split("ValueError: ")[1].split("(")[0].split())
    assert seen["read"] == seen["list"] == seen["write"] == "PermissionError", result.stdout
    assert seen["scratch"] == seen["devnull"] == "allowed", result.stdout
    assert not pathlib.Path(escape).exists()
    if ABI >= 4:
        assert seen["tcp"] == "PermissionError", result.stdout


def test_what_python_imports_from_is_never_hidden(tmp_path):
    """The child goes on importing: a hidden folder that holds NumPy, npseq or the scratch folder would break it."""
    import numpy

    import npseq
    others = tmp_path / "others"
    others.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    site = os.path.dirname(os.path.dirname(numpy.__file__))
    package = os.path.dirname(npseq.__file__)
    assert hideable((site, package, str(tmp_path), str(others), str(tmp_path / "missing")), str(scratch)) == \
        (os.path.realpath(others),)
