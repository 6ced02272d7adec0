"""Recurrent test problems, and the two ways to run a sequence through a cell: the fast
runners of ``npseq.functional.fast_recurrent`` and a loop over the reference steps of
``npseq.functional.recurrent`` (the parity oracle), both returning a :class:`Run`."""
from typing import Any, NamedTuple

import numpy as np

from npseq.functional import fast_recurrent as seq
from npseq.functional import recurrent as ref
from npseq.samples import valid_mask

GATES = {"rnn": 1, "lstm": 4, "gru": 3}
KINDS = [("rnn", False), ("lstm", False), ("gru", False), ("gru", True)]  # (cell, reset_after)


def make_params(kind, D, H, rng, dtype=np.float64, scale=0.5):
    """Weights small enough that no gate saturates: ``{"Wx", "Wh", bias names}``."""
    k = GATES[kind]
    params = {"Wx": scale * rng.standard_normal((D, k * H)), "Wh": scale * rng.standard_normal((H, k * H))}
    if kind == "gru":
        params["bx"] = scale * rng.standard_normal(k * H)
        params["bh"] = scale * rng.standard_normal(k * H)
    else:
        params["b"] = scale * rng.standard_normal(k * H)
    return {name: value.astype(dtype) for name, value in params.items()}


def random_problem(kind, N, T, D, H, seed, dtype=np.float64):
    """``x`` ``(N, T, D)``, ``h0``, ``c0`` ``(N, H)`` and the parameters of a random cell."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, T, D)).astype(dtype)
    h0 = (0.5 * rng.standard_normal((N, H))).astype(dtype)
    c0 = (0.5 * rng.standard_normal((N, H))).astype(dtype)
    return x, h0, c0, make_params(kind, D, H, rng, dtype)


class Run(NamedTuple):
    out: Any      # (N, T, H) outputs
    h_last: Any   # (N, H)
    c_last: Any   # (N, H) for the LSTM, else None
    dx: Any       # (N, T, D)
    dh0: Any      # (N, H)
    dc0: Any      # (N, H) for the LSTM, else None
    dparams: Any  # gradients in the order of the parameters (Wx, Wh, bias(es))
    norms: Any    # (T,) ||dL/dh_t|| over the batch
    cache: Any    # the fast path's cache (None for the reference loop)


def fast_run(kind, x, h0, c0, params, lens, dh, dh_last=None, dc_last=None, reset_after=False) -> Run:
    """Forward, backward data and backward weights through ``npseq.functional.fast_recurrent``."""
    padding = seq.sequence_padding(lens, x.shape[1], x)
    p = list(params.values())
    if kind == "lstm":
        out, cache = seq.lstm_sequence_forward(x, h0, c0, *p, padding)
        data = seq.lstm_sequence_backward_data(dh, cache, dh_last, dc_last, record_norms=True)
        dparams = seq.lstm_sequence_backward_weights([cache], [data.dA])
        return Run(out, cache.h_last, cache.c_last, data.dx, data.dh0, data.dc0, list(dparams), data.step_norms,
                   cache)
    if kind == "gru":
        out, cache = seq.gru_sequence_forward(x, h0, *p, reset_after, padding)
        data = seq.gru_sequence_backward_data(dh, cache, dh_last, record_norms=True)
        dparams = seq.gru_sequence_backward_weights([cache], [data.preact])
    else:
        out, cache = seq.rnn_sequence_forward(x, h0, *p, padding)
        data = seq.rnn_sequence_backward_data(dh, cache, dh_last, record_norms=True)
        dparams = seq.rnn_sequence_backward_weights([cache], [data.dA])
    return Run(out, cache.h_last, None, data.dx, data.dh0, None, list(dparams), data.step_norms, cache)


def reference_run(kind, x, h0, c0, params, lens, dh, dh_last=None, dc_last=None, reset_after=False) -> Run:
    """The same, as a loop over the reference step functions with the padding mix written out:
    :math:`h_t = m_t \\tilde h_t + (1 - m_t) h_{t-1}`, :math:`y_t = m_t \\tilde h_t`, and backward
    :math:`g_t = \\delta_t + m_t dy_t`, step backward of :math:`m_t g_t`,
    :math:`\\delta_{t-1} = dh_{prev} + (1 - m_t) g_t` (the cell state likewise)."""
    N, T, _ = x.shape
    m = np.ones((T, N, 1)) if lens is None else valid_mask(lens, T).T[:, :, None] * 1.0
    p = list(params.values())
    h, c, steps, outs = h0, c0, [], []
    for t in range(T):
        if kind == "lstm":
            new_h, new_c, step = ref.lstm_step_forward(x[:, t], h, c, *p)
            c = m[t] * new_c + (1 - m[t]) * c
        elif kind == "gru":
            new_h, step = ref.gru_step_forward(x[:, t], h, *p, reset_after)
        else:
            new_h, step = ref.rnn_step_forward(x[:, t], h, *p)
        steps.append(step)
        outs.append(m[t] * new_h)
        h = m[t] * new_h + (1 - m[t]) * h
    dparams = [np.zeros_like(value) for value in p]
    dx = np.zeros_like(x)
    norms = np.zeros(T)
    delta_h = np.zeros_like(h0) if dh_last is None else dh_last
    delta_c = None if kind != "lstm" else (np.zeros_like(h0) if dc_last is None else dc_last)
    for t in reversed(range(T)):
        g = delta_h + m[t] * dh[:, t]
        norms[t] = np.linalg.norm(g)
        if kind == "lstm":
            dx_t, dprev_h, dprev_c, *dp = ref.lstm_step_backward(m[t] * g, m[t] * delta_c, steps[t])
            delta_c = dprev_c + (1 - m[t]) * delta_c
        else:
            step_backward = ref.gru_step_backward if kind == "gru" else ref.rnn_step_backward
            dx_t, dprev_h, *dp = step_backward(m[t] * g, steps[t])
        delta_h = dprev_h + (1 - m[t]) * g
        dx[:, t] = dx_t
        dparams = [total + part for total, part in zip(dparams, dp)]
    return Run(np.stack(outs, axis=1), h, c if kind == "lstm" else None, dx, delta_h, delta_c, dparams, norms,
               None)
