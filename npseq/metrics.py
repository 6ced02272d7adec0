"""Translation and language-model metrics: d2l's sentence BLEU, sacreBLEU's corpus BLEU, perplexity.

Two BLEUs live here on purpose. :func:`bleu` is the per-sentence score of *Dive
into Deep Learning* (section 10.7), used to show single translations; its
n-gram weights are :math:`1/2^n`, not the standard :math:`1/4`, and its scale is
0-1. :func:`corpus_bleu` is the standard corpus-level BLEU-4 that papers report,
identical to sacreBLEU's default (``exp`` smoothing, 0-100 scale) on text that is
already tokenised (``tokenize="none"``). The two numbers are not comparable.

Everything here runs on the host in plain Python: metrics read tokens, not arrays.
"""
from __future__ import annotations

import collections
import math
from collections.abc import Sequence

from .errors import InvalidTypeError, InvalidValueError

__all__ = ["bleu", "corpus_bleu", "exact_match", "perplexity"]

MAX_ORDER = 4
"""The n-gram order of :func:`corpus_bleu` (BLEU-4)."""


def _tokens(name: str, seq) -> list:
    """A sentence as a token list: a string is split on whitespace; a sequence of tokens is taken as is."""
    if isinstance(seq, str):
        return seq.split()
    if hasattr(seq, "ndim") and hasattr(seq, "tolist"):  # a 1-d NumPy/CuPy array of token ids
        if seq.ndim != 1:
            raise InvalidValueError(f"{name}: expected a 1-d array of token ids, got shape {tuple(seq.shape)}")
        return seq.tolist()
    try:
        tokens = list(seq)
    except TypeError:
        raise InvalidTypeError(f"{name}: expected a string or a sequence of tokens, got {type(seq).__name__}") from None
    for i, token in enumerate(tokens):
        try:
            hash(token)
        except TypeError:
            raise InvalidTypeError(f"{name}[{i}]: expected a token (a string or an id), "
                                   f"got {type(token).__name__}") from None
    return tokens


def _ngram_counts(tokens: list, n: int) -> collections.Counter:
    """How often each n-gram (a tuple of n tokens) occurs in ``tokens``."""
    return collections.Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def _clipped_matches(hyp_counts: collections.Counter, ref_counts: collections.Counter) -> int:
    """:math:`\\sum_g \\min(\\#_{hyp}(g), \\#_{ref}(g))`: a reference n-gram matches at most as often as it occurs."""
    return sum(min(count, ref_counts[gram]) for gram, count in hyp_counts.items() if gram in ref_counts)


def bleu(pred_seq, label_seq, k: int) -> float:
    """Sentence BLEU as in d2l: brevity penalty times precisions of 1- to k-grams weighted :math:`1/2^n`.

    .. math::
        \\text{BLEU} = \\exp\\!\\Big(\\min\\Big(0,\\ 1 - \\frac{\\text{len}_\\text{label}}
        {\\text{len}_\\text{pred}}\\Big)\\Big) \\prod_{n=1}^{k} p_n^{1/2^n},
        \\qquad p_n = \\frac{\\sum_g \\min(\\#_\\text{pred}(g), \\#_\\text{label}(g))}
        {\\text{len}_\\text{pred} - n + 1},

    where :math:`g` ranges over n-grams and :math:`\\#(g)` counts them (a label
    n-gram is matched at most as often as it occurs in the label). The weights
    :math:`1/2^n` are d2l's, not the standard uniform :math:`1/4` of BLEU-4: in
    :math:`\\log \\text{BLEU} = \\log \\text{BP} + \\sum_n 2^{-n} \\log p_n` they halve
    with each order, so a given precision costs less at a higher order (long
    n-grams are harder to match). A perfect match scores 1 and the score lies
    in [0, 1]. For example
    ``bleu("il est bon .", "il est calme .", k=2)`` is
    :math:`(3/4)^{1/2} (1/3)^{1/4} = 0.658`.

    This matches current d2l-en (d2l.ai, section 10.7 "Evaluation of Predicted
    Sequences"), whose loop runs over ``range(1, min(k, len_pred) + 1)``: an n-gram order
    longer than the prediction (:math:`n > \\text{len}_\\text{pred}`) is skipped, and the
    brevity penalty alone charges for the missing length. So ``bleu("va", "va !", k=2)`` is
    :math:`e^{1 - 2/1} \\cdot 1 = e^{-1} = 0.3679` and ``bleu("va !", "va ! ici", k=3)`` is
    :math:`e^{1 - 3/2} = 0.6065`. (Earlier d2l releases looped over ``range(1, k + 1)`` and
    divided by zero there.) A prediction equal to its label always scores 1
    (``bleu("va", "va", k=2) == 1``).

    One case current d2l still leaves undefined (it divides by ``len_pred = 0``) is decided
    here: an empty prediction scores 1 against an empty label and 0 otherwise.

    Args:
        pred_seq: the predicted sentence: a string (split on whitespace; for
            d2l's single-spaced text this is d2l's ``split(' ')``) or a sequence of
            tokens (strings or integer ids; a 1-d array of ids is accepted).
        label_seq: the reference sentence, in the same form.
        k: the highest n-gram order, >= 1 (d2l uses 2 for its short sentences).

    Returns:
        The score as a Python float in [0, 1].
    """
    pred, label = _tokens("pred_seq", pred_seq), _tokens("label_seq", label_seq)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidValueError(f"k: expected an integer >= 1 (the highest n-gram order), got {k!r}")
    len_pred, len_label = len(pred), len(label)
    if len_pred == 0:
        return 1.0 if len_label == 0 else 0.0
    score = math.exp(min(0.0, 1.0 - len_label / len_pred))
    for n in range(1, min(k, len_pred) + 1):
        matches = _clipped_matches(_ngram_counts(pred, n), _ngram_counts(label, n))
        score *= (matches / (len_pred - n + 1)) ** (0.5 ** n)
    return score


def _reference_streams(refs, num_hyps: int) -> list:
    """``refs`` as a list of streams (sacreBLEU's ``refs[stream][segment]``), each of ``num_hyps`` entries."""
    layout = (f"{num_hyps} reference strings (one per hypothesis), or a list of reference streams "
              f"refs[r][i], each of {num_hyps} strings")
    if isinstance(refs, str) or not isinstance(refs, Sequence) or len(refs) == 0:
        raise InvalidTypeError(f"refs: expected {layout}; got {type(refs).__name__}"
                        + (" of length 0" if isinstance(refs, Sequence) and not isinstance(refs, str) else ""))
    streams = [refs] if all(ref is None or isinstance(ref, str) for ref in refs) else list(refs)
    for r, stream in enumerate(streams):
        name = "refs" if streams[0] is refs else f"refs[{r}]"
        if isinstance(stream, str) or not isinstance(stream, Sequence):
            raise InvalidTypeError(f"{name}: expected {layout}; got a {type(stream).__name__}")
        if len(stream) != num_hyps:
            raise InvalidValueError(f"{name}: expected {layout}; got {len(stream)} entries")
        for i, ref in enumerate(stream):
            if ref is not None and not isinstance(ref, str):
                raise InvalidTypeError(f"{name}[{i}]: expected a reference string (or None for no reference "
                                       f"in this stream; join token lists with ' '), got {type(ref).__name__}")
    for i in range(num_hyps):
        if all(stream[i] is None for stream in streams):
            raise InvalidValueError(f"refs: expected at least one reference for hypothesis {i}, got only None")
    return streams


def _closest_ref_len(hyp_len: int, ref_lens: list) -> int:
    """The reference length nearest the hypothesis length; ties go to the shorter reference."""
    return min(ref_lens, key=lambda ref_len: (abs(ref_len - hyp_len), ref_len))


def corpus_bleu(hyps, refs) -> float:
    """Corpus BLEU-4 on whitespace-tokenised text, equal to sacreBLEU's default score with ``tokenize="none"``.

    Statistics are summed over the corpus before any ratio is taken (so this is
    not the mean of sentence scores). For each n-gram order :math:`n = 1..4`,
    :math:`c_n` is the number of hypothesis n-grams matched in the references
    (each n-gram clipped to the largest count it has in any one reference of
    that segment) and :math:`t_n` the number of hypothesis n-grams. With
    :math:`h` the total hypothesis length and :math:`r` the total reference
    length (per segment, the reference length closest to the hypothesis length,
    the shorter on a tie):

    .. math::
        \\text{BLEU} = 100 \\cdot \\text{BP} \\cdot \\exp\\Big(\\frac14 \\sum_{n=1}^{4} \\log p_n\\Big),
        \\qquad \\text{BP} = \\begin{cases} 1 & h \\ge r \\\\ e^{1 - r/h} & 0 < h < r \\\\ 0 & h = 0
        \\end{cases}

    with :math:`p_n = c_n / t_n`, except that an order with no match is smoothed
    by sacreBLEU's ``exp`` method (mteval-v13a): the j-th such order (counting
    from 1 in increasing n) gets :math:`p_n = 1 / (2^j t_n)`. The score is 0 when
    no n-gram of any order matches, and when some order has no hypothesis
    n-gram at all (:math:`t_n = 0`: every hypothesis is shorter than n tokens),
    as in sacreBLEU without ``effective_order``.

    Tokens are the whitespace-separated words of each line (``str.split()``, as
    sacreBLEU with ``tokenize="none"``); nothing is lowercased or re-tokenised.
    Compare only with sacreBLEU run with ``tokenize="none"`` on the same tokens.

    Args:
        hyps: a sequence of N hypothesis strings.
        refs: one reference per hypothesis: a sequence of N strings; or several
            references per hypothesis in sacreBLEU's layout, a sequence of
            reference *streams* ``refs[r][i]``, each a sequence of N strings (a
            ``None`` entry means stream r has no reference for hypothesis i).

    Returns:
        The score as a Python float in [0, 100].
    """
    if isinstance(hyps, str) or not isinstance(hyps, Sequence) or len(hyps) == 0:
        raise InvalidTypeError(f"hyps: expected a non-empty sequence of hypothesis strings, got "
                               f"{type(hyps).__name__}" + (" of length 0" if isinstance(hyps, Sequence) else ""))
    for i, hyp in enumerate(hyps):
        if not isinstance(hyp, str):
            raise InvalidTypeError(f"hyps[{i}]: expected a hypothesis string (join token lists with ' '), "
                                   f"got {type(hyp).__name__}")
    streams = _reference_streams(refs, len(hyps))
    hyp_total, ref_total = 0, 0
    correct, total = [0] * MAX_ORDER, [0] * MAX_ORDER
    for i, hyp in enumerate(hyps):
        hyp_tokens = hyp.split()
        ref_tokens = [stream[i].split() for stream in streams if stream[i] is not None]
        hyp_total += len(hyp_tokens)
        ref_total += _closest_ref_len(len(hyp_tokens), [len(tokens) for tokens in ref_tokens])
        for n in range(1, MAX_ORDER + 1):
            ref_counts = collections.Counter()
            for tokens in ref_tokens:
                ref_counts |= _ngram_counts(tokens, n)  # elementwise max over the references
            correct[n - 1] += _clipped_matches(_ngram_counts(hyp_tokens, n), ref_counts)
            total[n - 1] += max(0, len(hyp_tokens) - n + 1)
    if not any(correct) or not all(total):
        return 0.0
    if hyp_total >= ref_total:
        brevity_penalty = 1.0
    else:
        brevity_penalty = math.exp(1.0 - ref_total / hyp_total)
    log_precision_sum, smoothing = 0.0, 1.0
    for c, t in zip(correct, total):
        if c == 0:
            smoothing *= 2.0
            precision = 100.0 / (smoothing * t)
        else:
            precision = 100.0 * c / t
        log_precision_sum += math.log(precision)
    return brevity_penalty * math.exp(log_precision_sum / MAX_ORDER)


def exact_match(hyps, refs) -> float:
    """The fraction of hypotheses equal to their reference, as strings: :math:`\\frac1N \\sum_i [h_i = r_i]`.

    Args:
        hyps: a non-empty sequence of N hypothesis strings; refs: N reference strings.

    Returns:
        A Python float in [0, 1].
    """
    if isinstance(hyps, str) or not isinstance(hyps, Sequence) or len(hyps) == 0:
        raise InvalidTypeError(f"hyps: expected a non-empty sequence of strings, got {type(hyps).__name__}"
                        + (" of length 0" if isinstance(hyps, Sequence) else ""))
    if isinstance(refs, str) or not isinstance(refs, Sequence) or len(refs) != len(hyps):
        given = type(refs).__name__ + (f" of length {len(refs)}" if isinstance(refs, Sequence) else "")
        raise InvalidValueError(f"refs: expected a sequence of {len(hyps)} strings (one per hypothesis), got {given}")
    return sum(hyp == ref for hyp, ref in zip(hyps, refs)) / len(hyps)


def perplexity(total_nll, num_tokens) -> float:
    """Perplexity from a summed negative log-likelihood: :math:`\\exp(\\text{total\\_nll} / \\text{num\\_tokens})`.

    .. math::
        \\text{PPL} = \\exp\\Big(-\\frac{1}{M} \\sum_{m=1}^{M} \\log p(x_m \\mid x_{<m})\\Big)

    with :math:`M` = ``num_tokens`` and the sum (natural logarithm) =
    ``-total_nll``. Pass the *sum* of per-token losses and the number of tokens
    it covers, so batches of different sizes combine correctly:
    ``perplexity(sum_of_losses, sum_of_counts)``. (A mean loss ``l`` is
    ``perplexity(l, 1)``.) A model that is uniform over V tokens has perplexity V;
    a perfect model has 1.

    Args:
        total_nll: the summed negative log-likelihood in nats, >= 0 (a Python
            number, a NumPy/CuPy scalar or 0-d array); ``inf`` gives ``inf``.
        num_tokens: how many tokens the sum covers, > 0.

    Returns:
        The perplexity as a Python float (``inf`` if it overflows).
    """
    nll = _scalar("total_nll", total_nll)
    count = _scalar("num_tokens", num_tokens)
    if math.isnan(nll) or nll < 0:
        raise InvalidValueError(f"total_nll: expected a summed negative log-likelihood >= 0, got {total_nll!r}")
    if not 0 < count < math.inf:
        raise InvalidValueError(f"num_tokens: expected a number of tokens > 0, got {num_tokens!r}")
    try:
        return math.exp(nll / count)
    except OverflowError:
        return math.inf


def _scalar(name: str, value) -> float:
    if isinstance(value, (bool, str)):
        raise InvalidTypeError(f"{name}: expected a real number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"{name}: expected a real number, got {value!r}") from None
