"""A decoder run one ``step`` at a time, as greedy and beam search run it, to hold against the
teacher-forced ``forward`` of the same model."""
from typing import Any, NamedTuple

import numpy as np

import npseq


class Stepped(NamedTuple):
    logits: Any   # (N, T, V): column t from the t-th call of decoder.step
    weights: Any  # (N, T, S) attention weights of each step, or None for a decoder without attention
    states: list  # the decoder state before each step, and after the last (T + 1 states)


def step_by_step(model, src, tgt_in, lens) -> Stepped:
    """Feed ``tgt_in`` ``(N, T)`` to ``model.decoder.step`` one column at a time, under ``no_grad``."""
    with npseq.no_grad():
        state = model.encode(src, lens)
        states, logits, weights = [state], [], []
        for t in range(tgt_in.shape[1]):
            step_logits, state, step_weights = model.decoder.step(tgt_in[:, t], state)
            states.append(state)
            logits.append(step_logits)
            weights.append(step_weights)
    return Stepped(np.stack(logits, axis=1), None if weights[0] is None else np.stack(weights, axis=1), states)
