"""Is the working tree slower than the last revision that landed? Training steps and translation, side by side.

    python benchmarks/regression.py                  # before landing a change to functional/, nn/, models/,
                                                     # decode.py or train.py
    python benchmarks/regression.py --against 5eeaf43 --rounds 12

Each version is exported (``versions.py``) and loaded into a worker process of its own, and
the two workers run, in alternating rounds whose order flips every round, the same work on the
same numbers:

* ``train h=32`` and ``train h=256``: ``npseq train``'s own step (``seq2seq_step.TrainingStep``,
  which calls ``train_seq2seq_step``) on d2l's Bahdanau translator (2-layer GRU, batch 64,
  10 steps) over random token batches of fra.txt's vocabulary size: no corpus needed;
* ``translate``: what ``npseq translate`` runs for 64 sentences waiting on stdin, greedy, with
  the hidden-32 model (``seq2seq_step.translate_waiting``: one batched search in a version that
  has it, one ``decode.greedy_search`` per sentence in an older one).

One process per version, because a version may change what its whole process does: since
npseq keeps the heap that a training step frees (``npseq.heap``), a version loaded beside
another in one process would lend it that setting, and the comparison could not see it.

Printed: each version's median time per unit, the ratio landed/worktree (above 1: the
working tree is faster) and each version's minor page faults per unit (landed/worktree);
every ratio below :data:`SLOWER_AT` is named. The exit code is 0
whatever the ratios (a busy machine must not fail anyone: this informs, ``.ci/run`` prints it);
2 when a revision cannot be read.

"The last revision that landed": ``--against``; by default the branch's upstream if it has one
other than ``HEAD``, else ``HEAD`` when the working tree has changes of its own (what you are about to land), else
``HEAD~1`` (a clean checkout, as CI's: the newest commit against its parent). The line above the
table says which.
"""
import argparse
import subprocess
import sys

from blas_threads import use_threads
from versions import REPO, WORKTREE, export_version, import_version

SLOWER_AT = 0.95
"""A ratio (landed time / working-tree time) below this is named: more than 5% slower."""

WORKLOADS = ("train h=32", "train h=256", "translate")

BLAS_SPIN_SECONDS = 0.25
"""With more than one BLAS thread, the pause before each timing: OpenBLAS's threads keep a core busy for a while
after their last product, and the other worker's timing would pay for it."""


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="the revision to compare with (default: see the module docstring)")
    parser.add_argument("--rounds", type=int, default=6, help="timed rounds (default 6)")
    parser.add_argument("--batches", type=int, default=5, help="training batches per version per round (default 5)")
    parser.add_argument("--sentences", type=int, default=64, help="sentences translated per round (default 64)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1, as npseq trains these)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # run version npseq_vN, fed workloads on stdin
    parser.add_argument("--folder", help=argparse.SUPPRESS)  # where the versions were exported
    return parser.parse_args(argv)


ARGS = parse_args()
use_threads(ARGS.threads)  # before NumPy loads

import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import NamedTuple  # noqa: E402

import numpy as np  # noqa: E402
from seq2seq_step import BOS, SYNTHETIC_VOCAB, TrainingStep, minor_faults, synthetic_batches, translate_waiting  # noqa: E402

EOS = 3  # <eos> in the synthetic vocabulary


def _git(*args) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True).stdout.strip()


def landed() -> tuple:
    """The revision to compare with, and why that one."""
    if ARGS.against:
        return ARGS.against, "as asked (--against)"
    upstream = _git("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}")
    if upstream and _git("rev-parse", upstream) != _git("rev-parse", "HEAD"):  # a fresh clone's is HEAD itself
        return upstream, "the branch's upstream"
    if _git("status", "--porcelain", "--untracked-files=no", "--", "npseq"):
        return "HEAD", "the last commit (the working tree's npseq/ has changes of its own)"
    return "HEAD~1", "the last commit's parent (the working tree is HEAD itself)"


class Timing(NamedTuple):
    seconds: float  # per unit
    faults: float   # minor page faults per unit: pages the kernel mapped and zeroed at their first touch


class Version:
    """One version's models and the work each workload times on them."""

    def __init__(self, package):
        self.package = package
        self.batches = synthetic_batches(10)
        self.steps = {}
        for hidden in (32, 256):
            model = package.models.build_seq2seq(SYNTHETIC_VOCAB, SYNTHETIC_VOCAB, embed_size=hidden,
                                                 num_hiddens=hidden, num_layers=2, dropout=0.1, seed=0)
            self.steps[hidden] = TrainingStep(package, model, BOS)
        self.translator = self.steps[32].model
        self.sources = (np.concatenate([X for X, _, _, _ in self.batches])[:ARGS.sentences],
                        np.concatenate([X_len for _, X_len, _, _ in self.batches])[:ARGS.sentences])
        self.next_batch = 0

    def run(self, workload: str) -> Timing:
        """Seconds and minor page faults per unit of ``workload``: a training batch, or a sentence translated."""
        faults = minor_faults()
        start = time.perf_counter()
        if workload == "translate":
            translate_waiting(self.package.decode, self.translator, *self.sources, bos_id=BOS, eos_id=EOS, max_len=10)
            units = ARGS.sentences
        else:
            step = self.steps[int(workload.split("=")[1])]
            for _ in range(ARGS.batches):
                step(self.batches[self.next_batch % len(self.batches)])
                self.next_batch += 1
            units = ARGS.batches
        return Timing((time.perf_counter() - start) / units, (minor_faults() - faults) / units)



def serve(index: int, folder: str) -> int:
    """The worker: load version ``index`` from ``folder``, then time each workload named on stdin, one reply a line."""
    sys.path.insert(0, folder)
    version = Version(import_version(index))
    for line in sys.stdin:
        print(*version.run(line.strip()), flush=True)
    return 0


class Worker:
    """A process running one exported version: ``run(workload)`` asks it for one timing."""

    def __init__(self, index: int, folder: str):
        command = [sys.executable, __file__, "--worker", str(index), "--folder", folder, "--threads", str(ARGS.threads),
                   "--batches", str(ARGS.batches), "--sentences", str(ARGS.sentences)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def run(self, workload: str) -> Timing:
        if ARGS.threads > 1:  # let the other worker's BLAS threads stop spinning (OpenBLAS spins ~0.1 s after work)
            time.sleep(BLAS_SPIN_SECONDS)
        self.process.stdin.write(workload + "\n")
        reply = self.process.stdout.readline()
        if not reply:
            sys.exit(f"regression: a worker stopped (exit code {self.process.wait()}) while timing {workload}")
        return Timing(*map(float, reply.split()))

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def main():
    if ARGS.worker is not None:
        return serve(ARGS.worker, ARGS.folder)
    against, why = landed()
    if not _git("rev-parse", "--verify", "--quiet", f"{against}^{{commit}}"):
        print(f"regression: {against!r} is not a revision of this repository", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        sys.path.insert(0, folder)
        for index, version in enumerate((against, WORKTREE)):
            export_version(version, index, folder)
        workers = [Worker(index, folder) for index in range(2)]
        seconds = {workload: ([], []) for workload in WORKLOADS}
        for workload in WORKLOADS:  # warm-up
            for worker in workers:
                worker.run(workload)
        for round_number in range(ARGS.rounds):
            order = (0, 1) if round_number % 2 == 0 else (1, 0)
            for workload in WORKLOADS:
                for index in order:
                    seconds[workload][index].append(workers[index].run(workload))
        for worker in workers:
            worker.close()
    commit = _git("rev-parse", "--short", against)
    print(f"the working tree against {against} ({commit}), {why}; one process each, {ARGS.threads} BLAS "
          f"thread(s), median of {ARGS.rounds} alternating rounds")
    print(f"  {'workload':<12} {'landed ms':>10} {'worktree ms':>12} {'landed/worktree':>16} {'faults':>14}")
    slower = []
    for workload in WORKLOADS:
        before, now = (statistics.median(t.seconds for t in timings) * 1e3 for timings in seconds[workload])
        faults = "/".join(f"{statistics.median(t.faults for t in timings):.0f}" for timings in seconds[workload])
        ratio = before / now
        unit = "per sentence" if workload == "translate" else "per batch"
        mark = "  <- slower" if ratio < SLOWER_AT else ""
        print(f"  {workload:<12} {before:>10.2f} {now:>12.2f} {ratio:>16.3f} {faults:>14}  ({unit}){mark}")
        if ratio < SLOWER_AT:
            slower.append(f"{workload} ({ratio:.2f})")
    print(f"slower than {SLOWER_AT} of the landed speed: {', '.join(slower)} (on a busy machine, run it again "
          "before you believe it)" if slower else f"no workload below {SLOWER_AT} of the landed speed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
