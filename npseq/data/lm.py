"""Language-model corpora: a text to one stream of token ids, a split, and d2l's two batch partitions.

The pipeline (d2l's ``load_data_time_machine``, read from a local file or string)::

    text --preprocess_lm--> normalised text --tokenize_lm--> tokens (chars or words)
         --Vocab--> ids (one int64 stream) --split_corpus--> train, valid
         --SeqDataLoader(partition="random" | "sequential")--> (X, Y) minibatches

The built-in default text (:func:`pydoc_text`) is the English prose of Python's
own documentation topics, ``pydoc_data.topics.topics``, which every CPython
ships: nothing is downloaded. Its content depends on the Python version (about
286 000 characters of prose on 3.11), and is the same on every machine with that
version.
"""
from __future__ import annotations

import codecs
import os
import pathlib
import re

from .. import backend
from .._checks import as_rng, check_count
from ..errors import InvalidTypeError, InvalidValueError
from .vocab import Vocab

__all__ = ["CHAR_ALPHABET", "LEVELS", "PARTITIONS", "SeqDataLoader", "load_corpus", "load_data_lm",
           "num_lm_batches", "preprocess_lm", "pydoc_text", "seq_data_iter_random", "seq_data_iter_sequential",
           "split_corpus", "tokenize_lm"]

LEVELS = ("char", "word")
PARTITIONS = ("random", "sequential")

CHAR_ALPHABET = "abcdefghijklmnopqrstuvwxyz .,;:!?'\"()-"
"""Every character that :func:`preprocess_lm` keeps: 26 lower-case letters, space and 11 punctuation marks."""

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_OUTSIDE_ALPHABET = re.compile("[^" + re.escape(CHAR_ALPHABET) + "]")
_SPACES = re.compile(r" +")
# A word keeps inner apostrophes ("don't", "object's"); every other kept mark is a token of its own.
_WORD_TOKENS = re.compile(r"[a-z]+(?:'[a-z]+)*|[^a-z ]")
# Paragraphs of the documentation that are not prose: heading underlines, tables, grammar, prompts.
_RULE_LINE = re.compile(r"([*=\-~^+|])\1*")


def _is_markup_line(line: str) -> bool:
    stripped = line.strip()
    return (bool(_RULE_LINE.fullmatch(stripped)) or stripped[:1] in "+|" or "::=" in stripped
            or stripped.startswith((">>>", "...")))


def _prose_of(topic: str) -> list:
    """The prose paragraphs of one documentation topic, each joined into one line."""
    kept, prose_indent, prose_ends_with_colon = [], 0, False
    for paragraph in re.split(r"\n[ \t]*\n", topic):
        lines = [line for line in paragraph.split("\n") if line.strip()]
        if not lines:
            continue
        indent = len(lines[0]) - len(lines[0].lstrip())
        # A paragraph indented under one that ends with ':' is a literal (code) block.
        literal = prose_ends_with_colon and indent > prose_indent
        body = " ".join(line.strip() for line in lines)
        if not literal:
            prose_indent, prose_ends_with_colon = indent, body.endswith(":")
        wordy = sum(c.isalpha() or c in " ,.'" for c in body) >= 0.9 * len(body)
        if literal or not wordy or any(_is_markup_line(line) for line in lines):
            continue
        kept.append(body)
    return kept


def pydoc_text() -> str:
    """The built-in corpus: the English prose of ``pydoc_data.topics.topics``, deterministic.

    The topics (a dict ``{name: text}`` in the standard library) are read in
    sorted-name order. Each topic is cut into paragraphs at blank lines, and a
    paragraph is kept when it is prose: not a literal block (indented under a
    paragraph that ends with ``:``), no line that is a heading underline, a table
    row (``+``, ``|``), a grammar rule (``::=``) or a prompt (``>>>``, ``...``), and
    at least 90 % of its characters letters, spaces, commas, full stops or
    apostrophes. The kept paragraphs are joined with single spaces, and every run of
    whitespace becomes one space. Case and punctuation are left to
    :func:`preprocess_lm`.
    """
    from pydoc_data.topics import topics  # the standard library's own text; imported on demand
    paragraphs = [p for name in sorted(topics) for p in _prose_of(topics[name])]
    return re.sub(r"\s+", " ", " ".join(paragraphs)).strip()


def preprocess_lm(text: str) -> str:
    """Normalise text for a language model (both levels).

    1. lower-case (``str.lower``);
    2. curly quotes become straight ones (U+2018, U+2019 to ``'``; U+201C, U+201D to ``"``);
    3. every character outside :data:`CHAR_ALPHABET` (``a-z``, space, and ``. , ; : ! ? ' " ( ) -``),
       digits, newlines and tabs included, becomes a space;
    4. runs of spaces become one space, and leading and trailing spaces are removed.

    >>> preprocess_lm("The  \u201cassert\u201d statement:\\n x_1 = 2!")
    'the "assert" statement: x !'
    """
    if not isinstance(text, str):
        raise InvalidTypeError(f"text: expected a str, got {type(text).__name__}")
    text = _OUTSIDE_ALPHABET.sub(" ", text.lower().translate(_QUOTES))
    return _SPACES.sub(" ", text).strip()


def tokenize_lm(text: str, level: str = "char") -> list:
    """Tokens of a (normalised) text, one flat list.

    * ``level="char"``: every character is a token, spaces included (``list(text)``).
    * ``level="word"``: d2l-like words: a word is a run of letters, with inner
      apostrophes kept (``"don't"``); each other non-space character (punctuation,
      or a quote outside a word) is a token of its own; spaces separate tokens and
      are not tokens.

    >>> tokenize_lm("it's a (tiny) test.", "word")
    ["it's", 'a', '(', 'tiny', ')', 'test', '.']
    >>> tokenize_lm("a b", "char")
    ['a', ' ', 'b']
    """
    if not isinstance(text, str):
        raise InvalidTypeError(f"text: expected a str, got {type(text).__name__}")
    if level not in LEVELS:
        raise InvalidValueError(f"level: expected one of {LEVELS}, got {level!r}")
    return list(text) if level == "char" else _WORD_TOKENS.findall(text)


# The first read of a file when only max_tokens are wanted; each further read doubles.
_FIRST_READ_BYTES = 1 << 16


def _read_tokens(path, level: str, max_tokens) -> list:
    """``tokenize_lm(preprocess_lm(file text), level)[:max_tokens]``, reading only as much of the file as needed.

    The file is read in growing pieces. :func:`preprocess_lm` maps characters one by one
    (only runs of spaces and the ends change), and no token spans a space, so the tokens
    before the last space of the text read so far are those of the whole file: once there
    are ``max_tokens`` of them, the rest of the file is never read.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"path: expected a str or os.PathLike, got {type(path).__name__}")
    path = pathlib.Path(path)
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    pieces, size = [], _FIRST_READ_BYTES
    try:
        with path.open("rb") as file:
            while True:
                raw = file.read(size)
                pieces.append(decoder.decode(raw, final=not raw))
                text = preprocess_lm("".join(pieces))
                if not raw:
                    return tokenize_lm(text, level)[:max_tokens]
                if max_tokens is not None:
                    final = tokenize_lm(text[:max(text.rfind(" "), 0)], level)
                    if len(final) >= max_tokens:
                        return final[:max_tokens]
                size *= 2
    except FileNotFoundError:
        raise FileNotFoundError(f"path: no text file at {str(path)!r} (npseq never downloads data)") from None
    except UnicodeDecodeError as exc:
        raise InvalidValueError(f"path: expected UTF-8 text in {str(path)!r}, got undecodable bytes ({exc})") from None


def load_corpus(path=None, text=None, level: str = "char", max_tokens=None, min_freq: int = 0):
    """A text as one stream of token ids and its vocabulary (d2l's ``load_corpus_time_machine``).

    The text is the file at ``path`` (UTF-8; with ``max_tokens``, only as much of it as
    those tokens need is read), or the string ``text``, or, when both are ``None``, the
    built-in :func:`pydoc_text`. Then

    .. math::
        \\text{tokens} = \\text{tokenize\\_lm}(\\text{preprocess\\_lm}(\\text{text}), \\text{level})[:M],
        \\qquad \\text{ids}_m = v(\\text{tokens}_m)

    with :math:`M` = ``max_tokens`` (``None``: all) and :math:`v` the
    ``Vocab(tokens, min_freq)`` built from the kept tokens: ``'<unk>'`` is id 0 (it
    has no count, except for word tokens below ``min_freq``, which map to it), then
    tokens by count descending, ties by code point.

    Args:
        path: str or ``os.PathLike`` of a UTF-8 text file, or ``None``.
        text: a str, or ``None``; not together with ``path``.
        level: ``"char"`` or ``"word"`` (see :func:`tokenize_lm`).
        max_tokens: a positive int or ``None``.
        min_freq: tokens seen fewer times map to ``'<unk>'`` (``0``: keep all).

    Returns:
        ``(ids, vocab)``: an int64 NumPy array ``(M,)`` and a :class:`Vocab`.

    >>> ids, vocab = load_corpus(text="Abba!", level="char")
    >>> vocab.idx_to_token, ids.tolist()
    (['<unk>', 'a', 'b', '!'], [1, 2, 2, 1, 3])
    """
    if path is not None and text is not None:
        raise InvalidValueError("path, text: expected at most one source of text, got both")
    if level not in LEVELS:
        raise InvalidValueError(f"level: expected one of {LEVELS}, got {level!r}")
    max_tokens = check_count("max_tokens", max_tokens, 1, allow_none=True)
    min_freq = check_count("min_freq", min_freq, 0)
    if path is not None:
        tokens = _read_tokens(path, level, max_tokens)
    elif text is None or isinstance(text, str):
        tokens = tokenize_lm(preprocess_lm(pydoc_text() if text is None else text), level)[:max_tokens]
    else:
        raise InvalidTypeError(f"text: expected a str, got {type(text).__name__}")
    if not tokens:
        raise InvalidValueError(f"text: expected at least one {level} token after normalisation, got none")
    vocab = Vocab(tokens, min_freq=min_freq)
    np = backend.numpy
    return np.asarray(vocab[tokens], dtype=np.int64), vocab


def _check_corpus(corpus):
    np = backend.numpy
    if not hasattr(corpus, "ndim") or not hasattr(corpus, "dtype"):
        raise InvalidTypeError(f"corpus: expected a 1-d integer array of token ids, got {type(corpus).__name__}")
    corpus = backend.to_numpy(corpus)
    if corpus.ndim != 1 or corpus.dtype.kind not in "iu":
        raise InvalidValueError(f"corpus: expected a 1-d integer array of token ids, got shape {corpus.shape}, "
                                f"dtype {corpus.dtype}")
    return corpus.astype(np.int64, copy=False)


def split_corpus(corpus, valid_fraction: float = 0.1):
    """A deterministic split by position: the first part trains, the last ``valid_fraction`` validates.

    With :math:`M` = ``len(corpus)`` and :math:`M_v = \\lfloor M \\cdot \\text{valid\\_fraction} \\rfloor`:
    ``train = corpus[:M - M_v]``, ``valid = corpus[M - M_v:]``. Contiguous text keeps
    the validation set free of any sentence seen in training (a random split of a
    stream would leak neighbouring characters).

    Returns ``(train, valid)``: two int64 NumPy arrays (views of ``corpus``).
    """
    corpus = _check_corpus(corpus)
    if isinstance(valid_fraction, bool) or not isinstance(valid_fraction, (int, float)) \
            or not 0.0 < valid_fraction < 1.0:
        raise InvalidValueError(f"valid_fraction: expected a number in (0, 1), got {valid_fraction!r}")
    num_valid = int(len(corpus) * valid_fraction)
    if num_valid < 2 or len(corpus) - num_valid < 2:
        raise InvalidValueError(f"corpus: expected enough tokens for two tokens on each side of a "
                                f"{valid_fraction} split, got {len(corpus)} tokens")
    return corpus[:len(corpus) - num_valid], corpus[len(corpus) - num_valid:]


def _layout(corpus, batch_size, num_steps):
    """Checked arguments and the number of batches, which does not depend on the random offset."""
    corpus = _check_corpus(corpus)
    batch_size = check_count("batch_size", batch_size, 1)
    num_steps = check_count("num_steps", num_steps, 1)
    needed = (batch_size + 1) * num_steps
    if len(corpus) < needed:
        raise InvalidValueError(f"corpus: expected at least (batch_size + 1) * num_steps = {needed} tokens for one "
                                f"batch, got {len(corpus)}")
    return corpus, batch_size, num_steps


def num_lm_batches(corpus_len: int, batch_size: int, num_steps: int) -> int:
    """Batches per epoch of both partitions: :math:`\\lfloor \\lfloor (M - T) / T \\rfloor / N \\rfloor`
    (random) and :math:`\\lfloor \\lfloor (M - T) / N \\rfloor / T \\rfloor` (sequential), which are equal."""
    return ((corpus_len - num_steps) // num_steps) // batch_size


def seq_data_iter_random(corpus, batch_size: int, num_steps: int, rng):
    """Random partitioning (d2l's ``seq_data_iter_random``): a generator of ``(X, Y)``.

    With :math:`M` = ``len(corpus)``, :math:`T` = ``num_steps``, :math:`N` = ``batch_size``:

    1. draw an offset :math:`o \\in \\{0, \\dots, T-1\\}` (``rng.integers(T)``);
    2. cut :math:`S = \\lfloor (M - T) / T \\rfloor` subsequences starting at
       :math:`o, o + T, \\dots, o + (S-1) T` (they never overlap, and each has a
       next token for its last target);
    3. shuffle their starts (``rng.permutation``) and yield batch :math:`b` from
       starts :math:`s_{bN}, \\dots, s_{bN + N - 1}`, :math:`b < \\lfloor S / N \\rfloor`:
       ``X[i] = corpus[s : s + T]``, ``Y[i] = corpus[s + 1 : s + T + 1]``.

    Consecutive batches hold unrelated subsequences, so a model must start every
    batch from a fresh state. The number of batches (:func:`num_lm_batches`) is the
    same for every offset. ``rng``: a ``numpy.random.Generator`` or an int seed.

    Yields:
        ``(X, Y)``: int64 NumPy arrays ``(N, T)``.
    """
    corpus, batch_size, num_steps = _layout(corpus, batch_size, num_steps)
    rng = as_rng(rng)
    offset = int(rng.integers(num_steps))
    num_subseqs = (len(corpus) - num_steps) // num_steps
    starts = offset + num_steps * rng.permutation(num_subseqs)
    steps = backend.numpy.arange(num_steps)
    for b in range(num_subseqs // batch_size):
        rows = starts[b * batch_size:(b + 1) * batch_size, None] + steps
        yield corpus[rows], corpus[rows + 1]


def seq_data_iter_sequential(corpus, batch_size: int, num_steps: int, rng):
    """Sequential partitioning (d2l's ``seq_data_iter_sequential``): a generator of ``(X, Y)``.

    With :math:`M`, :math:`T`, :math:`N` as in :func:`seq_data_iter_random`:

    1. draw an offset :math:`o \\in \\{0, \\dots, T-1\\}` (``rng.integers(T)``);
    2. lay :math:`N L` tokens from :math:`o` out as :math:`N` rows of
       :math:`L = \\lfloor (M - T) / N \\rfloor` consecutive tokens:
       ``Xs[i, j] = corpus[o + i L + j]``, ``Ys[i, j] = corpus[o + i L + j + 1]``;
    3. batch :math:`b < \\lfloor L / T \\rfloor` is columns :math:`bT \\dots bT + T - 1`.

    So row ``i`` of batch ``b + 1`` continues exactly where row ``i`` of batch ``b``
    ended (``X_{b+1}[i, 0]`` is the token after ``X_b[i, T-1]``, which is
    ``Y_b[i, T-1]``): a model may carry its state from batch to batch (truncated
    BPTT). ``rng``: a ``numpy.random.Generator`` or an int seed.

    Yields:
        ``(X, Y)``: int64 NumPy arrays ``(N, T)``.
    """
    corpus, batch_size, num_steps = _layout(corpus, batch_size, num_steps)
    rng = as_rng(rng)
    offset = int(rng.integers(num_steps))
    row_len = (len(corpus) - num_steps) // batch_size
    num_tokens = batch_size * row_len
    Xs = corpus[offset:offset + num_tokens].reshape(batch_size, row_len)
    Ys = corpus[offset + 1:offset + 1 + num_tokens].reshape(batch_size, row_len)
    for b in range(row_len // num_steps):
        yield Xs[:, b * num_steps:(b + 1) * num_steps], Ys[:, b * num_steps:(b + 1) * num_steps]


class SeqDataLoader:
    """Language-model minibatches over a token stream, re-iterable, one seeded epoch per ``iter``.

    Epoch ``k`` runs :func:`seq_data_iter_random` or :func:`seq_data_iter_sequential`
    (``partition``) with ``numpy.random.default_rng([seed, k])``, so the same seed
    replays the same epochs and :meth:`set_epoch` resumes at any of them. Each
    ``iter(loader)`` runs epoch ``loader.epoch`` and then advances it by one;
    :meth:`batches` runs any epoch without touching it. ``len(loader)`` is the
    number of batches of every epoch (:func:`num_lm_batches`).

    ``partition`` is read by :func:`npseq.train.train_lm`: ``"random"`` starts each
    batch from a zero state, ``"sequential"`` carries the state across batches.
    """

    def __init__(self, corpus, batch_size: int, num_steps: int, partition: str = "random", seed: int = 0):
        if partition not in PARTITIONS:
            raise InvalidValueError(f"partition: expected one of {PARTITIONS}, got {partition!r}")
        self.corpus, self.batch_size, self.num_steps = _layout(corpus, batch_size, num_steps)
        self.partition = partition
        self.seed = check_count("seed", seed, 0)
        self.epoch = 0

    def __len__(self) -> int:
        return num_lm_batches(len(self.corpus), self.batch_size, self.num_steps)

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter(loader)`` run epoch ``epoch``."""
        self.epoch = check_count("epoch", epoch, 0)

    def batches(self, epoch: int):
        """Generator over the ``(X, Y)`` batches of epoch ``epoch``."""
        epoch = check_count("epoch", epoch, 0)
        make = seq_data_iter_random if self.partition == "random" else seq_data_iter_sequential
        return make(self.corpus, self.batch_size, self.num_steps, backend.numpy.random.default_rng([self.seed, epoch]))

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        return self.batches(epoch)

    def __repr__(self) -> str:
        return (f"SeqDataLoader(num_tokens={len(self.corpus)}, batch_size={self.batch_size}, "
                f"num_steps={self.num_steps}, partition={self.partition!r}, seed={self.seed}, epoch={self.epoch})")


def load_data_lm(batch_size: int, num_steps: int, *, path=None, text=None, level: str = "char", max_tokens=None,
                 min_freq: int = 0, partition: str = "random", valid_fraction: float = 0.1, seed: int = 0):
    """Training batches, validation ids and vocabulary of a corpus (d2l's ``load_data_time_machine``, with a split).

    ``ids, vocab = load_corpus(path, text, level, max_tokens, min_freq)``;
    ``train, valid = split_corpus(ids, valid_fraction)``;
    ``loader = SeqDataLoader(train, batch_size, num_steps, partition, seed)``.
    The vocabulary is built from the whole corpus, so a validation token is never
    ``'<unk>'`` merely for being unseen in training.

    Returns:
        ``(loader, valid, vocab)``.
    """
    ids, vocab = load_corpus(path, text, level, max_tokens, min_freq)
    train, valid = split_corpus(ids, valid_fraction)
    return SeqDataLoader(train, batch_size, num_steps, partition, seed), valid, vocab
