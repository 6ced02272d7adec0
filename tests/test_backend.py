"""The backend is the only module that imports an array library, and it fails helpfully."""
import ast
import os
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest

import npseq
from npseq import backend

PACKAGE = pathlib.Path(npseq.__file__).parent


def _imported_modules(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield arg.value.split(".")[0]


def test_only_the_backend_imports_numpy_or_cupy():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "backend.py" and path.parent == PACKAGE:
            continue
        found = {"numpy", "cupy", "cupyx"} & set(_imported_modules(path))
        if found:
            offenders.append(f"{path.relative_to(PACKAGE)} imports {sorted(found)}")
    assert not offenders, "ask npseq.backend instead:\n" + "\n".join(offenders)


def test_the_import_scan_would_catch_an_offender(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("import numpy as np\nfrom cupyx import scatter_add\n")
    assert {"numpy", "cupyx"} <= set(_imported_modules(planted))


def test_numpy_is_the_default():
    assert backend.backend_name() == "numpy"
    assert backend.xp is np
    assert backend.get_array_module(np.zeros(2), None, 3.0) is np


def test_to_numpy_and_asarray_round_trip():
    a = np.arange(6.0).reshape(2, 3)
    assert backend.to_numpy(a) is a
    b = backend.asarray([[1, 2]], dtype=np.float32)
    assert isinstance(b, np.ndarray) and b.dtype == np.float32


def test_unknown_backend_is_named():
    with pytest.raises(ValueError, match=r"backend: expected one of \('numpy', 'cupy'\), got 'jax'"):
        backend.set_backend("jax")
    assert backend.backend_name() == "numpy"


def test_cupy_without_cupy_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # as if not installed: import raises ImportError
    with pytest.raises(backend.BackendError,
                       match=r'needs CuPy, which is not installed .*pip install -e "\.\[cuda12\]"'):
        backend.set_backend("cupy")
    assert backend.backend_name() == "numpy"


def test_cupy_without_a_gpu_says_so(monkeypatch):
    def no_driver():
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=no_driver)))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(backend.BackendError, match="needs a CUDA GPU, but CuPy could not reach one: cudaError"):
        backend.set_backend("cupy")
    fake.cuda.runtime.getDeviceCount = lambda: 0
    with pytest.raises(backend.BackendError, match="needs a CUDA GPU, but none is visible"):
        backend.set_backend("cupy")
    assert backend.backend_name() == "numpy"


def test_environment_variable_selects_the_backend():
    env = dict(os.environ, NPSEQ_BACKEND="numpy")
    out = subprocess.run([sys.executable, "-c", "import npseq; print(npseq.backend.backend_name())"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "numpy"
    env["NPSEQ_BACKEND"] = "fortran"
    imported = subprocess.run([sys.executable, "-c", "import npseq"], env=env, capture_output=True, text=True)
    assert imported.returncode == 0  # importing never fails; the first array says why
    bad = subprocess.run([sys.executable, "-c", "import npseq; npseq.nn.Linear(2, 3)"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode != 0
    assert "ValueError: NPSEQ_BACKEND=fortran: backend: expected one of ('numpy', 'cupy'), got 'fortran'" in bad.stderr


def test_scatter_add_accumulates_repeated_indices():
    target = np.zeros((3, 2))
    backend.scatter_add(target, np.array([0, 2, 0]), np.ones((3, 2)))
    np.testing.assert_array_equal(target, [[2, 2], [0, 0], [1, 1]])


def test_default_dtype_is_float32_and_only_floats_are_accepted():
    assert backend.default_dtype == np.float32
    with pytest.raises(ValueError, match="dtype: expected float32 or float64, got int64"):
        backend.set_default_dtype(np.int64)


def test_every_module_compiles_without_warnings():
    """Invalid escapes in docstrings (LaTeX needs doubled backslashes) warn at import time."""
    import warnings
    for path in sorted(PACKAGE.rglob("*.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
