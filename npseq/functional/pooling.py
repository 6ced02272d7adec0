"""Masked attention pooling: the part every attention shares once its scores are computed.

.. math::
    \\alpha_{nq\\cdot} = \\operatorname{softmax}(s_{nq\\cdot} \\text{ over } m_{nq\\cdot} = 1), \\qquad
    a = \\alpha \\odot g, \\qquad
    c_{nq} = \\textstyle\\sum_k \\operatorname{dropout}(a)_{nqk}\\, v_{nk}

A boolean mask :math:`m` says which keys each query may see (the valid keys, a causal mask,
a local window); masked keys get exactly zero weight, and a query that sees no key gets
all-zero weights and a zero context (never NaN). An optional gain :math:`g` multiplies the
weights after the softmax (local-p's Gaussian); without it :math:`a = \\alpha`.

:func:`masked_pooling_forward` takes any mask; :func:`attention_pooling_forward` builds it from
valid lengths (:func:`attention_mask`). Every attention of npseq is a score function of
:mod:`npseq.functional.scores` followed by one of these.

Shapes: scores and weights ``(N, [h,] Q, K)``, values ``(N, [h,] K, Dv)``, context
``(N, [h,] Q, Dv)``; ``valid_lens`` ``None``, ``(N,)`` or ``(N, Q)``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import check_attention_pooling, check_masked_pooling, check_pooling_upstream
from .activations import MaskedSoftmaxCache, masked_softmax_backward, sequence_mask, softmax_where
from .layers import DropoutCache, dropout_backward, dropout_forward

__all__ = [
    "AttentionPoolingCache", "attention_mask", "masked_pooling_forward", "masked_pooling_backward",
    "attention_pooling_forward", "attention_pooling_backward",
]


def attention_mask(num_queries: int, num_keys: int, valid_lens=None, causal: bool = False, xp=None):
    """Which keys each query may attend to: a bool array, True where the key counts.

    .. math::
        m_{nqk} = [k < \\ell_{n(q)}] \\wedge [k \\le q \\text{ if causal}]

    The causal condition compares positions from the start of both sequences (torch's
    ``is_causal``): query ``q`` sees keys ``0..q``. With ``T_q = T_k`` (self-attention)
    the first query always sees itself, so only key padding can empty a row.

    Args:
        num_queries, num_keys: ``T_q`` and ``T_k``.
        valid_lens: ``None``, ``(N,)`` or ``(N, T_q)`` integers in ``[0, T_k]`` (not checked here).
        causal: also hide the keys after each query's own position.
        xp: the array module (NumPy or CuPy); default that of ``valid_lens``.

    Returns:
        ``(N, T_q, T_k)`` with ``valid_lens``, else ``(1, T_q, T_k)``.
    """
    xp = xp or backend.get_array_module(valid_lens)
    if valid_lens is None:
        mask = xp.ones((1, num_queries, num_keys), dtype=bool)
    else:
        mask = sequence_mask(valid_lens, num_keys, num_queries)
    if causal:
        mask = mask & (xp.arange(num_keys)[None, :] <= xp.arange(num_queries)[:, None])
    return mask


class AttentionPoolingCache(NamedTuple):
    values: Any                  # (N, [h,] K, Dv)
    softmax: MaskedSoftmaxCache  # alpha (N, [h,] Q, K), the softmax over the mask, and the mask
    gain: Any                    # g (N, [h,] Q, K), or None (g = 1)
    dropout: DropoutCache        # mask on a; its .mask is None without dropout
    pooled: Any                  # (N, [h,] Q, K) the weights that multiplied the values: a, or dropout(a)


def masked_pooling_forward(scores, values, mask, gain=None, *, dropout: float = 0.0, rng=None):
    """The softmax of the scores over the keys the mask lets through, then the weighted average of the values.

    .. math::
        \\alpha &= \\operatorname{softmax}(s \\text{ where } m, \\text{ else } {-\\infty})  && (N, [h,] Q, K) \\\\
        a &= \\alpha \\odot g                                   && (g = 1 \\text{ without a gain}) \\\\
        \\tilde a &= \\operatorname{dropout}_p(a)               && \\\\
        c &= \\tilde a\\, v                                     && (N, [h,] Q, Dv)

    Args:
        scores: ``(N, Q, K)`` or ``(N, h, Q, K)``.
        values: ``(N, K, Dv)`` or ``(N, h, K, Dv)``.
        mask: bool, of the scores' rank, each axis 1 or the scores' (it broadcasts to them).
        gain: ``None``, or ``(N, [h,] Q, K)`` factors on the weights after the softmax.
        dropout: probability of dropping each weight (inverted dropout); 0 = none.
        rng: a ``numpy.random.Generator`` that draws the mask (needed when ``dropout > 0``).

    Returns:
        ``context`` ``(N, [h,] Q, Dv)``, ``weights`` :math:`a` ``(N, [h,] Q, K)`` (before dropout)
        and an :class:`AttentionPoolingCache`.
    """
    check_masked_pooling(scores, values, mask, gain, dropout, rng)
    inside, softmax = softmax_where(scores, mask)
    weights = inside if gain is None else inside * gain
    pooled, dropout_cache = dropout_forward(weights, dropout, rng, train=dropout > 0.0)
    context = pooled @ values
    return context, weights, AttentionPoolingCache(values, softmax, gain, dropout_cache, pooled)


def masked_pooling_backward(dcontext, cache: AttentionPoolingCache, dweights=None):
    """Backward of :func:`masked_pooling_forward`.

    From :math:`c = \\tilde a v`, :math:`\\tilde a = a \\odot r` (the dropout mask :math:`r`; 1 without
    dropout), :math:`a = \\alpha \\odot g` and the masked softmax :math:`\\alpha`:

    .. math::
        dv &= \\tilde a^\\top dc                          && (N, [h,] K, Dv) \\\\
        da &= (dc\\, v^\\top) \\odot r + d\\text{weights}  && (N, [h,] Q, K) \\\\
        dg &= da \\odot \\alpha                           && \\text{(with a gain)} \\\\
        d\\alpha &= da \\odot g                           && \\\\
        ds_{nqk} &= \\alpha_{nqk}\\,\\bigl(d\\alpha_{nqk} - \\textstyle\\sum_j d\\alpha_{nqj}\\, \\alpha_{nqj}\\bigr)
                                                          && \\text{(softmax Jacobian; 0 at masked keys)}

    (transposes act on the last two axes, one matrix per example and head).

    Args:
        dcontext: ``(N, [h,] Q, Dv)``.
        dweights: ``(N, [h,] Q, K)``, an upstream gradient on the weights :math:`a` themselves, or ``None``.

    Returns:
        ``dscores`` ``(N, [h,] Q, K)``, ``dvalues`` ``(N, [h,] K, Dv)`` and ``dgain`` ``(N, [h,] Q, K)``
        (``None`` without a gain).
    """
    check_pooling_upstream(dcontext, dweights, cache)
    values, softmax, gain, dropout_cache, pooled = cache
    dvalues = pooled.swapaxes(-1, -2) @ dcontext
    dpooled_weights = dropout_backward(dcontext @ values.swapaxes(-1, -2), dropout_cache)
    dweights_total = dpooled_weights if dweights is None else dpooled_weights + dweights
    dgain = None if gain is None else dweights_total * softmax.weights
    dinside = dweights_total if gain is None else dweights_total * gain
    dscores = masked_softmax_backward(dinside, softmax)
    return dscores, dvalues, dgain


def attention_pooling_forward(scores, values, valid_lens=None, *, dropout: float = 0.0, rng=None):
    """Masked softmax of the scores over each query's valid keys, then the weighted average of the values.

    .. math::
        m_{nqk} &= [k < \\ell_{n(q)}]                  && \\text{(every key without valid\\_lens)} \\\\
        a &= \\operatorname{masked\\_softmax}(s, m), \\qquad
        c = \\operatorname{dropout}_p(a)\\, v                             && (N, Q, Dv)

    :func:`masked_pooling_forward` with the mask of :func:`attention_mask`; the global attentions of
    :mod:`npseq.functional.attention` are a score function followed by this.

    Args:
        scores: ``(N, Q, K)``.
        values: ``(N, K, Dv)``.
        valid_lens: ``None``, ``(N,)`` or ``(N, Q)`` integers in ``[0, K]``.
        dropout: probability of dropping each weight (inverted dropout); 0 = none.
        rng: a ``numpy.random.Generator`` that draws the mask (needed when ``dropout > 0``).

    Returns:
        ``context`` ``(N, Q, Dv)``, ``weights`` :math:`a` ``(N, Q, K)`` (before dropout),
        and an :class:`AttentionPoolingCache`.
    """
    check_attention_pooling(scores, values, valid_lens, dropout, rng)
    mask = attention_mask(scores.shape[1], scores.shape[2], valid_lens, xp=backend.get_array_module(scores))
    return masked_pooling_forward(scores, values, mask, dropout=dropout, rng=rng)


def attention_pooling_backward(dcontext, cache: AttentionPoolingCache, dweights=None):
    """Backward of :func:`attention_pooling_forward` (:func:`masked_pooling_backward` without a gain).

    .. math::
        dv &= \\tilde a^\\top dc                          && (N, K, Dv) \\\\
        da &= (dc\\, v^\\top) \\odot r + d\\text{weights}  && (N, Q, K) \\\\
        ds_{nqk} &= a_{nqk}\\,\\bigl(da_{nqk} - \\textstyle\\sum_j da_{nqj}\\, a_{nqj}\\bigr)
                                                          && \\text{(0 at masked keys)}

    Args:
        dcontext: ``(N, Q, Dv)``.
        dweights: ``(N, Q, K)`` or ``None`` (no loss on the weights).

    Returns:
        ``dscores`` ``(N, Q, K)``, ``dvalues`` ``(N, K, Dv)``.
    """
    dscores, dvalues, _ = masked_pooling_backward(dcontext, cache, dweights)
    return dscores, dvalues
