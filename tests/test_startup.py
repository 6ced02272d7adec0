"""How the ``npseq`` command starts: what it loads for each command, and Ctrl-C while it loads.

``import npseq`` loads nothing; the parser imports only the module of the command it runs. ``npseq train`` and
``npseq translate`` therefore never load the course (the grader, its sandbox, the exercise sets) or matplotlib,
and Ctrl-C during the seconds NumPy and the models take to load on a busy machine is the command's one line.
"""
import subprocess
import sys
import textwrap

import pytest

SMALL = ["--embed-size", "8", "--num-hiddens", "16", "--num-layers", "1", "--no-progress"]

# Runs ``npseq ARGS`` in this process, then prints the modules of the course and of matplotlib it loaded.
LOADED_BY = textwrap.dedent("""
    import sys
    from npseq.cli import main
    code = main(sys.argv[1:])
    print("exit", code)
    print("loaded", sorted(m for m in sys.modules if m.startswith(("npseq.course", "matplotlib"))))
""")

# Ctrl-C at the moment NumPy starts loading: a finder that raises KeyboardInterrupt on ``import numpy``, as the
# signal would, then the command as ``python -m npseq`` runs it.
INTERRUPTED_WHILE_LOADING = textwrap.dedent("""
    import runpy, sys

    class CtrlC:
        def find_spec(self, name, path=None, target=None):
            if name == "numpy":
                raise KeyboardInterrupt

    sys.meta_path.insert(0, CtrlC())
    runpy.run_module("npseq", run_name="__main__", alter_sys=True)
""")


def _run(script, *args, cwd):
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_train_and_translate_load_neither_the_course_nor_matplotlib(tmp_path):
    model = tmp_path / "model.npz"
    trained = _run(LOADED_BY, "train", "--task", "numbers", "--num-examples", "100", "--epochs", "1", *SMALL,
                   "--save", model, cwd=tmp_path)
    assert trained.stdout.splitlines()[-2:] == ["exit 0", "loaded []"], trained.stdout[-2000:] + trained.stderr
    translated = _run(LOADED_BY, "translate", model, "one two", cwd=tmp_path)
    assert translated.stdout.splitlines()[-2:] == ["exit 0", "loaded []"], translated.stdout + translated.stderr


def test_a_command_that_draws_loads_matplotlib_then(tmp_path):
    """The check above is not empty: the same probe sees matplotlib when translate draws its attention."""
    model = tmp_path / "model.npz"
    assert _run(LOADED_BY, "train", "--task", "numbers", "--num-examples", "100", "--epochs", "1", *SMALL,
                "--save", model, cwd=tmp_path).returncode == 0
    drawn = _run(LOADED_BY, "translate", model, "one two", "--attention-png", tmp_path / "a.png", cwd=tmp_path)
    assert drawn.stdout.splitlines()[-2] == "exit 0", drawn.stdout + drawn.stderr
    assert "'matplotlib'" in drawn.stdout.splitlines()[-1]


@pytest.mark.parametrize("args", [["translate", "model.npz", "one"], ["train", "--task", "numbers"], ["--help"]])
def test_ctrl_c_while_npseq_loads_is_one_line_and_exit_130(tmp_path, args):
    result = _run(INTERRUPTED_WHILE_LOADING, *args, cwd=tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    if args == ["--help"]:  # listing the commands loads no NumPy at all
        assert result.returncode == 0 and "translate" in result.stdout, result.stderr
        return
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip() == f"npseq {args[0]}: interrupted"
