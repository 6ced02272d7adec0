"""BLAS threads: where a second thread starts to pay, and what npseq's choice does to the demo, quiet and busy.

Run as a script::

    python benchmarks/blas_threads.py                  # the products table and the demo, quiet and busy
    python benchmarks/blas_threads.py --products-only  # the products table only
    python benchmarks/blas_threads.py --steps-only     # the training-step table behind BLAS_THREADS_MIN_ELEMENTS
    python benchmarks/blas_threads.py --epochs 1 --repeats 1 --num-examples 200   # a quick look that it works

1. *Products*: ``(ROWS, k) @ (k, n)`` float32 products (ROWS = batch 64 x 10 steps; ``n = 3k``, a GRU's
   gates) timed at one BLAS thread and at the library's default count (threadpoolctl), median of
   alternating repeats; the smallest size from which the default count is at least 10% faster at every size is
   where threads start to pay, printed in elements (``k x n``) next to ``npseq.backend.BLAS_THREADS_MIN_ELEMENTS``.
2. *Training steps*: whole training steps (forward, loss, backward, clipping, Adam) of the demo's model (a
   Bahdanau GRU, float32, the demo's batch of 128 x 10 steps) at hidden ``--hiddens``, at one BLAS thread and at
   the default count, median of alternating repeats, first quiet, then beside two processes that spin on a core
   each. Products are only part of a step (the rest runs on one thread whatever the count), so this table, not
   the first, says where threads pay for a model: the smallest largest-weight-matrix size from which, at every
   larger size, the default count is at least 10% faster when quiet and at most twice as slow when busy, is
   printed next to ``npseq.backend.BLAS_THREADS_MIN_ELEMENTS``.
3. *Demo*: ``npseq demo --task numbers`` timed (wall clock of the whole command) in three thread settings
   (``auto``: npseq's rule; ``1``: ``OPENBLAS_NUM_THREADS=1``; ``default``: ``OPENBLAS_NUM_THREADS=<cores>``),
   each quiet and beside two processes that spin on a core each, alternating the settings, median of
   ``--repeats``. It prints the CPU model and the ratios the rule is held to: auto busy / auto quiet (at most 2)
   and auto quiet / default quiet (at most 1, the quiet time does not get worse).

The timings need a machine with nothing else running; the script prints the load average at the start and end.
The module also keeps :func:`use_threads`, which the other benchmarks call before they import NumPy.
"""
import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time


def use_threads(count: int) -> None:
    """Ask OpenBLAS, OpenMP and MKL for ``count`` threads.

    BLAS reads its thread count once, when NumPy is first imported, so a benchmark calls
    this after parsing its arguments and before its first ``import numpy``.
    """
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(count)


ROWS = 640  # batch 64 x 10 steps, the rows of the benchmarks' products
SIZES = (16, 32, 64, 128, 192, 256, 384, 512, 768, 1024)
HIDDENS = (32, 64, 128, 192, 256, 320, 384, 512, 768)
SPIN = "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\nwhile True:\n    pass\n"
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "GOTO_NUM_THREADS", "NPSEQ_BLAS_THREADS")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def time_products(repeats: int, sizes) -> int | None:
    """Print the products table; return the elements (k x n) from which the default count pays at every size
    (at least 10% faster than one thread), or ``None`` when it pays at none."""
    import numpy as np
    from threadpoolctl import threadpool_info, threadpool_limits
    blas = [f"{lib['internal_api']} {lib['version']}, {lib['num_threads']} threads by default"
            for lib in threadpool_info() if lib["user_api"] == "blas"]
    print(f"NumPy {np.__version__}, BLAS: {'; '.join(blas) or 'none found by threadpoolctl'}")
    print(f"products ({ROWS}, k) @ (k, 3k), float32, median of {repeats} alternating repeats:")
    print(f"  {'k':>5} {'k x n':>9} {'1 thread ms':>12} {'default ms':>11} {'1/default':>9}")
    rng = np.random.default_rng(0)
    ratios = {}
    for k in sizes:
        a = rng.standard_normal((ROWS, k), dtype=np.float32)
        b = rng.standard_normal((k, 3 * k), dtype=np.float32)
        out = np.empty((ROWS, 3 * k), dtype=np.float32)
        inner = max(1, int(2e8 // (ROWS * k * 3 * k)))  # enough products for a timing well above the clock's grain
        times = {1: [], None: []}
        for _ in range(repeats):
            for count in (1, None):
                with threadpool_limits(limits=count, user_api="blas"):
                    np.matmul(a, b, out=out)
                    start = time.perf_counter()
                    for _ in range(inner):
                        np.matmul(a, b, out=out)
                    times[count].append((time.perf_counter() - start) / inner)
        one, default = statistics.median(times[1]), statistics.median(times[None])
        ratios[k * 3 * k] = ratio = one / default
        print(f"  {k:>5} {k * 3 * k:>9} {one * 1e3:>12.3f} {default * 1e3:>11.3f} {ratio:>9.2f}")
    return pays_from(ratios)


def pays_from(ratios: dict, busy_ratios: dict | None = None) -> int | None:
    """The smallest size from which every larger one is at least 10% faster at the default count than on one thread
    (``ratios``: one thread's time over the default's) and, given ``busy_ratios``, at most twice as slow beside
    spinning processes; ``None`` when no size is. A single lucky size is noise, not a threshold."""
    def pays(size):
        return ratios[size] >= 1.1 and (busy_ratios is None or busy_ratios[size] >= 0.5)
    paying = [size for size in sorted(ratios) if all(pays(larger) for larger in ratios if larger >= size)]
    return paying[0] if paying else None


@contextlib.contextmanager
def spinning(count: int):
    """``count`` processes that spin on a core each while the block runs (a busy machine)."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.terminate()
        for spinner in spinners:
            spinner.wait(timeout=60)


def step_times(model, data, repeats: int, steps: int) -> dict:
    """Median seconds of one training step of ``model`` on ``data`` at one BLAS thread (key 1) and at the default
    count (key ``None``), over ``repeats`` alternating runs of ``steps`` steps, each after one warm-up step."""
    from threadpoolctl import threadpool_limits

    from npseq.nn.loss import MaskedSoftmaxCELoss
    from npseq.optim import Adam
    from npseq.train import train_seq2seq_step
    loss_fn, optimizer = MaskedSoftmaxCELoss(), Adam(model.parameters(), lr=1e-3)
    times = {1: [], None: []}
    for _ in range(repeats):
        for count in (1, None):
            with threadpool_limits(limits=count, user_api="blas"):
                train_seq2seq_step(model, loss_fn, optimizer, data, 1, 1.0)
                start = time.perf_counter()
                for _ in range(steps):
                    train_seq2seq_step(model, loss_fn, optimizer, data, 1, 1.0)
                times[count].append((time.perf_counter() - start) / steps)
    return {count: statistics.median(values) for count, values in times.items()}


def time_steps(repeats: int, hiddens, steps: int) -> int | None:
    """Print the training-step table, quiet and busy; return the largest-matrix size (elements) from which the
    default thread count pays (:func:`pays_from`) at every larger hidden size, or ``None`` when it pays at none."""
    import numpy as np

    from npseq.backend import _largest_matrix
    from npseq.models.build import DEMO_SETTINGS, build_seq2seq
    from npseq.runs import DEMO_TRAINING
    batch, length, vocab = DEMO_TRAINING["batch_size"], 10, 40
    rng = np.random.default_rng(0)
    data = (rng.integers(3, vocab, (batch, length)), np.full(batch, length),
            rng.integers(3, vocab, (batch, length)), np.full(batch, length))
    models = {hidden: build_seq2seq(vocab, vocab, **dict(DEMO_SETTINGS, num_hiddens=hidden), dtype=np.float32)
              for hidden in hiddens}
    quiet = {hidden: step_times(model, data, repeats, steps) for hidden, model in models.items()}
    with spinning(2):
        busy = {hidden: step_times(model, data, repeats, steps) for hidden, model in models.items()}
    print(f"training steps of the demo's model ({DEMO_SETTINGS}) at other hidden sizes, float32, batch {batch} x "
          f"{length} steps, ms, median of {repeats} alternating repeats of {steps} steps; busy: beside two "
          f"processes spinning on a core each")
    print(f"  {'hidden':>6} {'largest':>9} {'quiet 1':>8} {'default':>8} {'1/default':>9} {'busy 1':>8} "
          f"{'default':>8} {'1/default':>9}")
    ratios, busy_ratios = {}, {}
    for hidden, model in models.items():
        largest = _largest_matrix(model)
        ratios[largest] = quiet[hidden][1] / quiet[hidden][None]
        busy_ratios[largest] = busy[hidden][1] / busy[hidden][None]
        print(f"  {hidden:>6} {largest:>9} {quiet[hidden][1] * 1e3:>8.2f} {quiet[hidden][None] * 1e3:>8.2f} "
              f"{ratios[largest]:>9.2f} {busy[hidden][1] * 1e3:>8.2f} {busy[hidden][None] * 1e3:>8.2f} "
              f"{busy_ratios[largest]:>9.2f}")
    return pays_from(ratios, busy_ratios)


def demo_seconds(setting: str, args, cores: int) -> float:
    env = {key: value for key, value in os.environ.items() if key not in THREAD_VARIABLES}
    if setting != "auto":
        env["OPENBLAS_NUM_THREADS"] = "1" if setting == "1" else str(cores)
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "npseq", "demo", "--task", args.task, "--no-progress", "--out", out]
        command += ["--epochs", str(args.epochs)] if args.epochs else []
        command += ["--num-examples", str(args.num_examples)] if args.num_examples else []
        start = time.perf_counter()
        result = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                timeout=3600)
        seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"blas_threads: {' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    return seconds


def time_demo(args, cores: int) -> None:
    settings = ("auto", "1", "default")
    times = {(setting, busy): [] for setting in settings for busy in (False, True)}
    for busy in (False, True):
        with spinning(2 if busy else 0):
            for _ in range(args.repeats):
                for setting in settings:
                    times[setting, busy].append(demo_seconds(setting, args, cores))
    print(f"npseq demo --task {args.task}, wall seconds, median of {args.repeats} (settings alternating); "
          f"busy: beside two processes spinning on a core each")
    print(f"  {'threads':>8} {'quiet s':>8} {'busy s':>8} {'busy/quiet':>10}")
    median = {key: statistics.median(values) for key, values in times.items()}
    for setting in settings:
        quiet, busy = median[setting, False], median[setting, True]
        print(f"  {setting:>8} {quiet:>8.2f} {busy:>8.2f} {busy / quiet:>10.2f}")
    print(f"auto busy / auto quiet: {median['auto', True] / median['auto', False]:.2f} (target: at most 2)")
    print(f"auto quiet / default quiet: {median['auto', False] / median['default', False]:.2f} (target: at most 1)")
    print(f"auto busy / default busy: {median['auto', True] / median['default', True]:.2f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--products-only", action="store_true", help="only the products table")
    parser.add_argument("--steps-only", action="store_true", help="only the training-step table")
    parser.add_argument("--demo-only", action="store_true", help="only the demo timings")
    parser.add_argument("--hiddens", type=int, nargs="+", default=HIDDENS, help="the hidden sizes of the steps")
    parser.add_argument("--steps", type=int, default=5, help="training steps per timing")
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES, help="the k of the products")
    parser.add_argument("--task", default="numbers", help="the demo's task")
    parser.add_argument("--epochs", type=int, default=None, help="the demo's epochs (default: the demo's own)")
    parser.add_argument("--num-examples", type=int, default=None, help="the demo's examples (default: its own)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats of each timing (median)")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    print(f"CPU: {cpu_model()}; {cores} cores; Python {platform.python_version()}; load average at start: {load()}")
    import npseq.backend
    only = [name for name in ("products_only", "steps_only", "demo_only") if getattr(args, name)]
    if len(only) > 1:
        parser.error(f"expected at most one of --products-only, --steps-only, --demo-only, got {len(only)}")
    chosen = f"npseq.backend.BLAS_THREADS_MIN_ELEMENTS = {npseq.backend.BLAS_THREADS_MIN_ELEMENTS}"
    if not only or args.products_only:
        print(f"products pay (>= 10% faster from there on) from k x n = {time_products(args.repeats, args.sizes)} "
              f"elements")
    if not only or args.steps_only:
        print(f"training steps pay (>= 10% faster quiet, at most 2x slower busy, from there on) from a largest "
              f"matrix of {time_steps(args.repeats, args.hiddens, args.steps)} elements; {chosen}")
    if not only or args.demo_only:
        time_demo(args, cores)
    print(f"load average at the end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
