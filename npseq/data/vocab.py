"""``Vocab``: a deterministic token <-> id mapping with ``<unk>`` at id 0."""
from __future__ import annotations

import collections

from .. import backend
from .._checks import check_count
from ..errors import InvalidIndexError, InvalidTypeError, InvalidValueError

__all__ = ["Vocab", "UNK"]

UNK = "<unk>"
"""The unknown token; always id 0."""


def _flatten(tokens) -> list:
    """``tokens`` (a list of str, or a list of lists of str) as one flat list of str."""
    if tokens is None:
        return []
    if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)):
        raise InvalidTypeError(f"tokens: expected a list of tokens or a list of token lists, "
                               f"got {type(tokens).__name__}")
    nested = [isinstance(item, (list, tuple)) for item in tokens]
    if any(nested) and not all(nested):
        raise InvalidTypeError("tokens: expected either tokens or token lists, got a mixture of both")
    flat = [token for line in tokens for token in line] if all(nested) else list(tokens)
    for token in flat:
        if not isinstance(token, str):
            raise InvalidTypeError(f"tokens: expected str tokens, got {type(token).__name__} {token!r}")
    return flat


class Vocab:
    """A vocabulary: tokens (str) to ids ``0 .. V-1`` and back, the same on every machine.

    Ids are given in this order:

    1. ``'<unk>'`` is id 0 (``vocab.unk``); unknown tokens map to it;
    2. ``reserved_tokens`` follow in the given order (for translation
       ``['<pad>', '<bos>', '<eos>']``, ids 1, 2, 3);
    3. then every other token whose count :math:`c` in ``tokens`` has
       :math:`c \\ge` ``min_freq``, by count descending, ties by the token itself
       (code-point order). The same corpus therefore gives the same ids whatever the
       order of its lines (d2l keeps ties in first-seen order).

    ``tokens`` is a list of str or a list of lists of str (one per sentence).
    ``token_freqs`` lists every distinct token of ``tokens`` with its count, in the
    same order as step 3 (including tokens below ``min_freq``, and reserved tokens
    that occur in the text). ``vocab[token]`` is an id, ``vocab[list]`` a list of
    ids (nested lists are mapped recursively), ``vocab.to_tokens(ids)`` the inverse.

    >>> vocab = Vocab([["b", "a", "c"], ["a", "b", "d"]], min_freq=2, reserved_tokens=["<pad>"])
    >>> vocab.idx_to_token
    ['<unk>', '<pad>', 'a', 'b']
    >>> vocab["a"], vocab[["b", "zebra"]], len(vocab)
    (2, [3, 0], 4)
    >>> vocab.to_tokens([3, 2, 1])
    ['b', 'a', '<pad>']
    >>> vocab.token_freqs
    [('a', 2), ('b', 2), ('c', 1), ('d', 1)]
    """

    def __init__(self, tokens=None, min_freq: int = 0, reserved_tokens=None):
        counts = collections.Counter(_flatten(tokens))
        self._build(sorted(counts.items(), key=lambda item: (-item[1], item[0])),
                    check_count("min_freq", min_freq, 0), reserved_tokens)

    def _build(self, token_freqs: list, min_freq: int, reserved_tokens) -> None:
        if reserved_tokens is None:
            reserved_tokens = []
        if isinstance(reserved_tokens, str) or not isinstance(reserved_tokens, (list, tuple)):
            raise InvalidTypeError(f"reserved_tokens: expected a list of str, got {type(reserved_tokens).__name__}")
        reserved = list(reserved_tokens)
        for token in reserved:
            if not isinstance(token, str):
                raise InvalidTypeError(f"reserved_tokens: expected str tokens, got {type(token).__name__} {token!r}")
        if UNK in reserved or len(set(reserved)) != len(reserved):
            raise InvalidValueError(f"reserved_tokens: expected distinct tokens other than {UNK!r} "
                                    f"(which is always id 0), got {reserved}")
        self.min_freq = min_freq
        self.reserved_tokens = reserved
        self.token_freqs = [(token, int(freq)) for token, freq in token_freqs]
        self.idx_to_token = [UNK, *reserved]
        known = set(self.idx_to_token)
        self.idx_to_token += [token for token, freq in self.token_freqs
                              if freq >= min_freq and token not in known]
        self.token_to_idx = {token: idx for idx, token in enumerate(self.idx_to_token)}

    @property
    def unk(self) -> int:
        """The id of ``'<unk>'``: 0."""
        return 0

    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __contains__(self, token) -> bool:
        return token in self.token_to_idx

    def __getitem__(self, tokens):
        """Id of a token (``vocab.unk`` if unknown), or the list of ids of a list of tokens."""
        if isinstance(tokens, str):
            return self.token_to_idx.get(tokens, self.unk)
        if isinstance(tokens, (list, tuple)):
            return [self[token] for token in tokens]
        raise InvalidTypeError(f"tokens: expected a token (str) or a list of tokens, got {type(tokens).__name__}")

    def to_tokens(self, indices):
        """Token of an id, or the (nested) list of tokens of a list, tuple or array of ids.

        ``indices``: an int, a list/tuple of ints, or an integer array of any shape
        (NumPy or CuPy; a 0-d array gives one token, a 1-d array a list). Every id
        must lie in ``[0, len(vocab) - 1]``.
        """
        if hasattr(indices, "ndim") and hasattr(indices, "dtype"):
            host = backend.to_numpy(indices)
            if host.dtype.kind not in "iu":
                raise InvalidTypeError(f"indices: expected integer ids, got dtype {host.dtype}")
            return self.to_tokens(host.tolist())
        if isinstance(indices, (list, tuple)):
            return [self.to_tokens(index) for index in indices]
        if isinstance(indices, bool) or not isinstance(indices, (int, backend.numpy.integer)):
            raise InvalidTypeError(f"indices: expected an int id or a list/array of ids, got {type(indices).__name__}")
        if not 0 <= indices < len(self):
            raise InvalidIndexError(f"indices: expected ids in [0, {len(self) - 1}], got {indices}")
        return self.idx_to_token[indices]

    def to_dict(self) -> dict:
        """A JSON-ready description: ``min_freq``, ``reserved_tokens``, ``token_freqs``, ``idx_to_token``.

        ``Vocab.from_dict(vocab.to_dict()) == vocab``; ``idx_to_token`` is stored so a
        reader of the file sees the ids, and :meth:`from_dict` checks it.
        """
        return {
            "min_freq": self.min_freq,
            "reserved_tokens": list(self.reserved_tokens),
            "token_freqs": [[token, freq] for token, freq in self.token_freqs],
            "idx_to_token": list(self.idx_to_token),
        }

    @classmethod
    def from_dict(cls, state: dict) -> "Vocab":
        """The vocabulary that :meth:`to_dict` described; ``ValueError`` if ``state`` is inconsistent."""
        if not isinstance(state, dict):
            raise InvalidTypeError(f"state: expected a dict from Vocab.to_dict(), got {type(state).__name__}")
        missing = [key for key in ("min_freq", "reserved_tokens", "token_freqs") if key not in state]
        if missing:
            raise InvalidValueError(f"state: expected the keys of Vocab.to_dict(), missing {missing}")
        token_freqs = []
        for entry in state["token_freqs"]:
            if (not isinstance(entry, (list, tuple)) or len(entry) != 2 or not isinstance(entry[0], str)
                    or isinstance(entry[1], bool) or not isinstance(entry[1], int) or entry[1] < 1):
                raise InvalidValueError(f"state['token_freqs']: expected [token, count >= 1] pairs, got {entry!r}")
            token_freqs.append((entry[0], entry[1]))
        tokens = [token for token, _ in token_freqs]
        if len(set(tokens)) != len(tokens):
            raise InvalidValueError("state['token_freqs']: expected distinct tokens, got repeats")
        vocab = cls.__new__(cls)
        vocab._build(sorted(token_freqs, key=lambda item: (-item[1], item[0])),
                     check_count("state['min_freq']", state["min_freq"], 0), state["reserved_tokens"])
        stored = state.get("idx_to_token")
        if stored is not None and list(stored) != vocab.idx_to_token:
            raise InvalidValueError("state['idx_to_token']: expected the ids that token_freqs, min_freq and "
                                    f"reserved_tokens give ({len(vocab)} tokens), got a different list "
                                    f"({len(stored)} tokens)")
        return vocab

    def __eq__(self, other) -> bool:
        if not isinstance(other, Vocab):
            return NotImplemented
        return (self.idx_to_token == other.idx_to_token and self.token_freqs == other.token_freqs
                and self.min_freq == other.min_freq and self.reserved_tokens == other.reserved_tokens)

    __hash__ = None  # mutable lists inside; equality is by content

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, min_freq={self.min_freq}, reserved_tokens={self.reserved_tokens})"
