# copy of npseq.course.references.attention.local_p_attention_backward; disguised by: rename
import numpy as np


def local_p_attention_backward(q_0, cache: LocalPAttentionCache):
    tmp_1(q_0, None, cache.pooling.weights, cache.pooling.values)
    val_2, g_3, t_4 = val_5(q_0, cache.pooling)
    val_6, grad_7, val_8 = tmp_9(val_2, cache.scores)
    g_10, grad_11, g_12 = q_13(t_4, cache.position)
    t_14 = val_6 + g_10
    return (t_14, grad_7, g_3, val_8, grad_11, g_12)
