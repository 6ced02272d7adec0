"""Forward + backward time of a 2-layer GRU: npseq against torch.nn.GRU, side by side.

    python benchmarks/bench_gru.py --threads 2

Both run in float32 on the same inputs with the same weights (copied from npseq into
torch), alternating run by run so that machine noise hits both alike; the table gives
the median time per forward+backward and the npseq/torch speed ratio (> 1: npseq faster).
"""
import argparse
import os
import sys


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="BLAS and torch threads (default 2)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--hidden", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--repeats", type=int, default=30)
    return parser.parse_args(argv)


ARGS = parse_args()
# BLAS reads its thread count when NumPy loads, so set it before the first import.
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from npseq.nn import GRU, to_torch_state_dict  # noqa: E402


def time_npseq(layer, x, dout):
    start = time.perf_counter()
    layer.zero_grad()
    outputs, _ = layer(x)
    layer.backward(dout)
    return time.perf_counter() - start


def time_torch(torch, layer, x, dout):
    start = time.perf_counter()
    layer.zero_grad()
    outputs, _ = layer(x)
    outputs.backward(dout)
    return time.perf_counter() - start


def main():
    try:
        import torch
    except ImportError:
        sys.exit("bench_gru: torch is not installed (pip install -e \".[torch]\"); nothing to compare with")
    torch.set_num_threads(ARGS.threads)
    rng = np.random.default_rng(0)
    print(f"2-layer GRU, N={ARGS.batch}, T={ARGS.steps}, float32, {ARGS.threads} threads, "
          f"median of {ARGS.repeats} forward+backward runs")
    print(f"{'H':>6} {'npseq ms':>10} {'torch ms':>10} {'npseq/torch speed':>18}")
    for hidden in ARGS.hidden:
        ours = GRU(hidden, hidden, num_layers=2, reset_after=True, rng=0, dtype=np.float32)
        theirs = torch.nn.GRU(hidden, hidden, num_layers=2, batch_first=True)
        theirs.load_state_dict({k: torch.from_numpy(v) for k, v in to_torch_state_dict(ours).items()})
        x = rng.standard_normal((ARGS.batch, ARGS.steps, hidden)).astype(np.float32)
        dout = rng.standard_normal((ARGS.batch, ARGS.steps, hidden)).astype(np.float32)
        tx, tdout = torch.from_numpy(x), torch.from_numpy(dout)
        for _ in range(3):  # warm-up
            time_npseq(ours, x, dout)
            time_torch(torch, theirs, tx, tdout)
        npseq_times, torch_times = [], []
        for _ in range(ARGS.repeats):
            npseq_times.append(time_npseq(ours, x, dout))
            torch_times.append(time_torch(torch, theirs, tx, tdout))
        a, b = statistics.median(npseq_times), statistics.median(torch_times)
        print(f"{hidden:>6} {a * 1e3:>10.2f} {b * 1e3:>10.2f} {b / a:>18.2f}")


if __name__ == "__main__":
    main()
