r"""A Bahdanau decoder step as one forward/backward pair: additive attention, then a GRU step.

One step of the decoder of :class:`npseq.models.Seq2SeqAttentionDecoder` with one GRU
layer (reset before), written with npseq's functional pairs; the course's last recurrent
exercise grades a learner's backward against this one. With :math:`h` the previous
state ``prev_h`` ``(N, H)``, :math:`e` the step's embedded input ``x`` ``(N, E)`` and
the encoder outputs :math:`k_s` ``enc_outputs`` ``(N, S, H_enc)``, masked by ``valid_lens``:

.. math::
    c &= \text{additive\_attention}(q = h,\ \text{keys} = \text{values} = k) && (N, H_{enc}) \\
    u &= [c;\ e] && (N, H_{enc} + E) \quad \text{(context first, as in d2l)} \\
    h' &= \text{gru\_step}(u, h) && (N, H)

:math:`h` reaches :math:`h'` along two paths, as the query and as the GRU's state,
and the encoder outputs along two more, as keys and as values; the backward adds
each pair.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .attention import additive_attention_backward, additive_attention_forward
from .recurrent import gru_step_backward, gru_step_forward


class BahdanauDecoderStepCache(NamedTuple):
    attention: Any  # the AdditiveAttentionCache of c (query prev_h, keys = values = enc_outputs)
    gru: Any        # the GRUStepCache of the GRU step on [c; x]
    context: Any    # (N, H_enc) c, the first H_enc features of the GRU's input


def bahdanau_decoder_step_forward(x, prev_h, enc_outputs, valid_lens, Wq, Wk, wv, Wx, Wh, bx, bh):
    r"""One step of a Bahdanau decoder: attend with the previous state, then a GRU step on ``[context; x]``.

    .. math::
        c = \sum_s \alpha_s k_s, \qquad
        \alpha = \operatorname{masked\_softmax}_s\big(w_v \cdot \tanh(h W_q + k_s W_k)\big), \qquad
        h' = \operatorname{GRU}([c;\ x],\ h)

    Args:
        x: ``(N, E)`` the embedded input token; prev_h: ``(N, H)``;
        enc_outputs: ``(N, S, H_enc)`` keys and values; valid_lens: ``None`` or ``(N,)`` in ``[0, S]``;
        Wq: ``(H, A)``; Wk: ``(H_enc, A)``; wv: ``(A,)``;
        Wx: ``(H_enc + E, 3H)``; Wh: ``(H, 3H)``; bx, bh: ``(3H,)`` (GRU, reset before, gates ``[r, z, n]``).

    Returns:
        ``next_h`` ``(N, H)`` and a :class:`BahdanauDecoderStepCache`.
    """
    xp = backend.get_array_module(x)
    context, _, attention = additive_attention_forward(prev_h[:, None, :], enc_outputs, enc_outputs, Wq, Wk, wv,
                                                       valid_lens)
    next_h, gru = gru_step_forward(xp.concatenate([context[:, 0], x], axis=1), prev_h, Wx, Wh, bx, bh)
    return next_h, BahdanauDecoderStepCache(attention, gru, context[:, 0])


def bahdanau_decoder_step_backward(dnext_h, cache: BahdanauDecoderStepCache):
    r"""Backward of :func:`bahdanau_decoder_step_forward`.

    .. math::
        du,\ dh^{gru},\ dW_x,\ dW_h,\ db_x,\ db_h &= \text{gru\_step\_backward}(dh') \\
        dc,\ dx &= du_{[:, :H_{enc}]},\ du_{[:, H_{enc}:]} \\
        dq,\ dk,\ dv,\ dW_q,\ dW_k,\ dw_v &= \text{additive\_attention\_backward}(dc) \\
        dh &= dh^{gru} + dq, \qquad d\,\text{enc\_outputs} = dk + dv

    Args:
        dnext_h: ``(N, H)``.

    Returns:
        ``dx`` ``(N, E)``, ``dprev_h`` ``(N, H)``, ``denc_outputs`` ``(N, S, H_enc)``, ``dWq``, ``dWk``,
        ``dwv``, ``dWx``, ``dWh``, ``dbx``, ``dbh`` (each shaped like its array).
    """
    du, dh_gru, dWx, dWh, dbx, dbh = gru_step_backward(dnext_h, cache.gru)
    enc_size = cache.context.shape[1]
    dcontext, dx = du[:, :enc_size], du[:, enc_size:]
    dquery, dkeys, dvalues, dWq, dWk, dwv = additive_attention_backward(dcontext[:, None, :], cache.attention)
    return dx, dh_gru + dquery[:, 0], dkeys + dvalues, dWq, dWk, dwv, dWx, dWh, dbx, dbh
