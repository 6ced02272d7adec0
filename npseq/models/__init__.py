"""Models built from :mod:`npseq.nn`: encoder–decoders (plain, Bahdanau, Luong), language models."""
from .captioning import CONDITIONING_MODES, CaptioningRNN
from .lm import RNNLM
from .ngram import NGramLM
from .seq2seq import (
    CELLS,
    DECODER_KINDS,
    DEMO_SETTINGS,
    MAX_LAYERS,
    MAX_UNITS,
    MAX_VOCAB_SIZE,
    Decoder,
    DecoderState,
    EncoderDecoder,
    LuongAttentionDecoder,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
    StateBridge,
    build_seq2seq,
    check_seq2seq_config,
    make_rnn,
    reorder_state,
)
