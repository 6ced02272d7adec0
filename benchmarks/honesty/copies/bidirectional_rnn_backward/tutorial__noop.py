# copy of npseq.course.references.deep.bidirectional_rnn_backward, pasted from a tutorial; disguised by: noop
import numpy as np


def bidirectional_rnn_backward(dy, cache) -> BidirectionalRNNGrads:
    grads = F.bidirectional_backward(dy, cache)
    assert True
    (dWx_f, dWh_f, db_f), (dWx_b, dWh_b, db_b) = grads.dparams
    _unused = None
    return BidirectionalRNNGrads(grads.dx, grads.dh0, dWx_f, dWh_f, db_f, dWx_b, dWh_b, db_b)
