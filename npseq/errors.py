"""The errors a user can fix, as one family.

Every exception that means "the input, a file or a request was wrong" (a bad flag
value, a checkpoint that does not fit, a request beyond an explicit limit, a run
that diverged, a disk that is full) derives from :class:`UserError`. The ``npseq``
command reports any of them in one line with exit code 2; library callers can
catch the whole family with one ``except UserError``.

This module imports nothing from npseq, so every layer may raise these errors.
"""
from __future__ import annotations

__all__ = ["InvalidIndexError", "InvalidTypeError", "InvalidValueError", "LimitError", "TrainingDiverged", "UserError"]


class UserError(Exception):
    """A mistake the user can fix; the message names the argument, what was expected and what was given."""


class InvalidValueError(UserError, ValueError):
    """An argument at a public boundary has a value outside what it accepts (a count below 1, a
    probability outside [0, 1), an empty sentence). A ``ValueError`` too, for callers that catch that."""


class InvalidTypeError(UserError, TypeError):
    """An argument at a public boundary has the wrong type (a float where an int count is expected)."""


class InvalidIndexError(UserError, IndexError):
    """Token ids or lengths outside their range (an id beyond the vocabulary, a length beyond the steps)."""


class LimitError(UserError, ValueError):
    """A request beyond one of npseq's explicit caps (beam size, decode length, layers, sizes, file sizes).

    The caps keep a small command or a small file from asking for unbounded memory or time;
    the message names the cap.
    """


class TrainingDiverged(UserError, FloatingPointError):
    """Training produced NaN or inf (a learning rate too high, an overflowing loss).

    Raised before the non-finite values reach a checkpoint, so the last saved one stays usable.
    """
