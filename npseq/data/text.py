"""Text normalisation and word tokenisation for tab-separated parallel corpora (d2l's rules).

The two steps are those of the d2l book's machine-translation chapter:

* :func:`preprocess_nmt` turns the no-break spaces U+202F and U+00A0 into ordinary
  spaces, lower-cases, and puts a space before ``, . ! ?`` wherever the previous
  character is not already a space.
* :func:`tokenize_nmt` splits each ``source<TAB>target`` line into two lists of words
  at the spaces.

Tokenising sentence by sentence after the normalisation (what
:func:`npseq.data.load_parallel_corpus` does) gives the same tokens as normalising
the whole text first (what d2l does): the only difference, a space put before a
side that starts with punctuation, makes an empty token, and empty tokens are
dropped.
"""
from __future__ import annotations

import re
import warnings

from .._checks import check_count
from ..errors import InvalidTypeError, InvalidValueError

__all__ = ["preprocess_nmt", "tokenize_nmt"]

# A space goes before , . ! ? when a character precedes it and that character is not
# a space: the lookbehind reads the text before any insertion, as d2l's loop does.
_PUNCTUATION_AFTER_NON_SPACE = re.compile(r"(?<=[^ ])([,.!?])")


def preprocess_nmt(text: str) -> str:
    """Normalise text as d2l's ``preprocess_nmt`` does.

    1. U+202F (narrow no-break space) and U+00A0 (no-break space) become ``' '``;
    2. the text is lower-cased (``str.lower``);
    3. a space is inserted before every ``,``, ``.``, ``!`` and ``?`` at position
       ``i > 0`` whose preceding character ``text[i-1]`` (before any insertion) is
       not ``' '``.

    Nothing else changes: tabs, newlines, apostrophes and hyphens stay as they are.

    >>> preprocess_nmt("Go.")
    'go .'
    >>> preprocess_nmt("Au feu\\u202f!")
    'au feu !'
    >>> preprocess_nmt("Hi,Tom...")
    'hi ,tom . . .'
    >>> preprocess_nmt("!Hé")
    '!hé'
    """
    if not isinstance(text, str):
        raise InvalidTypeError(f"text: expected a str, got {type(text).__name__}")
    text = text.replace("\u202f", " ").replace("\xa0", " ").lower()
    return _PUNCTUATION_AFTER_NON_SPACE.sub(r" \1", text)


def _words(side: str) -> list:
    """The words of one sentence: split at ``' '``, empty strings dropped."""
    return [word for word in side.split(" ") if word]


def split_pairs(text: str, num_examples, origin: str, normalise=None):
    """Tokenised ``(source, target)`` lists from the lines of ``text``; see :func:`tokenize_nmt`.

    ``normalise`` (e.g. :func:`preprocess_nmt`) is applied to each side before it is
    split into words; ``origin`` names the text in warnings and errors (a path).
    """
    source, target = [], []
    malformed, first_bad = 0, None
    for lineno, line in enumerate(text.split("\n"), start=1):
        if num_examples is not None and len(source) == num_examples:
            break
        line = line.rstrip("\r")  # \r\n endings, and the \r\r\n some converters leave
        parts = line.split("\t")
        if len(parts) == 1 and not line.strip():
            continue  # blank lines separate nothing and carry no pair
        if len(parts) not in (2, 3) or not parts[0].strip() or not parts[1].strip():
            malformed += 1
            first_bad = first_bad or (lineno, line)
            continue
        src, tgt = parts[0], parts[1]  # a third column is Anki's attribution
        if normalise is not None:
            src, tgt = normalise(src), normalise(tgt)
        source.append(_words(src))
        target.append(_words(tgt))
    rule = ("lines must read 'source<TAB>target' or 'source<TAB>target<TAB>attribution' "
            "with both sides non-empty")
    if not source:
        detail = (f"; {malformed} malformed line{'s' if malformed != 1 else ''}, the first is line "
                  f"{first_bad[0]}: {first_bad[1]!r}" if malformed else "")
        raise InvalidValueError(f"{origin}: expected at least one sentence pair, found none ({rule}{detail})")
    if malformed:
        warnings.warn(f"{origin}: skipped {malformed} malformed line{'s' if malformed != 1 else ''} "
                      f"({rule}); the first is line {first_bad[0]}: {first_bad[1]!r}", stacklevel=3)
    return source, target


def tokenize_nmt(text: str, num_examples=None):
    """Split a (normalised) parallel text into source and target word lists.

    ``text`` holds one pair per line (lines end with ``\\n`` or ``\\r\\n``):
    ``source<TAB>target``, or ``source<TAB>target<TAB>attribution`` as in the Anki
    exports, whose third column is ignored. Each side is split at ``' '`` and
    empty strings are dropped, so ``source[n]`` and ``target[n]`` are the words of
    the n-th pair. Call :func:`preprocess_nmt` on ``text`` first to get d2l's
    tokens.

    * Blank lines (only whitespace, no tab) are skipped silently.
    * Malformed lines (no tab, more than three columns, or a side that is empty
      after stripping whitespace) are skipped; one ``UserWarning`` gives their
      number and the first one's line number (1-based) and content.
    * ``num_examples`` (a positive int or ``None`` for all): stop after that many
      usable pairs; lines after the stop are not read, nor counted as malformed.
      (d2l's loop, ``if num_examples and i > num_examples: break``, reads the first
      ``num_examples + 1`` lines.)
    * No usable pair at all raises ``ValueError``.

    Returns ``(source, target)``: two lists of ``N`` lists of words.

    >>> tokenize_nmt(preprocess_nmt("Go.\\tVa !\\nHi.\\tSalut !\\n"))
    ([['go', '.'], ['hi', '.']], [['va', '!'], ['salut', '!']])
    >>> tokenize_nmt("a b\\tc\\td\\n", num_examples=1)
    ([['a', 'b']], [['c']])
    """
    if not isinstance(text, str):
        raise InvalidTypeError(f"text: expected a str, got {type(text).__name__}")
    num_examples = check_count("num_examples", num_examples, 1, allow_none=True)
    return split_pairs(text, num_examples, origin="text")
