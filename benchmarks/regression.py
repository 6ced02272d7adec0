"""Is the working tree slower than the last revision that landed? Training steps and translation, side by side.

    python benchmarks/regression.py                  # before landing a change to functional/, nn/, models/,
                                                     # decode.py or train.py
    python benchmarks/regression.py --against 5eeaf43 --rounds 12

Both versions are loaded into this one process (``versions.py``) and run, in alternating
rounds whose order flips every round, the same work on the same numbers:

* ``train h=32`` and ``train h=256``: ``npseq train``'s own step (``seq2seq_step.TrainingStep``,
  which calls ``train_seq2seq_step``) on d2l's Bahdanau translator (2-layer GRU, batch 64,
  10 steps) over random token batches of fra.txt's vocabulary size: no corpus needed;
* ``translate``: what ``npseq translate`` runs for 64 sentences waiting on stdin, greedy, with
  the hidden-32 model (``seq2seq_step.translate_waiting``: one batched search in a version that
  has it, one ``decode.greedy_search`` per sentence in an older one).

Printed: each version's median time per unit and the ratio landed/worktree (above 1: the
working tree is faster); every ratio below :data:`SLOWER_AT` is named. The exit code is 0
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
from versions import REPO, WORKTREE, export_version

SLOWER_AT = 0.95
"""A ratio (landed time / working-tree time) below this is named: more than 5% slower."""

WORKLOADS = ("train h=32", "train h=256", "translate")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="the revision to compare with (default: see the module docstring)")
    parser.add_argument("--rounds", type=int, default=6, help="timed rounds (default 6)")
    parser.add_argument("--batches", type=int, default=5, help="training batches per version per round (default 5)")
    parser.add_argument("--sentences", type=int, default=64, help="sentences translated per round (default 64)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1, as npseq trains these)")
    return parser.parse_args(argv)


ARGS = parse_args()
use_threads(ARGS.threads)  # before NumPy loads

import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from seq2seq_step import BOS, SYNTHETIC_VOCAB, TrainingStep, synthetic_batches, translate_waiting  # noqa: E402

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

    def run(self, workload: str) -> float:
        """Seconds per unit of ``workload``: a training batch, or a sentence translated."""
        start = time.perf_counter()
        if workload == "translate":
            translate_waiting(self.package.decode, self.translator, *self.sources, bos_id=BOS, eos_id=EOS, max_len=10)
            return (time.perf_counter() - start) / ARGS.sentences
        step = self.steps[int(workload.split("=")[1])]
        for _ in range(ARGS.batches):
            step(self.batches[self.next_batch % len(self.batches)])
            self.next_batch += 1
        return (time.perf_counter() - start) / ARGS.batches


def main():
    against, why = landed()
    if not _git("rev-parse", "--verify", "--quiet", f"{against}^{{commit}}"):
        print(f"regression: {against!r} is not a revision of this repository", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        sys.path.insert(0, folder)
        versions = [Version(export_version(version, i, folder)) for i, version in enumerate((against, WORKTREE))]
        seconds = {workload: ([], []) for workload in WORKLOADS}
        for workload in WORKLOADS:  # warm-up
            for version in versions:
                version.run(workload)
        for round_number in range(ARGS.rounds):
            order = (0, 1) if round_number % 2 == 0 else (1, 0)
            for workload in WORKLOADS:
                for index in order:
                    seconds[workload][index].append(versions[index].run(workload))
    commit = _git("rev-parse", "--short", against)
    print(f"the working tree against {against} ({commit}), {why}; {ARGS.threads} BLAS thread(s), median of "
          f"{ARGS.rounds} alternating rounds")
    print(f"  {'workload':<12} {'landed ms':>10} {'worktree ms':>12} {'landed/worktree':>16}")
    slower = []
    for workload in WORKLOADS:
        before, now = (statistics.median(times) * 1e3 for times in seconds[workload])
        ratio = before / now
        unit = "per sentence" if workload == "translate" else "per batch"
        mark = "  <- slower" if ratio < SLOWER_AT else ""
        print(f"  {workload:<12} {before:>10.2f} {now:>12.2f} {ratio:>16.3f}  ({unit}){mark}")
        if ratio < SLOWER_AT:
            slower.append(f"{workload} ({ratio:.2f})")
    print(f"slower than {SLOWER_AT} of the landed speed: {', '.join(slower)} (on a busy machine, run it again "
          "before you believe it)" if slower else f"no workload below {SLOWER_AT} of the landed speed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
