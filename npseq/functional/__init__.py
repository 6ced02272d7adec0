"""Pure forward/backward pairs: ``out, cache = f_forward(...)``, ``grads = f_backward(dout, cache)``.

No state and no classes beyond the named caches; the math lives here. The RNN
names and signatures are those of the CS231n assignments, so this package is a
drop-in for their ``rnn_layers.py``.
"""
from .activations import (
    ActivationCache,
    GELUCache,
    MaskedSoftmaxCache,
    gelu_backward,
    gelu_forward,
    log_softmax_backward,
    log_softmax_forward,
    masked_softmax,
    masked_softmax_backward,
    relu_backward,
    relu_forward,
    sequence_mask,
    sigmoid,
    sigmoid_backward,
    sigmoid_forward,
    softmax_backward,
    softmax_forward,
    softmax_where,
    tanh_backward,
    tanh_forward,
)
from .attention import (
    AdditiveAttentionCache,
    AdditiveAttentionProjectedCache,
    AttentionPoolingCache,
    DotAttentionCache,
    GeneralAttentionCache,
    additive_attention_backward,
    additive_attention_forward,
    additive_attention_projected_backward,
    additive_attention_projected_forward,
    attention_pooling_backward,
    attention_pooling_forward,
    dot_attention_backward,
    dot_attention_forward,
    general_attention_backward,
    general_attention_forward,
)
from .conditioned import *  # noqa: F401,F403 (cells conditioned on a vector: every step or first step)
from .decoder_step import BahdanauDecoderStepCache, bahdanau_decoder_step_backward, bahdanau_decoder_step_forward
from .deep import *  # noqa: F401,F403 (stacked and bidirectional layers, wired from the reference cells)
from .kernel_regression import *  # noqa: F401,F403 (Nadaraya-Watson kernel regression: Gaussian score, pooling)
from .layers import (
    AffineCache,
    DropoutCache,
    TemporalAffineCache,
    WordEmbeddingCache,
    affine_backward,
    affine_forward,
    dropout_backward,
    dropout_forward,
    project,
    project_weight_grad,
    temporal_affine_backward,
    temporal_affine_forward,
    word_embedding_backward,
    word_embedding_forward,
)
from .local_attention import *  # noqa: F401,F403 (Luong's local attention: windows, predicted positions, scores)
from .losses import (
    REDUCTIONS,
    MaskedSoftmaxCECache,
    MSECache,
    masked_softmax_ce_backward,
    masked_softmax_ce_forward,
    mse_loss_backward,
    mse_loss_forward,
    softmax_loss,
    temporal_softmax_loss,
)
from .normalization import LayerNormCache, layer_norm_backward, layer_norm_forward
from .pooling import *  # noqa: F401,F403 (masked pooling: the softmax over a mask, then the weighted values)
from .recurrent import *  # noqa: F401,F403 (the CS231n RNN/LSTM names and the GRU pairs)
from .scores import *  # noqa: F401,F403 (score pairs: dot, scaled dot, general, concat, location, gaussian)
from .transformer import *  # noqa: F401,F403 (attention with heads and masks, positions, feed-forward, residual norm)
