"""npseq: sequence models written by hand in NumPy, every backward next to its math."""
__version__ = "0.1.0"

from . import backend, checkpoint, data, functional, gradcheck, metrics, nn, optim, viz
from .backend import get_array_module, set_backend, to_numpy
from .grad_mode import is_grad_enabled, no_grad

__all__ = ["__version__", "backend", "checkpoint", "data", "functional", "gradcheck", "metrics", "nn", "optim",
           "viz", "get_array_module", "set_backend", "to_numpy", "is_grad_enabled", "no_grad"]
