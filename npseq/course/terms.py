"""The paths a gradient sums over, exercise by exercise: where a learner leaves one out, the grader names it.

An input used in several places of a forward gets the sum of what each use hands back. Each
function here is called as the exercise's backward is (the same upstream gradients, a fresh
cache) and returns the :class:`~npseq.course.exercise.Term` records of those sums, npseq's
own values, which add up to npseq's gradient; the grader names a term when a learner's
gradient is npseq's minus exactly it (:func:`~npseq.course.patterns.missing_term`).
"""
from __future__ import annotations

from .. import backend
from .. import functional as F
from ..language import N_
from .exercise import Term
from .references import attention as attention_references
from .references import deep as deep_references
from .references import transformer as transformer_references


def lstm_step_terms(dnext_h, dnext_c, cache) -> tuple:
    """``dprev_c = f * dc`` with ``dc = dnext_c + dnext_h * o * (1 - tanh(next_c)^2)``: the cell's own path and the
    path through ``next_h``."""
    through_h = dnext_h * cache.o * (1 - cache.tanh_c ** 2)
    return (Term("dprev_c", N_("the cell's own path (dnext_c, through next_c = f * prev_c + ...)"), dnext_c * cache.f),
            Term("dprev_c", N_("the path through next_h = o * tanh(next_c)"), through_h * cache.f))


def gru_step_terms(dnext_h, cache) -> tuple:
    """``dprev_h``: the direct path of ``h' = (1 - z) * n + z * h``, and the paths through the gates' and the
    candidate's pre-activations."""
    direct = dnext_h * cache.z
    return (Term("dprev_h", N_("the direct path (the z * h of h')"), direct),
            Term("dprev_h", N_("the paths through r, z and n"), F.gru_step_backward(dnext_h, cache)[1] - direct))


def bahdanau_decoder_step_terms(dnext_h, cache) -> tuple:
    """``dprev_h``: h is the GRU's previous state and the attention's query; ``denc_outputs``: the encoder's outputs
    are the attention's keys and its values."""
    du, dh_gru = F.gru_step_backward(dnext_h, cache.gru)[:2]
    width = cache.context.shape[1]
    dqueries, dkeys, dvalues = F.additive_attention_backward(du[:, None, :width], cache.attention)[:3]
    return (Term("dprev_h", N_("the GRU step's term (h as its previous state)"), dh_gru),
            Term("dprev_h", N_("the attention's term (h as its query)"), dqueries[:, 0]),
            Term("denc_outputs", N_("the keys' term (the encoder outputs scored against the query)"), dkeys),
            Term("denc_outputs", N_("the values' term (the encoder outputs pooled into the context)"), dvalues))


def peephole_lstm_step_terms(dnext_h, dnext_c, cache) -> tuple:
    """``dprev_c = dc * f + da_i * p_i + da_f * p_f``: the cell update, and the input and forget gates' peepholes."""
    i, f, o, g, tanh_c, prev_c = cache.i, cache.f, cache.o, cache.g, cache.tanh_c, cache.prev_c
    dao = dnext_h * tanh_c * o * (1 - o)
    dc = dnext_c + dnext_h * o * (1 - tanh_c ** 2) + dao * cache.p_o
    return (Term("dprev_c", N_("the cell update's term (f * prev_c)"), dc * f),
            Term("dprev_c", N_("the input gate's peephole (p_i * prev_c)"), dc * g * i * (1 - i) * cache.p_i),
            Term("dprev_c", N_("the forget gate's peephole (p_f * prev_c)"), dc * prev_c * f * (1 - f) * cache.p_f))


def local_p_attention_terms(dcontext, cache) -> tuple:
    """``dqueries``: h is scored against the keys and predicts the window's centre ``p = S * sigmoid(tanh(h Wp) vp)``,
    which moves the Gaussian over the weights."""
    pooling, position = cache.pooling, cache.position
    weights, centers = pooling.weights, pooling.centers
    dweights = dcontext @ pooling.values.swapaxes(1, 2)
    offsets = backend.numpy.arange(weights.shape[2]) - centers[:, :, None]
    dcenters = (dweights * weights * offsets).sum(axis=2) / pooling.sigma ** 2
    ratio, features = position.ratio, position.features
    dz = dcenters * position.source_lens[:, None] * ratio * (1 - ratio)
    through_position = (dz[..., None] * position.vp * (1 - features ** 2)) @ position.Wp.T
    dqueries = attention_references.local_p_attention_backward(dcontext, cache)[0]
    return (Term("dqueries", N_("the path through the scores s"), dqueries - through_position),
            Term("dqueries", N_("the path through the predicted position p"), through_position))


def bidirectional_rnn_terms(dy, cache) -> tuple:
    """``dx``: x feeds both directions. Each direction's term is the backward with the other half of ``dy`` zeroed:
    the gradients are linear in ``dy``, and each half reaches the inputs through its own direction alone."""
    hidden = dy.shape[-1] // 2
    forward_half, backward_half = dy.copy(), dy.copy()
    forward_half[..., hidden:] = 0
    backward_half[..., :hidden] = 0
    backward = deep_references.bidirectional_rnn_backward
    return (Term("dx", N_("the forward direction's term"), backward(forward_half, cache).dx),
            Term("dx", N_("the backward direction's term"), backward(backward_half, cache).dx))


def layer_norm_terms(dy, cache) -> tuple:
    """``dx = s * (g - mean(g) - x_hat * mean(g * x_hat))`` with ``g = dy * gamma``: x's own path with the row's mean
    and scale held, the path through the mean, and the path through the scale ``s``."""
    x_hat, s = cache.x_hat, cache.inv_sigma
    g = dy * cache.gamma
    return (Term("dx", N_("x's own path (the mean and s held)"), s * g),
            Term("dx", N_("the path through the mean mu"),  # one number per row, reaching every feature of it
                 backend.numpy.broadcast_to(-s * g.mean(axis=-1, keepdims=True), g.shape)),
            Term("dx", N_("the path through s = 1 / sqrt(sigma^2 + eps)"),
                 -s * x_hat * (g * x_hat).mean(axis=-1, keepdims=True)))


def residual_norm_terms(dy, cache) -> tuple:
    """``dx = ds + FFN^T(ds)`` with ``ds = LN^T(dy)``: the residual path and the sub-layer's."""
    ds = F.layer_norm_backward(dy, cache.norm)[0]
    dx = transformer_references.feed_forward_sublayer_backward(dy, cache)[0]
    return (Term("dx", N_("the residual path (x added to the sub-layer's output)"), ds),
            Term("dx", N_("the sub-layer's term (through the feed-forward block)"), dx - ds))


__all__ = ["bahdanau_decoder_step_terms", "bidirectional_rnn_terms", "gru_step_terms", "layer_norm_terms",
           "local_p_attention_terms", "lstm_step_terms",
           "peephole_lstm_step_terms", "residual_norm_terms"]
