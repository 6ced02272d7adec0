"""Process isolation: run a piece of work in a child process with a time limit and a memory limit.

Whatever the work does to its process (an endless loop, a segfault, ``os._exit``, a
50 GB allocation) ends that process only: :func:`run_isolated` returns either the
work's answer or one line saying how the child failed (:class:`Failed`). Nothing here
knows about exercises: the grader hands in the work.
"""
from __future__ import annotations

import faulthandler
import multiprocessing
import os
import signal
from typing import Callable


class Failed(str):
    """The reason a child gave no answer: one line starting with "time limit", "crashed" or "exited"."""


def limit_memory(megabytes) -> None:
    """Cap the address space at what the process holds now plus ``megabytes`` (where ``resource`` exists)."""
    try:
        import resource
    except ImportError:  # Windows: no limit
        return
    if not megabytes or not hasattr(resource, "RLIMIT_AS"):
        return
    try:
        with open("/proc/self/statm") as handle:
            in_use = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        in_use = 0
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = in_use + int(megabytes) * 2 ** 20
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _child(connection, work: Callable, args: tuple, quiet: bool, memory_mb) -> None:
    """In the child process: limit it, run the work, send its answer."""
    if quiet:  # the learner's prints must not end up inside a machine-readable report on stdout
        os.dup2(2, 1)
    faulthandler.disable()  # a crash is reported in one line, not with the grader's own stack dump
    limit_memory(memory_mb)
    connection.send(work(*args))
    connection.close()


def _context():
    # fork starts a child in milliseconds with npseq already imported; spawn where there is no fork
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


def run_isolated(work: Callable, args: tuple, *, what: str, timeout: float, memory_mb, quiet: bool):
    """Run ``work(*args)`` in a child process; return what it returns, or a :class:`Failed` reason.

    Args:
        work: a module-level function (picklable where processes are spawned) that catches
            what its own code raises and returns a picklable answer.
        what: names the work in a failure ("rnn_step_backward", "importing the file").
        timeout: seconds the child may run.
        memory_mb: megabytes the child may add to its address space; ``None`` or 0 for no limit.
        quiet: send the child's standard output to standard error.
    """
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, work, args, quiet, memory_mb), daemon=True)
    process.start()
    sender.close()
    try:
        if receiver.poll(timeout):
            try:
                return receiver.recv()
            except (EOFError, OSError):  # the child ended without answering
                pass
        else:
            return Failed(f"time limit: {what} did not finish within {timeout:g} s (an endless loop?)")
        process.join(timeout=10)
        code = process.exitcode
        if code is not None and code < 0:
            try:
                signame = signal.Signals(-code).name
            except ValueError:
                signame = f"signal {-code}"
            return Failed(f"crashed: the process running {what} died of {signame}")
        return Failed(f"exited: the process running {what} ended with exit code {code} (os._exit?) "
                      f"before answering")
    finally:
        receiver.close()
        if process.is_alive():
            process.kill()
        process.join()
