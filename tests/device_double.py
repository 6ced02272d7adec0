"""A CuPy stand-in that runs on the CPU: NumPy's arithmetic behind CuPy's rules.

npseq's GPU path cannot be run without a GPU, but most ways to break it can be caught
without one, because they break CuPy's rules rather than its arithmetic:

* a CuPy function or operator given a NumPy array raises ``TypeError``
  (``Unsupported type <class 'numpy.ndarray'>``), so host and device arrays never mix;
* ``numpy.asarray(device_array)`` raises ``TypeError``: nothing goes back to the host
  implicitly; ``.get()`` copies, and ``float()``, ``int()``, ``bool()``, ``.item()`` and
  ``.tolist()`` synchronise and return host values;
* reductions return 0-d device arrays, not scalars, and device arrays have no
  ``__index__`` (``range(array.sum())`` fails on CuPy);
* ``cupy.asarray(host_array)`` copies to the device: later changes to the host array
  do not reach the copy;
* a NumPy function called on device arrays dispatches to CuPy's function of that name;
* NumPy arrays and lists used as indices are copied to the device.

:class:`DeviceArray` wraps a NumPy array and keeps these rules; :func:`install` puts the
double into ``sys.modules`` as ``cupy`` for one test, so that
``npseq.set_backend("cupy")`` selects it. The arithmetic is NumPy's, so a parity test
against the numpy backend can ask for bit-identical results: any difference is a
host/device bug in npseq, not rounding. Every crossing between host and device is
counted in :data:`TRANSFERS`, which lets a test check that training keeps its data on
the device.
"""
from __future__ import annotations

import collections
import sys
import types

import numpy
from numpy.lib.mixins import NDArrayOperatorsMixin

TRANSFERS = collections.Counter()
"""Crossings since the last :func:`install` or ``TRANSFERS.clear()``:
``"to_device"`` (host data copied in) and ``"to_host"`` (values read back)."""

_HOST_INPUT_FUNCTIONS = {"asarray", "array", "asanyarray", "ascontiguousarray"}


def _refuse_host(value, where):
    if isinstance(value, numpy.ndarray):
        raise TypeError(f"Unsupported type {type(value)} (device double: {where} was given a NumPy array)")


def _unwrap(value, where):
    """Device arrays to their NumPy storage; a NumPy array is an error, as in CuPy."""
    if isinstance(value, DeviceArray):
        return value._storage
    _refuse_host(value, where)
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(item, where) for item in value)
    if isinstance(value, dict):
        return {key: _unwrap(item, where) for key, item in value.items()}
    return value


def _unwrap_index(key):
    """Index keys: NumPy arrays and lists are copied to the device first, as CuPy does."""
    if isinstance(key, tuple):
        return tuple(_unwrap_index(part) for part in key)
    if isinstance(key, DeviceArray):
        return key._storage
    if isinstance(key, (numpy.ndarray, list)):
        TRANSFERS["to_device"] += 1
        return numpy.array(key)
    return key


def _wrap(value):
    """NumPy results as device arrays; NumPy scalars become 0-d device arrays."""
    if isinstance(value, numpy.ndarray):
        return DeviceArray(value)
    if isinstance(value, numpy.generic):
        return DeviceArray(numpy.asarray(value))
    if isinstance(value, (list, tuple)):
        return type(value)(_wrap(item) for item in value)
    return value


def _to_host(value):
    TRANSFERS["to_host"] += 1
    return value


class DeviceArray(NDArrayOperatorsMixin):
    """An array "on the device": NumPy storage that only CuPy's operations may touch."""

    __module__ = "cupy"  # npseq.backend tells CuPy arrays by their type's module
    __slots__ = ("_storage",)

    def __init__(self, storage):
        self._storage = storage

    # --- what CuPy refuses
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    # --- explicit and synchronising reads
    def get(self):
        TRANSFERS["to_host"] += 1
        return self._storage.copy()

    def item(self):
        return _to_host(self._storage.item())

    def tolist(self):
        return _to_host(self._storage.tolist())

    def __float__(self):
        return _to_host(float(self._storage))

    def __int__(self):
        return _to_host(int(self._storage))

    def __bool__(self):
        return _to_host(bool(self._storage))

    # --- device computation
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        where = f"{ufunc.__name__}.{method}" if method != "__call__" else ufunc.__name__
        args = _unwrap(inputs, where)
        if out is not None:
            kwargs["out"] = _unwrap(out, where)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        return getattr(MODULE, func.__name__)(*args, **kwargs)

    def __getitem__(self, key):
        return _wrap(self._storage[_unwrap_index(key)])

    def __setitem__(self, key, value):
        if isinstance(value, numpy.ndarray):
            TRANSFERS["to_device"] += 1
        else:
            value = _unwrap(value, "__setitem__")
        self._storage[_unwrap_index(key)] = value

    def __len__(self):
        return len(self._storage)

    def __iter__(self):
        return (_wrap(row) for row in self._storage)

    def __repr__(self):
        return f"device_double.{self._storage!r}"

    def __getattr__(self, name):  # shape, dtype, T, reshape, sum, astype, ...
        if name == "_storage" or name.startswith("__"):  # no __array_interface__ etc.: nothing leaks to NumPy
            raise AttributeError(name)
        attribute = getattr(self._storage, name)
        if callable(attribute):
            return lambda *args, **kwargs: _wrap(attribute(*_unwrap(args, name), **_unwrap(kwargs, name)))
        return _wrap(attribute)


class _Ufunc:
    """A NumPy ufunc that refuses host arrays (``cupy.add``, ``cupy.tanh``, ...)."""

    def __init__(self, ufunc):
        self._ufunc = ufunc

    def __call__(self, *args, **kwargs):
        return _call(self._ufunc, self._ufunc.__name__, args, kwargs)

    def __getattr__(self, method):  # add.at, add.reduce, ...
        bound = getattr(self._ufunc, method)
        return lambda *args, **kwargs: _call(bound, f"{self._ufunc.__name__}.{method}", args, kwargs)


def _call(function, name, args, kwargs):
    out = kwargs.get("out")
    result = function(*_unwrap(args, name), **_unwrap(kwargs, name))
    if out is not None:
        return out
    return _wrap(result)


def _to_device(value, dtype=None, **kwargs):
    """``cupy.asarray``: device arrays pass through; host data is copied in."""
    if isinstance(value, DeviceArray):
        return value if dtype is None or value.dtype == dtype else _wrap(value._storage.astype(dtype))
    TRANSFERS["to_device"] += 1
    return DeviceArray(numpy.array(_unwrap(value, "asarray") if not isinstance(value, numpy.ndarray) else value,
                                   dtype=dtype, copy=True))


class _DoubleModule(types.ModuleType):
    """The ``cupy`` module of the double: NumPy's namespace under CuPy's rules."""

    def __getattr__(self, name):
        if name in _HOST_INPUT_FUNCTIONS:
            return _to_device
        attribute = getattr(numpy, name)
        if isinstance(attribute, numpy.ufunc):
            return _Ufunc(attribute)
        if isinstance(attribute, type) or not callable(attribute):
            return attribute  # dtypes, scalar types and constants are NumPy's own in CuPy too
        return lambda *args, **kwargs: _call(attribute, name, args, kwargs)


MODULE = _DoubleModule("cupy", "The device double standing in for CuPy.")
MODULE.ndarray = DeviceArray
MODULE.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))

def install(monkeypatch):
    """Make ``import cupy`` give the double for the rest of one test."""
    monkeypatch.setitem(sys.modules, "cupy", MODULE)
    TRANSFERS.clear()
    return MODULE
