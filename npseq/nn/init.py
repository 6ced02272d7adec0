"""Explicit randomness and weight initialisation for modules.

Weights are drawn on the host from a ``numpy.random.Generator`` in float64 and
then cast and moved to the backend, so the same seed gives the same numbers on
NumPy and CuPy, in float32 and float64 alike.
"""
from __future__ import annotations

from .. import backend


def resolve_dtype(dtype=None):
    """``dtype`` as a NumPy dtype, defaulting to the backend's default (float32)."""
    return backend.default_dtype if dtype is None else backend.numpy.dtype(dtype)


def uniform(rng, shape, bound: float, dtype=None):
    """Array of ``shape`` with entries from :math:`U(-\\text{bound}, \\text{bound})`."""
    return backend.asarray(rng.uniform(-bound, bound, size=shape), dtype=resolve_dtype(dtype))


def normal(rng, shape, std: float = 1.0, dtype=None):
    """Array of ``shape`` with entries from :math:`\\mathcal{N}(0, \\text{std}^2)`."""
    return backend.asarray(std * rng.standard_normal(size=shape), dtype=resolve_dtype(dtype))
