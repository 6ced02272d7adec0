r"""One training step of a small attention translator: the loss of a teacher-forced batch, and its backward
written link by link, each line beside the forward line it inverts.

The model is d2l's sequence-to-sequence translator with Bahdanau attention, one GRU layer
each side (reset before, gates ``[r, z, n]``), written with :mod:`npseq.functional`'s pairs.
Source ids :math:`x` ``(N, S)`` with valid lengths :math:`\ell` ``(N,)``, target inputs
:math:`y^{in}` ``(N, T)`` (the target shifted right, teacher forcing), target outputs
:math:`y` ``(N, T)`` and a mask :math:`m` ``(N, T)``:

.. math::
    e &= E^{src}_{x} && (N, S, E) \quad \text{source embedded} \\
    k,\ h^{enc} &= \operatorname{GRU}_{enc}(e,\ 0;\ \ell) && (N, S, H),\ (N, H)
        \quad \text{encoder outputs (0 past } \ell\text{), its last valid state} \\
    u &= E^{tgt}_{y^{in}} && (N, T, E) \quad \text{target embedded} \\
    s_{-1} &= h^{enc} && \text{the decoder starts from the encoder's state} \\
    s_t &= \operatorname{decoder\_step}(u_t,\ s_{t-1},\ k;\ \ell) && (N, H)
        \quad \text{attention with } s_{t-1}\text{, then a GRU step on } [c_t;\ u_t] \\
    z_t &= s_t W_{out} + b_{out} && (N, V) \quad \text{scores} \\
    L &= -\tfrac{1}{N} \textstyle\sum_{n,t} m_{nt} \log \operatorname{softmax}(z_{nt})_{y_{nt}}

Each state :math:`s_t` reaches the loss twice, through its scores and through step
:math:`t+1`; the encoder outputs reach it at every step, as keys and as values, and the
encoder's last state once more as :math:`s_{-1}`. The backward walks these lines back
in reverse, and its results (:class:`TranslatorStepGrads`) are the gradients of the loss
with respect to the intermediates in the order it meets them, with the parameters'
gradients as they fall out: the chain's links.

``shifts`` adds a given array to an intermediate as soon as it is computed, so the
finite difference of :math:`L` with respect to a shift at 0 is the gradient with respect
to that intermediate, everything after it recomputed (a shift of :math:`s_t` moves
step :math:`t+1` too: the total gradient that reaches :math:`s_t`).
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import backend
from ..._checks import check_float_array, check_ndim, check_shape, check_token_ids, check_valid_lens
from ...errors import InvalidValueError
from ...functional.activations import log_softmax_forward
from ...functional.decoder_step import bahdanau_decoder_step_backward, bahdanau_decoder_step_forward
from ...functional.layers import (
    temporal_affine_backward,
    temporal_affine_forward,
    word_embedding_backward,
    word_embedding_forward,
)
from ...functional.losses import temporal_softmax_loss
from ...functional.recurrent import gru_backward, gru_forward

__all__ = ["PARAMETER_NAMES", "SHIFTABLE", "TranslatorStepCache", "TranslatorStepGrads", "translator_step_forward",
           "translator_step_backward"]

PARAMETER_NAMES = ("W_src_embed", "Wx_enc", "Wh_enc", "bx_enc", "bh_enc", "W_tgt_embed", "Wq", "Wk", "wv",
                   "Wx_dec", "Wh_dec", "bx_dec", "bh_dec", "W_out", "b_out")
"""The keys of ``params``: the source embedding, the encoder GRU, the target embedding, the attention, the
decoder GRU, the vocabulary layer."""

SHIFTABLE = ("source_embedded", "enc_outputs", "encoder_state", "target_embedded", "states", "scores")
"""The intermediates a shift may move, in the order of the forward."""


class TranslatorStepCache(NamedTuple):
    source_embedding: Any  # WordEmbeddingCache of e = E_src[x]
    encoder: Any           # GRUCache of the encoder over e (its h_last: the encoder's state, s_{-1})
    target_embedding: Any  # WordEmbeddingCache of u = E_tgt[y_in]
    decoder_steps: list    # T BahdanauDecoderStepCache, step t's of s_t
    output: Any            # TemporalAffineCache of z = s W_out + b_out (its x: the states (N, T, H))
    scores: Any            # (N, T, V) z
    target_out: Any        # (N, T) y
    target_mask: Any       # (N, T) m


class TranslatorStepGrads(NamedTuple):
    """The gradients of the loss, in the order the backward computes them."""
    dscores: Any           # (N, T, V)
    dW_out: Any            # (H, V)
    db_out: Any            # (V,)
    dstates: Any           # (N, T, H) all that reaches s_t: from its scores and from step t+1
    dWq: Any               # (H, A)
    dWk: Any               # (H, A)
    dwv: Any               # (A,)
    dWx_dec: Any           # (H + E, 3H)
    dWh_dec: Any           # (H, 3H)
    dbx_dec: Any           # (3H,)
    dbh_dec: Any           # (3H,)
    dtarget_embedded: Any  # (N, T, E)
    dW_tgt_embed: Any      # (V_tgt, E)
    dencoder_state: Any    # (N, H) of s_{-1} = h_enc
    denc_outputs: Any      # (N, S, H) of k, from every step's keys and values
    dsource_embedded: Any  # (N, S, E)
    dWx_enc: Any           # (E, 3H)
    dWh_enc: Any           # (H, 3H)
    dbx_enc: Any           # (3H,)
    dbh_enc: Any           # (3H,)
    dW_src_embed: Any      # (V_src, E)


def _check_step_inputs(source, source_lens, target_in, target_out, target_mask, params, shifts) -> None:
    """The arguments of :func:`translator_step_forward`, each named as the caller wrote it."""
    check_ndim("source", source, 2, "(N, S)")
    n, s = source.shape
    check_ndim("target_in", target_in, 2, "(N, T)")
    t = target_in.shape[1]
    if target_in.shape[0] != n or s == 0 or t == 0:
        raise InvalidValueError(f"target_in: expected shape ({n}, T) with T >= 1 and a source of S >= 1 steps, "
                                f"got {tuple(target_in.shape)} and source {tuple(source.shape)}")
    missing, extra = set(PARAMETER_NAMES) - set(params), set(params) - set(PARAMETER_NAMES)
    if missing or extra:
        raise InvalidValueError(f"params: expected the keys {list(PARAMETER_NAMES)}, got {sorted(params)}")
    hidden, attention = params["Wh_enc"].shape[0], params["Wq"].shape[-1]
    source_width, target_width = params["W_src_embed"].shape[-1], params["W_tgt_embed"].shape[-1]
    vocabulary = params["W_out"].shape[-1]
    expected = {"W_src_embed": (None, source_width), "Wx_enc": (source_width, 3 * hidden),
                "Wh_enc": (hidden, 3 * hidden), "bx_enc": (3 * hidden,), "bh_enc": (3 * hidden,),
                "W_tgt_embed": (None, target_width), "Wq": (hidden, attention), "Wk": (hidden, attention),
                "wv": (attention,), "Wx_dec": (hidden + target_width, 3 * hidden), "Wh_dec": (hidden, 3 * hidden),
                "bx_dec": (3 * hidden,), "bh_dec": (3 * hidden,), "W_out": (hidden, vocabulary),
                "b_out": (vocabulary,)}
    for name, shape in expected.items():
        check_float_array(f"params[{name!r}]", params[name])
        check_shape(f"params[{name!r}]", params[name], shape)
    check_token_ids("source", source, params["W_src_embed"].shape[0])
    check_valid_lens("source_lens", source_lens, (n,), s)
    check_token_ids("target_in", target_in, params["W_tgt_embed"].shape[0])
    check_shape("target_out", target_out, (n, t))
    check_token_ids("target_out", target_out, vocabulary)
    check_shape("target_mask", target_mask, (n, t))
    shapes = {"source_embedded": (n, s, source_width), "enc_outputs": (n, s, hidden), "encoder_state": (n, hidden),
              "target_embedded": (n, t, target_width), "states": (n, t, hidden), "scores": (n, t, vocabulary)}
    for name, shift in (shifts or {}).items():
        if name not in shapes:
            raise InvalidValueError(f"shifts: expected keys from {list(SHIFTABLE)}, got {name!r}")
        check_shape(f"shifts[{name!r}]", shift, shapes[name])


def _shifted(shifts, name: str, value, step: int | None = None):
    """``value`` plus the shift of ``name`` (its slice ``[:, step]`` for one step of a sequence), if there is one."""
    if not shifts or name not in shifts:
        return value
    return value + (shifts[name] if step is None else shifts[name][:, step])


def translator_step_forward(source, source_lens, target_in, target_out, target_mask, params, shifts=None):
    r"""The loss of one teacher-forced batch of the attention translator (see the module's equations).

    .. math::
        e = E^{src}_x, \quad k, h^{enc} = \operatorname{GRU}_{enc}(e, 0; \ell), \quad u = E^{tgt}_{y^{in}}, \quad
        s_t = \operatorname{decoder\_step}(u_t, s_{t-1}, k; \ell),\ s_{-1} = h^{enc}, \quad
        z = s W_{out} + b_{out}, \quad L = \operatorname{CE}_m(z, y)

    Args:
        source: ``(N, S)`` integer ids in ``[0, V_src)``, ``S >= 1``.
        source_lens: ``(N,)`` integers in ``[0, S]``: the valid source steps, for the encoder and the attention.
        target_in: ``(N, T)`` integer ids in ``[0, V_tgt)``, ``T >= 1``: the decoder's inputs.
        target_out: ``(N, T)`` integer ids in ``[0, V)``: what each step should predict.
        target_mask: ``(N, T)``, truthy where a step counts in the loss.
        params: a dict with the keys :data:`PARAMETER_NAMES`: ``W_src_embed`` ``(V_src, E)``,
            ``Wx_enc`` ``(E, 3H)``, ``Wh_enc`` ``(H, 3H)``, ``bx_enc``, ``bh_enc`` ``(3H,)``,
            ``W_tgt_embed`` ``(V_tgt, E')``, ``Wq`` ``(H, A)``, ``Wk`` ``(H, A)``, ``wv`` ``(A,)``,
            ``Wx_dec`` ``(H + E', 3H)``, ``Wh_dec`` ``(H, 3H)``, ``bx_dec``, ``bh_dec`` ``(3H,)``,
            ``W_out`` ``(H, V)``, ``b_out`` ``(V,)``.
        shifts: ``None`` or a dict from names of :data:`SHIFTABLE` to arrays shaped like those intermediates
            (``source_embedded`` ``(N, S, E)``, ``enc_outputs`` ``(N, S, H)``, ``encoder_state`` ``(N, H)``,
            ``target_embedded`` ``(N, T, E')``, ``states`` ``(N, T, H)``, ``scores`` ``(N, T, V)``), each added
            to its intermediate as soon as it is computed.

    Returns:
        ``loss``, a 0-d array in the parameters' dtype (``temporal_softmax_loss`` of the scores, which that
        function would round to a Python float), and a :class:`TranslatorStepCache`.
    """
    _check_step_inputs(source, source_lens, target_in, target_out, target_mask, params, shifts)
    xp = backend.get_array_module(params["W_out"])
    p = params
    source_embedded, source_embedding = word_embedding_forward(source, p["W_src_embed"])
    source_embedded = _shifted(shifts, "source_embedded", source_embedded)
    no_state = xp.zeros((source.shape[0], p["Wh_enc"].shape[0]), dtype=source_embedded.dtype)
    enc_outputs, encoder = gru_forward(source_embedded, no_state, p["Wx_enc"], p["Wh_enc"], p["bx_enc"],
                                       p["bh_enc"], valid_lens=source_lens)
    enc_outputs = _shifted(shifts, "enc_outputs", enc_outputs)
    state = _shifted(shifts, "encoder_state", encoder.h_last)
    target_embedded, target_embedding = word_embedding_forward(target_in, p["W_tgt_embed"])
    target_embedded = _shifted(shifts, "target_embedded", target_embedded)
    states, decoder_steps = [], []
    for t in range(target_in.shape[1]):
        state, step = bahdanau_decoder_step_forward(target_embedded[:, t], state, enc_outputs, source_lens, p["Wq"],
                                                    p["Wk"], p["wv"], p["Wx_dec"], p["Wh_dec"], p["bx_dec"],
                                                    p["bh_dec"])
        state = _shifted(shifts, "states", state, t)
        states.append(state)
        decoder_steps.append(step)
    scores, output = temporal_affine_forward(xp.stack(states, axis=1), p["W_out"], p["b_out"])
    scores = _shifted(shifts, "scores", scores)
    log_p, _ = log_softmax_forward(scores)
    picked = xp.take_along_axis(log_p, target_out[..., None], axis=-1)[..., 0]  # log p of each target word
    loss = xp.asarray(-(target_mask * picked).sum() / source.shape[0])
    return loss, TranslatorStepCache(source_embedding, encoder, target_embedding, decoder_steps, output, scores,
                                     target_out, target_mask)


def _check_dloss(dloss) -> None:
    """The loss is one number, so its upstream gradient is one too."""
    if getattr(dloss, "ndim", 0) != 0:
        raise InvalidValueError(f"dloss: expected a number or a 0-d array, got shape {tuple(dloss.shape)}")


def translator_step_backward(dloss, cache: TranslatorStepCache) -> TranslatorStepGrads:
    r"""Backward of :func:`translator_step_forward`, link by link (the forward line each inverts on the right).

    .. math::
        dz &= d\ell \cdot \partial L / \partial z
            && L = \operatorname{CE}_m(z, y) \\
        ds^{out},\ dW_{out},\ db_{out} &= \text{temporal\_affine\_backward}(dz)
            && z = s W_{out} + b_{out} \\
        ds_t &= ds^{out}_t + dp_{t+1}, \quad dp_T = 0
            && s_t \text{ feeds } z_t \text{ and step } t+1 \\
        du_t,\ dp_t,\ dk_t,\ d\theta^{dec}_t &= \text{decoder\_step\_backward}(ds_t)
            && s_t = \operatorname{decoder\_step}(u_t, s_{t-1}, k) \\
        dE^{tgt} &= \text{word\_embedding\_backward}(du)
            && u = E^{tgt}_{y^{in}} \\
        dh^{enc} &= dp_0 && s_{-1} = h^{enc} \\
        dk &= \textstyle\sum_t dk_t, \quad d\theta^{dec} = \textstyle\sum_t d\theta^{dec}_t
            && k \text{ and } \theta^{dec} \text{ serve every step} \\
        de,\ \_,\ d\theta^{enc} &= \text{gru\_backward}(dk,\ dh^{enc})
            && k, h^{enc} = \operatorname{GRU}_{enc}(e, 0; \ell) \\
        dE^{src} &= \text{word\_embedding\_backward}(de)
            && e = E^{src}_x

    Args:
        dloss: the upstream gradient of the loss, a number or a 0-d array.
        cache: from :func:`translator_step_forward`.

    Returns:
        A :class:`TranslatorStepGrads`, the links in the order above.
    """
    _check_dloss(dloss)
    xp = backend.get_array_module(cache.scores)
    dscores = dloss * temporal_softmax_loss(cache.scores, cache.target_out, cache.target_mask)[1]
    dstates_out, dW_out, db_out = temporal_affine_backward(dscores, cache.output)
    dstates = xp.zeros_like(dstates_out)
    dtarget_embedded = xp.zeros(tuple(cache.target_embedding.x.shape) + (cache.target_embedding.W.shape[1],),
                                dtype=dstates.dtype)
    denc_outputs = xp.zeros_like(cache.decoder_steps[0].attention.keys)
    ddecoder = [0, 0, 0, 0, 0, 0, 0]  # dWq, dWk, dwv, dWx_dec, dWh_dec, dbx_dec, dbh_dec, summed over the steps
    dprev = xp.zeros_like(dstates_out[:, 0])  # nothing comes after the last step
    for t in reversed(range(dstates.shape[1])):
        dstates[:, t] = dstates_out[:, t] + dprev
        dtarget_embedded[:, t], dprev, denc_t, *dstep = bahdanau_decoder_step_backward(dstates[:, t],
                                                                                       cache.decoder_steps[t])
        denc_outputs += denc_t
        ddecoder = [total + part for total, part in zip(ddecoder, dstep)]
    dW_tgt_embed = word_embedding_backward(dtarget_embedded, cache.target_embedding)
    dencoder_state = dprev
    dsource_embedded, _, dWx_enc, dWh_enc, dbx_enc, dbh_enc = gru_backward(denc_outputs, cache.encoder,
                                                                           dencoder_state)
    dW_src_embed = word_embedding_backward(dsource_embedded, cache.source_embedding)
    return TranslatorStepGrads(dscores, dW_out, db_out, dstates, *ddecoder, dtarget_embedded, dW_tgt_embed,
                               dencoder_state, denc_outputs, dsource_embedded, dWx_enc, dWh_enc, dbx_enc, dbh_enc,
                               dW_src_embed)
