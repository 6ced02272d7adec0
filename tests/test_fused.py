"""The fused GRU/LSTM kernels (npseq.functional.fused) against the NumPy cells of the fast path
(npseq.functional.fast_recurrent) they replace.

On a GPU the kernels run through CuPy. Everywhere else their CUDA-C bodies are compiled
as C++ (g++) and run on the CPU by :class:`CppElementwiseKernel`, a stand-in for
``cupy.ElementwiseKernel``: one loop over the elements, each parameter bound by
reference as CuPy binds it. So the equations, and the glue around them (column views of
the caches, scratch buffers, which array is written when), are checked on every machine
with a C++ compiler; only CUDA's own compilation waits for a GPU.
"""
import ctypes
import re
import shutil
import subprocess

import numpy as np
import pytest
from optional_tools import skip_reason

from npseq import backend
from npseq.functional import fast_recurrent as S
from npseq.functional import fused
from npseq.gradient_checks import REGISTRY

CPP_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def _names(params):
    return [re.fullmatch(r"\s*T\s+(\w+)\s*", p).group(1) for p in params.split(",")]


def _cpp_source(name, in_params, out_params, body, ctype):
    bind = [f"const T &{p} = ((const T *)ins[{k}])[e];" for k, p in enumerate(_names(in_params))]
    bind += [f"T &{p} = ((T *)outs[{k}])[e];" for k, p in enumerate(_names(out_params))]
    return (f'extern "C" void {name}_{ctype}(long count, void **ins, void **outs) {{\n'
            f"  typedef {ctype} T;\n  for (long e = 0; e < count; ++e) {{\n    " + "\n    ".join(bind)
            + f"\n    {body}\n  }}\n}}\n")


@pytest.fixture(scope="module")
def cpp_kernels(tmp_path_factory):
    """Every kernel of fused._SOURCES compiled as C++ for float and double: {name: CppElementwiseKernel}."""
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip(skip_reason("c++"))  # the kernels' bodies run on the CPU as C++
    folder = tmp_path_factory.mktemp("fused")
    source = "#include <cmath>\nusing std::tanh;\n" + fused._SIGMOID + "".join(
        _cpp_source(name, *spec, ctype) for name, spec in fused._SOURCES.items() for ctype in ("float", "double"))
    (folder / "kernels.cpp").write_text(source)
    library = folder / "kernels.so"
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-o", str(library), str(folder / "kernels.cpp")],
                   check=True, capture_output=True)
    loaded = ctypes.CDLL(str(library))
    return {name: CppElementwiseKernel(loaded, name, *spec) for name, spec in fused._SOURCES.items()}


class CppElementwiseKernel:
    """``kernel(*inputs, *outputs)`` on NumPy arrays, as ``cupy.ElementwiseKernel`` would run it."""

    def __init__(self, library, name, in_params, out_params, body):
        self.library, self.name = library, name
        self.num_inputs, self.num_outputs = len(_names(in_params)), len(_names(out_params))

    def __call__(self, *arrays):
        assert len(arrays) == self.num_inputs + self.num_outputs
        outputs = arrays[self.num_inputs:]
        shape, dtype = outputs[0].shape, outputs[0].dtype
        assert all(o.shape == shape and o.dtype == dtype for o in outputs)
        inputs = [np.ascontiguousarray(np.broadcast_to(a, shape), dtype) for a in arrays[:self.num_inputs]]
        buffers = [np.ascontiguousarray(o) for o in outputs]  # outputs are read too: start from their values
        pointers = lambda bufs: (ctypes.c_void_p * len(bufs))(*[b.ctypes.data for b in bufs])  # noqa: E731
        function = getattr(self.library, f"{self.name}_{CPP_TYPES[dtype]}")
        function(ctypes.c_long(int(np.prod(shape))), pointers(inputs), pointers(buffers))
        for output, buffer in zip(outputs, buffers):
            if buffer is not output:
                output[...] = buffer


@pytest.fixture
def fused_on_the_cpu(cpp_kernels, monkeypatch):
    """Route the cells through the fused code path, its kernels run as C++."""
    monkeypatch.setattr(fused, "enabled", lambda xp: True)
    monkeypatch.setattr(fused, "_kernel", lambda xp, name: cpp_kernels[name])


def _cell_case(cell, dtype, place=lambda array: array):
    """Forward and backward of a padded sequence through the fast path: every result, by name.

    ``cell``: ``"gru"`` (reset gate before the product), ``"gru_reset_after"`` or ``"lstm"``;
    ``place`` puts each host input on the backend under test.
    """
    rng = np.random.default_rng(0)
    n, t, d, h = 3, 5, 4, 6
    gates = 4 if cell == "lstm" else 3
    draw = lambda *shape: place(rng.standard_normal(shape).astype(dtype))  # noqa: E731
    x, h0, c0, dh = draw(n, t, d), draw(n, h), draw(n, h), draw(n, t, h)
    Wx, Wh = 0.5 * draw(d, gates * h), 0.5 * draw(h, gates * h)
    padding = S.sequence_padding(place(np.array([5, 2, 0])), t, x)
    if cell == "lstm":
        b = draw(4 * h)
        out, cache = S.lstm_sequence_forward(x, h0, c0, Wx, Wh, b, padding)
        data = S.lstm_sequence_backward_data(dh, cache, dh_last=draw(n, h), dc_last=draw(n, h))
        grads = {"dx": data.dx, "dh0": data.dh0, "dc0": data.dc0, "dA": data.dA}
        weights = S.lstm_sequence_backward_weights([cache], [data.dA])
    else:
        bx, bh = draw(3 * h), draw(3 * h)
        out, cache = S.gru_sequence_forward(x, h0, Wx, Wh, bx, bh, cell == "gru_reset_after", padding)
        data = S.gru_sequence_backward_data(dh, cache, dh_last=draw(n, h))
        grads = {"dx": data.dx, "dh0": data.dh0, "dax": data.preact.dax, "dah": data.preact.dah}
        weights = S.gru_sequence_backward_weights([cache], [data.preact])
    results = {"out": out, "h_last": cache.h_last, "gates": cache.gates, **grads}
    results.update({f"weight grad {k}": g for k, g in enumerate(weights)})
    return results


@pytest.mark.parametrize("cell", ["gru", "gru_reset_after", "lstm"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_cells_compute_what_the_numpy_cells_compute(cell, dtype, request):
    reference = _cell_case(cell, dtype)
    request.getfixturevalue("fused_on_the_cpu")
    got = _cell_case(cell, dtype)
    tolerance = dict(rtol=1e-12, atol=1e-13) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    assert got.keys() == reference.keys()
    for name in reference:
        assert got[name].dtype == dtype, name
        np.testing.assert_allclose(got[name], reference[name], err_msg=f"{cell}: {name}", **tolerance)


GATED_CHECKS = [name for name in REGISTRY if re.search(r"gru|lstm|GRU|LSTM|EncoderDecoder", name)]


@pytest.mark.slow
@pytest.mark.parametrize("name", GATED_CHECKS)
def test_gradient_checks_pass_with_the_fused_kernels(name, fused_on_the_cpu):
    report = REGISTRY[name](np.random.default_rng([0, list(REGISTRY).index(name)]))
    assert report.ok, report.table()


def test_the_switch_is_off_by_default_and_checked():
    assert not backend.fused_kernels_enabled()
    assert not fused.enabled(np)
    with pytest.raises(TypeError, match="enabled: expected True or False, got 1"):
        backend.set_fused_kernels(1)


def test_numpy_arrays_never_take_the_fused_path():
    backend.set_fused_kernels(True)
    try:
        assert backend.fused_kernels_enabled()
        assert fused.enabled(np) is False
    finally:
        backend.set_fused_kernels(False)


def on_a_gpu(run, fused_kernels):
    """``run()`` on the CuPy backend, with the fused kernels on or off; skips without a GPU."""
    try:
        backend.set_backend("cupy")
    except backend.BackendError:
        pytest.skip(skip_reason("cupy"))
    backend.set_fused_kernels(fused_kernels)
    try:
        return run()
    finally:
        backend.set_fused_kernels(False)
        backend.set_backend("numpy")


@pytest.mark.parametrize("cell", ["gru", "gru_reset_after", "lstm"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_kernels_on_a_gpu_match_the_unfused_gpu_path(cell, dtype):
    def run():
        return {k: backend.to_numpy(v) for k, v in _cell_case(cell, dtype, backend.asarray).items()}

    reference, got = on_a_gpu(run, fused_kernels=False), on_a_gpu(run, fused_kernels=True)
    tolerance = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    for name in reference:
        np.testing.assert_allclose(got[name], reference[name], err_msg=f"{cell}: {name}", **tolerance)


@pytest.mark.parametrize("name", GATED_CHECKS)
def test_gradient_checks_pass_with_the_fused_kernels_on_a_gpu(name):
    seed = [0, list(REGISTRY).index(name)]
    report = on_a_gpu(lambda: REGISTRY[name](np.random.default_rng(seed)), fused_kernels=True)
    assert report.ok, report.table()
