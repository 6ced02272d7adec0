"""One command for a GPU machine: the backend tests on CuPy, then CPU against GPU training speed.

    python benchmarks/gpu_check.py              # where CuPy sees a GPU
    python benchmarks/gpu_check.py --rehearse   # anywhere: a dry run of this script

1. ``pytest tests/test_device_backends.py tests/test_fused.py``: every backend-parametrised
   test, the CuPy ones included (they compare the GPU with NumPy: 1e-10 in float64,
   1e-4 in float32), and the fused GRU/LSTM kernels against the unfused GPU path. The
   count of skipped CuPy tests is printed; on a GPU machine it must be 0.
2. d2l's Bahdanau translator (2-layer GRU, embed = hidden, ``num_steps`` 10, batch 128,
   Adam, clipping at norm 1, float32) trained by :func:`npseq.train.train_seq2seq_step`
   on NumPy (CPU) and on CuPy (GPU) at hidden 32, 256 and 1024, from the same weights
   and on the same batches: the first 1280 pairs of fra.txt (or of the built-in
   ``numbers`` task when fra.txt is not there). Each step ends by reading the loss and
   the gradient norm, which waits for the GPU, so wall time is honest. Printed: target
   tokens/s on each (median of runs), on the GPU also with the fused kernels
   (``npseq.backend.set_fused_kernels``), and the GPU/CPU ratios.

``--rehearse`` runs the GPU column on ``tests/device_double.py`` (NumPy behind CuPy's
rules) to check this script without a GPU; its timings measure nothing.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="fra.txt (default: $NPSEQ_FRA, else npseq's cache, filled by "
                                       "`npseq data fetch fra-eng`)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[32, 256, 1024])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--batches", type=int, default=5, help="timed batches per run (default 5)")
    parser.add_argument("--runs", type=int, default=3, help="runs per backend and size; the median is printed")
    parser.add_argument("--skip-tests", action="store_true", help="only the speed table")
    parser.add_argument("--rehearse", action="store_true", help="GPU column on the CPU double of CuPy")
    return parser.parse_args(argv)


def run_backend_tests():
    """pytest on the backend and fused-kernel tests; returns (failed, skipped CuPy tests, summary line)."""
    command = [sys.executable, "-m", "pytest", "-q", "-rs"] + [
        os.path.join(REPO, "tests", name) for name in ("test_device_backends.py", "test_fused.py")]
    # npseq need not be installed (the device machine has no package index): the tests import it from here
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
    lines = result.stdout.strip().splitlines()
    summary = lines[-1] if lines else result.stderr.strip()[-300:]
    counts = {kind: int(number) for number, kind in re.findall(r"(\d+) (passed|failed|skipped|error)", summary)}
    skipped_cupy = sum(int(n) for n in re.findall(r"SKIPPED \[(\d+)\].*backend 'cupy'", result.stdout))
    if result.returncode not in (0, 1):
        print(result.stdout[-3000:], result.stderr[-3000:])
    if counts.get("failed") or counts.get("error"):
        print("\n".join(line for line in lines if line.startswith(("FAILED", "ERROR"))))
    return counts.get("failed", 0) + counts.get("error", 0), skipped_cupy, summary


def load_batches(args):
    """Host batches of ``batch_size`` pairs, the same list for both backends."""
    from npseq.data import find_dataset, load_data_nmt, load_task
    from npseq.data.datasets import how_to_get

    num_pairs = 10 * args.batch_size
    path = args.data or find_dataset("fra-eng")
    if path is not None and os.path.exists(path):
        iterator, src_vocab, tgt_vocab = load_data_nmt(args.batch_size, 10, num_pairs, path=path, seed=0)
        source = f"the first {num_pairs} pairs of fra.txt"
    else:
        data = load_task("numbers", batch_size=args.batch_size, num_steps=(10, 12), num_examples=num_pairs,
                         split=(1.0, 0.0, 0.0))
        iterator, src_vocab, tgt_vocab = data.train, data.src_vocab, data.tgt_vocab
        missing = f"no fra.txt at {path}" if path else f"no fra-eng corpus: {how_to_get('fra-eng')}"
        source = f"{num_pairs} pairs of the built-in numbers task ({missing})"
    batches = [batch for batch in iterator if batch[0].shape[0] == args.batch_size]
    return batches, len(src_vocab), len(tgt_vocab), tgt_vocab["<bos>"], source


def tokens_per_second(backend_name, hidden, batches, sizes, bos_id, args, fused=False):
    """Median target tokens/s of ``train_seq2seq_step`` over ``args.runs`` runs of ``args.batches`` batches
    (``fused``: with the fused GRU kernels)."""
    from npseq import backend
    from npseq.models import build_seq2seq
    from npseq.nn import MaskedSoftmaxCELoss
    from npseq.optim import Adam
    from npseq.train import train_seq2seq_step

    backend.set_backend(backend_name)
    backend.set_fused_kernels(fused)
    try:
        model = build_seq2seq(*sizes, embed_size=hidden, num_hiddens=hidden, num_layers=2, dropout=0.1, seed=0)
        optimizer, loss_fn = Adam(model.parameters(), lr=0.005), MaskedSoftmaxCELoss("d2l")
        position = 0

        def train(count):
            nonlocal position
            tokens = 0
            for _ in range(count):
                batch = batches[position % len(batches)]
                position += 1
                tokens += train_seq2seq_step(model, loss_fn, optimizer, batch, bos_id, clip=1.0)[2]
            return tokens

        train(2)  # warm-up: first allocations, and on a GPU the kernels' compilation
        speeds = []
        for _ in range(args.runs):
            start = time.perf_counter()
            tokens = train(args.batches)
            speeds.append(tokens / (time.perf_counter() - start))
        return statistics.median(speeds)
    finally:
        backend.set_fused_kernels(False)
        backend.set_backend("numpy")


def main():
    args = parse_args()
    sys.path.insert(0, REPO)
    if args.rehearse:
        sys.path.insert(0, os.path.join(REPO, "tests"))
        import device_double
        sys.modules["cupy"] = device_double.MODULE
    from npseq import backend

    gpu = "the CPU double of CuPy (rehearsal: timings mean nothing)" if args.rehearse else "CuPy"
    try:
        backend.set_backend("cupy")
        backend.set_backend("numpy")
    except backend.BackendError as exc:
        sys.exit(f"gpu_check: {exc} (use --rehearse to dry-run this script without a GPU)")
    if not args.rehearse:
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        gpu = f"{props['name'].decode()} with CuPy {cupy.__version__}"

    print(f"gpu_check: CPU = NumPy on {os.cpu_count()} cores, GPU = {gpu}")
    ok = True
    if not args.skip_tests:
        failed, skipped_cupy, summary = run_backend_tests()
        print(f"\nbackend and fused-kernel tests: {summary}")
        if failed or (skipped_cupy and not args.rehearse):
            ok = False
            print(f"  NOT OK: {failed} failed, {skipped_cupy} CuPy tests skipped")

    batches, src_size, tgt_size, bos_id, source = load_batches(args)
    print(f"\nBahdanau GRU translator, 2 layers, batch {args.batch_size}, num_steps 10, {source}; "
          f"median of {args.runs} runs of {args.batches} batches")
    print(f"  {'hidden':>6} {'CPU tokens/s':>13} {'GPU tokens/s':>13} {'GPU fused':>10} {'GPU/CPU':>8} "
          f"{'fused/CPU':>10}")
    sizes = (src_size, tgt_size)
    for hidden in args.hidden:
        cpu = tokens_per_second("numpy", hidden, batches, sizes, bos_id, args)
        device = tokens_per_second("cupy", hidden, batches, sizes, bos_id, args)
        if args.rehearse:  # the double has no ElementwiseKernel
            print(f"  {hidden:>6} {cpu:>13.0f} {device:>13.0f} {'-':>10} {device / cpu:>8.2f} {'-':>10}")
            continue
        fused = tokens_per_second("cupy", hidden, batches, sizes, bos_id, args, fused=True)
        print(f"  {hidden:>6} {cpu:>13.0f} {device:>13.0f} {fused:>10.0f} {device / cpu:>8.2f} {fused / cpu:>10.2f}",
              flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
