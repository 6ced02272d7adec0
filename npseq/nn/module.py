"""``Parameter`` and ``Module``: thin state around the functional layer.

A module's ``forward`` calls functional forwards and pushes their caches on a
stack; its ``backward`` pops the most recent cache, calls the functional
backwards, *adds* the parameter gradients into ``Parameter.grad`` and returns the
gradients of the forward's float-array inputs. A module may be called several
times before its backward (one attention layer at every decoder step): each
``backward`` consumes the latest call, last in, first out. Under
``npseq.no_grad()`` nothing is pushed.
"""
from __future__ import annotations

from .. import backend
from .._checks import check_float_array
from ..errors import InvalidValueError
from ..grad_mode import is_grad_enabled


class Parameter:
    """A trainable array ``data`` and its accumulated gradient ``grad`` (same shape, dtype, backend)."""

    __slots__ = ("data", "grad")

    def __init__(self, data):
        check_float_array("data", data)
        self.data = data
        self.grad = backend.get_array_module(data).zeros_like(data)

    @property
    def shape(self) -> tuple:
        return tuple(self.data.shape)

    @property
    def dtype(self):
        return self.data.dtype

    def __repr__(self) -> str:
        return f"Parameter(shape={self.shape}, dtype={self.dtype})"


class Module:
    """Base class of every layer and model.

    Subclasses call ``super().__init__()``, assign their ``Parameter`` and child
    ``Module`` attributes (or lists of modules), and implement ``forward`` and
    ``backward`` with :meth:`save_for_backward` / :meth:`pop_cache`.
    """

    def __init__(self):
        self.training = True
        self._caches = []

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward")

    def backward(self, *douts):
        raise NotImplementedError(f"{type(self).__name__} must implement backward")

    # --------------------------------------------------------- cache stack
    def save_for_backward(self, cache) -> None:
        """Push one forward call's cache (skipped under ``no_grad``)."""
        if is_grad_enabled():
            self._caches.append(cache)

    def pop_cache(self):
        """Pop the most recent forward call's cache; an error if there is none."""
        if not self._caches:
            raise RuntimeError(
                f"{type(self).__name__}.backward: called more often than forward (no cache left); "
                f"each backward consumes one forward call, and forward under no_grad() stores none")
        return self._caches.pop()

    @property
    def num_pending(self) -> int:
        """How many forward calls are waiting for their backward."""
        return len(self._caches)

    def clear_caches(self) -> None:
        """Drop every pending cache here and in all submodules (e.g. after an aborted step)."""
        for module in self.modules():
            module._caches.clear()

    # -------------------------------------------------------- tree walking
    def named_children(self):
        """``(name, module)`` for direct submodules, in assignment order; lists get ``name.i``."""
        for name, value in vars(self).items():
            if name.startswith("_"):
                continue
            if isinstance(value, Module):
                yield name, value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        yield f"{name}.{i}", item

    def modules(self):
        """This module and every submodule, depth first."""
        for _, module in self.named_modules():
            yield module

    def named_modules(self, prefix: str = ""):
        """``(dotted path, module)`` for this module (path ``prefix``, ``""`` by default) and every
        submodule, depth first: a child ``encoder`` is ``"encoder."``, its child ``rnn`` ``"encoder.rnn."``."""
        yield prefix, self
        for name, child in self.named_children():
            yield from child.named_modules(f"{prefix}{name}.")

    def named_parameters(self, prefix: str = ""):
        """``(dotted name, Parameter)`` for every parameter, depth first in assignment order."""
        for name, value in vars(self).items():
            if name.startswith("_"):
                continue
            if isinstance(value, Parameter):
                yield prefix + name, value
        for name, child in self.named_children():
            yield from child.named_parameters(prefix + name + ".")

    def parameters(self) -> list:
        return [param for _, param in self.named_parameters()]

    def zero_grad(self) -> None:
        """Set every ``Parameter.grad`` to zero, in place."""
        for param in self.parameters():
            param.grad[...] = 0

    def train(self, mode: bool = True):
        """Training mode (dropout active) for this module and all submodules; returns self."""
        for module in self.modules():
            module.training = mode
        return self

    def eval(self):
        """Evaluation mode (dropout off); returns self."""
        return self.train(False)

    # ---------------------------------------------------------- state dict
    def state_dict(self) -> dict:
        """``{dotted name: copy of the parameter's data}``, in ``named_parameters`` order."""
        return {name: param.data.copy() for name, param in self.named_parameters()}

    def load_state_dict(self, state: dict, strict: bool = True) -> None:
        """Copy arrays into the parameters (in place, keeping each parameter's dtype and backend).

        Every name must have the parameter's shape. With ``strict`` the names must
        match exactly: a missing or unexpected name is an error that lists them.
        Nothing is written unless every entry checks out.
        """
        params = dict(self.named_parameters())
        if strict:
            missing = [name for name in params if name not in state]
            unexpected = [name for name in state if name not in params]
            if missing or unexpected:
                raise KeyError(f"state: expected the parameter names of {type(self).__name__}; "
                               f"missing {missing}, unexpected {unexpected}")
        updates = []
        for name, value in state.items():
            if name not in params:
                continue
            shape = tuple(getattr(value, "shape", ()))
            if shape != params[name].shape:
                raise InvalidValueError(f"state[{name!r}]: expected shape {params[name].shape}, got {shape}")
            updates.append((params[name], value))
        for param, value in updates:
            xp = backend.get_array_module(param.data)
            host_value = backend.to_numpy(value) if xp is backend.numpy else value
            param.data[...] = xp.asarray(host_value, dtype=param.dtype)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = [f"  ({name}): " + repr(child).replace("\n", "\n  ") for name, child in self.named_children()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ")" if not children else head + "\n" + "\n".join(children) + "\n)"
