"""Models built from :mod:`npseq.nn`: encoder–decoders (plain, Bahdanau, Luong, Transformer), language models,
a captioner."""
from ..nn.recurrent import CELLS, make_rnn
from .build import (
    DECODER_KINDS,
    DEMO_SETTINGS,
    MAX_LAYERS,
    MAX_UNITS,
    MAX_VOCAB_SIZE,
    MODEL_KINDS,
    TRANSFORMER_DEMO_SETTINGS,
    build_seq2seq,
    check_seq2seq_config,
    estimate_seq2seq_memory,
)
from .captioning import CONDITIONING_MODES, CaptioningRNN
from .encoder_decoder import EncoderDecoder
from .lm import RNNLM, estimate_rnnlm_memory
from .ngram import NGramLM
from .seq2seq import (
    Decoder,
    DecoderGrads,
    DecoderState,
    LuongAttentionDecoder,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
    StateBridge,
    reorder_state,
)
from .transformer import (
    MAX_POSITIONS,
    Transformer,
    TransformerDecoder,
    TransformerDecoderState,
    TransformerEncoder,
)
