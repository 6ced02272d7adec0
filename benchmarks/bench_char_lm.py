"""Train tutorial 04's character language model with npseq and with an identical PyTorch twin, side by side.

    python benchmarks/bench_char_lm.py --hidden 256 512 --threads 2

The model is :class:`npseq.models.RNNLM` with a one-layer GRU (embedding size = hidden size,
no dropout) on the built-in corpus at character level, batches of 32 sequences of 35
characters cut sequentially (truncated BPTT: each batch starts from the previous batch's
detached state), Adam lr 0.005, clipping at global norm 1, float32. The torch twin
(``nn.Embedding`` -> ``nn.GRU`` -> ``nn.Linear``) starts from npseq's weights and sees the
same batches. Runs of ``--batches`` batches alternate between the two so machine noise hits
both alike; printed per size: tokens/s of each (median of runs), ms per batch, and the
npseq/torch ratio.
"""
import argparse

from blas_threads import use_threads


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="BLAS and torch threads alike (default 2)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[256, 512], help="hidden sizes to run")
    parser.add_argument("--batches", type=int, default=20, help="batches per timed run")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per implementation")
    return parser.parse_args(argv)


ARGS = parse_args()
use_threads(ARGS.threads)  # before NumPy loads

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from npseq.data import SeqDataLoader, load_corpus  # noqa: E402
from npseq.models import RNNLM  # noqa: E402
from npseq.nn import MaskedSoftmaxCELoss, to_torch_state_dict  # noqa: E402
from npseq.optim import Adam  # noqa: E402
from npseq.train import train_lm_step  # noqa: E402

BATCH_SIZE, NUM_STEPS, LR = 32, 35, 0.005


class NpseqRunner:
    def __init__(self, model):
        self.model, self.loss_fn = model, MaskedSoftmaxCELoss("mean")
        self.optimizer, self.state = Adam(model.parameters(), lr=LR), None

    def step(self, X, Y):
        self.state, *_ = train_lm_step(self.model, self.loss_fn, self.optimizer, X, Y, self.state, 1.0)


class TorchRunner:
    def __init__(self, torch, model):
        nn = torch.nn
        self.torch = torch
        self.twin = nn.ModuleDict({"embedding": nn.Embedding(model.vocab_size, model.embed_size),
                                   "rnn": nn.GRU(model.embed_size, model.num_hiddens, batch_first=True),
                                   "dense": nn.Linear(model.num_hiddens, model.vocab_size)})
        tensor = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
        with torch.no_grad():
            self.twin["embedding"].weight.copy_(tensor(model.embedding.W.data))
            self.twin["rnn"].load_state_dict({k: tensor(v) for k, v in to_torch_state_dict(model.rnn).items()})
            self.twin["dense"].weight.copy_(tensor(model.dense.W.data.T))
            self.twin["dense"].bias.copy_(tensor(model.dense.b.data))
        self.optimizer, self.state = torch.optim.Adam(self.twin.parameters(), lr=LR), None

    def step(self, X, Y):
        torch = self.torch
        X, Y = torch.from_numpy(X), torch.from_numpy(Y)
        self.optimizer.zero_grad()
        outputs, state = self.twin["rnn"](self.twin["embedding"](X), self.state)
        logits = self.twin["dense"](outputs)
        torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), Y.reshape(-1)).backward()
        torch.nn.utils.clip_grad_norm_(self.twin.parameters(), 1.0)
        self.optimizer.step()
        self.state = state.detach()


def batch_stream(loader):
    while True:
        yield from loader


def timed_run(runner, stream, num_batches):
    start = time.perf_counter()
    for _ in range(num_batches):
        runner.step(*next(stream))
    seconds = time.perf_counter() - start
    return num_batches * BATCH_SIZE * NUM_STEPS / seconds, seconds / num_batches


def main():
    try:
        import torch
        torch.set_num_threads(ARGS.threads)
    except ImportError:
        torch = None
    ids, vocab = load_corpus(level="char")
    print(f"character language model: 1-layer GRU, |V| = {len(vocab)}, batch {BATCH_SIZE} x {NUM_STEPS} steps, "
          f"sequential partitioning, Adam, clip 1, float32, {ARGS.threads} threads; median of {ARGS.runs} "
          f"alternating runs of {ARGS.batches} batches")
    if torch is None:
        print('torch is not installed: npseq alone (pip install -e ".[torch]" to compare)')
    for hidden in ARGS.hidden:
        model = RNNLM(len(vocab), hidden, cell="gru", rng=0)
        runners = {"npseq": NpseqRunner(model)}
        if torch is not None:
            runners["torch"] = TorchRunner(torch, model)  # built before any npseq step: the same start
        loader = SeqDataLoader(ids, BATCH_SIZE, NUM_STEPS, partition="sequential", seed=0)
        streams = {name: batch_stream(loader) for name in runners}
        for name in runners:  # warm-up
            timed_run(runners[name], streams[name], 2)
        results = {name: [] for name in runners}
        for _ in range(ARGS.runs):
            for name in runners:
                results[name].append(timed_run(runners[name], streams[name], ARGS.batches))
        print(f"\nhidden = {hidden}")
        speeds = {name: statistics.median(tps for tps, _ in runs) for name, runs in results.items()}
        for name, runs in results.items():
            print(f"  {name:6} {speeds[name]:>9.0f} tokens/s  {statistics.median(ms for _, ms in runs) * 1e3:>8.2f} "
                  f"ms/batch")
        if torch is not None:
            print(f"  npseq/torch tokens/s ratio: {speeds['npseq'] / speeds['torch']:.2f}")


if __name__ == "__main__":
    main()
