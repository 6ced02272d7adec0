"""Optimizers and gradient clipping, each update written out next to its equation.

An optimizer holds a list of :class:`~npseq.nn.Parameter` and, for each one,
state buffers of the same shape, dtype and backend, allocated once with
``zeros_like``. ``step()`` reads every ``Parameter.grad`` and updates
``Parameter.data`` *in place*: the array object keeps its identity, so a module
(or anything else holding the array) sees the new values without rebinding, and
nothing the size of the model is reallocated per step beyond temporaries (Adam
has none: its intermediates share one scratch array).

Every hyperparameter is stored as a Python ``float``, and bias corrections are
computed in Python: a Python scalar never promotes an array's dtype (NumPy's
weak scalars, likewise CuPy), whereas a NumPy ``float64`` scalar would silently
turn a float32 update into a float64 temporary. A float32 model stays float32.

The update rules are PyTorch's (``torch.optim.SGD``, ``Adagrad`` and ``Adam``
with the options offered here and PyTorch's defaults for the rest: no dampening,
no Nesterov, no learning-rate decay, no AMSGrad), so the same start and the same
gradients give the same trajectory; ``tests/test_optim.py`` checks this in float64.

Shapes: every update is elementwise, so a parameter, its gradient and its
buffers all have the parameter's own shape ``(*)``.
"""
from __future__ import annotations

import math

from . import backend
from ._checks import check_real, check_same_backend
from .errors import InvalidTypeError, InvalidValueError
from .nn.module import Module, Parameter

__all__ = ["OPTIMIZERS", "Optimizer", "SGD", "Adagrad", "Adam", "clip_grad_norm", "clip_grad_value", "make_optimizer"]


def _as_parameter_list(params, where: str) -> list:
    """``params`` (a list or any iterable of Parameters) as a non-empty list without duplicates."""
    if isinstance(params, Module):
        raise InvalidTypeError(f"{where}: params: expected a list of Parameter, got the module "
                               f"{type(params).__name__}; pass module.parameters()")
    if isinstance(params, Parameter):
        raise InvalidTypeError(f"{where}: params: expected a list of Parameter, got a single Parameter; "
                               f"wrap it in a list")
    try:
        params = list(params)
    except TypeError:
        raise InvalidTypeError(f"{where}: params: expected a list of Parameter, "
                               f"got {type(params).__name__}") from None
    if not params:
        raise InvalidValueError(f"{where}: params: expected at least one Parameter, got an empty list")
    seen = {}
    for i, param in enumerate(params):
        if not isinstance(param, Parameter):
            raise InvalidTypeError(f"{where}: params[{i}]: expected a Parameter, got {type(param).__name__}")
        if id(param) in seen:
            # A repeated parameter would be updated twice per step.
            raise InvalidValueError(f"{where}: params[{i}]: expected each Parameter once, "
                                    f"got the same Parameter as params[{seen[id(param)]}]")
        seen[id(param)] = i
    for i, param in enumerate(params[1:], start=1):
        check_same_backend(f"{where}: params[{i}].data", param.data, params[0].data)
    return params


def _positive(name, value) -> float:
    return check_real(name, value, "> 0 and finite", lambda x: 0.0 < x < math.inf)


def _nonnegative(name, value) -> float:
    return check_real(name, value, ">= 0 and finite", lambda x: 0.0 <= x < math.inf)


def _unit_interval(name, value) -> float:
    return check_real(name, value, "in [0, 1)", lambda x: 0.0 <= x < 1.0)


class Optimizer:
    """Base class: a parameter list, per-parameter state buffers and a step counter.

    Subclasses name their hyperparameters (validated by ``_check_hyperparameters``,
    stored as attributes) and their buffers (``self.state[name][i]`` belongs to
    ``self.params[i]``), and implement :meth:`step`.

    Attributes:
        params: the list of :class:`~npseq.nn.Parameter` being optimized.
        state: ``{buffer name: [one array per parameter]}``, e.g. Adam's ``exp_avg``.
        step_count: how many times :meth:`step` has run (Adam's bias correction uses it).
    """

    def __init__(self, params, buffer_names: tuple, **hyperparameters):
        self.params = _as_parameter_list(params, type(self).__name__)
        self._hyperparameter_names = tuple(hyperparameters)
        for name, value in self._check_hyperparameters(**hyperparameters).items():
            setattr(self, name, value)
        self.step_count = 0
        self.state = {name: [backend.get_array_module(p.data).zeros_like(p.data) for p in self.params]
                      for name in buffer_names}

    @staticmethod
    def _check_hyperparameters(**hyperparameters) -> dict:
        raise NotImplementedError

    def step(self) -> None:
        raise NotImplementedError

    def zero_grad(self) -> None:
        """Set every ``Parameter.grad`` to zero, in place."""
        for param in self.params:
            param.grad[...] = 0

    # ---------------------------------------------------------- state dict
    def state_dict(self) -> dict:
        """A flat dict of everything needed to resume exactly.

        Keys: ``"step_count"`` (int), each hyperparameter by name (float, or a
        tuple for Adam's ``betas``), and ``"<buffer>.<i>"`` (a copy of
        ``state[buffer][i]``, same backend and dtype) for every buffer and
        parameter index ``i``. Flat names and plain values, so the dict can be
        saved with ``numpy.savez`` next to a module's ``state_dict``.
        """
        state = {"step_count": self.step_count}
        state.update({name: getattr(self, name) for name in self._hyperparameter_names})
        for name, buffers in self.state.items():
            state.update({f"{name}.{i}": buf.copy() for i, buf in enumerate(buffers)})
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore the step count, the hyperparameters and the buffers saved by :meth:`state_dict`.

        As in PyTorch, the saved hyperparameters replace the current ones (set
        e.g. ``opt.lr`` afterwards to change them). The names must match exactly
        (the same optimizer type, options and number of parameters), every
        buffer must have its parameter's shape, and scalars may come back as
        0-d arrays (as from ``numpy.load``). Buffers are copied in place, keeping
        their dtype and backend. Nothing is changed unless every entry checks out.
        """
        where = f"{type(self).__name__}.load_state_dict"
        expected = list(self.state_dict())
        missing = [name for name in expected if name not in state]
        unexpected = [name for name in state if name not in expected]
        if missing or unexpected:
            raise KeyError(f"{where}: state: expected the names of this optimizer's state_dict; "
                           f"missing {missing}, unexpected {unexpected}")
        step_count = state["step_count"]
        try:
            as_int = int(step_count)
        except (TypeError, ValueError):
            as_int = None
        if as_int is None or as_int != float(step_count) or as_int < 0:
            raise InvalidValueError(f"{where}: state['step_count']: expected an integer >= 0, got {step_count!r}")
        hyperparameters = {}
        for name in self._hyperparameter_names:
            value = state[name]
            if getattr(value, "ndim", 0) > 0:  # a tuple such as betas comes back from numpy.load as an array
                value = tuple(backend.to_numpy(value).tolist())
            hyperparameters[name] = value
        hyperparameters = self._check_hyperparameters(**hyperparameters)
        updates = []
        for name, buffers in self.state.items():
            for i, buf in enumerate(buffers):
                value = state[f"{name}.{i}"]
                shape = tuple(getattr(value, "shape", ()))
                if shape != tuple(buf.shape):
                    raise InvalidValueError(f"{where}: state['{name}.{i}']: expected shape {tuple(buf.shape)} "
                                            f"(the shape of params[{i}]), got {shape}")
                updates.append((buf, value))
        self.step_count = as_int
        for name, value in hyperparameters.items():
            setattr(self, name, value)
        for buf, value in updates:
            xp = backend.get_array_module(buf)
            host_value = backend.to_numpy(value) if xp is backend.numpy else value
            buf[...] = xp.asarray(host_value, dtype=buf.dtype)

    def __repr__(self) -> str:
        options = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._hyperparameter_names)
        return f"{type(self).__name__}({len(self.params)} parameters, {options})"


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum and L2 weight decay (``torch.optim.SGD``).

    For each parameter :math:`p` with gradient :math:`g` (all of shape ``(*)``):

    .. math::
        g' = g + \\lambda p, \\qquad
        v \\leftarrow \\mu v + g', \\qquad
        p \\leftarrow p - \\eta v,

    with :math:`\\eta` = ``lr``, :math:`\\mu` = ``momentum``, :math:`\\lambda` =
    ``weight_decay``. The velocity :math:`v` starts at zero, so the first step uses
    :math:`v = g'` (PyTorch's rule with ``dampening=0``). With ``momentum=0`` there
    is no velocity buffer and the step is :math:`p \\leftarrow p - \\eta g'`.
    ``Parameter.grad`` itself is never modified.

    Args:
        params: a list (or any iterable, e.g. ``model.parameters()``) of Parameters.
        lr: learning rate, > 0.
        momentum: :math:`\\mu \\ge 0` (buffer ``state["momentum_buffer"]`` when > 0).
        weight_decay: :math:`\\lambda \\ge 0`.
    """

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        momentum = _nonnegative("momentum", momentum)
        super().__init__(params, ("momentum_buffer",) if momentum > 0 else (),
                         lr=lr, momentum=momentum, weight_decay=weight_decay)

    @staticmethod
    def _check_hyperparameters(lr, momentum, weight_decay) -> dict:
        return {"lr": _positive("lr", lr), "momentum": _nonnegative("momentum", momentum),
                "weight_decay": _nonnegative("weight_decay", weight_decay)}

    def step(self) -> None:
        """Apply one update to every parameter from its current ``.grad``."""
        self.step_count += 1
        lr, mu, wd = self.lr, self.momentum, self.weight_decay
        for i, param in enumerate(self.params):
            grad = param.grad
            if wd:
                grad = grad + wd * param.data
            if mu:
                velocity = self.state["momentum_buffer"][i]
                velocity *= mu
                velocity += grad
                grad = velocity
            param.data -= lr * grad


class Adagrad(Optimizer):
    """Adagrad: per-element step sizes shrinking with the accumulated squared gradient (``torch.optim.Adagrad``).

    For each parameter :math:`p` with gradient :math:`g` (all of shape ``(*)``):

    .. math::
        g' = g + \\lambda p, \\qquad
        s \\leftarrow s + g' \\odot g', \\qquad
        p \\leftarrow p - \\eta \\, \\frac{g'}{\\sqrt{s} + \\epsilon},

    with :math:`s` (buffer ``state["sum"]``) starting at zero, :math:`\\eta` = ``lr``,
    :math:`\\lambda` = ``weight_decay``; PyTorch's ``lr_decay=0`` and
    ``initial_accumulator_value=0``.

    Args:
        params: a list (or any iterable) of Parameters.
        lr: learning rate, > 0.
        eps: :math:`\\epsilon > 0` (unlike PyTorch, 0 is refused: a parameter whose
            gradient is still all zero would get ``0 / 0 = NaN``).
        weight_decay: :math:`\\lambda \\ge 0`.
    """

    def __init__(self, params, lr=0.01, eps=1e-10, weight_decay=0.0):
        super().__init__(params, ("sum",), lr=lr, eps=eps, weight_decay=weight_decay)

    @staticmethod
    def _check_hyperparameters(lr, eps, weight_decay) -> dict:
        return {"lr": _positive("lr", lr), "eps": _positive("eps", eps),
                "weight_decay": _nonnegative("weight_decay", weight_decay)}

    def step(self) -> None:
        """Apply one update to every parameter from its current ``.grad``."""
        self.step_count += 1
        lr, eps, wd = self.lr, self.eps, self.weight_decay
        xp = backend.get_array_module(self.params[0].data)
        for param, total in zip(self.params, self.state["sum"]):
            grad = param.grad
            if wd:
                grad = grad + wd * param.data
            total += grad * grad
            denom = xp.sqrt(total)
            denom += eps
            param.data -= lr * (grad / denom)


class Adam(Optimizer):
    """Adam with bias correction (``torch.optim.Adam``; L2 weight decay added to the gradient, not AdamW).

    At step :math:`t = 1, 2, \\dots`, for each parameter :math:`p` with gradient
    :math:`g` (all of shape ``(*)``):

    .. math::
        g' &= g + \\lambda p \\\\
        m &\\leftarrow \\beta_1 m + (1 - \\beta_1)\\, g' \\\\
        v &\\leftarrow \\beta_2 v + (1 - \\beta_2)\\, g' \\odot g' \\\\
        \\hat m &= m / (1 - \\beta_1^t), \\qquad \\hat v = v / (1 - \\beta_2^t) \\\\
        p &\\leftarrow p - \\eta \\, \\frac{\\hat m}{\\sqrt{\\hat v} + \\epsilon}

    with :math:`m, v` (buffers ``state["exp_avg"]``, ``state["exp_avg_sq"]``)
    starting at zero and :math:`t` = ``step_count``. As in PyTorch the last line
    is evaluated as :math:`p - \\frac{\\eta}{1-\\beta_1^t} \\cdot
    \\frac{m}{\\sqrt{v} / \\sqrt{1-\\beta_2^t} + \\epsilon}` (the same number).

    Args:
        params: a list (or any iterable) of Parameters.
        lr: learning rate :math:`\\eta > 0`.
        betas: :math:`(\\beta_1, \\beta_2)`, each in ``[0, 1)``.
        eps: :math:`\\epsilon > 0` (0 is refused: an all-zero gradient would give ``0 / 0``).
        weight_decay: :math:`\\lambda \\ge 0`.
    """

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, ("exp_avg", "exp_avg_sq"),
                         lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self._scratch = {}  # dtype -> flat buffer for the update's intermediates (see step)

    @staticmethod
    def _check_hyperparameters(lr, betas, eps, weight_decay) -> dict:
        try:
            beta1, beta2 = betas
        except (TypeError, ValueError):
            raise InvalidValueError(f"betas: expected a pair (beta1, beta2), got {betas!r}") from None
        return {"lr": _positive("lr", lr),
                "betas": (_unit_interval("betas[0]", beta1), _unit_interval("betas[1]", beta2)),
                "eps": _positive("eps", eps), "weight_decay": _nonnegative("weight_decay", weight_decay)}

    def step(self) -> None:
        """Apply one update to every parameter from its current ``.grad``.

        Every intermediate of the update goes through one scratch array per dtype, so a
        step allocates nothing; the arithmetic, and so every rounding, is the one written
        in the class docstring. On the host a large parameter is updated in pieces of
        :data:`ADAM_PIECE` elements: the update is a dozen passes, and over a piece its
        five arrays stay in the core's cache from the first pass to the last, where a
        tensor of millions of elements would stream through memory at every pass.
        """
        self.step_count += 1
        t = self.step_count
        (beta1, beta2), lr, eps, wd = self.betas, self.lr, self.eps, self.weight_decay
        step_size = lr / (1.0 - beta1 ** t)
        sqrt_correction2 = math.sqrt(1.0 - beta2 ** t)
        xp = backend.get_array_module(self.params[0].data)
        piece = ADAM_PIECE if xp is backend.numpy else None
        for param, exp_avg, exp_avg_sq in zip(self.params, self.state["exp_avg"], self.state["exp_avg_sq"]):
            grad = param.grad
            if wd:
                grad = grad + wd * param.data
            for p, g, m, v in _pieces((param.data, grad, exp_avg, exp_avg_sq), piece):
                tmp = self._scratch_like(p)
                m *= beta1
                m += xp.multiply(g, 1.0 - beta1, out=tmp)
                v *= beta2
                xp.multiply(g, g, out=tmp)
                tmp *= 1.0 - beta2
                v += tmp
                denom = xp.sqrt(v, out=tmp)
                denom /= sqrt_correction2
                denom += eps
                update = xp.divide(m, denom, out=tmp)
                update *= step_size
                p -= update

    def _scratch_like(self, data):
        """A scratch view of ``data``'s shape and dtype, carved from one buffer per dtype."""
        buffer = self._scratch.get(data.dtype)
        if buffer is None:
            size = max(p.data.size for p in self.params if p.data.dtype == data.dtype)
            buffer = self._scratch[data.dtype] = backend.get_array_module(data).empty(size, dtype=data.dtype)
        return buffer[:data.size].reshape(data.shape)


ADAM_PIECE = 1 << 15
"""Elements per piece of :meth:`Adam.step` on the host: five float32 pieces of 128 KiB fit a core's L2."""


def _pieces(arrays, piece):
    """The same flat slices of equally shaped ``arrays``, ``piece`` elements at a time (views, so
    in-place updates reach the arrays); the arrays whole when ``piece`` is ``None``, when they are
    no larger, or when one of them is not contiguous (flattening it would copy)."""
    size = arrays[0].size
    if piece is None or size <= piece or not all(a.flags.c_contiguous for a in arrays):
        yield arrays
        return
    flat = [a.reshape(-1) for a in arrays]
    for start in range(0, size, piece):
        yield tuple(a[start:start + piece] for a in flat)


def _sum_of_squares(grads, xp, dtype=None):
    """:math:`\\sum_i \\|g_i\\|^2` as a 0-d array (no host sync), optionally accumulated in ``dtype``."""
    total = 0.0
    for grad in grads:
        flat = grad.ravel() if dtype is None else grad.ravel().astype(dtype)
        total = total + xp.vdot(flat, flat)
    return total


def clip_grad_norm(params, max_norm) -> float:
    """Rescale all gradients together so that their global L2 norm is at most ``max_norm``.

    .. math::
        n = \\sqrt{\\textstyle\\sum_i \\|g_i\\|_2^2}, \\qquad
        c = \\frac{\\text{max\\_norm}}{n + 10^{-6}}, \\qquad
        g_i \\leftarrow c \\, g_i \\ \\text{ for every } i \\text{ if } c < 1,

    as ``torch.nn.utils.clip_grad_norm_`` (that is, when :math:`n` exceeds
    ``max_norm``, give or take the :math:`10^{-6}`). Gradients are scaled in place
    and keep their direction; weights are not touched.

    Args:
        params: a list (or any iterable) of Parameters; each ``.grad`` has the parameter's shape.
        max_norm: > 0; ``float('inf')`` only measures the norm (for logging).

    Returns:
        :math:`n`, the norm *before* clipping, as a Python float (one host sync).

    Raises:
        FloatingPointError: a gradient holds NaN or inf (the message names the
            first such parameter index); gradients and weights are left unchanged,
            so the caller can skip the batch.
    """
    params = _as_parameter_list(params, "clip_grad_norm")
    max_norm = check_real("max_norm", max_norm, "> 0", lambda x: x > 0.0)
    grads = [param.grad for param in params]
    xp = backend.get_array_module(grads[0])
    total_norm = float(xp.sqrt(_sum_of_squares(grads, xp)))
    if not math.isfinite(total_norm):
        for i, grad in enumerate(grads):
            if not bool(xp.isfinite(grad).all()):
                raise FloatingPointError(
                    f"clip_grad_norm: gradients contain NaN or inf (first in params[{i}], shape "
                    f"{tuple(grad.shape)}); gradients and weights were left unchanged. Skip this batch, "
                    f"lower the learning rate or check the loss for overflow")
        # Every entry is finite, so the squares overflowed the gradients' dtype (float32 beyond ~1e19).
        total_norm = float(xp.sqrt(_sum_of_squares(grads, xp, dtype=xp.float64)))
        if not math.isfinite(total_norm):
            raise FloatingPointError("clip_grad_norm: the global gradient norm overflows float64 although "
                                     "every gradient entry is finite; gradients and weights were left unchanged")
    scale = max_norm / (total_norm + 1e-6)
    if scale < 1.0:
        for grad in grads:
            grad *= scale
    return total_norm


def clip_grad_value(params, clip) -> None:
    """Clamp every gradient entry into ``[-clip, clip]``, in place.

    .. math:: g_{i} \\leftarrow \\min(\\max(g_{i}, -c), c) \\quad \\text{elementwise, } c = \\text{clip}

    Unlike :func:`clip_grad_norm` this changes the gradient's direction. NaN
    entries stay NaN.

    Args:
        params: a list (or any iterable) of Parameters; each ``.grad`` has the parameter's shape.
        clip: :math:`c > 0` and finite.
    """
    params = _as_parameter_list(params, "clip_grad_value")
    clip = _positive("clip", clip)
    for param in params:
        xp = backend.get_array_module(param.grad)
        xp.clip(param.grad, -clip, clip, out=param.grad)


OPTIMIZERS = {"adam": Adam, "sgd": SGD, "adagrad": Adagrad}
"""The optimizers by name (what ``npseq train --optimizer`` and its checkpoints call them)."""


def make_optimizer(name: str, params, lr: float) -> Optimizer:
    """The optimizer called ``name`` (a key of :data:`OPTIMIZERS`) over ``params``, with its other defaults."""
    if name not in OPTIMIZERS:
        raise InvalidValueError(f"name: expected one of {tuple(OPTIMIZERS)}, got {name!r}")
    return OPTIMIZERS[name](params, lr=lr)
