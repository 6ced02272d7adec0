"""The language a learner is spoken to in: English, or Chinese (中文) through gettext catalogs.

It sits at the bottom of the package (the standard library alone), so that a text written below the course,
such as :func:`npseq.gradcheck.step_report`'s, is translated where it is written, not copied into the course.

Every text of the course a learner reads (the hand-out's prose, the grader's report) is
written in English in the code, wrapped in :func:`_`, and looked up in a catalog at the
moment it is shown::

    _("{tensor}: {correct}/{total} tensors correct").format(tensor=..., correct=..., total=...)

The English text is the key (gettext's msgid); the placeholders are named, so that a
translation may put them in its own order. A catalog per part of the course
(:data:`CATALOGS`) lives in ``npseq/locale/zh_CN/LC_MESSAGES/<catalog>.po``,
compiled beside it into the ``.mo`` that :mod:`gettext` reads (``python tools/catalogs.py``
writes both; ``tests/test_catalogs.py`` fails on a text without a translation, a fuzzy one, or
a ``.mo`` older than its ``.po``). Machine-readable output (the JSON report's keys, the
command line's errors) stays English.

The language is chosen once, where a command starts (:func:`language_of`: ``--lang``, else
the locale), and holds for what runs inside :func:`speaking`, including code called from
there that never heard of it.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import gettext
import os
import pathlib
import unicodedata

LANGUAGES = ("en", "zh")
"""The languages of the course: English (the code's own) and Chinese (Simplified)."""

LOCALES = {"zh": "zh_CN"}
"""The folder of each translated language's catalogs, under :data:`LOCALE_FOLDER`."""

CATALOGS = ("report", "handout")
"""The catalogs of each language: the grader's report, and the hand-out (its README, skeleton and notebook)."""

LOCALE_FOLDER = pathlib.Path(__file__).resolve().parent / "locale"

_LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")  # POSIX's order: the first one set decides
_current = contextvars.ContextVar("npseq_language", default="en")


def language_of(choice: str | None = None, environ=None) -> str:
    """The language to speak: ``choice`` (a ``--lang`` option) when given, else ``"zh"`` for a Chinese locale
    (``zh_CN.UTF-8`` in the first of ``LC_ALL``, ``LC_MESSAGES``, ``LANG`` that is set), else ``"en"``."""
    if choice is not None:
        if choice not in LANGUAGES:
            raise ValueError(f"lang: expected one of {', '.join(LANGUAGES)}, got {choice!r}")
        return choice
    environ = os.environ if environ is None else environ
    setting = next((environ[name] for name in _LOCALE_VARIABLES if environ.get(name)), "")
    return "zh" if setting.lower().startswith("zh") else "en"


@contextlib.contextmanager
def speaking(language: str):
    """Within the block, :func:`_` translates into ``language``."""
    token = _current.set(language_of(language))
    try:
        yield
    finally:
        _current.reset(token)


def current() -> str:
    """The language :func:`_` translates into here."""
    return _current.get()


@functools.cache
def _translations(language: str) -> gettext.NullTranslations:
    """The catalogs of ``language`` chained in :data:`CATALOGS`' order; English has none (its texts are the keys)."""
    chain = gettext.NullTranslations()
    if language == "en":
        return chain
    for catalog in reversed(CATALOGS):
        found = gettext.translation(catalog, LOCALE_FOLDER, languages=[LOCALES[language]])
        found.add_fallback(chain)
        chain = found
    return chain


def N_(text: str) -> str:
    """``text`` itself: marks a text kept as data (a name of a path, say) for the catalogs; where it is shown,
    :func:`_` translates it."""
    return text


def _(text: str) -> str:
    """``text`` in the current language (:func:`speaking`): itself in English, its catalog entry otherwise (the
    English itself where a catalog has no entry, which ``tests/test_catalogs.py`` does not let ship)."""
    return _translations(_current.get()).gettext(text)


def columns(text: str) -> int:
    """The columns ``text`` takes in a terminal: two for a wide character (Chinese), one for any other; what lines up
    a table or a rule whose text may be translated."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)
