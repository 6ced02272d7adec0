"""Faults are tests too: tampered checkpoints, fuzzed bytes, SIGKILL mid-save, Ctrl-C mid-epoch, broken pipes,
full disks and memory caps. Each case asserts the outcome a user sees: the exit code, one line on stderr and
no traceback, nothing lost, bounded memory, and an exact resume.

Most cases run the command in this process (``npseq.cli.main``), which is what the console script runs;
the ones about signals, pipes and memory limits need a real child process. A child is never given a fixed
time: the tests wait for a line it prints (or for it to end).
"""
import collections
import copy
import io
import json
import os
import signal
import subprocess
import sys
import warnings
import zipfile

import numpy as np
import pytest
from tiny_runs import TINY, error_lines

import npseq.train
from npseq.checkpoint import CheckpointError, load_checkpoint, seq2seq_from_checkpoint
from npseq.cli import main
from npseq.errors import UserError
from npseq.models import build_seq2seq

# Two layers with dropout: the resumed run must also replay the dropout generator exactly.
RESUMABLE = ["--task", "numbers", "--num-examples", "160", "--num-hiddens", "8", "--embed-size", "4",
             "--num-layers", "2", "--dropout", "0.2", "--batch-size", "32", "--no-progress"]
# 128 of the 160 pairs train, 32 a batch: 4 batches an epoch, as the Ctrl-C cases below count them.


def run(capsys, *args):
    """``npseq ARGS`` in this process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code, err, command, expected_code=2):
    assert code == expected_code, err
    lines = error_lines(err, command)
    assert len(lines) == 1 and lines[0].startswith(f"npseq {command}: ") and "Traceback" not in err, err


def arrays_of(path):
    with np.load(path) as archive:
        return {key: archive[key] for key in archive.files}


def assert_same_arrays(left, right):
    a, b = arrays_of(left), arrays_of(right)
    assert sorted(a) == sorted(b)
    meta_a, meta_b = json.loads(a.pop("meta.json").tobytes()), json.loads(b.pop("meta.json").tobytes())
    differing = [key for key in a if not np.array_equal(a[key], b[key])]
    assert not differing, f"{len(differing)} of {len(a)} arrays differ, e.g. {differing[:3]}"
    assert meta_a["rng_states"] == meta_b["rng_states"] and meta_a["step"] == meta_b["step"]
    assert meta_a["history"]["loss"] == meta_b["history"]["loss"]


def rewrite(source, target, change):
    """Copy the checkpoint ``source`` to ``target`` with ``change(meta, arrays)`` applied (arrays without .npy).

    ``change`` may return a function of the JSON text, applied after encoding (for JSON that no dict makes)."""
    arrays = arrays_of(source)
    meta = json.loads(arrays.pop("meta.json").tobytes())
    edit_text = change(meta, arrays)
    text = json.dumps(meta)
    if callable(edit_text):
        text = edit_text(text)
    np.savez(target, **{"meta.json": np.frombuffer(text.encode(), dtype=np.uint8)}, **arrays)
    return target


# ------------------------------------------------------------ tampered meta.json
def _set(path, value):
    """A change that sets ``meta[path[0]][path[1]]... = value``."""
    def change(meta, arrays):
        node = meta
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


def _first_rng_state(change_state):
    def change(meta, arrays):
        first = next(iter(meta["rng_states"]))
        for name in meta["rng_states"]:  # generators the model shares must carry the same state
            meta["rng_states"][name] = change_state(copy.deepcopy(meta["rng_states"][first]))
    return change


def _nested(depth):
    """``extra["notes"]`` becomes a list nested ``depth`` deep (JSON's parser recurses once per level)."""
    def change(meta, arrays):
        meta["extra"]["notes"] = "NESTED"
        return lambda text: text.replace('"NESTED"', "[" * depth + "]" * depth)
    return change


def _param(name_part, make):
    def change(meta, arrays):
        key = next(k for k in arrays if k.startswith("param/") and name_part in k)
        arrays[key] = make(arrays[key])
        meta["parameters"][key[len("param/"):]] = {"shape": list(arrays[key].shape), "dtype": arrays[key].dtype.str}
    return change


def _rename_reserved(side, old, new):
    def change(meta, arrays):
        vocab = meta["vocabs"][side]
        vocab["reserved_tokens"] = [new if t == old else t for t in vocab["reserved_tokens"]]
        vocab["idx_to_token"] = [new if t == old else t for t in vocab["idx_to_token"]]
    return change


def _only_the_format(meta, arrays):
    meta.clear()
    meta.update(format="npseq-checkpoint", format_version=1)


# (case id, change, the command's expected message fragment). Every case must end with exit 2 and one line.
TAMPERED = [
    ("rng state without its 'state'", _first_rng_state(lambda s: {k: v for k, v in s.items() if k != "state"}),
     "'rng_states'"),
    ("rng state of another generator", _first_rng_state(lambda s: dict(s, bit_generator="MT19937")),
     "random generators do not fit"),
    ("rng state with a str counter", _first_rng_state(lambda s: dict(s, state={"state": "x", "inc": 1})),
     "not a valid PCG64 state"),
    # an array of 2 GB strings (or of arbitrary objects) is refused before it is allocated
    ("rng state of huge strings", _first_rng_state(lambda s: dict(s, state={
        "state": {"__ndarray__": [1, 2, 3], "dtype": "S2000000000"}, "inc": 1})), "expected integer words"),
    ("rng state of objects", _first_rng_state(lambda s: dict(s, state={
        "state": {"__ndarray__": [[1], [2]], "dtype": "O"}, "inc": 1})), "expected integer words"),
    ("rng state of a million words", _first_rng_state(lambda s: dict(s, state={
        "state": {"__ndarray__": [0] * 1_000_000, "dtype": "<u4"}, "inc": 1})), "expected a list of at most"),
    ("num_steps not a list", _set(["extra", "num_steps"], "ten"), "extra['num_steps']"),
    ("num_steps of 10**9", _set(["extra", "num_steps"], [7, 10 ** 9]), "extra['num_steps']"),
    ("num_steps of 0", _set(["extra", "num_steps"], [0, 12]), "extra['num_steps']"),
    ("num_steps of floats", _set(["extra", "num_steps"], [7.5, 12]), "extra['num_steps']"),
    ("task unknown", _set(["extra", "task"], "chess"), "extra['task']"),
    ("vocabs empty", _set(["vocabs"], {}), "holds no source and target vocabularies"),
    ("vocab not a dict", _set(["vocabs", "src"], 7), "'vocabs'['src']"),
    ("vocab token_freqs not a list", _set(["vocabs", "src", "token_freqs"], 5), "vocabulary is inconsistent"),
    ("vocab reserved tokens not str", _set(["vocabs", "tgt", "reserved_tokens"], [1, 2]),
     "vocabulary is inconsistent"),
    ("target vocab without <bos>", _rename_reserved("tgt", "<bos>", "<start>"), "lacks ['<bos>']"),
    ("source vocab without <eos>", _rename_reserved("src", "<eos>", "<end>"), "lacks ['<eos>']"),
    ("config num_layers 10**6", _set(["config", "num_layers"], 10 ** 6), "num_layers: expected an int in [1, 64]"),
    ("config larger than its weights", _set(["config", "num_hiddens"], 60000), "refused before building"),
    ("config vocab size 0", _set(["config", "src_vocab_size"], 0), "vocabulary 'src' has"),
    ("config decoder unknown", _set(["config", "decoder"], "transformer"), "decoder: expected one of"),
    ("config dropout a str", _set(["config", "dropout"], "lots"), "dropout: expected a probability"),
    ("config bidirectional a str", _set(["config", "bidirectional"], "yes"), "bidirectional: expected a bool"),
    ("config key unknown", _set(["config", "heads"], 8), "does not build a model"),
    ("step negative", _set(["step"], -1), "'step'"),
    ("step of 10**30", _set(["step"], 10 ** 30), "'step'"),
    ("epoch a str", _set(["epoch"], "two"), "'epoch'"),
    ("format_version true", _set(["format_version"], True), "format version True"),
    ("optimizer step_count 10**400", _set(["optimizer", "step_count"], 10 ** 400), "'step_count'"),
    ("optimizer lr 10**400", _set(["optimizer", "hyperparameters", "lr"], 10 ** 400), "'lr'"),
    ("optimizer buffers not a list", _set(["optimizer", "buffers"], "exp_avg.0"), "'buffers'"),
    ("optimizer class a number", _set(["optimizer", "class"], 3), "'class'"),
    ("parameters shape a str", _set(["parameters", "decoder.dense.b", "shape"], "big"), "'shape'"),
    ("history of strings", _set(["history", "loss"], ["low"]), "'history'['loss']"),
    ("deeply nested extra", _nested(100_000), "nests deeper"),
    ("meta.json a list", lambda meta, arrays: (meta.clear(), meta.update(format=[1])), "has format [1]"),
    ("meta.json without entries", _only_the_format, "lacks the entries"),
    ("config empty", _set(["config"], {}), "does not build a model"),
    ("integer weights", _param("dense.W", lambda a: a.astype(np.int64)), "expected floating-point numbers"),
    ("bool weights", _param("dense.W", lambda a: a > 0), "expected floating-point numbers"),
    ("string weights", _param("dense.W", lambda a: a.astype("U3")), "expected floating-point numbers"),
    ("NaN weights", _param("dense.W", lambda a: np.full_like(a, np.nan)), "holds NaN or inf"),
    ("inf optimizer buffer", lambda meta, arrays: arrays.update({"optim/exp_avg.0": np.full_like(
        arrays["optim/exp_avg.0"], np.inf)}), "holds NaN or inf"),
]
# Cases only `train --resume` reads (translate ignores the training progress and settings).
TAMPERED_RESUME = [
    ("history with unknown keys", _set(["history", "bleu"], [0.5]), "unknown keys ['bleu']"),
    ("history lists of unequal length", _set(["history", "loss"], [1.0, 2.0]), "all of the same length"),
    ("optimizer unknown", _set(["extra", "optimizer"], "rmsprop"), "extra['optimizer']"),
    ("optimizer a list", _set(["extra", "optimizer"], [1]), "extra['optimizer']"),
    ("task an object", _set(["extra", "task"], {"name": "numbers"}), "extra['task']"),
    ("loss a list", _set(["extra", "loss"], ["sum"]), "extra['loss']"),
    ("clip a str", _set(["extra", "clip"], "big"), "extra['clip']"),
    ("clip negative", _set(["extra", "clip"], -1), "extra['clip']"),
    ("loss unknown", _set(["extra", "loss"], "hinge"), "extra['loss']"),
    ("batch_size 0", _set(["extra", "batch_size"], 0), "extra['batch_size']"),
    ("seed a float", _set(["extra", "seed"], 0.5), "extra['seed']"),
    ("settings missing", lambda meta, arrays: meta["extra"].pop("optimizer"), "cannot be resumed"),
    ("epoch progress negative", _set(["extra", "epoch_progress", "batches_done"], -1), "'batches_done'"),
    ("epoch progress beyond the epoch", _set(["extra", "epoch_progress", "batches_done"], 10 ** 6),
     "stopped after batch 1000000"),
    ("epoch progress unknown key", _set(["extra", "epoch_progress", "speed"], 1), "expected the keys"),
    ("optimizer without lr", lambda meta, arrays: meta["optimizer"]["hyperparameters"].pop("lr"),
     "optimizer state"),
]


@pytest.mark.slow
@pytest.mark.parametrize("change, fragment", [case[1:] for case in TAMPERED], ids=[case[0] for case in TAMPERED])
def test_a_tampered_checkpoint_is_one_line_for_translate(checkpoint, tmp_path, capsys, change, fragment):
    bad = rewrite(checkpoint, tmp_path / "bad.npz", change)
    code, _, err = run(capsys, "translate", bad, "one two")
    assert_one_line(code, err, "translate")
    assert fragment in err


@pytest.mark.slow
@pytest.mark.parametrize("change, fragment", [case[1:] for case in TAMPERED + TAMPERED_RESUME],
                         ids=[case[0] for case in TAMPERED + TAMPERED_RESUME])
def test_a_tampered_checkpoint_is_one_line_for_resume(checkpoint, tmp_path, capsys, change, fragment):
    bad = rewrite(checkpoint, tmp_path / "bad.npz", change)
    before = bad.read_bytes()
    code, _, err = run(capsys, "train", *TINY, "--epochs", "2", "--resume", bad, "--save", bad)
    assert_one_line(code, err, "train")
    assert bad.read_bytes() == before  # refused before anything was written


@pytest.mark.parametrize("change", [case[1] for case in TAMPERED[1:3]], ids=[case[0] for case in TAMPERED[1:3]])
def test_restore_changes_nothing_when_it_raises(checkpoint, tmp_path, change):
    bad = load_checkpoint(rewrite(checkpoint, tmp_path / "bad.npz", change))
    model = build_seq2seq(**bad.config)
    before = {name: p.data.copy() for name, p in model.named_parameters()}
    with pytest.raises(CheckpointError):
        bad.restore(model)
    assert all(np.array_equal(p.data, before[name]) for name, p in model.named_parameters())


# --------------------------------------------------------------- crafted archives
def _npy_bytes(header_shape, data: bytes, dtype="<f4"):
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": header_shape})
    return buffer.getvalue() + data


def _with_entry(source, target, name, payload, compress_type=zipfile.ZIP_STORED, flag_bits=0):
    """``source``'s entries plus (or replacing) ``name`` written raw, with the given zip method and flags."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as archive:
        for info in original.infolist():
            if info.filename != name:
                archive.writestr(info, original.read(info))
        info = zipfile.ZipInfo(name)
        info.compress_type = compress_type
        archive.writestr(info, payload)
    if flag_bits:
        _set_flag_bits(target, name, flag_bits)
    return target


def _set_flag_bits(path, name, bits):
    """Set general-purpose flag bits of entry ``name`` in both of its headers (as an encrypting zip tool would)."""
    data = bytearray(path.read_bytes())
    encoded = name.encode()
    for signature, flag_offset, name_offset in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        start = 0
        while (start := data.find(signature, start)) != -1:
            length = int.from_bytes(data[start + name_offset - (4 if signature == b"PK\x03\x04" else 18):][:2],
                                    "little")
            if data[start + name_offset:start + name_offset + length] == encoded:
                flags = int.from_bytes(data[start + flag_offset:start + flag_offset + 2], "little") | bits
                data[start + flag_offset:start + flag_offset + 2] = flags.to_bytes(2, "little")
            start += 4
    path.write_bytes(bytes(data))


CRAFTED = {
    "a 4 TB .npy header": (lambda: ("param/decoder.dense.b.npy", _npy_bytes((10 ** 12,), b"\0" * 64)), {},
                           "its header says shape (1000000000000,)"),
    "a negative .npy shape": (lambda: ("param/decoder.dense.b.npy", _npy_bytes((-5,), b"")), {}, "negative shape"),
    "an object array": (lambda: ("param/decoder.dense.b.npy", _npy_bytes((1,), b"\0" * 8, dtype="|O")), {},
                        "object arrays, which are refused"),
    "a zip bomb": (lambda: ("param/decoder.dense.b.npy", _npy_bytes((16 * 2 ** 20,), bytes(64 * 2 ** 20))),
                   dict(compress_type=zipfile.ZIP_DEFLATED), "refused as a zip bomb"),
    "bzip2 compression": (lambda: ("param/decoder.dense.b.npy", _npy_bytes((1,), b"\0" * 4)),
                          dict(compress_type=zipfile.ZIP_BZIP2), "compression method 12"),
    "lzma compression": (lambda: ("param/decoder.dense.b.npy", _npy_bytes((1,), b"\0" * 4)),
                         dict(compress_type=zipfile.ZIP_LZMA), "compression method 14"),
    "an encrypted entry": (lambda: ("param/decoder.dense.b.npy", _npy_bytes((1,), b"\0" * 4)), dict(flag_bits=1),
                           "is encrypted"),
    "an entry that is not .npy": (lambda: ("notes.txt", b"hello"), {}, "unexpected entries ['notes.txt']"),
    "a duplicated entry": (lambda: ("meta.json.npy", b""), dict(duplicate=True), "appear twice"),
}


def crafted(checkpoint, target, case):
    make, options, _ = CRAFTED[case]
    name, payload = make()
    if options.get("duplicate"):
        with zipfile.ZipFile(checkpoint) as original:
            entries = [(info.filename, original.read(info)) for info in original.infolist()]
        with zipfile.ZipFile(target, "w") as archive:
            for entry_name, data in entries + entries[:1]:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # zipfile warns of the duplicate it is asked to write
                    archive.writestr(entry_name, data)
        return target
    return _with_entry(checkpoint, target, name, payload, **options)


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_crafted_archive_is_refused_before_it_is_inflated(checkpoint, tmp_path, capsys, case):
    bad = crafted(checkpoint, tmp_path / "bad.npz", case)
    code, _, err = run(capsys, "translate", bad, "one two")
    assert_one_line(code, err, "translate")
    assert CRAFTED[case][2] in err


# ------------------------------------------------------------------ byte fuzzing
def _mutations(data: bytes, rng):
    """One random corruption of ``data``: flipped bytes, a cut, a splice, or a zeroed run."""
    data = bytearray(data)
    kind = rng.integers(4)
    if kind == 0:
        for position in rng.integers(0, len(data), rng.integers(1, 9)):
            data[position] ^= int(rng.integers(1, 256))
    elif kind == 1:
        data = data[:rng.integers(0, len(data))]
    elif kind == 2:
        start = int(rng.integers(0, len(data)))
        data[start:start] = rng.integers(0, 256, int(rng.integers(1, 64))).astype(np.uint8).tobytes()
    else:
        start = int(rng.integers(0, len(data)))
        end = min(len(data), start + int(rng.integers(1, 256)))
        data[start:end] = bytes(end - start)
    return bytes(data)


def _meta_mutation(meta, rng):
    """``meta`` with one random leaf (or container) replaced by a value of another type or a far-off size."""
    paths = []

    def walk(node, path):
        paths.append(path)
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, path + [key])
        elif isinstance(node, list) and node:
            walk(node[int(rng.integers(len(node)))], path + [None])

    walk(meta, [])
    path = paths[int(rng.integers(1, len(paths)))]
    replacements = [None, True, -1, 0, 10 ** 9, 10 ** 400, 0.5, float("nan"), "x", [], {}, [1, "a"], {"a": 1}]
    node = meta
    for key in path[:-1]:
        node = node[key] if key is not None else node[0]
    last = path[-1] if path[-1] is not None else 0
    if isinstance(node, list) and not node:
        return meta
    node[last] = replacements[int(rng.integers(len(replacements)))]
    return meta


def fuzz(checkpoint, tmp_path, capsys, cases: int, seed: int) -> collections.Counter:
    """Seeded fuzz: byte-level corruptions and meta.json value swaps of ``checkpoint``, each read by
    ``translate`` and by ``train --resume``. Every run must end with exit 0, or exit 2 and one line; anything
    else (a traceback, another exit code) fails with its case number. Returns how often each
    ``(command, exit code)`` occurred."""
    rng = np.random.default_rng(seed)
    original = checkpoint.read_bytes()
    path = tmp_path / "fuzzed.npz"
    outcomes = collections.Counter()
    for case in range(cases):
        if case % 2:
            path.write_bytes(_mutations(original, rng))
        else:
            rewrite(checkpoint, path, lambda meta, arrays: _meta_mutation(meta, rng))
        for command in (["translate", path, "one two"],
                        ["train", *TINY, "--epochs", "2", "--resume", path]):
            try:
                code, _, err = run(capsys, *command)
            except BaseException as exc:  # noqa: BLE001 - the fuzz reports what escaped, with its case number
                raise AssertionError(f"fuzz case {case} (seed {seed}), {command[0]}: {exc!r}") from exc
            assert code in (0, 2), (case, command[0], err)
            if code == 2:
                assert_one_line(code, err, command[0])
            outcomes[command[0], code] += 1
    return outcomes


def _assert_fuzz_held(outcomes, cases):
    assert sum(outcomes.values()) == 2 * cases
    # Both commands met files they refused and files they could use: the fuzz reached past the first check.
    assert all(outcomes[command, code] > 0 for command in ("translate", "train") for code in (0, 2)), outcomes


@pytest.mark.slow
def test_a_seeded_fuzz_of_a_small_checkpoint_never_escapes(checkpoint, tmp_path, capsys):
    _assert_fuzz_held(fuzz(checkpoint, tmp_path, capsys, cases=120, seed=19), 120)


@pytest.mark.fuzz_long
def test_a_long_fuzz_of_a_small_checkpoint_never_escapes(checkpoint, tmp_path, capsys):
    _assert_fuzz_held(fuzz(checkpoint, tmp_path, capsys, cases=3000, seed=2019), 3000)


# ------------------------------------------------------------- Ctrl-C and resume
def _interrupt_after(monkeypatch, steps: int):
    """Deliver a real SIGINT to this process while the ``steps``-th training step runs."""
    real_step = npseq.train.train_seq2seq_step
    count = [0]

    def step(*args, **kwargs):
        count[0] += 1
        if count[0] == steps:
            os.kill(os.getpid(), signal.SIGINT)
        return real_step(*args, **kwargs)

    monkeypatch.setattr(npseq.train, "train_seq2seq_step", step)


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("straight") / "straight.npz"
    assert main([*map(str, ["train", *RESUMABLE, "--epochs", "3", "--save", path])]) == 0
    return path


@pytest.mark.parametrize("steps, where", [
    (2, "epoch 0 plus 2 of 4 batches of epoch 1"),   # the first epoch: no finished epoch to fall back to
    (6, "epoch 1 plus 2 of 4 batches of epoch 2"),   # a middle epoch
    (11, "epoch 2 plus 3 of 4 batches of epoch 3"),  # the last epoch
    (4, "epoch 1"),                                  # in an epoch's last step: the epoch ends, then the loop stops
])
def test_ctrl_c_then_resume_equals_a_straight_run(straight_run, tmp_path, capsys, monkeypatch, steps, where):
    path = tmp_path / "interrupted.npz"
    _interrupt_after(monkeypatch, steps)
    code, _, err = run(capsys, "train", *RESUMABLE, "--epochs", "3", "--save", path)
    monkeypatch.undo()
    assert code == 130 and f"interrupted: the checkpoint of {where} is in {path}" in err, err
    assert len(error_lines(err, "train")) == 1
    assert load_checkpoint(path).step == steps  # exactly the finished updates, none half-done
    code, out, err = run(capsys, "train", *RESUMABLE, "--epochs", "3", "--resume", path, "--save", path)
    assert code == 0, err
    assert_same_arrays(path, straight_run)


def test_ctrl_c_of_a_real_process_then_resume_is_exact(tmp_path, capsys):
    path = tmp_path / "run.npz"
    process = subprocess.Popen([sys.executable, "-m", "npseq", "train", *RESUMABLE, "--epochs", "1000",
                                "--save", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().startswith("training a ")  # printed once Ctrl-C is handled
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130 and "Traceback" not in err, err
    saved = load_checkpoint(path)
    epochs = saved.epoch + (1 if saved.extra["epoch_progress"]["batches_done"] else 0) + 1
    code, _, err = run(capsys, "train", *RESUMABLE, "--epochs", epochs, "--resume", path, "--save", path)
    assert code == 0, err
    straight = tmp_path / "straight.npz"
    assert run(capsys, "train", *RESUMABLE, "--epochs", epochs, "--save", straight)[0] == 0
    assert_same_arrays(path, straight)


# Runs one npseq command, printing "started" on stderr as the command begins its work, so that the test
# sends its signal while the command runs, however busy the machine.
ANNOUNCE_START = """
import importlib, sys, npseq.cli as cli
command = importlib.import_module("npseq.commands." + sys.argv[1])
real = command.run
def started(args):
    print("started", file=sys.stderr, flush=True)
    return real(args)
command.run = started
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["translate", "CHECKPOINT"],  # waits for sentences on stdin
    ["lm", "--num-hiddens", "8", "--epochs", "1000", "--no-progress"],
    ["gradcheck"],
    ["demo", "--num-examples", "2000", "--epochs", "500", "--no-progress"],
])
def test_ctrl_c_elsewhere_is_one_line_and_exit_130(checkpoint, tmp_path, command):
    command = [str(checkpoint) if word == "CHECKPOINT" else word for word in command]
    process = subprocess.Popen([sys.executable, "-c", ANNOUNCE_START, *command], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert process.stderr.readline() == "started\n"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert err.strip().splitlines() == [f"npseq {command[0]}: interrupted"]


# Ctrl-C inside a constructor leaves a half-built object whose destructor fails later (zipfile.ZipFile's
# __del__ reads an attribute __init__ never set): the command still ends with its one line.
HALF_BUILT_AT_CTRL_C = """
import os, signal, sys, time, npseq.cli as cli, npseq.commands.gradcheck as command
class HalfBuilt:
    def __del__(self):
        raise AttributeError("'ZipFile' object has no attribute '_writing'")
def interrupted(args):
    global half
    half = HalfBuilt()
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)
command.run = interrupted
sys.exit(cli.main(["gradcheck"]))
"""


def test_a_destructor_failing_after_ctrl_c_adds_nothing_to_the_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-c", HALF_BUILT_AT_CTRL_C], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == 130 and result.stderr.strip().splitlines() == ["npseq gradcheck: interrupted"], \
        result.stderr


# ----------------------------------------------------------------- SIGKILL, disk
SAVE_THEN_HANG = """
import sys, numpy as np
from npseq.cli import main
real_savez = np.savez
def savez_and_hang(file, **arrays):
    real_savez(file, **arrays)
    if 'hang' in sys.argv:
        print('inside the write', flush=True)
        sys.stdin.read()  # killed here, the temporary file written but not yet renamed
np.savez = savez_and_hang
sys.exit(main(sys.argv[1:-1]))
"""


@pytest.mark.slow
def test_sigkill_inside_a_save_keeps_the_old_checkpoint_and_the_next_save_cleans_up(tmp_path):
    path = tmp_path / "ck.npz"
    args = ["train", *TINY, "--save", str(path)]
    first = subprocess.run([sys.executable, "-c", SAVE_THEN_HANG, *args, "--epochs", "1", "once"],
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    before = path.read_bytes()
    process = subprocess.Popen([sys.executable, "-c", SAVE_THEN_HANG, *args, "--epochs", "2", "--resume", str(path),
                                "hang"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for line in process.stdout:
        if line == "inside the write\n":
            break
    process.kill()
    process.wait(timeout=300)
    assert path.read_bytes() == before
    leftovers = [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]
    assert len(leftovers) == 1  # the killed writer's
    load_checkpoint(path)
    again = subprocess.run([sys.executable, "-m", "npseq", *args, "--epochs", "2", "--resume", str(path)],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert sorted(os.listdir(tmp_path)) == ["ck.npz"]


def test_a_full_disk_during_save_is_one_line_and_keeps_the_old_checkpoint(checkpoint, tmp_path, capsys, monkeypatch):
    path = tmp_path / "ck.npz"
    path.write_bytes(checkpoint.read_bytes())
    before = path.read_bytes()
    real_savez = np.savez

    def savez_on_a_full_disk(file, **arrays):
        real_savez(io.BytesIO(), **arrays)
        file.write(b"PK\x03\x04 part of an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", savez_on_a_full_disk)
    code, _, err = run(capsys, "train", *TINY, "--epochs", "2", "--resume", path, "--save", path)
    assert_one_line(code, err, "train")
    assert "No space left on device" in err and "unchanged" in err
    assert path.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["ck.npz"]


# --------------------------------------------------------- data loss, divergence
def test_save_never_replaces_an_input_or_a_special_file(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"go {i % 37} .\tva {i % 41} !\n" for i in range(700)), encoding="utf-8")
    before = corpus.read_bytes()
    notes = tmp_path / "notes.txt"
    notes.write_text("not a checkpoint")
    report = tmp_path / "report.docx"  # a zip, as every Word document, a wheel or an .npz of someone else's is
    with zipfile.ZipFile(report, "w") as archive:
        archive.writestr("word/document.xml", "<w:document/>")
    other_npz = tmp_path / "arrays.npz"
    np.savez(other_npz, weights=np.zeros(3))
    zips = {path: path.read_bytes() for path in (report, other_npz)}
    cases = [(["--data", corpus, "--num-examples", "600"], corpus, "is the --data file of this run"),
             (["--task", "numbers", "--num-examples", "120"], report, "is not an npseq checkpoint"),
             (["--task", "numbers", "--num-examples", "120"], other_npz, "is not an npseq checkpoint"),
             (["--task", "numbers", "--num-examples", "120"], "/dev/null", "is not a regular file"),
             (["--task", "numbers", "--num-examples", "120"], tmp_path, "is not a regular file"),
             (["--task", "numbers", "--num-examples", "120"], notes, "is not an npseq checkpoint"),
             (["--task", "numbers", "--num-examples", "120"], tmp_path / "no" / "ck.npz", "does not exist")]
    for data, target, message in cases:
        code, _, err = run(capsys, "train", *data, "--epochs", "1", "--no-progress", "--save", target)
        assert_one_line(code, err, "train")
        assert message in err and "--save" in err
    assert corpus.read_bytes() == before and notes.read_text() == "not a checkpoint"
    assert all(path.read_bytes() == content for path, content in zips.items())
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--task", "numbers", "--epochs", "1", "--save", ""])
    assert exit_info.value.code == 2
    assert "argument --save: expected a file path, got an empty string" in capsys.readouterr().err
    forced = run(capsys, "train", "--task", "numbers", "--num-examples", "120", "--epochs", "1", "--no-progress",
                 "--num-hiddens", "8", "--embed-size", "4", "--num-layers", "1", "--save", notes, "--force")
    assert forced[0] == 0 and load_checkpoint(notes).epoch == 1


def test_attention_png_replaces_only_a_png_unless_forced(checkpoint, tmp_path, capsys):
    notes, picture = tmp_path / "notes.txt", tmp_path / "attention.png"
    notes.write_text("a learner's notes")
    code, out, err = run(capsys, "translate", checkpoint, "one two", "--attention-png", notes)
    assert_one_line(code, err, "translate")
    assert "is not a PNG; refusing to replace it" in err and out == "" and notes.read_text() == "a learner's notes"
    for _ in range(2):  # a picture drawn before is npseq's own: drawn again without a word
        code, out, err = run(capsys, "translate", checkpoint, "one two", "--attention-png", picture)
        assert code == 0 and err == "" and picture.read_bytes().startswith(b"\x89PNG")
    several = tmp_path / "many.png"
    (tmp_path / "many-2.png").write_text("not a picture")  # the second sentence's picture: checked before the first
    code, out, err = run(capsys, "translate", checkpoint, "one", "two", "--attention-png", several)
    assert_one_line(code, err, "translate")
    assert "many-2.png exists and is not a PNG" in err and not (tmp_path / "many-1.png").exists()
    code, out, err = run(capsys, "translate", checkpoint, "one two", "--attention-png", notes, "--force")
    assert code == 0 and notes.read_bytes().startswith(b"\x89PNG")


def test_attention_png_into_a_missing_folder_is_one_line(checkpoint, capsys):
    code, out, err = run(capsys, "translate", checkpoint, "one two", "--attention-png", "nowhere/attention.png")
    assert_one_line(code, err, "translate")
    assert "--attention-png: the folder 'nowhere' does not exist" in err and out == ""


@pytest.mark.parametrize("error, words", [
    (PermissionError(13, "Permission denied", "corpus.txt"), "Permission denied: 'corpus.txt'"),
    (IsADirectoryError(21, "Is a directory", "attention.png"), "Is a directory: 'attention.png'"),
    (UnicodeEncodeError("ascii", "é", 0, 1, "ordinal not in range(128)"), "use UTF-8 (PYTHONIOENCODING=utf-8)"),
    (MemoryError(), "out of memory"),
    (FloatingPointError("overflow encountered in exp"), "the numbers overflowed (overflow encountered in exp)"),
])
def test_what_the_machine_refuses_is_one_line_not_a_traceback(capsys, monkeypatch, error, words):
    import npseq.commands.gradcheck as command

    def refused(args):
        raise error

    monkeypatch.setattr(command, "run", refused)
    code, _, err = run(capsys, "gradcheck")
    assert_one_line(code, err, "gradcheck")
    assert words in err


def test_a_warning_is_one_line_naming_the_command(tmp_path):
    # A real process, where Python's own format would show the warning's file, line number and source line.
    result = subprocess.run([sys.executable, "-m", "npseq", "train", *TINY, "--epochs", "1"], capture_output=True,
                            text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ["npseq train: warning: load_task('numbers'): valid/test tokens not in the "
                                          "train split map to '<unk>': ['cents', 'fourteen', 'nineteen'] (use more "
                                          "examples)"]


def test_divergence_is_one_line_and_saves_nothing_diverged(tmp_path, capsys):
    path = tmp_path / "ck.npz"
    code, _, err = run(capsys, "train", *TINY, "--epochs", "3", "--lr", "1e38", "--save", path)
    assert_one_line(code, err, "train")
    assert "training diverged in epoch 1" in err
    if path.exists():  # an epoch may have ended before the NaN: its checkpoint must still be usable
        seq2seq_from_checkpoint(load_checkpoint(path))


@pytest.mark.parametrize("flag, value, saved", [
    ("--batch-size", "32", "64"), ("--lr", "0.1", "0.005"), ("--num-hiddens", "16", "8"),
    ("--optimizer", "sgd", "adam"), ("--num-layers", "2", "1"), ("--cell", "lstm", "gru"),
    ("--clip", "5.0", "1.0"), ("--loss", "mean", "d2l"), ("--seed", "3", "0"), ("--num-steps", "13", "(7, 12)"),
    ("--dropout", "0.3", "0.1"), ("--decoder", "luong", "bahdanau"), ("--bidirectional", None, "False"),
])
def test_resume_names_a_flag_that_conflicts_with_the_checkpoint(checkpoint, capsys, flag, value, saved):
    given = [flag] if value is None else [flag, value]
    code, _, err = run(capsys, "train", *TINY, "--epochs", "2", "--resume", checkpoint, *given)
    assert_one_line(code, err, "train")
    assert f"{flag} {value if value is not None else 'True'} conflicts with" in err and f"{flag} {saved}" in err


def test_resume_accepts_flags_that_agree_with_the_checkpoint(checkpoint, tmp_path, capsys):
    copy_path = tmp_path / "ck.npz"
    copy_path.write_bytes(checkpoint.read_bytes())
    code, out, err = run(capsys, "train", *TINY, "--epochs", "2", "--resume", copy_path, "--lr", "0.005",
                         "--batch-size", "64", "--save", copy_path)
    assert code == 0 and "resuming" in out, err


def test_resume_without_save_says_the_new_epochs_are_not_kept(checkpoint, tmp_path, capsys):
    copy_path = tmp_path / "ck.npz"
    copy_path.write_bytes(checkpoint.read_bytes())
    code, out, err = run(capsys, "train", *TINY, "--epochs", "2", "--resume", copy_path)
    assert code == 0 and "resuming" in out
    assert error_lines(err, "train") == [f"npseq train: no --save: the epochs trained now are not kept (--save "
                                         f"{copy_path} updates the checkpoint, --save NEW.npz keeps both)"]
    assert copy_path.read_bytes() == checkpoint.read_bytes()  # and nothing was written over


def test_resume_that_has_its_epochs_already_is_one_line_and_no_notes(checkpoint, capsys):
    # Found by the long fuzz: the note about the missing --save came before the refusal, two lines in all.
    code, out, err = run(capsys, "train", *TINY, "--epochs", "1", "--resume", checkpoint)
    assert_one_line(code, err, "train")
    assert "--epochs: the run already has 1 epochs; ask for more than that" in err and out == ""


@pytest.mark.parametrize("args, message", [
    (["lm", "--seed", "-1"], "argument --seed: expected an int in [0, 2**63), got '-1'"),
    (["gradcheck", "--seed", "-1"], "argument --seed: expected an int in [0, 2**63), got '-1'"),
    (["demo", "--seed", "-1"], "argument --seed: expected an int in [0, 2**63), got '-1'"),
    (["train", "--task", "numbers", "--seed", "-1"], "argument --seed: expected an int in [0, 2**63), got '-1'"),
    (["demo", "--out", ""], "argument --out: expected a folder, got an empty string"),
    (["translate", "ck.npz", "--attention-png", ""],
     "argument --attention-png: expected a file path, got an empty string"),
    (["data", "fetch", "fra-eng", "--url", ""], "argument --url: expected a URL, got an empty string"),
])
def test_a_negative_seed_or_an_empty_path_is_one_line(capsys, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)  # an empty --out would have meant this folder
    (tmp_path / "ck.npz").write_bytes(b"")  # translate's checkpoint must exist for --attention-png to be read
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and err.count("\n") == 1, err
    assert [path.name for path in tmp_path.iterdir()] == ["ck.npz"]  # nothing written


# ----------------------------------------------------------- caps, pipes, memory
@pytest.mark.parametrize("args, message", [
    (["--beam", "1000000000"], "argument --beam: expected a positive int up to 256, got '1000000000'"),
    (["--max-len", "1000000000"], "argument --max-len: expected a positive int up to 1024, got '1000000000'"),
    (["--beam", "0"], "argument --beam: expected a positive int up to 256, got '0'"),
])
def test_translate_caps_are_named(checkpoint, capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", str(checkpoint), "one two", *args])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--num-layers", "1000000"], "argument --num-layers: expected a positive int up to 64"),
    (["--num-hiddens", "1000000"], "argument --num-hiddens: expected a positive int up to 65536"),
    (["--num-steps", "1000000"], "argument --num-steps: expected a positive int up to 1024"),
    (["--lr", "nan"], "argument --lr: expected a positive float"),
    (["--clip", "-1"], "argument --clip: expected a number >= 0"),
])
def test_train_caps_are_named(capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--task", "numbers", *args])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_demo_with_a_single_example_says_why(tmp_path, capsys):
    code, _, err = run(capsys, "demo", "--num-examples", "1", "--epochs", "1", "--no-progress", "--out", tmp_path)
    assert_one_line(code, err, "demo")
    assert "--num-examples: 1 examples leave no test pair" in err


def test_a_reader_that_goes_away_ends_translate_quietly(checkpoint):
    # Far more output than a pipe buffers, so the child is still writing when the reader closes.
    lines = "".join(f"{'one two three four ' * 10}{['five', 'six'][i % 2]}\n" for i in range(3000))
    process = subprocess.Popen([sys.executable, "-m", "npseq", "translate", str(checkpoint)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdin.write(lines.encode())
    process.stdin.close()
    assert b" => " in process.stdout.readline()
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=300) == 141 and err == b""


MEMORY_LIMIT = 768 * 2 ** 20  # the address space of a child: a translate needs ~400 MB of it


def _limited(command, tmp_path):
    code = ("import resource, sys\n"
            f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n"
            "from npseq.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", code, *map(str, command)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["num_layers", "num_hiddens", "num_steps", "header", "bomb", "beam"])
def test_memory_stays_bounded_under_a_resource_limit(checkpoint, tmp_path, case):
    bad = tmp_path / "bad.npz"
    command = ["translate", bad, "one two"]
    if case == "num_layers":
        rewrite(checkpoint, bad, _set(["config", "num_layers"], 10 ** 6))
    elif case == "num_hiddens":  # within the caps, but a model 100,000 times larger than its weights
        rewrite(checkpoint, bad, _set(["config", "num_hiddens"], 60000))
    elif case == "num_steps":
        rewrite(checkpoint, bad, _set(["extra", "num_steps"], [7, 10 ** 9]))
    elif case == "header":
        crafted(checkpoint, bad, "a 4 TB .npy header")
    elif case == "bomb":
        crafted(checkpoint, bad, "a zip bomb")
    else:
        bad.write_bytes(checkpoint.read_bytes())
        command += ["--beam", "1000000000"]
    result = _limited(command, tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "MemoryError" not in result.stderr and "Traceback" not in result.stderr


def test_the_memory_limit_leaves_room_for_real_work(checkpoint, tmp_path):
    result = _limited(["translate", checkpoint, "one two", "--beam", "3"], tmp_path)
    assert result.returncode == 0 and " => " in result.stdout, result.stderr


def test_user_errors_are_one_family():
    from npseq.commands.arguments import UsageError
    from npseq.errors import LimitError, TrainingDiverged
    for error in (CheckpointError, UsageError, LimitError, TrainingDiverged):
        assert issubclass(error, UserError)
    assert issubclass(CheckpointError, ValueError) and issubclass(TrainingDiverged, FloatingPointError)


def test_api_errors_name_the_argument(checkpoint):
    from npseq.decode import beam_search, greedy_search
    from npseq.functional import masked_softmax
    model = seq2seq_from_checkpoint(load_checkpoint(checkpoint))
    src = np.array([3, 2], dtype=np.int64)
    cases = [
        (lambda: build_seq2seq(0, 9), ValueError, r"src_vocab_size: expected an int in \[1, "),
        (lambda: build_seq2seq(9, 9, num_layers=10 ** 6), ValueError, r"num_layers: expected an int in \[1, 64\]"),
        (lambda: greedy_search(model, np.array([], dtype=np.int64), bos_id=1, eos_id=2, max_len=5), ValueError,
         r"src: expected at least one token id"),
        (lambda: greedy_search(model, src, bos_id=10 ** 6, eos_id=2, max_len=5), ValueError,
         r"bos_id: expected a token id in \[0, "),
        (lambda: greedy_search(model, src, bos_id=1, eos_id=2, max_len=10 ** 9), ValueError,
         r"max_len: expected a positive int up to 1024"),
        (lambda: beam_search(model, src, bos_id=1, eos_id=2, max_len=10 ** 9, beam_size=3), ValueError,
         r"max_len: expected a positive int up to 1024"),
        (lambda: masked_softmax(np.zeros((2, 3, 0)), None), ValueError, r"scores: expected at least one key"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
