"""Progress bars only where someone watches them: on a terminal, not in a log file or a pipe.

A bar redrawn into a file is one line per redraw (carriage returns a log viewer shows as lines), hundreds of them
in a long run. Each command is run twice as a real process: with standard error a pipe (a log), where no bar may
appear, and with standard error a pseudo-terminal, where the bar must, so the first half cannot pass by a
command that never draws one.
"""
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY_TRAIN = ["train", "--task", "numbers", "--num-examples", "120", "--num-hiddens", "8", "--embed-size", "4",
              "--num-layers", "1", "--epochs", "3"]
TINY_LM = ["lm", "--num-hiddens", "8", "--max-tokens", "2000", "--epochs", "2", "--num-preds", "5", "--samples", "1"]
BAR = ("\r", "epoch/s", "s/epoch", "it/s")  # tqdm's redraw and its rate units


def npseq_command(args, tmp_path) -> list:
    return [sys.executable, "-m", "npseq", *args] + (["--save", str(tmp_path / "ck.npz")] if args[0] == "train" else [])


def environment(tmp_path) -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), NPSEQ_DATA=str(tmp_path / "data"), MPLBACKEND="Agg")


def stderr_on_a_terminal(command, env) -> tuple:
    """Run ``command`` with its standard error on a pseudo-terminal: ``(exit code, what it wrote there)``."""
    controller, terminal = pty.openpty()
    # a terminal of 80 columns: a new pseudo-terminal has 0, where tqdm draws an empty bar
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    chunks = []

    def drain():  # read as it writes: a full terminal buffer would block the command
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the command closed its end
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        result = subprocess.run(command, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=terminal, timeout=600)
    finally:
        os.close(terminal)
    reader.join(timeout=60)
    os.close(controller)
    return result.returncode, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.parametrize("args", [TINY_TRAIN, TINY_LM], ids=["train", "lm"])
def test_a_progress_bar_is_drawn_on_a_terminal_and_never_into_a_pipe(tmp_path, args):
    env = environment(tmp_path)
    piped = subprocess.run(npseq_command(args, tmp_path), env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=600)
    assert piped.returncode == 0, piped.stderr
    assert not [mark for mark in BAR if mark in piped.stderr], piped.stderr
    (tmp_path / "ck.npz").unlink(missing_ok=True)
    code, on_terminal = stderr_on_a_terminal(npseq_command(args, tmp_path), env)
    assert code == 0, on_terminal
    assert "\r" in on_terminal and "train" in on_terminal, on_terminal
