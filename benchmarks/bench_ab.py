"""Versions of npseq side by side on bench_seq2seq's workload: which change bought what.

    python benchmarks/bench_ab.py 6198ca1 HEAD
    python benchmarks/bench_ab.py HEAD WORKTREE --hidden 32 --rounds 10

Each version is a git revision of this repository, or ``WORKTREE`` for the files as they
are now. Its ``npseq/`` is exported into a temporary folder under a package name of its
own (npseq imports itself only relatively), so every version loads into one process and
trains its own copy of d2l's Bahdanau translator (2-layer GRU, batch 64, num_steps 10,
the first 600 pairs of fra.txt, Adam, clipping) on the same batches. A round runs
``--batches`` batches with each version in turn, and the order is reversed every round,
so machine noise and cache warmth hit every version alike. Printed: the median time per
batch of each version and its speed relative to the first (> 1: faster).
"""
import argparse
import sys

from blas_threads import use_threads
from seq2seq_step import TrainingStep
from versions import export_version


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="+", help="git revisions, or WORKTREE for the files as they are now")
    parser.add_argument("--data", help="fra.txt or the dataset name fra-eng (default: $NPSEQ_FRA, else npseq's "
                                       "cache, filled by `npseq data fetch fra-eng`)")
    parser.add_argument("--hidden", type=int, default=256, help="embed = hidden size (default 256)")
    parser.add_argument("--rounds", type=int, default=8, help="timed rounds (default 8)")
    parser.add_argument("--batches", type=int, default=10, help="batches per version per round (default 10)")
    parser.add_argument("--threads", type=int, default=2, help="BLAS threads (default 2)")
    return parser.parse_args(argv)


ARGS = parse_args()
use_threads(ARGS.threads)  # before NumPy loads

import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402


class Trainer:
    """One version's translator trained by that version's own training step (``seq2seq_step.TrainingStep``:
    its ``train_seq2seq_step``, as its ``npseq train`` runs it)."""

    def __init__(self, package):
        batches, src_vocab, tgt_vocab = package.data.load_data_nmt(64, 10, 600, path=ARGS.data, seed=0)
        self.batches = list(batches)
        model = package.models.build_seq2seq(len(src_vocab), len(tgt_vocab), embed_size=ARGS.hidden,
                                             num_hiddens=ARGS.hidden, num_layers=2, dropout=0.1, seed=0)
        self.train_step = TrainingStep(package, model, tgt_vocab["<bos>"])
        self.next_batch = 0

    def step(self):
        self.train_step(self.batches[self.next_batch % len(self.batches)])
        self.next_batch += 1


def time_rounds(trainers):
    """Milliseconds per batch of each trainer, one entry per round."""
    for trainer in trainers:  # warm-up
        trainer.step()
        trainer.step()
    ms_per_batch = [[] for _ in trainers]
    for round_number in range(ARGS.rounds):
        order = range(len(trainers)) if round_number % 2 == 0 else reversed(range(len(trainers)))
        for i in order:
            start = time.perf_counter()
            for _ in range(ARGS.batches):
                trainers[i].step()
            ms_per_batch[i].append((time.perf_counter() - start) * 1e3 / ARGS.batches)
    return ms_per_batch


def corpus_path() -> str:
    """``--data`` (a file, or a dataset name resolved to its cached file), else ``$NPSEQ_FRA``, else the cache;
    when none of them has the corpus, exit saying how to get it. Found by the installed npseq, whichever
    versions are compared."""
    from npseq.data.datasets import DatasetMissing, corpus_file
    try:
        return corpus_file(ARGS.data)
    except DatasetMissing as exc:
        sys.exit(f"bench_ab: {exc}")


def main():
    ARGS.data = corpus_path()
    with tempfile.TemporaryDirectory() as folder:  # kept until the end: a version may import lazily
        sys.path.insert(0, folder)
        trainers = [Trainer(export_version(version, i, folder)) for i, version in enumerate(ARGS.versions)]
        ms_per_batch = time_rounds(trainers)
    medians = [statistics.median(times) for times in ms_per_batch]
    print(f"bench_seq2seq workload, embed = hidden = {ARGS.hidden}, {ARGS.threads} threads; "
          f"median of {ARGS.rounds} alternating rounds of {ARGS.batches} batches")
    print(f"  {'version':<20} {'ms/batch':>9} {'speed vs first':>15}")
    for version, median in zip(ARGS.versions, medians):
        print(f"  {version:<20} {median:>9.2f} {medians[0] / median:>15.3f}")


if __name__ == "__main__":
    main()
