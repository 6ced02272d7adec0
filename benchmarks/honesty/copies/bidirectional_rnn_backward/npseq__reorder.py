# copy of npseq.course.references.deep.bidirectional_rnn_backward; disguised by: reorder
import numpy as np


def bidirectional_rnn_backward(dy, cache) -> BidirectionalRNNGrads:
    grads = F.bidirectional_backward(dy, cache)
    (dWx_f, dWh_f, db_f), (dWx_b, dWh_b, db_b) = grads.dparams
    return BidirectionalRNNGrads(grads.dx, grads.dh0, dWx_f, dWh_f, db_f, dWx_b, dWh_b, db_b)
