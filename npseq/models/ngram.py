"""``NGramLM``: a counting n-gram language model with add-k smoothing, the baseline an RNN LM must beat.

Counting happens on the host (token streams are host data); nothing here is trained
by gradient descent.
"""
from __future__ import annotations

import math

from .. import backend
from ..errors import InvalidIndexError, InvalidValueError
from ..metrics import perplexity as _perplexity

__all__ = ["NGramLM"]


def _ids(name: str, ids, vocab_size: int):
    np = backend.numpy
    if not hasattr(ids, "ndim") or not hasattr(ids, "dtype"):
        ids = np.asarray(ids)
    ids = backend.to_numpy(ids)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        raise InvalidValueError(f"{name}: expected a 1-d sequence of integer token ids, got shape {ids.shape}, "
                                f"dtype {ids.dtype}")
    ids = ids.astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
        raise InvalidIndexError(f"{name}: expected token ids in [0, {vocab_size - 1}], got {bad}")
    return ids


def _lookup(keys, counts, queries):
    """``counts[i]`` where ``keys[i] == query`` (``keys`` sorted), 0 where the query is absent."""
    np = backend.numpy
    if len(keys) == 0:
        return np.zeros(queries.shape, dtype=counts.dtype)
    index = np.minimum(np.searchsorted(keys, queries), len(keys) - 1)
    return np.where(keys[index] == queries, counts[index], 0)


class NGramLM:
    """An n-gram language model with add-k (Lidstone) smoothing.

    The context of token :math:`x_t` is the :math:`m = \\min(n - 1, t)` tokens before
    it (``n`` = ``order``; the first tokens of a stream fall back to shorter
    contexts), and

    .. math::
        P(w \\mid \\text{ctx}) = \\frac{c(\\text{ctx}, w) + k}{c(\\text{ctx}) + k\\,|V|},
        \\qquad c(\\text{ctx}) = \\textstyle\\sum_{w'} c(\\text{ctx}, w')

    where :math:`c(\\text{ctx}, w)` counts the occurrences of the :math:`(m+1)`-gram
    :math:`(\\text{ctx}, w)` in the training stream and :math:`|V|` = ``vocab_size``. So
    :math:`\\sum_w P(w \\mid \\text{ctx}) = 1` for every context, seen or not (an unseen
    context gives the uniform :math:`1/|V|`). The unigram model (``order=1``, empty
    context) is :math:`P(w) = (c(w) + k) / (M + k|V|)` with :math:`M` the number of
    training tokens.

    ``fit(ids)`` counts the n-grams of orders 1 to ``order`` in a stream;
    ``perplexity(ids)`` is :math:`\\exp(-\\frac{1}{M-1}\\sum_{t=1}^{M-1} \\log P(x_t \\mid \\text{ctx}_t))`,
    every token but the first, like an RNN LM that reads the stream from its start.

    Args:
        order: ``n >= 1`` (1 unigram, 2 bigram, 3 trigram, ...).
        k: the pseudo-count added to every n-gram, > 0.
        vocab_size: :math:`|V|`; ids lie in ``[0, |V|)``.
    """

    def __init__(self, order: int, k: float, vocab_size: int):
        for name, value in (("order", order), ("vocab_size", vocab_size)):
            if isinstance(value, bool) or not isinstance(value, (int, backend.numpy.integer)) or value < 1:
                raise InvalidValueError(f"{name}: expected a positive int, got {value!r}")
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not 0 < k < math.inf:
            raise InvalidValueError(f"k: expected a finite pseudo-count > 0, got {k!r}")
        if vocab_size ** order >= 2 ** 62:
            raise InvalidValueError(f"order: expected vocab_size ** order < 2**62 (n-grams are int64 codes), got "
                                    f"{vocab_size} ** {order}")
        self.order, self.k, self.vocab_size = int(order), float(k), int(vocab_size)
        self._grams = None  # per context length m: (sorted (m+1)-gram codes, counts, sorted ctx codes, counts)

    def _codes(self, ids, m: int):
        """Integer codes :math:`\\sum_j x_{t-m+j} |V|^{m-j}` of the (m+1)-grams ending at t = m .. M-1."""
        codes = ids[:len(ids) - m].copy()
        for j in range(1, m + 1):
            codes = codes * self.vocab_size + ids[j:len(ids) - m + j]
        return codes

    def fit(self, ids) -> "NGramLM":
        """Count every n-gram of orders 1 .. ``order`` in ``ids`` (a 1-d integer stream); returns ``self``."""
        np = backend.numpy
        ids = _ids("ids", ids, self.vocab_size)
        if len(ids) == 0:
            raise InvalidValueError("ids: expected at least one token to count, got none")
        grams = []
        for m in range(self.order):
            codes, counts = np.unique(self._codes(ids, m), return_counts=True)
            contexts, where = np.unique(codes // self.vocab_size, return_inverse=True)
            grams.append((codes, counts, contexts, np.bincount(where.reshape(-1), weights=counts,
                                                               minlength=len(contexts))))
        self._grams = grams
        return self

    def _check_fitted(self):
        if self._grams is None:
            raise RuntimeError("NGramLM: call fit(ids) before asking for probabilities")

    def _prob(self, m: int, contexts, tokens):
        """:math:`P(w \\mid \\text{ctx})` for arrays of context codes (length m) and tokens."""
        codes, counts, context_codes, context_counts = self._grams[m]
        joint = _lookup(codes, counts, contexts * self.vocab_size + tokens)
        total = _lookup(context_codes, context_counts, contexts)
        return (joint + self.k) / (total + self.k * self.vocab_size)

    def probs(self, context=()):
        """:math:`P(\\cdot \\mid \\text{ctx})` as a host float64 array ``(|V|,)``, summing to 1.

        ``context``: the preceding ids (a sequence); only the last ``order - 1`` are read.
        """
        self._check_fitted()
        np = backend.numpy
        context = _ids("context", context, self.vocab_size)
        m = min(self.order - 1, len(context))
        tail = context[len(context) - m:]
        code = int(self._codes(tail, m - 1)[0]) if m else 0
        tokens = np.arange(self.vocab_size, dtype=np.int64)
        return self._prob(m, np.full(self.vocab_size, code, dtype=np.int64), tokens)

    def nll(self, ids):
        """``(total_nll, num_tokens)``: :math:`-\\sum_{t=1}^{M-1} \\log P(x_t \\mid \\text{ctx}_t)` and :math:`M-1`."""
        self._check_fitted()
        np = backend.numpy
        ids = _ids("ids", ids, self.vocab_size)
        if len(ids) < 2:
            raise InvalidValueError(f"ids: expected at least two tokens (the first is only context), got {len(ids)}")
        log_p = np.empty(len(ids) - 1)
        full = self.order - 1
        for t in range(1, min(full, len(ids))):  # the first tokens have fewer than order - 1 predecessors
            context = self._codes(ids[:t], t - 1)  # the single t-gram ids[0:t]
            log_p[t - 1] = np.log(self._prob(t, context, ids[t:t + 1]))[0]
        start = max(full, 1)
        if start < len(ids):
            # context of x_t for t >= start: the full-length gram ending at t - 1
            contexts = self._codes(ids[:-1], full - 1)[start - full:] if full else np.zeros(len(ids) - 1, np.int64)
            log_p[start - 1:] = np.log(self._prob(full, contexts, ids[start:]))
        return float(-log_p.sum()), len(ids) - 1

    def perplexity(self, ids) -> float:
        """:math:`\\exp` of the mean negative log-likelihood of ``ids[1:]`` (see the class docstring)."""
        return _perplexity(*self.nll(ids))

    def __repr__(self) -> str:
        return f"NGramLM(order={self.order}, k={self.k}, vocab_size={self.vocab_size})"
