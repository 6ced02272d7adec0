"""Whether modules record caches for a later ``backward``.

``with npseq.no_grad():`` turns recording off for inference (greedy and beam
search, evaluation), so no cache is kept and memory stays flat. The flag is
thread-local, so one thread's inference never silences another's training.
"""
from __future__ import annotations

import contextlib
import threading

_state = threading.local()


def is_grad_enabled() -> bool:
    """True unless inside ``no_grad()``."""
    return getattr(_state, "enabled", True)


@contextlib.contextmanager
def no_grad():
    """Context in which modules run forward only and store nothing for backward."""
    previous = is_grad_enabled()
    _state.enabled = False
    try:
        yield
    finally:
        _state.enabled = previous
