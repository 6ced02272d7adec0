"""Stateful modules: thin wrappers over :mod:`npseq.functional` with a cache stack."""
from .attention import (
    SCORES,
    AdditiveAttention,
    DotProductAttention,
    GeneralAttention,
    LocalAttention,
    Score,
    ScoredAttention,
    register_score,
    score_layer,
    unregister_score,
)
from .layers import Dropout, Embedding, Linear, ReLU
from .loss import MaskedSoftmaxCELoss
from .module import Module, Parameter
from .recurrent import (
    CELLS,
    GRU,
    LSTM,
    RNN,
    Cell,
    RecurrentBase,
    cell_record,
    detach,
    from_torch_state_dict,
    make_rnn,
    make_rnn_parameters,
    register_cell,
    to_torch_state_dict,
    unregister_cell,
)
from .transformer import (
    KeyValueCache,
    MultiHeadAttention,
    PositionWiseFFN,
    ResidualNorm,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
