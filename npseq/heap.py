"""Keep the memory one training step frees for the next step, instead of faulting it back in.

A training step allocates its caches (megabytes: the states, gates and attention weights of every
step) and frees them when its backward ends. glibc's ``malloc`` gives that memory back to the kernel: an array above
its mapping threshold (128 KiB until the threshold adapts) gets a mapping of its own, unmapped on
``free``, and free space at the top of the heap above its trim threshold is returned with ``brk``.
The next step's arrays then land on fresh pages, and the kernel zeroes each 4 KiB page when it is
first written: a minor page fault. For d2l's translator at hidden 256 that was 2,000 to 5,000 faults
a step, and the step took 1.10 to 1.19 times as long as with the memory kept (``python
benchmarks/regression.py`` prints both, each version in a process of its own).

:func:`keep_freed_memory` sets two of glibc's ``mallopt`` parameters once per process, so that
what a step frees stays mapped and the next step reuses it:

* ``M_MMAP_THRESHOLD`` = 32 MiB (the ceiling glibc's own adaptive threshold stops at): arrays up to
  that size come from the heap, larger ones still get their own mapping;
* ``M_TRIM_THRESHOLD`` = 1 GiB: up to that much free memory at the top of the heap is kept.

The process's resident size then stays at its peak instead of falling between steps; the peak
itself does not change. Training calls it (:func:`npseq.train.train_seq2seq_step` and
:func:`npseq.train.train_lm_step`), and so may any loop of one's own. Elsewhere than on glibc
(macOS, Windows, musl) it does nothing.
"""
from __future__ import annotations

import ctypes
import platform

MMAP_THRESHOLD_BYTES = 32 << 20
"""Arrays up to this size are served from the heap (glibc's ``M_MMAP_THRESHOLD``)."""

TRIM_THRESHOLD_BYTES = 1 << 30
"""Free memory up to this size at the heap's top is kept (glibc's ``M_TRIM_THRESHOLD``)."""

_M_TRIM_THRESHOLD = -1  # the parameter numbers of glibc's <malloc.h>
_M_MMAP_THRESHOLD = -3

_kept = None  # None until the first call; then whether glibc took both settings


def keep_freed_memory() -> bool:
    """Ask glibc's ``malloc`` to keep freed memory mapped (see the module's text); once per process.

    Returns:
        whether the settings are in effect: True on glibc, False where there is no glibc
        ``mallopt`` (the call then changes nothing).
    """
    global _kept
    if _kept is None:
        _kept = _set_glibc_thresholds()
    return _kept


def _set_glibc_thresholds() -> bool:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    mapped = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    trimmed = mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    return bool(mapped and trimmed)
