"""Attention layers: thin modules over :mod:`npseq.functional.attention`.

Every layer is called as ``context = layer(queries, keys, values, valid_lens=None)``
with queries ``(N, Q, Dq)``, keys ``(N, K, Dk)``, values ``(N, K, Dv)``, and
``valid_lens`` ``None``, ``(N,)`` or ``(N, Q)``; it returns the context
``(N, Q, Dv)`` and keeps the weights ``(N, Q, K)`` of its last call in
``.attention_weights``. ``backward(dcontext)`` returns ``(dqueries, dkeys, dvalues)``
and adds into the parameters' ``.grad``.

One layer may be called at every decoder step before any backward: each call's
cache goes on the module's stack and each ``backward`` consumes the most recent
call (last in, first out).

**The scores.** :data:`SCORES` is the one registry of the score functions the attention
layers, Luong's decoder, :func:`npseq.models.build_seq2seq` and ``npseq train --score`` know:
a name and a :class:`Score`, which says which forward/backward pair of
:mod:`npseq.functional.scores` to call and how to make its weights. A new score is one
pair and one line here, or :func:`register_score` at run time; :class:`ScoredAttention`
(global) and :class:`LocalAttention` (local) run any of them.

Dropout, when asked for, drops attention weights before they multiply the values
(``context = dropout(a) v``, as in d2l), in training mode only, with the layer's
own ``rng``; ``.attention_weights`` are the weights before dropout.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

from .._checks import (
    as_rng,
    check_count,
    check_float_array,
    check_ndim,
    check_probability,
    check_registration,
    check_same_backend,
    check_shape,
)
from ..errors import InvalidTypeError, InvalidValueError
from ..functional import attention as attention_fn
from ..functional import fast_attention as fast_fn
from ..functional import local_attention as local_fn
from ..functional import scores as scores_fn
from .init import resolve_dtype, uniform
from .layers import Linear
from .module import Module, Parameter

__all__ = ["Score", "SCORES", "register_score", "unregister_score", "score_layer", "DotProductAttention",
           "GeneralAttention", "AdditiveAttention", "ScoredAttention", "LocalAttention"]


def _check_matches_params(module: Module, name: str, array, param: Parameter) -> None:
    """``array`` lives where the parameters live and has their dtype (no silent promotion)."""
    check_float_array(name, array)
    check_same_backend(name, array, param.data)
    if array.dtype != param.dtype:
        raise InvalidTypeError(f"{name}: expected dtype {param.dtype} (the dtype of "
                               f"{type(module).__name__}'s parameters), got {array.dtype}")


class DotProductAttention(Module):
    """Dot-product attention, scaled (Vaswani et al.) or not (Luong "dot"); no parameters.

    .. math::
        s = \\lambda\\, q k^\\top, \\quad \\lambda = 1/\\sqrt{D} \\text{ if scaled else } 1, \\qquad
        a = \\operatorname{masked\\_softmax}(s), \\qquad c = \\operatorname{dropout}(a)\\, v

    ``forward(queries (N, Q, D), keys (N, K, D), values (N, K, Dv), valid_lens=None)``
    -> ``context (N, Q, Dv)``; ``backward(dcontext)`` -> ``(dqueries, dkeys, dvalues)``.
    See :func:`npseq.functional.attention.dot_attention_forward`.
    """

    def __init__(self, dropout: float = 0.0, scaled: bool = True, *, rng=None):
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = dropout
        self.scaled = scaled
        self.rng = as_rng(rng)
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None):
        context, weights, cache = attention_fn.dot_attention_forward(
            queries, keys, values, valid_lens, self.scaled,
            dropout=self.dropout if self.training else 0.0, rng=self.rng)
        self.attention_weights = weights
        self.save_for_backward(cache)
        return context

    def backward(self, dcontext):
        return attention_fn.dot_attention_backward(dcontext, self.pop_cache())

    def extra_repr(self) -> str:
        return f"dropout={self.dropout}, scaled={self.scaled}"


class GeneralAttention(Module):
    """Luong's "general" attention: :math:`s = q W k^\\top`, ``W`` of shape ``(query_size, key_size)``.

    .. math:: s_{nqk} = q_{nq} W k_{nk}^\\top, \\qquad a = \\operatorname{masked\\_softmax}(s), \\qquad c = a v

    ``W`` starts from :math:`U(-1/\\sqrt{D_q}, 1/\\sqrt{D_q})`, the initialisation of a
    bias-free ``Linear(query_size, key_size)`` applied to the queries.

    ``forward(queries (N, Q, query_size), keys (N, K, key_size), values (N, K, Dv), valid_lens=None)``
    -> ``context (N, Q, Dv)``; ``backward(dcontext)`` -> ``(dqueries, dkeys, dvalues)``, adds into ``W.grad``.
    See :func:`npseq.functional.attention.general_attention_forward`.
    """

    def __init__(self, query_size: int, key_size: int, *, rng=None, dtype=None):
        super().__init__()
        self.query_size, self.key_size = query_size, key_size
        self.W = Parameter(uniform(as_rng(rng), (query_size, key_size), 1.0 / math.sqrt(query_size),
                                   resolve_dtype(dtype)))
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None):
        _check_matches_params(self, "queries", queries, self.W)
        context, weights, cache = attention_fn.general_attention_forward(
            queries, keys, values, self.W.data, valid_lens)
        self.attention_weights = weights
        self.save_for_backward(cache)
        return context

    def backward(self, dcontext):
        dqueries, dkeys, dvalues, dW = attention_fn.general_attention_backward(dcontext, self.pop_cache())
        self.W.grad += dW
        return dqueries, dkeys, dvalues

    def extra_repr(self) -> str:
        return f"query_size={self.query_size}, key_size={self.key_size}"


class _KeyProjection(NamedTuple):
    keys_shape: tuple  # (N, K, key_size); the projection's own cache is on W_k's stack


class AdditiveAttention(Module):
    """Additive (Bahdanau) attention: a one-hidden-layer MLP scores every query-key pair.

    .. math::
        s_{nqk} = w_v \\cdot \\tanh(q_{nq} W_q + k_{nk} W_k), \\qquad
        a = \\operatorname{masked\\_softmax}(s), \\qquad c = \\operatorname{dropout}(a)\\, v

    Parameters as in d2l: ``W_k = Linear(key_size, num_hiddens, bias=False)``,
    ``W_q = Linear(query_size, num_hiddens, bias=False)`` and ``w_v`` of shape
    ``(num_hiddens,)`` (d2l's ``Linear(num_hiddens, 1, bias=False)``), all from
    :math:`U(-1/\\sqrt{\\text{fan\\_in}}, 1/\\sqrt{\\text{fan\\_in}})`.

    Simple use: ``context = attn(queries, keys, values, valid_lens)``, then
    ``dqueries, dkeys, dvalues = attn.backward(dcontext)``.

    In a decoder the keys (the encoder outputs) are the same at every step, so
    project them once per source batch and reuse the projection:

    1. ``projected_keys = attn.project_keys(keys)`` once per source batch;
    2. ``context_t = attn.forward_projected(query_t, projected_keys, values, valid_lens)`` at each step;
    3. ``dquery_t, dprojected_keys_t, dvalues_t = attn.backward(dcontext_t)`` for each step,
       latest first;
    4. ``dkeys = attn.backward_keys(sum_t dprojected_keys_t)`` once.

    This computes the same gradients as calling ``forward`` at every step, with
    one key projection (and its backward) per batch instead of one per step.
    ``backward`` returns ``dprojected_keys`` for a ``forward_projected`` call and
    ``dkeys`` for a ``forward`` call. ``backward_keys`` is refused while attention
    calls made after the projection are still waiting for their backward.
    """

    def __init__(self, key_size: int, query_size: int, num_hiddens: int, dropout: float = 0.0, *,
                 rng=None, dtype=None):
        super().__init__()
        check_probability("dropout", dropout)
        rng = as_rng(rng)
        self.key_size, self.query_size, self.num_hiddens = key_size, query_size, num_hiddens
        self.W_k = Linear(key_size, num_hiddens, bias=False, rng=rng, dtype=dtype)
        self.W_q = Linear(query_size, num_hiddens, bias=False, rng=rng, dtype=dtype)
        self.w_v = Parameter(uniform(rng, (num_hiddens,), 1.0 / math.sqrt(num_hiddens), resolve_dtype(dtype)))
        self.dropout = dropout
        self.rng = rng
        self.attention_weights = None

    def _dropout(self) -> float:
        return self.dropout if self.training else 0.0

    def _pop(self, kinds, method: str, wrong_kind: str):
        """Pop the latest cache, which must be one of ``kinds`` (else a protocol error naming ``method``)."""
        if not self._caches:
            raise RuntimeError(f"AdditiveAttention.{method}: called more often than its forward "
                               f"(no pending call); under no_grad() nothing is stored")
        if not isinstance(self._caches[-1], kinds):
            raise RuntimeError(f"AdditiveAttention.{method}: {wrong_kind}")
        return self.pop_cache()

    # ------------------------------------------------------------ plain use
    def forward(self, queries, keys, values, valid_lens=None):
        """``context (N, Q, Dv)`` from queries ``(N, Q, query_size)``, keys ``(N, K, key_size)``,
        values ``(N, K, Dv)`` and ``valid_lens`` ``None``, ``(N,)`` or ``(N, Q)``."""
        _check_matches_params(self, "queries", queries, self.w_v)
        context, weights, cache = attention_fn.additive_attention_forward(
            queries, keys, values, self.W_q.W.data, self.W_k.W.data, self.w_v.data, valid_lens,
            dropout=self._dropout(), rng=self.rng)
        self.attention_weights = weights
        self.save_for_backward(cache)
        return context

    def backward(self, dcontext):
        """Backward of the latest ``forward`` or ``forward_projected`` call.

        Returns ``(dqueries, dkeys, dvalues)`` after ``forward`` and
        ``(dqueries, dprojected_keys, dvalues)`` after ``forward_projected``; adds into
        ``W_q.W.grad`` and ``w_v.grad`` (and ``W_k.W.grad`` after ``forward``).
        """
        cache = self._pop((attention_fn.AdditiveAttentionCache, fast_fn.AdditiveAttentionProjectedCache),
                          "backward", "the latest pending call is project_keys, whose backward is "
                          "backward_keys (call it after the attention steps' backward)")
        if isinstance(cache, attention_fn.AdditiveAttentionCache):
            dqueries, dkeys, dvalues, dWq, dWk, dwv = attention_fn.additive_attention_backward(dcontext, cache)
            self.W_k.W.grad += dWk
        else:
            dqueries, dkeys, dvalues, dWq, dwv = fast_fn.additive_attention_projected_backward(
                dcontext, cache)
        self.W_q.W.grad += dWq
        self.w_v.grad += dwv
        return dqueries, dkeys, dvalues

    # ---------------------------------------------- once-per-batch keys
    def project_keys(self, keys):
        """``projected_keys = keys W_k`` ``(N, K, num_hiddens)``, once per source batch; see the class docstring."""
        _check_matches_params(self, "keys", keys, self.w_v)
        check_ndim("keys", keys, 3, "(N, K, Dk)")
        check_shape("keys", keys, (None, None, self.key_size))
        projected_keys = self.W_k(keys)
        self.save_for_backward(_KeyProjection(tuple(keys.shape)))
        return projected_keys

    def forward_projected(self, queries, projected_keys, values, valid_lens=None):
        """``context (N, Q, Dv)`` from keys already projected by :meth:`project_keys` ``(N, K, num_hiddens)``."""
        _check_matches_params(self, "queries", queries, self.w_v)
        context, weights, cache = fast_fn.additive_attention_projected_forward(
            queries, projected_keys, values, self.W_q.W.data, self.w_v.data, valid_lens,
            dropout=self._dropout(), rng=self.rng)
        self.attention_weights = weights
        self.save_for_backward(cache)
        return context

    def backward_keys(self, dprojected_keys):
        """Backward of the latest :meth:`project_keys`: ``dkeys (N, K, key_size)``; adds into ``W_k.W.grad``.

        ``dprojected_keys`` ``(N, K, num_hiddens)`` is the sum of the ``dprojected_keys``
        that ``backward`` returned for every ``forward_projected`` call on these keys.
        """
        cache = self._pop(_KeyProjection, "backward_keys",
                          "the latest pending call is an attention step (forward or forward_projected); "
                          "call backward for every step first (latest first) and pass the sum of "
                          "their dprojected_keys")
        check_shape("dprojected_keys", dprojected_keys, cache.keys_shape[:2] + (self.num_hiddens,))
        return self.W_k.backward(dprojected_keys)

    def extra_repr(self) -> str:
        return (f"key_size={self.key_size}, query_size={self.query_size}, "
                f"num_hiddens={self.num_hiddens}, dropout={self.dropout}")


# --------------------------------------------------------------- the scores
class Score(NamedTuple):
    """A score function as the attention layers use it: one entry of :data:`SCORES`.

    ``forward(queries (N, Q, Dq), keys (N, K, Dk), *weights) -> (scores (N, Q, K), cache)`` and
    ``backward(dscores, cache) -> (dqueries, dkeys, *dweights)``, the weights in the forward's order:
    a pair of :mod:`npseq.functional.scores`, or any pair with these signatures.
    ``weights(query_size, key_size, num_hiddens) -> {name: shape}`` names the learned weights in
    the forward's order; each starts from :math:`U(-1/\\sqrt{r}, 1/\\sqrt{r})`, ``r`` its first axis.
    ``equal_sizes``: the score needs ``query_size == key_size`` (the dot score).
    ``layer(query_size, key_size, num_hiddens, rng, dtype)`` builds the score's global attention
    layer when it has one of its own; ``None``: a :class:`ScoredAttention`.
    ``projects_keys``: that layer projects the keys once per source batch (``project_keys``,
    ``forward_projected``, ``backward_keys``, as :class:`AdditiveAttention` does).
    """
    forward: Callable
    backward: Callable
    weights: Callable = lambda query_size, key_size, num_hiddens: {}  # noqa: E731
    equal_sizes: bool = False
    layer: Callable | None = None
    projects_keys: bool = False


SCORES = {
    "dot": Score(fast_fn.fast_dot_scores_forward, fast_fn.fast_dot_scores_backward, equal_sizes=True),
    "general": Score(fast_fn.fast_general_scores_forward, fast_fn.fast_general_scores_backward,
                     lambda query_size, key_size, num_hiddens: {"W": (query_size, key_size)}),
    "concat": Score(scores_fn.concat_scores_forward, scores_fn.concat_scores_backward,
                    lambda query_size, key_size, num_hiddens: {"Wq": (query_size, num_hiddens),
                                                               "Wk": (key_size, num_hiddens), "wv": (num_hiddens,)},
                    layer=lambda query_size, key_size, num_hiddens, rng, dtype: AdditiveAttention(
                        key_size, query_size, num_hiddens, rng=rng, dtype=dtype),
                    projects_keys=True),
}
"""The scores that attention layers, Luong's decoder and the command line know, by name (Luong's three; dot and
general run their fast twins of :mod:`npseq.functional.fast_attention`).
The location score (:func:`npseq.functional.scores.location_scores_forward`) is not among them: its weights
have one column per source position, which a model does not know before it sees its data."""


def register_score(name: str, score: Score, *, replace: bool = False) -> None:
    """Make ``score`` known as ``name`` to :data:`SCORES`, and so to :class:`ScoredAttention`,
    :class:`LocalAttention`, ``LuongAttentionDecoder(score=name)``, ``build_seq2seq(score=name)`` and
    ``npseq train --score name`` (in this process). ``replace=True`` replaces a score of that name;
    :func:`unregister_score` removes it again."""
    check_registration("SCORES", SCORES, name, "score", score, Score, replace)
    SCORES[name] = score


def unregister_score(name: str) -> Score:
    """Remove the score ``name`` from :data:`SCORES` and return it."""
    if name not in SCORES:
        raise InvalidValueError(f"name: expected one of {tuple(SCORES)}, got {name!r}")
    return SCORES.pop(name)


def _make_score_weights(module: Module, score: Score, query_size: int, key_size: int, num_hiddens: int,
                        rng, dtype) -> tuple:
    """The score's weights as parameters of ``module``, drawn in the forward's order; their names."""
    shapes = score.weights(query_size, key_size, num_hiddens)
    for name, shape in shapes.items():
        setattr(module, name, Parameter(uniform(rng, shape, 1.0 / math.sqrt(shape[0]), dtype)))
    return tuple(shapes)


def _score_record(name: str, query_size: int, key_size: int, error=InvalidTypeError) -> Score:
    """The :data:`SCORES` entry ``name``, for queries of ``query_size`` and keys of ``key_size`` features."""
    if name not in SCORES:
        raise error(f"score: expected one of {tuple(SCORES)}, got {name!r}")
    if SCORES[name].equal_sizes and query_size != key_size:
        raise error(f"key_size: the {name} score needs query_size == key_size, got {query_size} and {key_size}")
    return SCORES[name]


def score_layer(name: str, query_size: int, key_size: int, num_hiddens: int, *, rng=None, dtype=None) -> Module:
    """The global attention layer of the score ``name``: its own (``SCORES[name].layer``) or a
    :class:`ScoredAttention`."""
    score = _score_record(name, query_size, key_size, InvalidValueError)
    if score.layer is not None:
        return score.layer(query_size, key_size, num_hiddens, rng, dtype)
    return ScoredAttention(name, query_size, key_size, num_hiddens, rng=rng, dtype=dtype)


class _ScoredCall(NamedTuple):
    scores: object   # the score function's cache
    pooling: object  # AttentionPoolingCache


class ScoredAttention(Module):
    """Global attention with any score of :data:`SCORES`:

    .. math::
        s = \\operatorname{score}(q, k), \\qquad a = \\operatorname{masked\\_softmax}(s), \\qquad c = a v

    the score's pair (``SCORES[score].forward``) followed by
    :func:`npseq.functional.pooling.attention_pooling_forward` (its backward by the fast twin
    :func:`npseq.functional.fast_attention.fast_attention_pooling_backward`). Its parameters are the score's
    weights (``SCORES[score].weights(query_size, key_size, num_hiddens)``), by their names.

    ``forward(queries (N, Q, query_size), keys (N, K, key_size), values (N, K, Dv), valid_lens=None)``
    -> ``context (N, Q, Dv)``; ``backward(dcontext)`` -> ``(dqueries, dkeys, dvalues)``, adding into the
    weights' ``.grad``.
    """

    def __init__(self, score: str, query_size: int, key_size: int, num_hiddens: int | None = None, *,
                 rng=None, dtype=None):
        super().__init__()
        record = _score_record(score, query_size, key_size)
        self.score, self.query_size, self.key_size = score, query_size, key_size
        self.weight_names = _make_score_weights(self, record, query_size, key_size, num_hiddens or query_size,
                                                as_rng(rng), resolve_dtype(dtype))
        self.attention_weights = None

    def _weights(self) -> list:
        return [getattr(self, name) for name in self.weight_names]

    def forward(self, queries, keys, values, valid_lens=None):
        for param in self._weights()[:1]:
            _check_matches_params(self, "queries", queries, param)
        scores, score_cache = SCORES[self.score].forward(queries, keys, *(p.data for p in self._weights()))
        context, weights, pooling = attention_fn.attention_pooling_forward(scores, values, valid_lens)
        self.attention_weights = weights
        self.save_for_backward(_ScoredCall(score_cache, pooling))
        return context

    def backward(self, dcontext):
        call = self.pop_cache()
        dscores, dvalues = fast_fn.fast_attention_pooling_backward(dcontext, call.pooling)
        dqueries, dkeys, *dweights = SCORES[self.score].backward(dscores, call.scores)
        for param, grad in zip(self._weights(), dweights):
            param.grad += grad
        return dqueries, dkeys, dvalues

    def extra_repr(self) -> str:
        return f"score={self.score!r}, query_size={self.query_size}, key_size={self.key_size}"


LOCAL_MODES = ("local-m", "local-p")


class LocalAttention(Module):
    """Luong's local attention: a window of :math:`2D + 1` source positions around :math:`p_t`.

    ``mode`` ``"local-m"``: :math:`p_t = t`, the decoder step; ``"local-p"``:
    :math:`p_t = S_n \\sigma(v_p^\\top \\tanh(W_p h_t))` and a Gaussian of :math:`\\sigma = D/2` on
    the weights. ``score``: any name of :data:`SCORES`, e.g. ``"dot"`` (``query_size == key_size``),
    ``"general"`` (``W``) or ``"concat"`` (``Wq``, ``Wk``, ``wv``, hidden size ``num_hiddens``); local-p
    adds ``Wp`` ``(query_size, num_hiddens)`` and ``vp``. The math and the window's rules are in
    :mod:`npseq.functional.local_attention`.

    ``forward(queries (N, Q, query_size), keys (N, K, key_size), values (N, K, Dv), source_lens (N,),
    step=0)`` -> ``context (N, Q, Dv)``; query ``q`` is decoder step ``step + q``. ``backward(dcontext)``
    -> ``(dqueries, dkeys, dvalues)``, adding into the parameters' ``.grad``. ``.attention_weights``
    and ``.centers`` (:math:`p`, ``(N, Q)``) keep the last call's.
    """

    def __init__(self, query_size: int, key_size: int, *, mode: str = "local-p", score: str = "general",
                 half_width: int = 2, num_hiddens: int | None = None, rng=None, dtype=None):
        super().__init__()
        if mode not in LOCAL_MODES:
            raise InvalidTypeError(f"mode: expected one of {LOCAL_MODES}, got {mode!r}")
        record = _score_record(score, query_size, key_size)
        check_count("half_width", half_width, 1 if mode == "local-p" else 0)
        self.query_size, self.key_size, self.mode, self.score, self.half_width = (
            query_size, key_size, mode, score, half_width)
        hidden = num_hiddens or query_size
        generator, dtype = as_rng(rng), resolve_dtype(dtype)
        self.weight_names = _make_score_weights(self, record, query_size, key_size, hidden, generator, dtype)
        if mode == "local-p":
            self.Wp = Parameter(uniform(generator, (query_size, hidden), 1.0 / math.sqrt(query_size), dtype))
            self.vp = Parameter(uniform(generator, (hidden,), 1.0 / math.sqrt(hidden), dtype))
        self.attention_weights = self.centers = None

    def _reference(self) -> Parameter:
        return next(iter(self.parameters()), None)

    def forward(self, queries, keys, values, source_lens, step: int = 0):
        reference = self._reference()
        if reference is not None:
            _check_matches_params(self, "queries", queries, reference)
        check_ndim("queries", queries, 3, "(N, Q, query_size)")
        check_shape("queries", queries, (None, None, self.query_size))
        check_shape("keys", keys, (queries.shape[0], None, self.key_size))
        check_count("step", step, 0)
        score_weights = (getattr(self, name).data for name in self.weight_names)
        scores, score_cache = SCORES[self.score].forward(queries, keys, *score_weights)
        position_cache = None
        if self.mode == "local-p":
            centers, position_cache = local_fn.predictive_position_forward(queries, self.Wp.data, self.vp.data,
                                                                           source_lens)
        else:
            centers = local_fn.monotonic_positions(step, queries.shape[0], queries.shape[1], like=queries)
        context, weights, pooling = local_fn.local_attention_pooling_forward(
            scores, values, centers, source_lens, self.half_width, gaussian=self.mode == "local-p")
        self.attention_weights, self.centers = weights, centers
        self.save_for_backward(_LocalCall(score_cache, position_cache, pooling))
        return context

    def backward(self, dcontext):
        call = self.pop_cache()
        dscores, dvalues, dcenters = local_fn.local_attention_pooling_backward(dcontext, call.pooling)
        dqueries, dkeys, *dweights = SCORES[self.score].backward(dscores, call.scores)
        for name, grad in zip(self.weight_names, dweights):
            getattr(self, name).grad += grad
        if call.position is not None:
            dqueries_p, dWp, dvp = local_fn.predictive_position_backward(dcenters, call.position)
            dqueries = dqueries + dqueries_p
            self.Wp.grad += dWp
            self.vp.grad += dvp
        return dqueries, dkeys, dvalues

    def extra_repr(self) -> str:
        return (f"query_size={self.query_size}, key_size={self.key_size}, mode={self.mode!r}, "
                f"score={self.score!r}, half_width={self.half_width}")


class _LocalCall(NamedTuple):
    scores: object    # the score function's cache
    position: object  # PredictivePositionCache (local-p) or None
    pooling: object   # LocalPoolingCache
