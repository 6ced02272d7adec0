"""BLAS threads: where a second thread starts to pay, and what npseq's choice does to the demo, quiet and busy.

Run as a script::

    python benchmarks/blas_threads.py                  # the products table and the demo, quiet and busy
    python benchmarks/blas_threads.py --products-only  # the table behind backend.BLAS_THREADS_MIN_ELEMENTS
    python benchmarks/blas_threads.py --epochs 1 --repeats 1 --num-examples 200   # a quick look that it works

1. *Products*: ``(ROWS, k) @ (k, n)`` float32 products (ROWS = batch 64 x 10 steps; ``n = 3k``, a GRU's
   gates) timed at one BLAS thread and at the library's default count (threadpoolctl), median of
   alternating repeats; the smallest size from which the default count is at least 10% faster at every size is
   where threads start to pay, printed in elements (``k x n``) next to ``npseq.backend.BLAS_THREADS_MIN_ELEMENTS``.
2. *Demo*: ``npseq demo --task numbers`` timed (wall clock of the whole command) in three thread settings
   (``auto``: npseq's rule; ``1``: ``OPENBLAS_NUM_THREADS=1``; ``default``: ``OPENBLAS_NUM_THREADS=<cores>``),
   each quiet and beside two processes that spin on a core each, alternating the settings, median of
   ``--repeats``. It prints the CPU model and the ratios the rule is held to: auto busy / auto quiet (at most 2)
   and auto quiet / default quiet (at most 1, the quiet time does not get worse).

The timings need a machine with nothing else running; the script prints the load average at the start and end.
The module also keeps :func:`use_threads`, which the other benchmarks call before they import NumPy.
"""
import argparse
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
    # the smallest size from which every larger one pays too (a single lucky size is noise, not a threshold)
    paying = [size for size in sorted(ratios) if all(ratios[larger] >= 1.1 for larger in ratios if larger >= size)]
    return paying[0] if paying else None


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
        spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(2 if busy else 0)]
        try:
            for _ in range(args.repeats):
                for setting in settings:
                    times[setting, busy].append(demo_seconds(setting, args, cores))
        finally:
            for spinner in spinners:
                spinner.terminate()
            for spinner in spinners:
                spinner.wait(timeout=60)
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
    parser.add_argument("--demo-only", action="store_true", help="only the demo timings")
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES, help="the k of the products")
    parser.add_argument("--task", default="numbers", help="the demo's task")
    parser.add_argument("--epochs", type=int, default=None, help="the demo's epochs (default: the demo's own)")
    parser.add_argument("--num-examples", type=int, default=None, help="the demo's examples (default: its own)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats of each timing (median)")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    print(f"CPU: {cpu_model()}; {cores} cores; Python {platform.python_version()}; load average at start: {load()}")
    if not args.demo_only:
        import npseq.backend
        pays_from = time_products(args.repeats, args.sizes)
        print(f"threads start to pay (>= 10% faster from there on) at k x n = {pays_from} elements; "
              f"npseq.backend.BLAS_THREADS_MIN_ELEMENTS = {npseq.backend.BLAS_THREADS_MIN_ELEMENTS}")
    if not args.products_only:
        time_demo(args, cores)
    print(f"load average at the end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
