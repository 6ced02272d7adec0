"""npseq: sequence models written by hand in NumPy, every backward next to its math.

The subpackages and the names below load when first used (``npseq.nn``, ``from npseq import functional``), so that
``import npseq`` itself costs nothing: the ``npseq`` command starts, and handles Ctrl-C, before NumPy loads.
"""
import importlib

__version__ = "0.1.0"

_SUBMODULES = ("backend", "checkpoint", "data", "functional", "gradcheck", "metrics", "nn", "optim", "viz")
_NAMES = {"get_array_module": "backend", "set_backend": "backend", "to_numpy": "backend",
          "is_grad_enabled": "grad_mode", "no_grad": "grad_mode"}

__all__ = ["__version__", *_SUBMODULES, *_NAMES]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
