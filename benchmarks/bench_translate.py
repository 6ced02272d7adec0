"""``npseq translate CK < lines``: CPU time per line, before and after the lines waiting are translated together.

    python benchmarks/bench_translate.py                       # trains the demo's model first (about 5 s)
    python benchmarks/bench_translate.py --checkpoint npseq-demo/numbers/model.npz --lines 2000 --rounds 3

The command runs as a user runs it, in a child process with the lines on stdin, once with the
revision ``--before`` (default: the last one that translated one sentence at a time) and once
with the working tree, greedy and ``--beam 3``. A child's CPU time (user + system, from
``getrusage``) is taken for all the lines and for one line alone, the start-up (imports,
loading the model): printed are the milliseconds of CPU per line, start-up included and
beyond it, each the median of ``--rounds`` runs, and whether the two versions printed the same
output, line for line.
"""
import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from blas_threads import cpu_model
from versions import REPO, WORKTREE

ONE_AT_A_TIME = "2a85a3e"
"""The last revision whose ``npseq translate`` searched one sentence at a time."""
SEARCHES = {"greedy": [], "beam 3": ["--beam", "3"]}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", help="a translator saved by npseq (default: train the numbers demo's)")
    parser.add_argument("--lines", type=int, default=2000, help="lines on stdin (default 2000)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each command; the median is shown")
    parser.add_argument("--before", default=ONE_AT_A_TIME, help=f"the revision before (default {ONE_AT_A_TIME})")
    return parser.parse_args(argv)


def export(version: str, folder: str) -> str:
    """A folder whose ``npseq/`` is ``version`` (a revision, or the working tree): the child's PYTHONPATH."""
    if version == WORKTREE:
        return REPO
    os.makedirs(folder)
    archive = subprocess.run(["git", "-C", REPO, "archive", version, "npseq"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
    return folder


def numbers_lines(count: int) -> str:
    """``count`` short sentences of the numbers task (two to seven words), one per line."""
    sys.path.insert(0, REPO)
    from npseq.data.tasks import english_number
    rng = np.random.default_rng(0)
    return "".join(f"{english_number(int(n))}\n" for n in rng.integers(0, 10_000, count))


def run(path: str, command: list, stdin: str, folder: str) -> tuple:
    """CPU seconds, wall seconds and stdout of ``python -m npseq COMMAND`` with ``path`` first on its path."""
    env = dict(os.environ, PYTHONPATH=path)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "npseq", *command], input=stdin, capture_output=True, text=True,
                            env=env, cwd=folder, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"bench_translate: {shlex.join(command)} failed:\n{result.stderr}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall, result.stdout


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory() as folder:
        checkpoint, model = args.checkpoint, args.checkpoint
        if checkpoint is None:
            run(REPO, ["demo", "--out", folder, "--no-progress"], "", folder)
            checkpoint, model = os.path.join(folder, "numbers", "model.npz"), "DEMO (npseq demo's numbers model)"
        checkpoint = os.path.abspath(checkpoint)
        lines = numbers_lines(args.lines)
        first_line = lines.split("\n", 1)[0] + "\n"
        versions = {f"before ({args.before})": export(args.before, os.path.join(folder, "before")),
                    "after (working tree)": export(WORKTREE, folder)}
        print(f"npseq translate {model} < {args.lines} lines of the numbers task, on {cpu_model()} "
              f"({os.cpu_count()} CPUs); CPU per line: user + system time, median of {args.rounds} runs")
        print(f"  {'version':<24} {'search':<7} {'CPU s':>7} {'wall s':>7} {'ms/line':>8} {'beyond start-up':>16}")
        outputs = {}
        for search, flags in SEARCHES.items():
            for name, path in versions.items():
                command = ["translate", checkpoint, *flags]
                runs = [run(path, command, lines, folder) for _ in range(args.rounds)]
                start_up = statistics.median(run(path, command, first_line, folder)[0] for _ in range(args.rounds))
                cpu, wall = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
                outputs[name, search] = runs[0][2]
                print(f"  {name:<24} {search:<7} {cpu:>7.2f} {wall:>7.2f} {cpu / args.lines * 1e3:>8.3f} "
                      f"{(cpu - start_up) / (args.lines - 1) * 1e3:>16.3f}")
            same = len({outputs[name, search] for name in versions}) == 1
            print(f"  {search}: the same output line for line: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
