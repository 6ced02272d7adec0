"""Checkpoints: a model, its optimizer and everything needed to resume training, in one ``.npz``.

A checkpoint is a NumPy ``.npz`` archive read back with ``allow_pickle=False``
(loading a file never runs code from it). Its entries:

* ``param/<name>``: one array per parameter, named as in ``model.named_parameters()``
  (``param/encoder.embedding.W`` of shape ``(V_src, E)``, ...), copied to the host
  with ``backend.to_numpy``, dtype kept;
* ``optim/<buffer>.<i>``: the optimizer's buffers as its ``state_dict()`` names them
  (Adam: ``optim/exp_avg.3`` and ``optim/exp_avg_sq.3``, shaped like parameter ``i``);
* ``meta.json``: a 1-d ``uint8`` array holding UTF-8 JSON with ``format``,
  ``format_version``, ``npseq_version``, ``config`` (e.g. the keyword arguments of
  :func:`~npseq.models.build_seq2seq`), ``vocabs`` (``{name: Vocab.to_dict()}``),
  ``step``, ``epoch``, ``history``, ``optimizer`` (class, hyperparameters, step
  count), ``rng_states`` (the state of every random generator held by the model's
  modules), ``parameters`` (name -> shape and dtype, for a reader of the file) and
  the caller's ``extra``.

Exact resumption needs, besides parameters and optimizer buffers, every source of
randomness: the dropout generators inside the model (saved automatically, see
:func:`collect_rng_states`), the batch order (``BatchIterator`` draws epoch ``k``
from ``(seed, k)``: call ``batches.set_epoch(checkpoint.epoch)``), and any
generator of the training loop itself (``train_seq2seq`` seeds its
scheduled-sampling generator afresh on every call, so a run with
``sampling_ratio > 0`` does not resume bit-exactly; with ``sampling_ratio=0`` it does).

Writes are atomic: the archive goes to a temporary file in the target's
directory (named after the target and the writing process's id), is flushed and
fsync'ed, then renamed over the target with ``os.replace``; an interrupted save
leaves the previous checkpoint untouched and no temporary file behind. A process
killed outright (SIGKILL, power loss) cannot clean up: the next save to the same
path removes the temporary files of writers that no longer run. A write that
fails (a full disk) raises :class:`CheckpointError` and changes nothing.

Reading trusts nothing in the file. Before any array is allocated, every entry's
``.npy`` header is checked against the entry's size, encrypted or unusually
compressed entries are refused, and the whole archive may not inflate to more
than :data:`MAX_INFLATION` times its size (a zip bomb is refused unread). Then
``meta.json`` is validated in full (types, structure, limits), parameters must be
finite floating-point arrays, and only then is a :class:`Checkpoint` returned.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import secrets
import tokenize
import zipfile

from . import __version__, backend
from .data import Vocab
from .errors import UserError
from .models import build_seq2seq, check_seq2seq_config
from .nn import Module
from .optim import Optimizer

__all__ = ["FORMAT", "FORMAT_VERSION", "Checkpoint", "CheckpointError", "is_npseq_checkpoint", "collect_rng_states",
           "load_checkpoint", "load_seq2seq", "restore_rng_states", "save_checkpoint", "seq2seq_from_checkpoint"]

FORMAT = "npseq-checkpoint"
FORMAT_VERSION = 1
META_KEY = "meta.json"
PARAM_PREFIX = "param/"
OPTIM_PREFIX = "optim/"
# A vocabulary saved under one of these names must have the size the config gives the model.
VOCAB_SIZE_KEYS = {"src": "src_vocab_size", "tgt": "tgt_vocab_size"}
# npseq writes stored (uncompressed) archives, whose entries take as many bytes inflated as in the
# file; deflate shrinks float arrays by a few percent at most. An archive claiming more than this
# many times its own size is a zip bomb, refused before anything is inflated.
MAX_INFLATION = 16
# meta.json holds vocabularies and a few numbers; a larger one was not written by npseq.
MAX_META_BYTES = 64 * 2 ** 20
# Counts (steps, epochs) above this are not ones a run reaches, and would lose precision as floats.
MAX_COUNT = 2 ** 53
_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
# The JSON type of each meta.json entry (after format and format_version, which are checked first).
_META_TYPES = {"npseq_version": (str,), "config": (dict,), "vocabs": (dict,), "step": (int,),
               "epoch": (int, type(None)), "history": (dict, type(None)), "optimizer": (dict, type(None)),
               "rng_states": (dict,), "parameters": (dict,), "extra": (dict,)}


class CheckpointError(UserError, ValueError):
    """A file that is not a usable npseq checkpoint, one that does not fit the model or optimizer,
    or one that could not be written (a full disk).

    ``path`` is the checkpoint's path, ``reason`` says what is wrong; ``str(error)``
    is ``"<path>: <reason>"``.
    """

    def __init__(self, path, reason: str):
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"checkpoint {self.path}: {reason}")


def _few(names, limit: int = 6) -> str:
    """``names`` as a list literal, cut after ``limit`` entries with the total count."""
    names = list(names)
    if len(names) <= limit:
        return repr(names)
    return repr(names[:limit])[:-1] + f", ... ({len(names)} in all)]"


# ------------------------------------------------------------------ JSON values
def _check_json(name: str, value) -> None:
    """``value`` must survive JSON unchanged up to tuples becoming lists; the error names the bad element."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json(f"{name}[{i}]", item)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                # json.dumps would turn an int key into a str one: the dict would not come back equal.
                raise TypeError(f"{name}: expected str keys (JSON objects), got the key {key!r} "
                                f"of type {type(key).__name__}")
            _check_json(f"{name}[{key!r}]", item)
        return
    raise TypeError(f"{name}: expected a JSON value (None, bool, int, float, str, list or dict with str keys), "
                    f"got {type(value).__name__} {value!r}")


def _encode_rng_value(value):
    """A bit generator's state as JSON: arrays (MT19937's key, Philox's counter) become tagged lists."""
    if isinstance(value, dict):
        return {key: _encode_rng_value(item) for key, item in value.items()}
    if isinstance(value, backend.numpy.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, backend.numpy.integer):
        return int(value)
    return value


MAX_RNG_WORDS = 2 ** 16
"""The most numbers a generator state's array may hold: MT19937's key, the largest of NumPy's, has 624."""


def _decode_rng_value(value):
    """Inverse of :func:`_encode_rng_value`.

    A bit generator's arrays are integer words (MT19937's ``uint32`` key, Philox's ``uint64`` counter); a
    saved dtype of any other kind, or a list longer than :data:`MAX_RNG_WORDS`, is refused before anything is
    allocated (``"S2000000000"`` would ask for gigabytes, ``"O"`` for arbitrary objects).
    """
    if isinstance(value, dict):
        if set(value) == {"__ndarray__", "dtype"}:
            words, dtype = value["__ndarray__"], value["dtype"]
            try:
                kind = backend.numpy.dtype(dtype) if isinstance(dtype, str) else None
            except TypeError:
                kind = None
            if kind is None or kind.kind not in "ui" or kind.itemsize > 8:
                raise ValueError(f"a generator's array has dtype {dtype!r:.40}, expected integer words (uint32, "
                                 "uint64)")
            if not isinstance(words, list) or len(words) > MAX_RNG_WORDS:
                raise ValueError(f"a generator's array holds {len(words) if isinstance(words, list) else words!r:.40}"
                                 f" values, expected a list of at most {MAX_RNG_WORDS}")
            return backend.numpy.asarray(words, dtype=kind)
        return {key: _decode_rng_value(item) for key, item in value.items()}
    return value


# -------------------------------------------------------------- random generators
def _named_generators(model: Module) -> dict:
    """``{"<module path>.<attribute>": Generator}`` for every ``numpy.random.Generator`` attribute."""
    generators = {}
    for path, module in model.named_modules():
        for attr, value in vars(module).items():
            if isinstance(value, backend.numpy.random.Generator):
                generators[path + attr] = value
    return generators


def collect_rng_states(model: Module) -> dict:
    """The state of every random generator the model's modules hold, by module path.

    Returns ``{"<module path>.<attribute>": state}`` (e.g. ``"encoder.rnn.dropout_rng"``,
    ``"decoder.attention.rng"``), where ``state`` is a JSON-ready copy of
    ``generator.bit_generator.state``. Modules often share one generator (the
    one ``build_seq2seq`` seeds); it then appears under each path with the same state.
    """
    if not isinstance(model, Module):
        raise TypeError(f"model: expected an npseq Module, got {type(model).__name__}")
    return {path: _encode_rng_value(gen.bit_generator.state) for path, gen in _named_generators(model).items()}


def _rng_updates(model: Module, states: dict) -> list:
    """``[(generator, decoded state)]`` for :func:`restore_rng_states`, after checking every entry."""
    if not isinstance(states, dict):
        raise TypeError(f"states: expected a dict from collect_rng_states, got {type(states).__name__}")
    generators = _named_generators(model)
    missing = [path for path in generators if path not in states]
    unexpected = [path for path in states if path not in generators]
    if missing or unexpected:
        raise KeyError(f"states: expected the generator paths of {type(model).__name__}; "
                       f"missing {missing}, unexpected {unexpected}")
    first = {}
    for path, gen in generators.items():
        state = states[path]
        kind = type(gen.bit_generator).__name__
        if not isinstance(state, dict) or state.get("bit_generator") != kind:
            saved = state.get("bit_generator") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"states[{path!r}]: expected a {kind} state, got {saved!r}")
        first_path, first_state = first.setdefault(id(gen), (path, state))
        if state != first_state:
            raise ValueError(f"states[{path!r}]: the model shares this generator with {first_path!r}, "
                             f"but the two saved states differ")
    updates = []
    for path, state in first.values():
        gen = generators[path]
        try:  # a fresh generator of the same kind takes the state first, so the real one is set without fail
            decoded = _decode_rng_value(state)
            type(gen.bit_generator)().state = decoded
        except (KeyError, TypeError, ValueError, OverflowError, IndexError) as exc:
            raise ValueError(f"states[{path!r}]: not a valid {type(gen.bit_generator).__name__} state "
                             f"({type(exc).__name__}: {exc})") from None
        updates.append((gen, decoded))
    return updates


def restore_rng_states(model: Module, states: dict) -> None:
    """Put every generator of ``model`` back in the state :func:`collect_rng_states` recorded.

    The paths must match exactly and each saved state must be for the generator's
    own bit generator (PCG64, ...); paths that share one generator in ``model``
    must carry the same state. Nothing changes unless every entry checks out.
    """
    for gen, state in _rng_updates(model, states):
        gen.bit_generator.state = state


# ------------------------------------------------------------------------- saving
def _optimizer_parts(optimizer: Optimizer):
    """Split ``optimizer.state_dict()`` into JSON scalars and host arrays (the buffers)."""
    scalars, arrays = {}, {}
    for name, value in optimizer.state_dict().items():
        if hasattr(value, "shape"):
            arrays[name] = backend.to_numpy(value)
        else:
            scalars[name] = list(value) if isinstance(value, tuple) else value
    step_count = scalars.pop("step_count")
    return {"class": type(optimizer).__name__, "step_count": step_count, "hyperparameters": scalars,
            "buffers": list(arrays)}, arrays


def _check_vocab_sizes(config: dict, vocabs: dict):
    """The first ``(name, config key, vocabulary size, configured size)`` that disagree, or ``None``."""
    for name, key in VOCAB_SIZE_KEYS.items():
        if name in vocabs and key in config and len(vocabs[name]) != config[key]:
            return name, key, len(vocabs[name]), config[key]
    return None


def _stale_temporaries(directory: str, basename: str) -> list:
    """Temporary files of earlier saves to ``basename`` whose writer no longer runs (killed mid-save)."""
    pattern = re.compile(rf"\.{re.escape(basename)}\.(\d+)\.[0-9a-f]{{12}}\.tmp")
    stale = []
    for name in os.listdir(directory):
        match = pattern.fullmatch(name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            stale.append(os.path.join(directory, name))
        except (PermissionError, OverflowError):
            pass  # a running process of another user (or no valid pid): not ours to judge
    return stale


def _write_atomically(path: str, arrays: dict) -> None:
    """``numpy.savez`` into a temporary file next to ``path``, fsync it, then rename it over ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    basename = os.path.basename(path)
    for stale in _stale_temporaries(directory, basename):
        try:
            os.unlink(stale)
        except FileNotFoundError:
            pass  # another saver cleaned it first
    tmp = os.path.join(directory, f".{basename}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    # os.open with mode 0o666 lets the umask decide the permissions, as for any new file.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            backend.numpy.savez(file, **arrays)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:  # KeyboardInterrupt included: never leave the temporary file behind
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if hasattr(os, "O_DIRECTORY"):
        # Make the rename itself durable; some file systems refuse to fsync a directory, which is harmless.
        try:
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
        finally:
            os.close(dir_fd)


def save_checkpoint(path, model: Module, *, config: dict, vocabs: dict | None = None,
                    optimizer: Optimizer | None = None, step: int | None = None, epoch: int | None = None,
                    history=None, extra: dict | None = None) -> str:
    """Write ``model`` (and optionally its optimizer, vocabularies and progress) to ``path``, atomically.

    Args:
        path: the file to write (``.npz`` is the natural suffix; none is added).
        model: the :class:`~npseq.nn.Module` whose parameters ``(*)`` are saved as
            ``param/<name>`` and whose generators' states go to ``meta.json``.
        config: a JSON-ready dict that rebuilds the architecture, e.g. the keyword
            arguments of ``build_seq2seq`` (what :func:`load_seq2seq` calls).
        vocabs: ``{name: Vocab}``; ``"src"`` and ``"tgt"`` must have the sizes
            ``config["src_vocab_size"]`` and ``config["tgt_vocab_size"]`` when both are given.
        optimizer: an ``npseq.optim`` optimizer; its buffers are saved as ``optim/<buffer>.<i>``,
            its class, hyperparameters and step count in ``meta.json``.
        step: the training step (default: ``optimizer.step_count``, else 0).
        epoch: completed epochs, to resume the batch order with ``BatchIterator.set_epoch``.
        history: an ``npseq.train.History`` or a dict of per-epoch lists.
        extra: any JSON-ready dict (seeds, a data iterator's epoch, a sampling generator's state).

    Returns:
        ``path`` as a str.
    """
    path = os.fspath(path)
    if not isinstance(model, Module):
        raise TypeError(f"model: expected an npseq Module, got {type(model).__name__}")
    if not isinstance(config, dict):
        raise TypeError(f"config: expected a dict (e.g. the keyword arguments of build_seq2seq), "
                        f"got {type(config).__name__}")
    _check_json("config", config)
    vocabs = {} if vocabs is None else vocabs
    if not isinstance(vocabs, dict):
        raise TypeError(f"vocabs: expected a dict of name -> Vocab, got {type(vocabs).__name__}")
    for name, vocab in vocabs.items():
        if not isinstance(name, str) or not isinstance(vocab, Vocab):
            raise TypeError(f"vocabs[{name!r}]: expected a Vocab under a str name, got {type(vocab).__name__}")
    mismatch = _check_vocab_sizes(config, vocabs)
    if mismatch:
        name, key, size, configured = mismatch
        raise ValueError(f"vocabs[{name!r}]: expected {configured} tokens (config[{key!r}]), got {size}")
    if optimizer is not None and not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizer: expected an npseq.optim optimizer or None, got {type(optimizer).__name__}")
    if step is None:
        step = optimizer.step_count if optimizer is not None else 0
    for name, value in (("step", step), ("epoch", epoch)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{name}: expected an int >= 0, got {value!r}")
    if history is not None:
        history = history.to_dict() if hasattr(history, "to_dict") else history
        if not isinstance(history, dict):
            raise TypeError(f"history: expected a History or a dict of lists, got {type(history).__name__}")
        _check_json("history", history)
    extra = {} if extra is None else extra
    if not isinstance(extra, dict):
        raise TypeError(f"extra: expected a dict, got {type(extra).__name__}")
    _check_json("extra", extra)

    params = {name: backend.to_numpy(param.data) for name, param in model.named_parameters()}
    optim_meta, optim_arrays = _optimizer_parts(optimizer) if optimizer is not None else (None, {})
    meta = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "npseq_version": __version__,
        "config": config, "vocabs": {name: vocab.to_dict() for name, vocab in vocabs.items()},
        "step": step, "epoch": epoch, "history": history, "optimizer": optim_meta,
        "rng_states": collect_rng_states(model),
        "parameters": {name: {"shape": list(a.shape), "dtype": a.dtype.str} for name, a in params.items()},
        "extra": extra,
    }
    # ensure_ascii=False keeps accented tokens readable; NaN/inf (e.g. tokens_per_s) stay as JSON extensions.
    text = json.dumps(meta, ensure_ascii=False)
    arrays = {META_KEY: backend.numpy.frombuffer(text.encode("utf-8"), dtype=backend.numpy.uint8)}
    arrays.update({PARAM_PREFIX + name: value for name, value in params.items()})
    arrays.update({OPTIM_PREFIX + name: value for name, value in optim_arrays.items()})
    try:
        _write_atomically(path, arrays)
    except OSError as exc:  # a full disk, a read-only folder: the file at path is as it was
        raise CheckpointError(path, f"cannot write it ({exc.strerror or exc}); any file there before is "
                                    f"unchanged") from None
    return path


# ------------------------------------------------------------------------ loading
@dataclasses.dataclass
class Checkpoint:
    """What :func:`load_checkpoint` read. Arrays are host NumPy arrays.

    Attributes:
        path: the file it came from.
        params: ``{parameter name: array}`` in the saved order.
        config: the architecture settings given to :func:`save_checkpoint`.
        vocabs: ``{name: Vocab}``.
        step, epoch: training progress (``epoch`` may be ``None``).
        history: ``{statistic: per-epoch list}`` or ``None``.
        optimizer_class: the optimizer's class name, or ``None`` when none was saved.
        optimizer_state: a dict for ``Optimizer.load_state_dict`` (step count,
            hyperparameters, buffers), or ``None``.
        rng_states: ``{generator path: state}`` as :func:`collect_rng_states` returns.
        extra: the caller's dict.
        version: the npseq version that wrote the file.
    """
    path: str
    params: dict
    config: dict
    vocabs: dict
    step: int
    epoch: int | None
    history: dict | None
    optimizer_class: str | None
    optimizer_state: dict | None
    rng_states: dict
    extra: dict
    version: str

    def restore(self, model: Module, optimizer: Optimizer | None = None, *, rng: bool = True) -> None:
        """Load the parameters into ``model`` (and the state into ``optimizer``, and the generators' states).

        Names and shapes must match exactly; values are copied in place in each
        parameter's own dtype and backend (NumPy or CuPy). With ``rng`` (default)
        every random generator in ``model`` is set to its saved state, so dropout
        draws the same masks as the run that was saved. Raises
        :class:`CheckpointError` saying what does not match; nothing changes then.
        """
        if not isinstance(model, Module):
            raise TypeError(f"model: expected an npseq Module, got {type(model).__name__}")
        shapes = {name: param.shape for name, param in model.named_parameters()}
        missing = [name for name in shapes if name not in self.params]
        unexpected = [name for name in self.params if name not in shapes]
        if missing or unexpected:
            raise CheckpointError(self.path, f"its parameters do not match the {type(model).__name__} being "
                                             f"loaded: missing {_few(missing)}, unexpected {_few(unexpected)}")
        wrong = [f"{name}: checkpoint {tuple(value.shape)}, model {shapes[name]}"
                 for name, value in self.params.items() if tuple(value.shape) != shapes[name]]
        if wrong:
            raise CheckpointError(self.path, "parameter shapes differ from the model's (other vocabulary "
                                             "or layer sizes?): " + "; ".join(wrong[:4])
                                  + (f"; ... ({len(wrong)} parameters in all)" if len(wrong) > 4 else ""))
        if optimizer is not None:
            self._check_optimizer(optimizer)
        rng_updates = []
        if rng:
            try:
                rng_updates = _rng_updates(model, self.rng_states)
            except (KeyError, TypeError, ValueError) as exc:
                raise CheckpointError(self.path, f"its random generators do not fit the model's: {exc}") from None
        if optimizer is not None:
            try:  # validates every entry before writing any
                optimizer.load_state_dict(self.optimizer_state)
            except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
                raise CheckpointError(self.path, f"optimizer state does not fit: {exc}") from None
        model.load_state_dict(self.params)
        for gen, state in rng_updates:
            gen.bit_generator.state = state

    def _check_optimizer(self, optimizer: Optimizer) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer: expected an npseq.optim optimizer or None, got {type(optimizer).__name__}")
        if self.optimizer_state is None:
            raise CheckpointError(self.path, "holds no optimizer state (saved without optimizer=)")
        if type(optimizer).__name__ != self.optimizer_class:
            raise CheckpointError(self.path, f"holds {self.optimizer_class} state, cannot load it into "
                                             f"{type(optimizer).__name__}")
        expected = optimizer.state_dict()
        missing = [name for name in expected if name not in self.optimizer_state]
        unexpected = [name for name in self.optimizer_state if name not in expected]
        if missing or unexpected:
            raise CheckpointError(self.path, f"optimizer state does not match this {type(optimizer).__name__} "
                                             f"(other parameters or options?): missing {_few(missing)}, "
                                             f"unexpected {_few(unexpected)}")


def _leading_bytes(path: str, count: int = 4) -> bytes:
    with open(path, "rb") as file:
        return file.read(count)


def _corrupt(path: str, exc: BaseException) -> CheckpointError:
    return CheckpointError(path, f"truncated or corrupt .npz archive ({type(exc).__name__}: {exc})")


def _npy_header(file):
    """``(shape, fortran_order, dtype)`` of the ``.npy`` stream at ``file``'s position (header only)."""
    np = backend.numpy
    version = np.lib.format.read_magic(file)
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise ValueError(f".npy format version {version} (npseq writes 1.0)")
    try:
        return readers[version](file)
    except (SyntaxError, tokenize.TokenError) as exc:  # NumPy parses the header as a Python literal
        raise ValueError(f"unreadable .npy header ({type(exc).__name__}: {exc})") from None


def _check_entries(path: str, infos: list) -> None:
    """Refuse what could cost memory or run code before any entry is inflated (see :data:`MAX_INFLATION`)."""
    names = [info.filename for info in infos]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise CheckpointError(path, f"truncated or corrupt .npz archive (entries {_few(repeated)} appear twice)")
    for info in infos:
        if info.flag_bits & 0x1:
            raise CheckpointError(path, f"entry {info.filename!r} is encrypted; npseq checkpoints never are")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise CheckpointError(path, f"entry {info.filename!r} uses zip compression method "
                                        f"{info.compress_type}; npseq reads stored or deflated entries only")
        if not info.filename.endswith(".npy"):
            raise CheckpointError(path, f"unexpected entries [{info.filename!r}] (expected .npy arrays: "
                                        f"{META_KEY!r}, {PARAM_PREFIX}* and {OPTIM_PREFIX}*)")
    archive_size = os.path.getsize(path)
    inflated = sum(info.file_size for info in infos)
    if inflated > MAX_INFLATION * archive_size:
        raise CheckpointError(path, f"its entries would inflate to {inflated} bytes from a {archive_size}-byte "
                                    f"file, more than {MAX_INFLATION} times its size: refused as a zip bomb")
    meta = [info for info in infos if info.filename == META_KEY + ".npy"]
    if meta and meta[0].file_size > MAX_META_BYTES:
        raise CheckpointError(path, f"{META_KEY!r} takes {meta[0].file_size} bytes, more than the "
                                    f"{MAX_META_BYTES} this npseq reads (MAX_META_BYTES)")


def _read_entry(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo):
    """One ``.npy`` entry as an array, its header checked against the entry's size before allocating."""
    np = backend.numpy
    with archive.open(info) as file:
        shape, fortran_order, dtype = _npy_header(file)
        if dtype.hasobject:
            raise CheckpointError(path, "not an npseq checkpoint: it holds object arrays, which are refused "
                                        "(allow_pickle=False)")
        if any(size < 0 for size in shape):
            raise ValueError(f"entry {info.filename!r}: negative shape {shape}")
        nbytes = math.prod(shape) * dtype.itemsize
        if file.tell() + nbytes != info.file_size:
            raise ValueError(f"entry {info.filename!r}: its header says shape {shape} of {dtype.str} "
                             f"({nbytes} bytes), the entry holds {info.file_size - file.tell()}")
        data = bytearray(file.read(nbytes))  # bounded: nbytes is the entry's checked size
        if len(data) != nbytes or file.read(1):  # reading to the end also checks the CRC
            raise ValueError(f"entry {info.filename!r}: expected {nbytes} bytes of data, got {len(data)}")
    array = np.frombuffer(data, dtype=dtype)
    return array.reshape(shape, order="F" if fortran_order else "C")


def _read_arrays(path: str) -> dict:
    """Every entry of the ``.npz`` at ``path``, each checked before it is read, or a :class:`CheckpointError`."""
    head = _leading_bytes(path, 8)
    if head.startswith(_NPY_MAGIC):
        try:
            with open(path, "rb") as file:
                shape = f" of shape {_npy_header(file)[0]}"
        except (ValueError, OSError, EOFError):
            shape = ""
        raise CheckpointError(path, f"not an npseq checkpoint: a single .npy array{shape}, not a .npz archive")
    if not head.startswith(_ZIP_MAGIC):
        raise CheckpointError(path, f"not an npseq checkpoint: not a .npz archive (it starts with {head!r})")
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            _check_entries(path, infos)
            return {info.filename[:-len(".npy")]: _read_entry(path, archive, info) for info in infos}
    except CheckpointError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
        raise _corrupt(path, exc) from None


def _read_meta(path: str, arrays: dict) -> dict:
    """The parsed ``meta.json`` entry, checked to be an npseq checkpoint this version can read."""
    if META_KEY not in arrays:
        keys = sorted(arrays)
        listed = ", ".join(repr(k) for k in keys[:5]) + (", ..." if len(keys) > 5 else "")
        raise CheckpointError(path, f"not an npseq checkpoint: no {META_KEY!r} entry (entries: {listed or 'none'})")
    raw = arrays.pop(META_KEY)
    try:
        if raw.dtype != backend.numpy.uint8 or raw.ndim != 1:
            raise ValueError(f"expected a 1-d uint8 array, got dtype {raw.dtype} and shape {raw.shape}")
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(path, f"not an npseq checkpoint: {META_KEY!r} is not UTF-8 JSON ({exc})") from None
    except RecursionError:
        raise CheckpointError(path, f"{META_KEY!r} nests deeper than this Python parses; npseq never "
                                    f"writes such a file") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CheckpointError(path, f"not an npseq checkpoint: {META_KEY!r} has format {found!r}, "
                                    f"expected {FORMAT!r}")
    version = meta.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise CheckpointError(path, f"format version {version!r} is not one this npseq {__version__} reads "
                                    f"(1 to {FORMAT_VERSION}); a newer npseq wrote it?")
    missing = [key for key in _META_TYPES if key not in meta]
    if missing:
        raise CheckpointError(path, f"{META_KEY!r} lacks the entries {missing}")
    for key, types in _META_TYPES.items():
        if isinstance(meta[key], bool) or not isinstance(meta[key], types):
            expected = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise CheckpointError(path, f"{META_KEY!r} entry {key!r}: expected {expected}, "
                                        f"got {type(meta[key]).__name__}")
    _check_meta_entries(path, meta)
    return meta


# ------------------------------------------------------------ meta.json, in depth
class _MetaError(Exception):
    """One bad value inside meta.json: ``where`` (a path such as ``optimizer['step_count']``), the problem."""

    def __init__(self, where: str, problem: str):
        super().__init__(f"{META_KEY!r} entry {where}: {problem}")


def _count(where: str, value, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise _MetaError(where, f"expected an int in [0, {MAX_COUNT}]{' or null' if allow_none else ''}, "
                                f"got {_short(value)}")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_number(value) -> bool:
    """A JSON number that converts to a float without overflow (NaN and inf allowed: histories hold them)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) < 2 ** 63
    return isinstance(value, float)


def _check_keys(where: str, value: dict, required: tuple) -> None:
    missing = [key for key in required if key not in value]
    unexpected = [key for key in value if key not in required]
    if missing or unexpected:
        raise _MetaError(where, f"expected the keys {list(required)}, missing {missing}, unexpected "
                                f"{_few(unexpected)}")


def _check_meta_entries(path: str, meta: dict) -> None:
    """Everything inside ``meta.json`` that later code relies on, checked once, before anything is built."""
    try:
        _count("'step'", meta["step"])
        _count("'epoch'", meta["epoch"], allow_none=True)
        for name, entry in meta["parameters"].items():
            where = f"'parameters'[{name!r}]"
            if not isinstance(entry, dict):
                raise _MetaError(where, f"expected a dict with 'shape' and 'dtype', got {_short(entry)}")
            _check_keys(where, entry, ("shape", "dtype"))
            shape = entry["shape"]
            if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                      for s in shape):
                raise _MetaError(where + "['shape']", f"expected a list of ints >= 0, got {_short(shape)}")
            if not isinstance(entry["dtype"], str):
                raise _MetaError(where + "['dtype']", f"expected a dtype string, got {_short(entry['dtype'])}")
        optimizer = meta["optimizer"]
        if optimizer is not None:
            _check_keys("'optimizer'", optimizer, ("class", "step_count", "hyperparameters", "buffers"))
            if not isinstance(optimizer["class"], str):
                raise _MetaError("'optimizer'['class']", f"expected a class name, got {_short(optimizer['class'])}")
            _count("'optimizer'['step_count']", optimizer["step_count"])
            hyper = optimizer["hyperparameters"]
            if not isinstance(hyper, dict):
                raise _MetaError("'optimizer'['hyperparameters']", f"expected a dict, got {_short(hyper)}")
            for name, value in hyper.items():
                if not (_is_number(value) or isinstance(value, bool) or value is None or
                        (isinstance(value, list) and all(_is_number(v) for v in value))):
                    raise _MetaError(f"'optimizer'['hyperparameters'][{name!r}]",
                                     f"expected a number, a bool, null or a list of numbers, got {_short(value)}")
            buffers = optimizer["buffers"]
            if not isinstance(buffers, list) or not all(isinstance(b, str) for b in buffers) \
                    or len(set(buffers)) != len(buffers):
                raise _MetaError("'optimizer'['buffers']", f"expected a list of distinct names, got {_short(buffers)}")
            clash = [name for name in buffers if name in hyper or name == "step_count"]
            if clash:
                raise _MetaError("'optimizer'['buffers']", f"names {clash} are also hyperparameters")
        for name, state in meta["rng_states"].items():
            if not isinstance(state, dict) or not isinstance(state.get("bit_generator"), str) \
                    or not isinstance(state.get("state"), dict):
                raise _MetaError(f"'rng_states'[{name!r}]", "expected a generator state (a dict with "
                                                            f"'bit_generator' and 'state'), got {_short(state)}")
        history = meta["history"]
        for name, values in (history or {}).items():
            if not isinstance(values, list) or not all(_is_number(v) for v in values):
                raise _MetaError(f"'history'[{name!r}]", f"expected a list of numbers, got {_short(values)}")
        for name, state in meta["vocabs"].items():
            if not isinstance(state, dict):
                raise _MetaError(f"'vocabs'[{name!r}]", f"expected a dict from Vocab.to_dict(), got {_short(state)}")
    except _MetaError as exc:
        raise CheckpointError(path, str(exc)) from None


def _checked_floats(path: str, entry: str, value):
    """``value`` must hold finite floating-point numbers: weights and optimizer buffers are never anything else."""
    if value.dtype.kind != "f":
        raise CheckpointError(path, f"{entry}: expected floating-point numbers, got dtype {value.dtype}")
    if not backend.numpy.isfinite(value).all():
        raise CheckpointError(path, f"{entry}: holds NaN or inf (saved from a run that diverged?)")
    return value


def load_checkpoint(path) -> Checkpoint:
    """Read and check the checkpoint at ``path`` (see the module docstring for its layout).

    Raises ``FileNotFoundError`` if there is no file, and :class:`CheckpointError`
    (a ``ValueError`` naming the path and the reason) for a truncated or corrupt
    archive, a file that is not an npseq checkpoint, a newer format, a file beyond
    the size limits, a malformed ``meta.json``, entries that disagree with it,
    non-finite or non-float weights, or a vocabulary whose size disagrees with the config.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint {path}: no such file")
    arrays = _read_arrays(path)
    meta = _read_meta(path, arrays)
    return _checkpoint_from(path, meta, arrays)


def _checkpoint_from(path: str, meta: dict, arrays: dict) -> Checkpoint:
    """The :class:`Checkpoint` that ``meta`` and the ``param/`` and ``optim/`` ``arrays`` describe, checked."""
    params = {key[len(PARAM_PREFIX):]: value for key, value in arrays.items() if key.startswith(PARAM_PREFIX)}
    buffers = {key[len(OPTIM_PREFIX):]: value for key, value in arrays.items() if key.startswith(OPTIM_PREFIX)}
    stray = [key for key in arrays if not key.startswith((PARAM_PREFIX, OPTIM_PREFIX))]
    if stray:
        raise CheckpointError(path, f"unexpected entries {stray} (expected {META_KEY!r}, "
                                    f"{PARAM_PREFIX}* and {OPTIM_PREFIX}*)")
    listed = meta["parameters"]
    if list(listed) != list(params):
        raise CheckpointError(path, f"the param/ entries do not match {META_KEY!r}: missing "
                                    f"{_few(n for n in listed if n not in params)}, unexpected "
                                    f"{_few(n for n in params if n not in listed)}")
    for name, value in params.items():
        if list(value.shape) != listed[name]["shape"] or value.dtype.str != listed[name]["dtype"]:
            raise CheckpointError(path, f"param/{name}: {META_KEY!r} says shape {tuple(listed[name]['shape'])} "
                                        f"dtype {listed[name]['dtype']}, the array has {value.shape} "
                                        f"{value.dtype.str}")
        _checked_floats(path, f"param/{name}", value)
    optim_meta = meta["optimizer"]
    optimizer_state = None
    if optim_meta is None:
        if buffers:
            raise CheckpointError(path, f"optim/ entries {sorted(buffers)} but no optimizer in {META_KEY!r}")
    else:
        if sorted(optim_meta["buffers"]) != sorted(buffers):
            raise CheckpointError(path, f"the optim/ entries {sorted(buffers)} do not match {META_KEY!r}'s "
                                        f"buffer list {sorted(optim_meta['buffers'])}")
        for name, value in buffers.items():
            _checked_floats(path, f"optim/{name}", value)
        optimizer_state = {"step_count": optim_meta["step_count"], **optim_meta["hyperparameters"],
                           **{name: buffers[name] for name in optim_meta["buffers"]}}
    try:
        vocabs = {name: Vocab.from_dict(state) for name, state in meta["vocabs"].items()}
    except (TypeError, ValueError) as exc:
        raise CheckpointError(path, f"a saved vocabulary is inconsistent: {exc}") from None
    mismatch = _check_vocab_sizes(meta["config"], vocabs)
    if mismatch:
        name, key, size, configured = mismatch
        raise CheckpointError(path, f"vocabulary {name!r} has {size} tokens but config[{key!r}] is {configured}")
    return Checkpoint(path=path, params=params, config=meta["config"], vocabs=vocabs, step=meta["step"],
                      epoch=meta["epoch"], history=meta["history"],
                      optimizer_class=None if optim_meta is None else optim_meta["class"],
                      optimizer_state=optimizer_state, rng_states=meta["rng_states"], extra=meta["extra"],
                      version=meta["npseq_version"])


# The tokens a translator needs from its vocabularies: the source ends with <eos>; the target starts
# from <bos> and stops at <eos>. Without them every lookup would silently give <unk>.
SEQ2SEQ_TOKENS = {"src": ("<eos>",), "tgt": ("<bos>", "<eos>")}


def seq2seq_from_checkpoint(checkpoint: Checkpoint, *, rng: bool = True):
    """The encoder–decoder that ``checkpoint`` (from :func:`load_checkpoint`) saved, built and restored.

    Before anything is allocated, the config is checked with
    :func:`~npseq.models.check_seq2seq_config` (types, choices, caps), and the model it
    describes must not be larger than the parameters saved with it (so a small file
    cannot ask for gigabytes); saved ``"src"``/``"tgt"`` vocabularies must hold the
    tokens in :data:`SEQ2SEQ_TOKENS`. Raises :class:`CheckpointError` otherwise.
    """
    try:
        floor = check_seq2seq_config(**checkpoint.config)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(checkpoint.path, f"its config does not build a model with build_seq2seq: {exc}") \
            from None
    if checkpoint.config.get("model") == "transformer":
        # The recurrent settings may default (configs older than them held a recurrent model), but the heads
        # cannot: a model with other heads has weights of the same shapes and computes something else.
        lacking = [key for key in ("num_heads", "ffn_num_hiddens") if key not in checkpoint.config]
        if lacking:
            raise CheckpointError(checkpoint.path, f"its config names a Transformer but not its {' or '.join(lacking)}"
                                                   f", which its weights do not tell")
    saved = sum(value.size for value in checkpoint.params.values())
    if floor > saved:
        raise CheckpointError(checkpoint.path, f"its config describes a model of at least {floor} parameters, "
                                               f"but the file holds {saved}: refused before building it")
    for name, tokens in SEQ2SEQ_TOKENS.items():
        vocab = checkpoint.vocabs.get(name)
        missing = [token for token in tokens if vocab is not None and token not in vocab.token_to_idx]
        if missing:
            raise CheckpointError(checkpoint.path, f"vocabulary {name!r} lacks {missing}, which a translator "
                                                   f"needs")
    model = build_seq2seq(**checkpoint.config)
    checkpoint.restore(model, rng=rng)
    return model


def load_seq2seq(path, *, rng: bool = True):
    """Rebuild the encoder–decoder saved at ``path``: ``build_seq2seq(**config)``, then restore.

    Returns ``(model, checkpoint)``. The model is created on the current backend,
    in training mode (call ``model.eval()`` for inference), with its parameters and
    (unless ``rng=False``) its generators restored. To resume training, build the
    optimizer over ``model.parameters()`` and call ``checkpoint.restore(model, optimizer)``
    (restoring the model a second time changes nothing). See :func:`seq2seq_from_checkpoint`
    for what is checked before the model is built.
    """
    checkpoint = load_checkpoint(path)
    return seq2seq_from_checkpoint(checkpoint, rng=rng), checkpoint


def is_npseq_checkpoint(path: str) -> bool:
    """Whether ``path`` is an archive whose ``meta.json`` names npseq's checkpoint :data:`FORMAT`.

    A zip alone is not enough (a Word document, a wheel, an ``.npz`` of someone else's are zips); only
    the meta entry is read, each check before the next, so a large or hostile file costs nothing.
    """
    try:
        if not _leading_bytes(path, 4).startswith(_ZIP_MAGIC):
            return False
        with zipfile.ZipFile(path) as archive:
            infos = [info for info in archive.infolist() if info.filename == META_KEY + ".npy"]
            _check_entries(path, infos)
            if len(infos) != 1:
                return False
            raw = _read_entry(path, archive, infos[0])
        meta = json.loads(raw.tobytes().decode("utf-8")) if raw.dtype == backend.numpy.uint8 else None
    except (CheckpointError, ValueError, OSError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError,
            RecursionError):
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT
