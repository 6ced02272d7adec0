"""A grader no submission can fool: each attack scores what the code deserves, and the grader stays in charge.

Every submission here is hostile on purpose: it patches npseq or NumPy in its own process,
forges a report, stops or kills the grader, leaves a process behind, floods the pipe or the
report, lifts its limits, writes outside its folder, or reaches npseq's own backward through
indirection. The verdict is computed in the grader, from arrays the child sends back, so
none of it may raise a score; the grader must exit with its documented code, in time, with a
report it wrote itself. The cases that need the user switch (the grader running as root, as
on Gradescope) say so where the tests do not run as root.
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from npseq.course import grade_file
from npseq.course.sandbox import running_as_root

needs_root = pytest.mark.skipif(not running_as_root(), reason="the submission runs as a user of its own only when "
                                "the grader is root (as on Gradescope); as a normal user it shares the grader's")

ZEROS = """\
def rnn_step_backward(dnext_h, cache):
    z = lambda a: a * 0.0
    return z(cache.x), z(cache.prev_h), z(cache.Wx), z(cache.Wh), z(cache.Wx[0])
"""


def write(folder: pathlib.Path, source: str, name: str = "hostile.py") -> pathlib.Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def npseq(folder: pathlib.Path, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    """``npseq ARGS`` in ``folder``, as a learner or an autograder runs it."""
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "npseq", *map(str, args)], cwd=folder, capture_output=True,
                            text=True, timeout=timeout)
    result.seconds = time.monotonic() - started
    return result


@pytest.fixture
def open_folder():
    """A folder anyone may read and write (pytest's own are the owner's only): what a class's folder on a shared
    machine may be, so that only the sandbox keeps a submission out of it."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="npseq-open-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def processes_with(marker: str) -> list:
    """The processes whose command line holds ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(name))
        except (OSError, ValueError):
            pass
    return found


def test_patching_the_grader_in_the_childs_process_changes_nothing(tmp_path):
    path = write(tmp_path, textwrap.dedent("""\
        import npseq.course.grader as G
        from npseq.course.report import TensorGrade

        G.grade_tensor = lambda case, name, given, numeric, *a, **k: TensorGrade(case, name, numeric.shape, 0, 0, True)
        G._grade_case = lambda grade, *a, **k: grade.rows.extend(
            TensorGrade("x", "dx", (1,), 0.0, 0.0, True) for _ in range(1000)) or set()
        """) + ZEROS)
    report = grade_file(path, only=["rnn_step_backward"])
    assert report.score == 0 and report["rnn_step_backward"].points == 0
    assert all(not row.ok for row in report["rnn_step_backward"].rows)


def test_patching_numpy_in_the_childs_process_changes_nothing(tmp_path):
    path = write(tmp_path, "import numpy as np\nnp.abs = np.zeros_like\nnp.max = lambda *a, **k: 0.0\n" + ZEROS)
    assert grade_file(path, only=["rnn_step_backward"]).score == 0


def test_an_object_that_would_run_code_when_unpickled_is_never_unpickled(tmp_path):
    marker = tmp_path / "pwned"
    path = write(tmp_path, f"""\
        import os

        class Payload:
            def __reduce__(self):
                return (os.system, ("touch {marker}",))

        def rnn_step_backward(dnext_h, cache):
            return Payload(), Payload(), Payload(), Payload(), Payload()
        """)
    rnn = grade_file(path, only=["rnn_step_backward"])["rnn_step_backward"]
    assert rnn.points == 0 and "not a float array" in rnn.rows[0].problem
    assert not marker.exists()


@needs_root
def test_a_forged_report_and_a_killed_grader(tmp_path):
    path = write(tmp_path, """\
        import json, os
        json.dump({"score": 12.0, "tests": []}, open("results.json", "w"))
        os.kill(os.getppid(), 9)
        """)
    result = npseq(tmp_path, "grade", path, "--format", "gradescope")
    assert result.returncode == 2, result.stderr  # it cannot import: the kill is refused to its user
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["score"] == 0 and "PermissionError" in data["output"]


@needs_root
def test_a_stopped_grader_is_impossible(tmp_path):
    path = write(tmp_path, "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n")
    result = npseq(tmp_path, "grade", path, "--timeout", "5", timeout=60)
    assert result.returncode == 2 and "PermissionError" in result.stderr


@pytest.mark.slow
def test_a_file_that_differs_from_one_import_to_the_next_is_still_graded(tmp_path):
    path = write(tmp_path, """\
        import os
        if os.path.exists("seen"):
            raise RuntimeError("second import")
        open("seen", "w")
        def rnn_step_backward(d, c):
            pass
        """)
    result = npseq(tmp_path, "grade", path, "--set", "classic")
    assert result.returncode == 1, result.stderr
    assert result.stdout.rstrip().endswith("score: 0.00 / 10 points = 0.0%") and "Traceback" not in result.stderr


@pytest.mark.slow
def test_reaching_npseqs_backward_through_indirection_is_named(tmp_path):
    sources = {
        "wrapped": 'import importlib\nrnn_step_backward = getattr(importlib.import_module("npseq.functional"), '
                   '"rnn_step_" + "backward").__wrapped__\n',
        "rebuilt": 'import inspect\nimport npseq.functional.recurrent as R\n'
                   'exec(inspect.getsource(R.rnn_step_backward).replace("def rnn_step_backward", "def mine"))\n'
                   'rnn_step_backward = mine\n',
        "evaluated": ('rnn_step_backward = eval("__import__(\'npseq.functional\', fromlist=[\'x\'])'
                      '.rnn_step_backward")\n'),
    }
    for name, source in sources.items():
        result = npseq(tmp_path, "grade", write(tmp_path, source, f"{name}.py"), "--only", "rnn_step_backward",
                       "--format", "json")
        data = json.loads(result.stdout.strip().splitlines()[-1]) if result.stdout.strip() else {}
        if result.returncode == 2:  # refused outright: it cannot even import
            assert data["score"] == 0, name
            continue
        assert data["flagged"], (name, data)
        assert any(word in " ".join(data["honesty"]) for word in ("importlib", "inspect", "exec", "eval")), name


@pytest.mark.slow
def test_a_huge_message_is_cut_and_the_report_stays_small(tmp_path):
    path = write(tmp_path, 'def rnn_step_backward(dnext_h, cache):\n    raise ValueError("m" * 30_000_000)\n')
    result = npseq(tmp_path, "grade", path, "--only", "rnn_step_backward", "--format", "gradescope")
    assert result.returncode == 1, result.stderr
    size = (tmp_path / "results.json").stat().st_size
    assert size < 200_000, size
    data = json.loads((tmp_path / "results.json").read_text())
    assert "more characters cut" in json.dumps(data) and data["score"] == 0


@pytest.mark.slow
def test_a_forged_line_in_the_graders_output_is_impossible(tmp_path):
    path = write(tmp_path, textwrap.dedent("""\
        import json, os
        for fd in range(1, 3):
            for target in (f"/proc/{os.getppid()}/fd/1", f"/proc/{os.getppid()}/fd/2"):
                try:
                    with open(target, "w") as handle:
                        handle.write(json.dumps({"score": 100.0, "all_correct": True}) + "\\n")
                except OSError:
                    pass
        """) + ZEROS)
    result = npseq(tmp_path, "grade", path, "--only", "rnn_step_backward", "--format", "json")
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["score"] == 0, result.stdout


@pytest.mark.slow
def test_a_process_left_behind_dies_with_the_grading(tmp_path):
    marker = f"600.{os.getpid()}"  # seconds: it outlives the grading unless it is killed
    path = write(tmp_path, textwrap.dedent(f"""\
        import subprocess
        subprocess.Popen(["sleep", "{marker}"], start_new_session=True, stdout=subprocess.DEVNULL)
        """) + ZEROS)
    result = npseq(tmp_path, "grade", path, "--only", "rnn_step_backward", timeout=60)
    left = processes_with(marker)
    for pid in left:  # not to leave them behind this test either
        os.kill(pid, signal.SIGKILL)
    assert result.returncode == 1, result.stderr  # and the pipes closed: run() returned
    assert left == []


@pytest.mark.slow
def test_garbage_and_stalls_on_the_pipe_are_that_functions_verdict(tmp_path):
    stall = write(tmp_path, """\
        import os, time
        def rnn_step_backward(dnext_h, cache):
            for fd in os.listdir("/proc/self/fd"):
                try:
                    os.write(int(fd), (32).to_bytes(8, "big") + b"0123456789")
                except OSError:
                    pass
            time.sleep(60)
        """, "stall.py")
    flood = write(tmp_path, """\
        import os
        def rnn_step_backward(dnext_h, cache):
            for fd in os.listdir("/proc/self/fd"):
                try:
                    os.write(int(fd), (1_500_000_000).to_bytes(8, "big") + b"x" * 1_000_000)
                except OSError:
                    pass
            return 0
        """, "flood.py")
    report = grade_file(stall, only=["rnn_step_backward"], timeout=3)
    assert report["rnn_step_backward"].status == "time limit" and report.score == 0
    rnn = grade_file(flood, only=["rnn_step_backward"], timeout=20)["rnn_step_backward"]
    assert rnn.points == 0 and rnn.status in ("crashed", "incorrect")


def test_limits_cannot_be_lifted(tmp_path):
    path = write(tmp_path, """\
        import resource
        import numpy as np
        def rnn_step_backward(dnext_h, cache):
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            return np.ones(6 * 2 ** 30 // 8)
        """)
    rnn = grade_file(path, only=["rnn_step_backward"], memory_mb=300)["rnn_step_backward"]
    assert rnn.points == 0 and all(p.message.startswith("ValueError") for p in rnn.problems), rnn.problems


@needs_root
def test_nothing_outside_its_scratch_folder_changes(open_folder):
    tmp_path = open_folder
    outside = tmp_path / "outside.txt"
    escape = pathlib.Path("/tmp") / f"npseq-escape-{os.getpid()}"
    (tmp_path / "results.json").write_text("the grader's own")
    path = write(tmp_path, textwrap.dedent(f"""\
        import os
        wrote = []
        for target in ({str(outside)!r}, {str(escape)!r}, os.path.expanduser("~/npseq-escape")):
            try:
                open(target, "w").write("escaped")
                wrote.append(target)
            except OSError:
                pass
        try:
            os.replace({str(tmp_path / 'results.json')!r}, "stolen.json")
        except OSError:
            pass
        try:
            os.symlink("/tmp", {str(tmp_path / 'link')!r})
        except OSError:
            pass
        open("mine.txt", "w").write("my own scratch folder is mine")
        """) + ZEROS)
    before = sorted(os.listdir(tmp_path))
    report = grade_file(path, only=["rnn_step_backward"])
    assert report.score == 0
    assert sorted(os.listdir(tmp_path)) == before and (tmp_path / "results.json").read_text() == "the grader's own"
    assert not outside.exists() and not escape.exists()
    assert not pathlib.Path(os.path.expanduser("~/npseq-escape")).exists()


@needs_root
def test_other_students_files_are_out_of_sight(open_folder):
    tmp_path = open_folder
    (tmp_path / "alice.py").write_text("SECRET = 'alice'\n")
    path = write(tmp_path, f"""\
        def rnn_step_backward(dnext_h, cache):
            raise ValueError(sorted(__import__("os").listdir({str(tmp_path)!r})))
        """, "bob.py")
    rnn = grade_file(path, only=["rnn_step_backward"])["rnn_step_backward"]
    message = rnn.problems[0].message  # an empty folder where mounts hide it, a refusal where Landlock does
    assert "alice.py" not in message and ("ValueError: []" in message or "PermissionError" in message), message


@pytest.mark.slow
def test_the_grader_ends_and_reports_within_its_time_limit_whatever_the_child_does(tmp_path):
    path = write(tmp_path, """\
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        def rnn_step_backward(dnext_h, cache):
            while True:
                time.sleep(0.01)
        """)
    result = npseq(tmp_path, "grade", path, "--only", "rnn_step_backward", "--timeout", "3", timeout=60)
    assert result.returncode == 1 and "time limit" in result.stdout, result.stderr


def test_what_the_report_lists_is_bounded(tmp_path):
    lines = "".join(f"x{i} = F.rnn_step_backward\n" for i in range(5000))
    path = write(tmp_path, "import npseq.functional as F\n" + lines + ZEROS)
    report = grade_file(path, only=["rnn_step_backward"])
    assert len(report.honesty) == 51 and report.honesty[-1] == "... and 4950 more (cut)"
    assert len(str(report)) < 20_000


@pytest.mark.slow
def test_links_and_pipes_in_its_own_folder_reach_nothing_of_the_graders(tmp_path):
    path = write(tmp_path, textwrap.dedent("""\
        import os
        for name in os.listdir("."):
            os.replace(name, name + ".old") if os.path.isfile(name) else None
        os.symlink("/etc/passwd", "hostile.py")
        os.mkfifo("stuck")
        print("what I printed")
        """) + ZEROS)
    result = npseq(tmp_path, "grade", path, "--only", "rnn_step_backward", timeout=60)
    assert result.returncode == 1, result.stderr
    assert "root:" not in result.stdout + result.stderr and "what I printed" in result.stdout


@pytest.mark.slow
@needs_root
def test_its_folder_cannot_fill_the_graders_disk(tmp_path):
    path = write(tmp_path, textwrap.dedent("""\
        written = 0
        try:
            for i in range(200):
                with open(f"filler{i}", "wb") as handle:
                    handle.write(b"x" * 2 ** 20)
                written += 1
        except OSError as exc:
            print(f"stopped after {written} MB: {type(exc).__name__}")
        """) + ZEROS)
    result = npseq(tmp_path, "grade", path, "--only", "rnn_step_backward", timeout=60)
    assert result.returncode == 1, result.stderr
    assert "stopped after" in result.stdout and "OSError" in result.stdout


@pytest.mark.slow
def test_a_fork_bomb_stops_at_its_limit(tmp_path):
    path = write(tmp_path, textwrap.dedent("""\
        import os
        children = 0
        try:
            for _ in range(10_000):
                if os.fork() == 0:
                    import time
                    time.sleep(60)
                    os._exit(0)
                children += 1
        except OSError as exc:
            print(f"fork refused after {children} children: {type(exc).__name__}")
        """) + ZEROS)
    result = npseq(tmp_path, "grade", path, "--only", "rnn_step_backward", timeout=120)
    assert result.returncode == 1, result.stderr
    assert "fork refused after" in result.stdout and "BlockingIOError" in result.stdout
    refused_after = [int(line.split()[3]) for line in result.stdout.splitlines() if line.startswith("fork refused")]
    assert max(refused_after) <= 64


# ------------------------------------------------------------------ a class's folder as a student may leave it
RIGHT = """\
def rnn_step_backward(dnext_h, cache):
    da = dnext_h * (1 - cache.next_h ** 2)
    return da @ cache.Wx.T, da @ cache.Wh.T, cache.x.T @ da, cache.prev_h.T @ da, da.sum(axis=0)
"""


@pytest.fixture
def deep_folder(tmp_path):
    """``make(root, levels)``: a chain of ``levels`` folders named ``a`` under ``root`` (past the interpreter's
    recursion limit, where os.walk gave up), returning a descriptor of the deepest; removed from the deepest up
    afterwards."""
    made = []

    def make(root: pathlib.Path, levels: int) -> int:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root, os.O_RDONLY)
        for _ in range(levels):
            os.mkdir("a", dir_fd=fd)
            inner = os.open("a", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        made.append((root, levels))
        return fd

    yield make
    for root, levels in made:
        for depth in range(levels, 0, -1):  # shutil.rmtree recurses too
            deepest = os.path.join(root, *["a"] * depth)
            for name in os.listdir(deepest):
                os.remove(os.path.join(deepest, name))
            os.rmdir(deepest)


def _write_at(fd: int, name: str, text: str) -> None:
    handle = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(handle, text.encode())
    os.close(handle)
    os.close(fd)


@pytest.mark.slow
def test_a_link_never_hands_one_students_grade_to_another(tmp_path):
    # s1's b.py is a link to s2's: the class report gave "s1/b.py, 100" and no row for s2, the author.
    (tmp_path / "c" / "s1").mkdir(parents=True)
    (tmp_path / "c" / "s2").mkdir()
    write(tmp_path / "c" / "s2", RIGHT, "b.py")
    os.symlink("../s2/b.py", tmp_path / "c" / "s1" / "b.py")
    result = npseq(tmp_path, "grade", "c", "--only", "rnn_step_backward", "--csv", "g.csv", "--json", "g.json")
    assert result.returncode == 1, result.stderr
    assert "not graded: 1 of 2\n   s1: a link\n" in result.stdout
    rows = {row.split(",")[0]: row for row in (tmp_path / "g.csv").read_text().splitlines()[1:]}
    assert set(rows) == {"s1", "s2"}
    assert rows["s2"].startswith(f"s2,{os.path.join('c', 's2', 'b.py')},100,")
    assert "ungradable: a link: a submission is graded from a file of its own, never through a link" in rows["s1"]
    data = json.loads((tmp_path / "g.json").read_text())
    assert {student["student"]: student["score"] for student in data["students"]} == {"s1": 0.0, "s2": 100.0}


@pytest.mark.slow
def test_a_folder_too_deep_is_named_and_the_class_is_graded(tmp_path, deep_folder):
    # 1,100 levels: os.walk hit the recursion limit, and nobody got a CSV or a JSON.
    (tmp_path / "c").mkdir()
    write(tmp_path / "c", RIGHT, "s1.py")
    fd = deep_folder(tmp_path / "c" / "s2", 1100)
    _write_at(fd, "deep.py", RIGHT)
    result = npseq(tmp_path, "grade", "c", "--only", "rnn_step_backward", "--csv", "g.csv", "--json", "g.json")
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr, result.stderr
    assert result.returncode == 1 and "   s2: its folders go deeper than 32 levels\n" in result.stdout
    rows = {row.split(",")[0]: row for row in (tmp_path / "g.csv").read_text().splitlines()[1:]}
    assert rows["s1"].startswith(f"s1,{os.path.join('c', 's1.py')},100,") and "not searched" in rows["s2"]


def test_a_deep_folder_in_a_gradescope_submission_leaves_the_right_file_graded(tmp_path, deep_folder):
    from npseq.course.autograder import main as autograder_main
    from npseq.course.gradescope import Scoring

    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "config.json").write_text(Scoring(only=("rnn_step_backward",)).to_json())
    (tmp_path / "submission").mkdir()
    write(tmp_path / "submission", RIGHT, "backprop_exercises.py")
    os.close(deep_folder(tmp_path / "submission" / "junk", 1100))
    assert autograder_main(["--root", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    assert data["score"] == 1.0, data["output"]


# ------------------------------------------------------------------ exceptions that break while being described
UNDESCRIBABLE = """\
import sys


class Nasty(Exception):
    def __str__(self):
        raise RuntimeError("no message for you")


class Code:
    def __repr__(self):
        raise RuntimeError("no repr either")


class Odd(BaseException):
    pass


def rnn_step_backward(dnext_h, cache):
    raise Nasty()


def lstm_step_backward(dnext_h, dnext_c, cache):
    raise KeyboardInterrupt()


def gru_step_backward(dnext_h, cache):
    raise Odd("odd")


def masked_softmax_backward(dweights, cache):
    sys.exit(Code())
"""


@pytest.mark.slow
def test_an_exception_that_breaks_while_described_is_named_by_its_type(tmp_path):
    # __str__ raising, KeyboardInterrupt and a BaseException of the learner's put a traceback of npseq's grader into
    # the report and scored "exited (os._exit?)".
    names = ["rnn_step_backward", "lstm_step_backward", "gru_step_backward", "masked_softmax_backward"]
    path = write(tmp_path, UNDESCRIBABLE)
    result = npseq(tmp_path, "grade", path, *[word for name in names for word in ("--only", name)])
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
    assert "npseq/course" not in result.stdout + result.stderr and "exited" not in result.stdout
    report = grade_file(path, only=names, quiet=True)
    messages = {name: {problem.message for problem in report[name].problems} for name in names[:3]}
    assert messages == {
        "rnn_step_backward": {"Nasty: (its message cannot be read: its __str__ raised) (hostile.py, line 19)"},
        "lstm_step_backward": {"KeyboardInterrupt (hostile.py, line 23)"},
        "gru_step_backward": {"Odd: odd (hostile.py, line 27)"}}
    assert report["masked_softmax_backward"].failure == \
        "sys.exit: masked_softmax_backward called sys.exit(a Code) (hostile.py, line 31)"


@pytest.mark.slow
@pytest.mark.parametrize("top, said", [
    ("class Nasty(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\n\nraise Nasty()\n",
     "cannot import hostile.py: Nasty: (its message cannot be read: its __str__ raised) (hostile.py, line 6)"),
    ("raise KeyboardInterrupt\n", "cannot import hostile.py: KeyboardInterrupt (hostile.py, line 1)"),
    ("raise SyntaxError('made up', (42, 'x', 'y', 'z'))\n", "cannot import hostile.py: SyntaxError"),
], ids=["__str__ raises", "KeyboardInterrupt", "a SyntaxError with odd fields"])
def test_a_file_whose_import_raises_the_undescribable_is_one_line(tmp_path, top, said):
    result = npseq(tmp_path, "grade", write(tmp_path, top), "--only", "rnn_step_backward")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"npseq grade: {said}"), result.stderr


# ------------------------------------------------------------------ the grader under a memory limit of its own
@pytest.mark.slow
def test_a_right_file_is_graded_under_a_lower_address_space_limit(tmp_path):
    # Under ulimit -v 3000000 the child's limit (what the grader holds + 4096 MB) was above the grader's own, so the
    # child could not set it, exited 70, and the message blamed the file: "cannot import ...: exited".
    import resource

    path = write(tmp_path, RIGHT, "right.py")

    def lower_limit():
        resource.setrlimit(resource.RLIMIT_AS, (3_000_000 * 1024, 3_000_000 * 1024))

    result = subprocess.run([sys.executable, "-m", "npseq", "grade", str(path), "--only", "rnn_step_backward"],
                            capture_output=True, text=True, timeout=120, preexec_fn=lower_limit)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("score: 1.00 / 1 point = 100.0%  -- all correct")


def test_a_limit_that_leaves_a_child_too_little_is_the_graders_error_with_its_fix(tmp_path, monkeypatch, capsys):
    from npseq.cli import main as npseq_main
    from npseq.course import autograder, sandbox
    from npseq.course.gradescope import Scoring

    monkeypatch.setattr(sandbox, "_ceiling", lambda: sandbox._in_use() + 5 * 2 ** 20)
    path = write(tmp_path, RIGHT, "right.py")
    with pytest.raises(sandbox.SandboxError, match=r"a submission's process would get 5 MB, under the 16 MB"):
        grade_file(path, only=["rnn_step_backward"])
    assert npseq_main(["grade", str(path), "--only", "rnn_step_backward"]) == 2
    error = capsys.readouterr().err
    assert "ulimit -v" in error and "Not a fault of any submission" in error and "cannot import" not in error
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "config.json").write_text(Scoring(only=("rnn_step_backward",)).to_json())
    (tmp_path / "submission").mkdir()
    write(tmp_path / "submission", RIGHT, "backprop_exercises.py")
    assert autograder.main(["--root", str(tmp_path)]) == 0
    output = json.loads((tmp_path / "results" / "results.json").read_text())["output"]
    assert "the grader failed (not your fault; tell your instructor)" in output and "ulimit -v" in output
