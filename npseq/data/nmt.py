"""Machine-translation data: truncate/pad with valid lengths, the parallel-corpus loader, ``load_data_nmt``.

The pipeline is d2l's (``d2l.load_data_nmt``), read from a local file::

    fra.txt --load_parallel_corpus--> source, target (word lists)
            --Vocab(min_freq=2, ['<pad>', '<bos>', '<eos>'])--> src_vocab, tgt_vocab
            --build_array_nmt--> (N, T) ids + (N,) valid lengths, for each side
            --BatchIterator--> shuffled minibatches

The loaders read the corpus from the path they are given; they download nothing.
``npseq data fetch fra-eng`` (:mod:`npseq.data.datasets`) puts d2l's copy in a cache first.
"""
from __future__ import annotations

import os
import pathlib

from .. import backend
from .._checks import check_count
from ..errors import InvalidTypeError, InvalidValueError
from .batching import BatchIterator
from .text import preprocess_nmt, split_pairs
from .vocab import Vocab

__all__ = ["NMT_RESERVED_TOKENS", "truncate_pad", "build_array_nmt", "load_parallel_corpus", "load_data_nmt",
           "nmt_batches"]

NMT_RESERVED_TOKENS = ("<pad>", "<bos>", "<eos>")
"""The reserved tokens of a translation vocabulary, ids 1, 2, 3 (``'<unk>'`` is 0)."""


def truncate_pad(line, num_steps: int, padding_token):
    """``line`` cut or padded to exactly ``num_steps`` items (d2l's ``truncate_pad``).

    .. math:: \\text{out} = \\begin{cases} (l_1, \\dots, l_T) & |l| \\ge T \\\\
              (l_1, \\dots, l_{|l|}, p, \\dots, p) & |l| < T \\end{cases}

    with :math:`T` = ``num_steps`` and :math:`p` = ``padding_token``. Returns a new list;
    ``line`` (a list or tuple) is not changed.

    >>> truncate_pad([5, 6, 7], 5, 1)
    [5, 6, 7, 1, 1]
    >>> truncate_pad(["a", "b", "c"], 2, "<pad>")
    ['a', 'b']
    """
    if not isinstance(line, (list, tuple)):
        raise InvalidTypeError(f"line: expected a list of tokens or ids, got {type(line).__name__}")
    num_steps = check_count("num_steps", num_steps, 0)
    return list(line[:num_steps]) + [padding_token] * max(0, num_steps - len(line))


def build_array_nmt(lines, vocab: Vocab, num_steps: int):
    """Token lists to a padded id array and valid lengths (d2l's ``build_array_nmt``).

    For each line :math:`n` with words :math:`w_1 \\dots w_{L_n}`:

    .. math::
        X_n = \\text{truncate\\_pad}(\\,(v(w_1), \\dots, v(w_{L_n}), v(\\text{<eos>})),\\ T,\\ v(\\text{<pad>})\\,),
        \\qquad \\ell_n = \\min(L_n + 1,\\ T)

    where :math:`v` is ``vocab[...]`` (unknown words give ``vocab.unk``) and
    :math:`T` = ``num_steps``. ``<eos>`` is appended *before* truncation, so a line of
    :math:`T` or more words loses its ``<eos>``. :math:`\\ell_n` is the number of
    non-padding positions of :math:`X_n`, which is d2l's ``(X != pad).sum(1)``
    whenever no word of the line maps to the ``<pad>`` id (a literal ``'<pad>'`` in the
    text would make d2l's count short; positions are what masks use).

    Args:
        lines: ``N`` lists of str tokens.
        vocab: a :class:`Vocab` with ``'<pad>'`` and ``'<eos>'`` among its tokens.
        num_steps: :math:`T \\ge 1`.

    Returns:
        ``(array, valid_len)``: int64 NumPy arrays of shapes ``(N, T)`` and ``(N,)``.

    >>> vocab = Vocab([["a", "b"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    >>> array, valid_len = build_array_nmt([["a"], ["b", "a", "b"]], vocab, 3)
    >>> array.tolist(), valid_len.tolist()
    ([[4, 3, 1], [5, 4, 5]], [2, 3])
    """
    if not isinstance(vocab, Vocab):
        raise InvalidTypeError(f"vocab: expected a Vocab, got {type(vocab).__name__}")
    for token in ("<pad>", "<eos>"):
        if token not in vocab:
            raise InvalidValueError(f"vocab: expected a vocabulary with the reserved tokens '<pad>' and '<eos>', "
                                    f"got one without {token!r}")
    num_steps = check_count("num_steps", num_steps, 1)
    if not isinstance(lines, (list, tuple)):
        raise InvalidTypeError(f"lines: expected a list of token lists, got {type(lines).__name__}")
    for n, line in enumerate(lines):
        if not isinstance(line, (list, tuple)):
            raise InvalidTypeError(f"lines[{n}]: expected a list of tokens, got {type(line).__name__}")
    pad, eos = vocab["<pad>"], vocab["<eos>"]
    np = backend.numpy
    rows = [truncate_pad(vocab[list(line)] + [eos], num_steps, pad) for line in lines]
    array = np.array(rows, dtype=np.int64).reshape(len(rows), num_steps)
    valid_len = np.array([min(len(line) + 1, num_steps) for line in lines], dtype=np.int64)
    return array, valid_len


def load_parallel_corpus(path, num_examples=None):
    """Read a tab-separated parallel corpus and return its normalised, tokenised pairs.

    The file (UTF-8, with or without a byte-order mark; ``\\n`` or ``\\r\\n`` line
    ends) holds one pair per line, ``source<TAB>target`` or, as in the Anki/Tatoeba
    exports such as ``fra.txt``, ``source<TAB>target<TAB>attribution`` (the third
    column is ignored). Each side goes through :func:`~npseq.data.preprocess_nmt` and
    is split at spaces (empty strings dropped): the tokens of d2l's
    ``tokenize_nmt(preprocess_nmt(text))``, without the empty tokens that d2l
    produces for doubled or trailing spaces.

    * Blank lines are skipped silently.
    * Malformed lines (no tab, more than three columns, or a side that is empty
      after stripping whitespace) are skipped, and one ``UserWarning`` reports how
      many there were and the line number (1-based) of the first.
    * ``num_examples``: ``None`` for every pair, or a positive int: the first
      ``num_examples`` usable pairs (fewer if the file has fewer). The file is not
      checked beyond that point. (d2l's ``num_examples=600`` reads 601 lines.)

    Args:
        path: str or ``os.PathLike``, the file to read (never downloaded).
        num_examples: positive int or ``None``.

    Returns:
        ``(source, target)``: two lists of ``N`` lists of str, pair ``n`` being
        ``(source[n], target[n])``.

    Raises:
        FileNotFoundError: no file at ``path`` (the message names it).
        ValueError: the file is not UTF-8, or holds no usable pair (the message names it).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"path: expected a str or os.PathLike, got {type(path).__name__}")
    num_examples = check_count("num_examples", num_examples, 1, allow_none=True)
    path = pathlib.Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"path: no parallel corpus at {str(path)!r} (pass the path of a tab-separated "
                                f"file such as fra.txt; `npseq data fetch fra-eng` downloads d2l's)") from None
    try:
        text = raw.decode("utf-8-sig")  # utf-8-sig drops a leading byte-order mark, if any
    except UnicodeDecodeError as exc:
        raise InvalidValueError(f"path: expected UTF-8 text in {str(path)!r}, got undecodable bytes ({exc})") from None
    return split_pairs(text, num_examples, origin=str(path), normalise=preprocess_nmt)


def load_data_nmt(batch_size: int, num_steps: int, num_examples=600, path=None, seed: int = 0):
    """Minibatches and vocabularies of a translation corpus, as d2l's ``load_data_nmt``.

    1. ``source, target = load_parallel_corpus(path, num_examples)`` (``N`` pairs);
    2. ``src_vocab = Vocab(source, min_freq=2, reserved_tokens=['<pad>', '<bos>', '<eos>'])``
       and ``tgt_vocab`` likewise from ``target``;
    3. ``src_array, src_valid_len = build_array_nmt(source, src_vocab, num_steps)`` and
       ``tgt_array, tgt_valid_len`` likewise;
    4. ``BatchIterator((src_array, src_valid_len, tgt_array, tgt_valid_len), batch_size,
       shuffle=True, seed=seed)``.

    Each batch is ``(X, X_valid_len, Y, Y_valid_len)`` with shapes ``(B, T), (B,), (B, T), (B,)``
    (int64, ``T`` = ``num_steps``, ``B`` = ``batch_size`` except maybe in the last batch).

    ``path`` is required (nothing is downloaded here): it sits fourth, where d2l has none,
    and leaving it out raises ``ValueError``. ``num_examples`` counts usable pairs
    (see :func:`load_parallel_corpus`; ``None`` for all); on ``fra.txt``, d2l's
    ``num_examples=600`` equals ``num_examples=601`` here.

    Returns:
        ``(batches, src_vocab, tgt_vocab)``: a :class:`BatchIterator` and two :class:`Vocab`.
    """
    batch_size = check_count("batch_size", batch_size, 1)
    num_steps = check_count("num_steps", num_steps, 1)
    if path is None:
        raise InvalidValueError("path: expected the path of a tab-separated parallel corpus such as fra.txt "
                                "(`npseq data fetch fra-eng` downloads d2l's), got None")
    return nmt_batches(*load_parallel_corpus(path, num_examples), batch_size, num_steps, seed=seed)


def nmt_batches(source: list, target: list, batch_size: int, num_steps: int, *, seed: int = 0):
    """Steps 2 to 4 of :func:`load_data_nmt` on tokenised ``source`` and ``target`` sentences: the
    vocabularies (``min_freq=2``), the arrays and the shuffled :class:`BatchIterator`. Returns
    ``(batches, src_vocab, tgt_vocab)``."""
    src_vocab = Vocab(source, min_freq=2, reserved_tokens=NMT_RESERVED_TOKENS)
    tgt_vocab = Vocab(target, min_freq=2, reserved_tokens=NMT_RESERVED_TOKENS)
    arrays = (*build_array_nmt(source, src_vocab, num_steps), *build_array_nmt(target, tgt_vocab, num_steps))
    return BatchIterator(arrays, batch_size, shuffle=True, seed=seed), src_vocab, tgt_vocab
