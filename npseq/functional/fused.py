"""Fused elementwise kernels for the GRU and LSTM cells on CuPy (optional).

On a GPU every NumPy-style elementwise operation is a kernel launch of its own, and at
the sizes learners use the launches, not the arithmetic, set the pace: the in-place GRU
cell of :mod:`npseq.functional.fast_recurrent` is about a dozen of them per step. The kernels
here compute the same equations one thread per element in one or two launches
(``cupy.ElementwiseKernel``), reading and writing the same cache slices.

They are off by default: ``npseq.backend.set_fused_kernels(True)`` or
``NPSEQ_FUSED=1`` turns them on, and they only ever run on CuPy arrays. They are the GPU
twin of the in-place NumPy cells of ``fast_recurrent.py`` (``_gru_cell``, ``_gru_cell_backward``,
``_lstm_cell``, ``_lstm_cell_backward``), which in turn equal the reference steps of
``recurrent.py``. ``tests/test_fused.py`` compiles the kernels'
bodies as C++ and checks them on the CPU against those expressions and through every
GRU/LSTM gradient check; on a GPU it compares the kernels with the unfused GPU path and
runs the same gradient checks with the kernels on.

The sigmoid is written as in :func:`npseq.functional.sigmoid`,
:math:`\\sigma(a) = (1 + \\tanh(a/2))/2`, which cannot overflow. ``T`` is the arrays'
float type (float32 or float64); CUDA's ``tanh`` is overloaded for both.
"""
from __future__ import annotations

from .. import backend

_SIGMOID = "#define NPSEQ_SIGMOID(a) ((T)0.5 * ((T)1 + tanh((T)0.5 * (a))))\n"

_SOURCES = {
    # r = sigma(a_r + (h W)_r), z = sigma(a_z + (h W)_z), aux = (h W)_n + b_hn,
    # n = tanh(a_n + r * aux), h' = n + z (h - n)
    "gru_forward_reset_after": (
        "T ar, T az, T an, T hr, T hz, T hn, T bhn, T h", "T gr, T gz, T gn, T aux, T out",
        "gr = NPSEQ_SIGMOID(ar + hr); gz = NPSEQ_SIGMOID(az + hz); aux = hn + bhn;"
        " gn = tanh(an + gr * aux); out = gn + gz * (h - gn);"),
    # r, z as above; aux = r * h (n's pre-activation is then aux W_n, a matrix product)
    "gru_gates_reset_before": (
        "T ar, T az, T hr, T hz, T h", "T gr, T gz, T aux",
        "gr = NPSEQ_SIGMOID(ar + hr); gz = NPSEQ_SIGMOID(az + hz); aux = gr * h;"),
    # n = tanh(a_n + (r * h) W_n), h' = n + z (h - n)
    "gru_output_reset_before": (
        "T an, T rhw, T gz, T h", "T gn, T out",
        "gn = tanh(an + rhw); out = gn + gz * (h - gn);"),
    # direct = dh' z, da_n = dh' (1 - z)(1 - n^2), da_z = dh' (1 - z)(h - n) z,
    # da_r = r (1 - r) aux da_n; input side [da_r, da_z, da_n], hidden side [da_r, da_z, r da_n]
    "gru_backward_reset_after": (
        "T dh, T h, T gr, T gz, T gn, T aux", "T dxr, T dxz, T dxn, T dhr, T dhz, T dhn, T direct",
        "direct = dh * gz; T gated = dh - direct; T dan = gated * ((T)1 - gn * gn);"
        " T daz = gated * (h - gn) * gz; T dar = gr * ((T)1 - gr) * aux * dan;"
        " dxr = dar; dxz = daz; dxn = dan; dhr = dar; dhz = daz; dhn = dan * gr;"),
    # direct, da_n and da_z as above (da_r needs the product da_n W_n^T first)
    "gru_backward_reset_before": (
        "T dh, T h, T gz, T gn", "T dxz, T dxn, T direct",
        "direct = dh * gz; T gated = dh - direct; dxn = gated * ((T)1 - gn * gn);"
        " dxz = gated * (h - gn) * gz;"),
    # with drh = da_n W_n^T: da_r = r (1 - r) h drh, and r drh, which flows on to h
    "gru_reset_grad_reset_before": (
        "T drh, T h, T gr", "T dxr, T rdrh",
        "dxr = gr * ((T)1 - gr) * h * drh; rdrh = gr * drh;"),
    # i, f, o = sigma(a_i, a_f, a_o), g = tanh(a_g) (written over the pre-activations),
    # c' = f c + i g, h' = o tanh(c')
    "lstm_forward": (
        "T prev_c", "T gi, T gf, T go, T gg, T tanh_c, T next_c, T next_h",
        "T si = NPSEQ_SIGMOID(gi); T sf = NPSEQ_SIGMOID(gf); T so = NPSEQ_SIGMOID(go); T tg = tanh(gg);"
        " gi = si; gf = sf; go = so; gg = tg; next_c = sf * prev_c + si * tg; tanh_c = tanh(next_c);"
        " next_h = so * tanh_c;"),
    # dc = dc' + dh' o (1 - tanh^2 c'), da_i = dc g i (1 - i), da_f = dc c f (1 - f),
    # da_o = dh' tanh(c') o (1 - o), da_g = dc i (1 - g^2), dc_prev = dc f
    "lstm_backward": (
        "T dnh, T dnc, T gi, T gf, T go, T gg, T prev_c, T tanh_c", "T dai, T daf, T dao, T dag, T dprev_c",
        "T dc = dnc + dnh * go * ((T)1 - tanh_c * tanh_c); dai = dc * gg * gi * ((T)1 - gi);"
        " daf = dc * prev_c * gf * ((T)1 - gf); dao = dnh * tanh_c * go * ((T)1 - go);"
        " dag = dc * gi * ((T)1 - gg * gg); dprev_c = dc * gf;"),
}
"""Each kernel: (inputs, outputs, body) in ElementwiseKernel's terms. ``n``, ``i`` and names
starting with ``_`` are CuPy's own (the size and index of the loop), hence ``gr``, ``gz``,
``gn`` for the GRU gates and ``gi``, ``gf``, ``go``, ``gg`` for the LSTM's."""

_kernels: dict = {}


def enabled(xp) -> bool:
    """Whether the fused kernels run for arrays of module ``xp``: switched on, and CuPy."""
    return xp is not backend.numpy and backend.fused_kernels_enabled()


def _kernel(xp, name: str):
    """The compiled ``ElementwiseKernel`` ``name`` (built once; CuPy compiles it on first launch)."""
    if name not in _kernels:
        in_params, out_params, body = _SOURCES[name]
        _kernels[name] = xp.ElementwiseKernel(in_params, out_params, body, f"npseq_{name}", preamble=_SIGMOID)
    return _kernels[name]


def _columns(a, count: int):
    """The ``count`` equal column blocks of ``a`` ``(N, count*H)`` (views)."""
    width = a.shape[1] // count
    return [a[:, k * width:(k + 1) * width] for k in range(count)]


def gru_cell(ax, h, Wh, bhn, reset_after: bool, gates, hidden_n, out, hh, scratch):
    """The fused :func:`npseq.functional.fast_recurrent._gru_cell` (same arguments and results)."""
    xp = backend.get_array_module(ax)
    hidden = h.shape[1]
    h2 = 2 * hidden
    ar, az, an = _columns(ax, 3)
    r, z, n = _columns(gates, 3)
    if reset_after:
        xp.matmul(h, Wh, out=hh)
        hr, hz, hn = _columns(hh, 3)
        _kernel(xp, "gru_forward_reset_after")(ar, az, an, hr, hz, hn, bhn, h, r, z, n, hidden_n, out)
    else:
        xp.matmul(h, Wh[:, :h2], out=hh[:, :h2])
        hr, hz, _ = _columns(hh, 3)
        _kernel(xp, "gru_gates_reset_before")(ar, az, hr, hz, h, r, z, hidden_n)
        rhw = xp.matmul(hidden_n, Wh[:, h2:], out=scratch[0])
        _kernel(xp, "gru_output_reset_before")(an, rhw, z, h, n, out)
    return out


def gru_cell_backward(dnext_h, h, gates, hidden_n, Wh, reset_after: bool, dax, dah, dprev_h, scratch):
    """The fused :func:`npseq.functional.fast_recurrent._gru_cell_backward` (same arguments and results)."""
    xp = backend.get_array_module(gates)
    hidden = h.shape[1]
    h2 = 2 * hidden
    r, z, n = _columns(gates, 3)
    dxr, dxz, dxn = _columns(dax, 3)
    direct, drh, rdrh = scratch[0], scratch[1], scratch[2]
    if reset_after:
        dhr, dhz, dhn = _columns(dah, 3)
        _kernel(xp, "gru_backward_reset_after")(dnext_h, h, r, z, n, hidden_n, dxr, dxz, dxn, dhr, dhz, dhn, direct)
        xp.matmul(dah, Wh.T, out=dprev_h)
    else:
        _kernel(xp, "gru_backward_reset_before")(dnext_h, h, z, n, dxz, dxn, direct)
        xp.matmul(dxn, Wh[:, h2:].T, out=drh)
        _kernel(xp, "gru_reset_grad_reset_before")(drh, h, r, dxr, rdrh)
        xp.matmul(dax[:, :h2], Wh[:, :h2].T, out=dprev_h)
        dprev_h += rdrh
    dprev_h += direct
    return dprev_h


def lstm_cell(gates, prev_c, tanh_c, next_c, next_h):
    """The fused :func:`npseq.functional.fast_recurrent._lstm_cell` (same arguments and results)."""
    xp = backend.get_array_module(gates)
    _kernel(xp, "lstm_forward")(prev_c, *_columns(gates, 4), tanh_c, next_c, next_h)
    return next_h


def lstm_cell_backward(dnext_h, dnext_c, gates, prev_c, tanh_c, da, dprev_c):
    """The fused :func:`npseq.functional.fast_recurrent._lstm_cell_backward` (same arguments and results)."""
    xp = backend.get_array_module(gates)
    _kernel(xp, "lstm_backward")(dnext_h, dnext_c, *_columns(gates, 4), prev_c, tanh_c, *_columns(da, 4), dprev_c)
    return dprev_c
