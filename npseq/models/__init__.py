"""Models built from :mod:`npseq.nn`: encoder–decoders (plain, Bahdanau, Luong)."""
from .seq2seq import (
    CELLS, Decoder, DecoderState, EncoderDecoder, LuongAttentionDecoder, Seq2SeqAttentionDecoder,
    Seq2SeqDecoder, Seq2SeqEncoder, StateBridge, make_rnn, reorder_state,
)
