"""The array backend: the one place where npseq imports NumPy or CuPy.

Every other module asks this one for its array module, so the same code runs on
the CPU (NumPy) and on a GPU (CuPy):

* ``backend.xp`` is the array module for *new* arrays (parameters, zeros, masks).
  Read it as an attribute at call time (``backend.xp.zeros(...)``), never with
  ``from npseq.backend import xp``: :func:`set_backend` rebinds it.
* ``get_array_module(*arrays)`` is the module that owns the given arrays; the
  functional layer uses it, so a pure function follows its inputs (Chainer's
  ``xp`` idiom) and never mixes devices.
* ``numpy`` is re-exported for host-side work that is not computation on model
  tensors (text processing, file I/O, random number generation on the host).

The backend is chosen by ``set_backend("numpy" | "cupy")`` or by the
``NPSEQ_BACKEND`` environment variable, which is applied on first use of ``xp``
(so importing npseq never fails; the first array it creates says why CuPy cannot run).

**BLAS threads are chosen for the work.** :func:`blas_threads` (a context manager; training,
:func:`~npseq.decode.translate` and the batch evaluation run inside it) gives a small model one
BLAS thread: its products are too small for a second thread to pay, and beside other jobs the
threads spin against them (see :data:`BLAS_THREADS_MIN_ELEMENTS` and
``benchmarks/blas_threads.py``). An explicit choice wins: ``NPSEQ_BLAS_THREADS=N``, or any of
``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``BLIS_NUM_THREADS``,
``VECLIB_MAXIMUM_THREADS`` set in the environment (then npseq leaves the count alone).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import math
import os

import numpy

from .errors import InvalidTypeError, InvalidValueError, UserError

__all__ = [  # noqa: F822 (xp is served by the module's __getattr__, so it follows set_backend)
    "xp", "numpy", "set_backend", "backend_name", "get_array_module", "to_numpy",
    "asarray", "scalars_to_host", "default_dtype", "set_default_dtype", "scatter_add", "BackendError",
    "set_fused_kernels", "fused_kernels_enabled", "blas_threads", "chosen_blas_threads",
    "BLAS_THREADS_MIN_ELEMENTS",
]

BACKENDS = ("numpy", "cupy")

_xp = None  # the array module for new arrays; None until first use applies NPSEQ_BACKEND
_requested = os.environ.get("NPSEQ_BACKEND", "").strip().lower() or "numpy"

_fused_kernels = os.environ.get("NPSEQ_FUSED", "").strip() == "1"

default_dtype = numpy.dtype(numpy.float32)
"""The dtype of new parameters: float32 for training; gradient checks ask for float64."""


class BackendError(UserError, RuntimeError):
    """The requested backend cannot run here (CuPy missing, or no GPU visible)."""


def _load_cupy():
    """Import CuPy and make sure it sees a GPU, or say which extra to install."""
    hint = ('install the CuPy extra that matches your CUDA toolkit: '
            'pip install -e ".[cuda12]" (CUDA 12.x) or pip install -e ".[cuda13]" (CUDA 13.x)')
    try:
        cupy = importlib.import_module("cupy")
    except ImportError as exc:
        raise BackendError(f"backend 'cupy' needs CuPy, which is not installed ({exc}); {hint}") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CuPy raises CUDARuntimeError or ImportError-like errors without a driver
        raise BackendError(f"backend 'cupy' needs a CUDA GPU, but CuPy could not reach one: {exc}") from None
    if count < 1:
        raise BackendError("backend 'cupy' needs a CUDA GPU, but none is visible "
                           "(check CUDA_VISIBLE_DEVICES and the driver)")
    return cupy


def set_backend(name: str):
    """Select the array module for new arrays: ``"numpy"`` (default) or ``"cupy"``.

    Returns the selected module. Raises ``ValueError`` for an unknown name and
    :class:`BackendError` (naming the pip extra to install) when CuPy or a GPU is
    missing.
    """
    global _xp
    if name not in BACKENDS:
        raise InvalidValueError(f"backend: expected one of {BACKENDS}, got {name!r}")
    _xp = numpy if name == "numpy" else _load_cupy()
    return _xp


def _current():
    """The array module for new arrays, applying ``NPSEQ_BACKEND`` on first use."""
    if _xp is None:
        try:
            set_backend(_requested)
        except (BackendError, ValueError) as exc:
            raise type(exc)(f"NPSEQ_BACKEND={_requested}: {exc}") from None
    return _xp


def __getattr__(name):
    if name == "xp":
        return _current()
    raise AttributeError(f"module 'npseq.backend' has no attribute {name!r}")


def backend_name() -> str:
    """``"numpy"`` or ``"cupy"``: the backend that new arrays are created on."""
    return "numpy" if _current() is numpy else "cupy"


def get_array_module(*arrays):
    """The array module (NumPy or CuPy) that owns ``arrays``.

    Arrays that are not CuPy arrays (NumPy arrays, Python scalars, ``None``)
    count as NumPy, so this never imports CuPy when it is not in use.
    """
    for array in arrays:
        kind = type(array)
        if kind is not numpy.ndarray and kind.__module__.startswith("cupy"):
            return importlib.import_module("cupy")
    return numpy


def to_numpy(array):
    """A NumPy copy of ``array`` on the host (a NumPy array is returned as is)."""
    if type(array).__module__.startswith("cupy"):
        return array.get()
    return numpy.asarray(array)


def asarray(array, dtype=None):
    """``array`` as an array of the current backend (copied to the device if needed)."""
    xp = _current()
    if xp is numpy:
        return numpy.asarray(to_numpy(array), dtype=dtype)
    return xp.asarray(array, dtype=dtype)


def scalars_to_host(*values) -> list:
    """0-d arrays (a loss, a norm) as Python floats, in one device-to-host copy on a GPU."""
    xp = get_array_module(*values)
    if xp is numpy:
        return [float(value) for value in values]
    return xp.stack([xp.asarray(value, dtype=xp.float64) for value in values]).get().tolist()


def set_fused_kernels(enabled: bool) -> None:
    """Use the fused CuPy kernels for the GRU and LSTM cells (:mod:`npseq.functional.fused`).

    Off by default (``NPSEQ_FUSED=1`` turns them on at import); NumPy arrays never use them.
    """
    global _fused_kernels
    if not isinstance(enabled, bool):
        raise InvalidTypeError(f"enabled: expected True or False, got {enabled!r}")
    _fused_kernels = enabled


def fused_kernels_enabled() -> bool:
    """Whether :func:`set_fused_kernels` (or ``NPSEQ_FUSED=1``) switched the fused kernels on."""
    return _fused_kernels


def set_default_dtype(dtype) -> None:
    """Set the dtype of new parameters (``float32`` or ``float64``)."""
    global default_dtype
    dtype = numpy.dtype(dtype)
    if dtype not in (numpy.float32, numpy.float64):
        raise InvalidValueError(f"dtype: expected float32 or float64, got {dtype}")
    default_dtype = dtype


def scatter_add(target, indices, values) -> None:
    """``target[indices] += values`` with repeated indices accumulated (in place).

    On NumPy, rows of a 2-d ``target`` addressed by 1-d ``indices`` (an embedding's
    gradient) are summed per distinct index first: a stable sort groups the rows of
    ``values`` by index, ``add.reduceat`` sums each group, and each distinct row of
    ``target`` is updated once. The same sums as ``numpy.add.at`` up to the order of
    the additions, and several times faster (``add.at`` goes element by element).
    On CuPy it is ``cupy.add.at`` (atomic adds; ``cupyx.scatter_add`` is deprecated).
    """
    xp = get_array_module(target)
    if xp is not numpy:
        xp.add.at(target, indices, values)
    elif target.ndim == 2 and indices.ndim == 1 and values.shape == (indices.size, target.shape[1]) \
            and indices.size > 1:
        order = numpy.argsort(indices, kind="stable")
        grouped = indices[order]
        starts = numpy.flatnonzero(numpy.concatenate(([True], grouped[1:] != grouped[:-1])))
        target[grouped[starts]] += numpy.add.reduceat(values[order], starts, axis=0)
    else:
        numpy.add.at(target, indices, values)



# ------------------------------------------------------------------ BLAS threads
BLAS_THREADS_MIN_ELEMENTS = 2 ** 18
"""The size, in elements, of a model's largest weight matrix from which BLAS's own thread count is kept; below it
:func:`blas_threads` runs one thread. The rule: keep the threads for a model when, from its size on, whole training
steps are at least 10% faster with them on a quiet machine and at most twice as slow beside two spinning processes.
``python benchmarks/blas_threads.py --steps-only`` measured it on a 2-core AMD EPYC (benchmarks/RESULTS.md,
2026-12-02) for the demo's Bahdanau GRU at hidden 32 to 512: it holds from hidden 320 (largest matrix 337,920) on
and fails at 256 (221,184), where a second thread is 1.25 times as fast quiet and 3.5 times as slow busy. 2**18
lies between the two. The demo itself (hidden 64) on one thread took 0.98 of its time at the default two threads
quiet and 0.27 of it busy (``python benchmarks/blas_threads.py --demo-only``)."""

USER_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                         "VECLIB_MAXIMUM_THREADS", "GOTO_NUM_THREADS")
"""Environment variables with which a user sets BLAS's thread count; one of them set, npseq leaves it alone."""


def _largest_matrix(model) -> int:
    """The elements of ``model``'s largest parameter of two or more axes (a :class:`~npseq.nn.module.Parameter` or an
    array), 0 for a model without one."""
    shapes = [tuple(param.shape) for param in getattr(model, "parameters", list)()]
    return max((math.prod(shape) for shape in shapes if len(shape) >= 2), default=0)


def chosen_blas_threads(model=None):
    """The BLAS thread count :func:`blas_threads` sets for ``model``: ``NPSEQ_BLAS_THREADS`` when that is a positive
    int; ``None`` (leave it as it is) when a BLAS variable of :data:`USER_THREAD_VARIABLES` is set, on a GPU
    backend, or for a model whose largest weight matrix has :data:`BLAS_THREADS_MIN_ELEMENTS` elements or more;
    else 1."""
    chosen = os.environ.get("NPSEQ_BLAS_THREADS", "").strip().lower()
    if chosen not in ("", "auto"):
        if not (chosen.isdigit() and int(chosen) > 0):
            raise InvalidValueError(f"NPSEQ_BLAS_THREADS: expected a positive int or 'auto', got {chosen!r}")
        return int(chosen)
    if any(os.environ.get(name, "").strip() for name in USER_THREAD_VARIABLES) or backend_name() != "numpy":
        return None
    return None if _largest_matrix(model) >= BLAS_THREADS_MIN_ELEMENTS else 1


@functools.lru_cache(maxsize=1)
def _thread_controller():
    """threadpoolctl's controller of the BLAS libraries NumPy loaded (found once), or ``None`` without it."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # a checkout used without installing its dependencies: the count is left as it is
        return None
    return ThreadpoolController()


@contextlib.contextmanager
def blas_threads(model=None, count=None):
    """Run the block with ``count`` BLAS threads, by default :func:`chosen_blas_threads` ``(model)``; ``None``
    leaves the count as it is. The previous count comes back at the end (nested blocks are fine)."""
    count = count if count is not None else chosen_blas_threads(model)
    controller = _thread_controller() if count is not None else None
    if controller is None:
        yield
        return
    with controller.limit(limits=count, user_api="blas"):
        yield


def with_blas_threads(function):
    """A decorator: ``function(model, ...)`` runs inside :func:`blas_threads` ``(model)``."""
    @functools.wraps(function)
    def wrapper(model, *args, **kwargs):
        with blas_threads(model):
            return function(model, *args, **kwargs)
    return wrapper
