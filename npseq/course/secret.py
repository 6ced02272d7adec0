"""The course secret: what makes a student's numbers the instructor's to know.

A student's seed was derived from the e-mail address alone, so anyone who knew a classmate's
address made that classmate's hand-out, and with it the visible cases' numbers
(``npseq exercises --out x --student classmate@uni.example``). The seed is now derived from the
address and this secret (:func:`~npseq.course.cases.student_seed`): 32 random bytes that
``npseq exercises`` creates once, on the instructor's machine, in a file readable by its owner
only, like the key; the Gradescope bundle carries it in its configuration (which students never
see), and ``npseq grade --student`` reads it. Without it the numbers differ.

Where it is kept: ``$NPSEQ_COURSE_SECRET`` (a file path) when set, else
``$XDG_CONFIG_HOME/npseq/course-secret`` (``~/.config/npseq/course-secret``).
"""
from __future__ import annotations

import os
import re
import secrets

from ..errors import UserError
from .files import write_atomically

SECRET_VARIABLE = "NPSEQ_COURSE_SECRET"
"""The environment variable that names the secret's file (another course, another secret)."""

_SECRET_TEXT = re.compile(r"[0-9a-f]{64}")


class CourseSecretError(UserError):
    """The course secret is missing or is not one (one line, with where it was looked for and what to do)."""


def secret_path() -> str:
    """The file of the course secret (see the module docstring)."""
    given = os.environ.get(SECRET_VARIABLE, "").strip()
    if given:
        return os.path.expanduser(given)
    config = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.expanduser("~/.config")
    return os.path.join(config, "npseq", "course-secret")


def is_secret(text) -> bool:
    """Whether ``text`` is a course secret as :func:`course_secret` writes it: 64 lowercase hex digits."""
    return isinstance(text, str) and _SECRET_TEXT.fullmatch(text) is not None


def course_secret(create: bool = False) -> str:
    """The course secret, 64 hex digits, read from :func:`secret_path`; with ``create``, made there first when there
    is none (readable by its owner only).

    Raises:
        CourseSecretError: there is none and ``create`` is false, or the file does not hold one.
    """
    path = secret_path()
    try:
        with open(path, encoding="ascii") as handle:
            text = handle.read().strip()
    except FileNotFoundError:
        if not create:
            raise CourseSecretError(
                f"no course secret at {path}: a student's numbers come from their address and the secret of the "
                f"machine that made their hand-out; copy its file here (or name it with {SECRET_VARIABLE}), or "
                "grade with --seed") from None
        text = secrets.token_hex(32)
        write_atomically(path, text + "\n", private=True)
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseSecretError(f"cannot read the course secret at {path}: {exc}") from None
    if not is_secret(text):
        raise CourseSecretError(f"{path}: expected a course secret (64 hex digits, as npseq exercises writes it), "
                                "got something else; remove the file to make a new one (the students' numbers change)")
    return text
