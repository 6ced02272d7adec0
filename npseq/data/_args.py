"""Checks for the integer arguments of the data loaders (sizes, counts, seeds)."""
from __future__ import annotations

from .. import backend
from ..errors import InvalidTypeError, InvalidValueError


def check_int(name: str, value, minimum: int, allow_none: bool = False):
    """``value`` as a Python int ``>= minimum`` (or ``None`` where allowed); else an error naming ``name``."""
    if value is None and allow_none:
        return None
    what = "a positive int" if minimum == 1 else f"an int >= {minimum}"
    if allow_none:
        what += " or None"
    # bool is an int subclass, but True as a batch size is a bug, not a request for 1
    if isinstance(value, bool) or not isinstance(value, (int, backend.numpy.integer)):
        raise InvalidTypeError(f"{name}: expected {what}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise InvalidValueError(f"{name}: expected {what}, got {value}")
    return int(value)
