"""An encoder and a decoder trained together: :class:`EncoderDecoder`.

It sits above both twins of the recurrent decoder: teacher-forced training runs the fast twin
(:mod:`npseq.models.packed_decoder`), scheduled sampling the reference loop over ``step``
(:meth:`npseq.models.seq2seq.Decoder.forward`), and the searches call ``decoder.step``.
"""
from __future__ import annotations

from .._checks import check_ndim, check_same_backend, check_shape
from ..nn import Module
from .packed_decoder import packed_backward, packed_forward
from .seq2seq import Decoder, DecoderState, check_target_lengths


class EncoderDecoder(Module):
    """An encoder and a decoder trained together with teacher forcing.

    ``forward(src, tgt_in, src_valid_lens=None, sampling_ratio=0.0, rng=None, tgt_valid_lens=None)
    -> logits (N, T, V)``, where ``tgt_valid_lens`` marks the padded target positions, whose logits
    are then zero and cost nothing (see :class:`~npseq.models.seq2seq.Decoder`);
    ``backward(dlogits)`` adds into every parameter's gradient and returns ``None``.
    ``attention_weights`` holds the last forward's weights ``(N, T, S)`` (``None``
    for the plain decoder). ``encode(src, src_valid_lens) -> DecoderState`` and
    ``decoder.step`` are what the search functions call.

    With ``sampling_ratio == 0`` a recurrent decoder (a :class:`~npseq.models.seq2seq.Decoder`) runs
    its fast twin, :func:`~npseq.models.packed_decoder.packed_forward`, which equals its reference
    ``forward``; ``fast_decoder = False`` runs the reference instead. Scheduled sampling, and any
    other decoder (the Transformer's), run the decoder's own ``forward``.
    """

    fast_decoder = True
    """Whether teacher forcing runs a recurrent decoder's fast twin (else its reference loop)."""

    def __init__(self, encoder: Module, decoder: Module):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def encode(self, src, src_valid_lens=None) -> DecoderState:
        reference = self.encoder.embedding.W.data
        check_same_backend("src", src, reference)
        if src_valid_lens is not None:
            check_same_backend("src_valid_lens", src_valid_lens, reference)
        enc_outputs, enc_state = self.encoder(src, src_valid_lens)
        return self.decoder.init_state(enc_outputs, enc_state, src_valid_lens)

    def forward(self, src, tgt_in, src_valid_lens=None, sampling_ratio: float = 0.0, rng=None, tgt_valid_lens=None):
        check_ndim("src", src, 2, "(N, S)")
        check_shape("tgt_in", tgt_in, (src.shape[0], None))
        check_same_backend("tgt_in", tgt_in, self.decoder.embedding.W.data)
        if tgt_valid_lens is not None:  # checked here too, so that an error names the caller's argument
            check_target_lengths("tgt_valid_lens", tgt_valid_lens, tgt_in)
        state = self.encode(src, src_valid_lens)
        fast = self.fast_decoder and sampling_ratio == 0 and isinstance(self.decoder, Decoder)
        if fast:
            logits, _ = packed_forward(self.decoder, tgt_in, state, tgt_valid_lens)
        else:
            logits, _ = self.decoder(tgt_in, state, sampling_ratio, rng, valid_lens=tgt_valid_lens)
        self.save_for_backward(fast)
        return logits

    def backward(self, dlogits):
        fast = self.pop_cache()
        grads = packed_backward(self.decoder, dlogits) if fast else self.decoder.backward(dlogits)
        self.encoder.backward(*grads)

    @property
    def attention_weights(self):
        return self.decoder.attention_weights
