"""The thread count of a benchmark's matrix products, which must be set before NumPy loads."""
import os


def use_threads(count: int) -> None:
    """Ask OpenBLAS, OpenMP and MKL for ``count`` threads.

    BLAS reads its thread count once, when NumPy is first imported, so a benchmark calls
    this after parsing its arguments and before its first ``import numpy``.
    """
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(count)
