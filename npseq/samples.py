"""Seeded sample inputs: what npseq's gradient checks, its course's grader and its tests build their cases from.

One home for the pieces every check of a backward needs before it starts:

- :func:`normal` and :func:`ids`, random arrays drawn from a ``numpy.random.Generator`` the caller
  seeds, one draw per call, in the order of the calls (so a case's numbers depend only on its seed
  and on the order it asks for its arrays);
- :func:`lengths` and :func:`edge_lengths`, valid lengths of padded sequences, the second with the
  edge cases a padded batch must survive: a full row, one valid step, all padding;
- :func:`valid_mask`, the mask :math:`m_{\\ldots t} = [t < \\ell_{\\ldots}]` of given lengths, written
  apart from the layers' own masks so that tests hold those to it;
- :func:`with_dweights`, the backward of an attention forward, which returns ``(out, weights,
  cache)``, called with one upstream gradient per output, as
  :func:`~npseq.gradcheck.check_function` calls it.

Arrays are drawn on the host and placed on the current backend (NumPy unless ``NPSEQ_BACKEND`` or
:func:`~npseq.backend.set_backend` says otherwise), in float64 unless a dtype is asked for, as
gradient checks need.
"""
from __future__ import annotations

from . import backend

__all__ = ["normal", "ids", "lengths", "edge_lengths", "valid_mask", "with_dweights"]


def normal(rng, *shape, scale: float = 1.0, dtype=None):
    """``scale`` times standard normal draws: an array of ``shape`` (float64, or ``dtype``) from ``rng``."""
    return backend.asarray(scale * rng.standard_normal(shape), dtype=dtype)


def ids(rng, high: int, *shape):
    """Integers drawn uniformly from ``[0, high)``: token ids or labels of ``shape``."""
    return backend.asarray(rng.integers(0, high, size=shape))


def lengths(values):
    """``values`` (a list, or a list of lists for per-query lengths) as an int64 array of lengths."""
    return backend.asarray(backend.numpy.array(values, dtype=backend.numpy.int64))


def edge_lengths(steps: int):
    """The lengths of a batch of three rows over ``steps`` steps: a full row, one valid step and all padding,
    ``[steps, 1, 0]``."""
    return lengths([steps, 1, 0])


def valid_mask(valid_lens, steps: int):
    """The boolean mask ``valid_lens.shape + (steps,)`` of the lengths ``valid_lens``,
    ``mask[..., t] = t < valid_lens[...]``.

    ``(N,)`` lengths give ``(N, T)``, per-query ``(N, Q)`` lengths give ``(N, Q, K)``; ``~mask`` is the padding.
    """
    return backend.get_array_module(valid_lens).arange(steps) < valid_lens[..., None]


def with_dweights(backward, keep: int | None = None):
    """``backward(dout, cache, dweights)`` called as ``(dout, dweights, cache)``: one upstream gradient per output of
    a forward that returns ``(out, weights, cache)``, then the cache, as finite-difference checks call a backward.

    ``keep``: return only the first ``keep`` gradients (those of the inputs being checked).
    """
    def called(dout, dweights, cache):
        grads = backward(dout, cache, dweights)
        return grads if keep is None else grads[:keep]
    return called
