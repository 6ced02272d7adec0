"""Checkpoints: round trip, file layout, atomic writes, every error case, and bit-exact resumption."""
import json
import os

import numpy as np
import pytest

import npseq
from npseq.checkpoint import (
    Checkpoint,
    CheckpointError,
    collect_rng_states,
    load_checkpoint,
    load_seq2seq,
    restore_rng_states,
    save_checkpoint,
)
from npseq.data import BatchIterator, Vocab, build_array_nmt
from npseq.models import build_seq2seq
from npseq.nn import Dropout, Module
from npseq.optim import SGD, Adam
from npseq.train import train_seq2seq

RESERVED = ["<pad>", "<bos>", "<eos>"]
NUM_STEPS = 6


def corpus(num=32, seed=0):
    """Letter sequences and their reverses, with vocabularies and padded arrays."""
    rng = np.random.default_rng(seed)
    letters = list("abcdef")
    source = [[letters[i] for i in rng.integers(0, 6, rng.integers(2, 5))] for _ in range(num)]
    target = [list(reversed(s)) for s in source]
    src_vocab, tgt_vocab = Vocab(source, reserved_tokens=RESERVED), Vocab(target, reserved_tokens=RESERVED)
    arrays = (*build_array_nmt(source, src_vocab, NUM_STEPS), *build_array_nmt(target, tgt_vocab, NUM_STEPS))
    return arrays, src_vocab, tgt_vocab


ARRAYS, SRC_VOCAB, TGT_VOCAB = corpus()
VOCABS = {"src": SRC_VOCAB, "tgt": TGT_VOCAB}


def tiny_config(**changes):
    config = dict(src_vocab_size=len(SRC_VOCAB), tgt_vocab_size=len(TGT_VOCAB), decoder="bahdanau", cell="gru",
                  embed_size=6, num_hiddens=8, num_layers=2, dropout=0.2, seed=1)
    config.update(changes)
    return config


def trained(config, epochs=1, lr=0.01, data_seed=2):
    """A model of ``config`` with an Adam optimizer after ``epochs`` epochs, its batches and history."""
    model = build_seq2seq(**config)
    optimizer = Adam(model.parameters(), lr=lr)
    batches = BatchIterator(ARRAYS, 8, seed=data_seed)
    history = train_seq2seq(model, batches, TGT_VOCAB, optimizer, epochs, progress=False)
    return model, optimizer, batches, history


def save(path, model, optimizer=None, config=None, **kwargs):
    return save_checkpoint(path, model, config=config or tiny_config(), vocabs=VOCABS, optimizer=optimizer, **kwargs)


def params_of(model):
    return {name: p.data.copy() for name, p in model.named_parameters()}


def assert_same_arrays(a: dict, b: dict):
    assert list(a) == list(b)
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def rewrite(path, change):
    """Rewrite the archive at ``path`` with ``change(arrays, meta)`` applied (meta: the parsed meta.json)."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = {key: archive[key] for key in archive.files}
    meta = json.loads(arrays["meta.json"].tobytes().decode("utf-8"))
    change(arrays, meta)
    arrays["meta.json"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    np.savez(path, **arrays)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A checkpoint after one epoch: (path, model, optimizer, history)."""
    model, optimizer, batches, history = trained(tiny_config())
    path = tmp_path_factory.mktemp("ckpt") / "model.npz"
    save(path, model, optimizer, epoch=batches.epoch, history=history, extra={"seed": 2, "note": "café"})
    return path, model, optimizer, history


# ------------------------------------------------------------------ round trip
def test_round_trip_keeps_everything(saved):
    path, model, optimizer, history = saved
    checkpoint = load_checkpoint(path)
    assert isinstance(checkpoint, Checkpoint) and checkpoint.path == str(path)
    assert_same_arrays(checkpoint.params, params_of(model))
    assert checkpoint.config == tiny_config()
    assert checkpoint.vocabs == VOCABS
    assert checkpoint.step == optimizer.step_count == 4 and checkpoint.epoch == 1
    assert checkpoint.history == history.to_dict()
    assert checkpoint.extra == {"seed": 2, "note": "café"}
    assert checkpoint.version == npseq.__version__
    assert checkpoint.optimizer_class == "Adam"
    expected = optimizer.state_dict()
    assert checkpoint.optimizer_state["step_count"] == 4 and list(checkpoint.optimizer_state["betas"]) == [0.9, 0.999]
    for name in expected:
        if name.startswith("exp_avg"):
            np.testing.assert_array_equal(checkpoint.optimizer_state[name], expected[name])
    assert checkpoint.rng_states == collect_rng_states(model)


def test_file_layout_is_plain_arrays_and_json(saved):
    path, model, optimizer, _ = saved
    with np.load(path, allow_pickle=False) as archive:
        files = archive.files
        meta_bytes = archive["meta.json"]
    assert files[0] == "meta.json"
    assert [f for f in files if f.startswith("param/")] == ["param/" + name for name, _ in model.named_parameters()]
    assert "param/encoder.embedding.W" in files and "optim/exp_avg.0" in files and "optim/exp_avg_sq.0" in files
    assert meta_bytes.dtype == np.uint8 and meta_bytes.ndim == 1
    meta = json.loads(meta_bytes.tobytes().decode("utf-8"))
    assert meta["format"] == "npseq-checkpoint" and meta["format_version"] == 1
    assert meta["optimizer"]["hyperparameters"] == {"lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-8,
                                                    "weight_decay": 0.0}
    assert meta["parameters"]["encoder.embedding.W"] == {"shape": [len(SRC_VOCAB), 6], "dtype": "<f4"}
    assert set(meta["rng_states"]) == {"encoder.rnn.dropout_rng", "decoder.rnn.dropout_rng", "decoder.attention.rng"}


def test_restore_into_a_fresh_model_and_optimizer(saved):
    path, model, optimizer, _ = saved
    fresh = build_seq2seq(**tiny_config(seed=99))
    fresh_optimizer = Adam(fresh.parameters(), lr=0.5, betas=(0.5, 0.6))
    load_checkpoint(path).restore(fresh, fresh_optimizer)
    assert_same_arrays(params_of(fresh), params_of(model))
    assert fresh_optimizer.lr == 0.01 and fresh_optimizer.betas == (0.9, 0.999) and fresh_optimizer.step_count == 4
    for name, value in optimizer.state_dict().items():
        np.testing.assert_array_equal(fresh_optimizer.state_dict()[name], value)
    assert collect_rng_states(fresh) == collect_rng_states(model)


def test_load_seq2seq_rebuilds_the_model(saved):
    path, model, _, _ = saved
    rebuilt, checkpoint = load_seq2seq(path)
    assert checkpoint.config == tiny_config()
    X, X_len, Y, _ = (a[:4] for a in ARRAYS)
    with npseq.no_grad():
        model.eval(), rebuilt.eval()
        np.testing.assert_array_equal(rebuilt(X, Y, X_len), model(X, Y, X_len))
        model.train()


@pytest.mark.parametrize("dtype, optimizer", [("float64", "sgd-momentum"), ("float32", "sgd"), ("float32", None)])
def test_round_trip_other_dtypes_and_optimizers(tmp_path, dtype, optimizer):
    config = tiny_config(dtype=dtype, decoder="luong", cell="lstm", dropout=0.0)
    model = build_seq2seq(**config)
    opt = {"sgd-momentum": SGD(model.parameters(), lr=0.1, momentum=0.9), "sgd": SGD(model.parameters(), lr=0.1),
           None: None}[optimizer]
    save(tmp_path / "c.npz", model, opt, config=config, step=7)
    checkpoint = load_checkpoint(tmp_path / "c.npz")
    assert_same_arrays(checkpoint.params, params_of(model))
    assert {a.dtype for a in checkpoint.params.values()} == {np.dtype(dtype)}
    assert checkpoint.step == 7 and checkpoint.epoch is None and checkpoint.history is None
    if opt is None:
        assert checkpoint.optimizer_class is None and checkpoint.optimizer_state is None
    else:
        other = build_seq2seq(**config)
        other_opt = SGD(other.parameters(), lr=1.0, momentum=opt.momentum)
        checkpoint.restore(other, other_opt)
        assert other_opt.momentum == opt.momentum
    rebuilt, _ = load_seq2seq(tmp_path / "c.npz")
    assert_same_arrays(params_of(rebuilt), params_of(model))


def test_history_with_infinity_and_a_path_object(tmp_path):
    model = build_seq2seq(**tiny_config())
    returned = save(tmp_path / "c.npz", model, history={"tokens_per_s": [float("inf"), 10.0]})
    assert returned == str(tmp_path / "c.npz")
    assert load_checkpoint(tmp_path / "c.npz").history == {"tokens_per_s": [float("inf"), 10.0]}


# ------------------------------------------------------------ random generators
def test_rng_states_round_trip_shared_and_mt19937_generators():
    class Twin(Module):
        def __init__(self):
            super().__init__()
            shared = np.random.default_rng(5)
            self.left, self.right = Dropout(0.5, rng=shared), Dropout(0.5, rng=shared)
            self.mt = Dropout(0.5, rng=np.random.Generator(np.random.MT19937(3)))

    model = Twin()
    states = collect_rng_states(model)
    assert list(states) == ["left.rng", "right.rng", "mt.rng"]
    assert states["left.rng"] == states["right.rng"]
    json.dumps(states)  # JSON-ready, MT19937's key array included
    expected = [model.left.rng.random(3), model.mt.rng.random(3)]
    restore_rng_states(model, json.loads(json.dumps(states)))
    np.testing.assert_array_equal(model.left.rng.random(3), expected[0])
    np.testing.assert_array_equal(model.mt.rng.random(3), expected[1])

    with pytest.raises(KeyError, match=r"missing \['mt.rng'\], unexpected \['other.rng'\]"):
        restore_rng_states(model, {"left.rng": states["left.rng"], "right.rng": states["right.rng"],
                                   "other.rng": states["mt.rng"]})
    with pytest.raises(ValueError, match=r"states\['mt.rng'\]: expected a MT19937 state, got 'PCG64'"):
        restore_rng_states(model, {**states, "mt.rng": states["left.rng"]})
    diverged = dict(states)
    diverged["right.rng"] = dict(states["left.rng"], uinteger=1)
    with pytest.raises(ValueError, match=r"shares this generator with 'left.rng'"):
        restore_rng_states(model, diverged)


# -------------------------------------------------------------------- atomicity
@pytest.mark.parametrize("failure, raised", [(OSError(28, "No space left on device"), CheckpointError),
                                             (KeyboardInterrupt(), KeyboardInterrupt)])
def test_an_interrupted_save_keeps_the_old_checkpoint(tmp_path, monkeypatch, failure, raised):
    model, optimizer, _, _ = trained(tiny_config())
    path = tmp_path / "model.npz"
    save(path, model, optimizer)
    before = path.read_bytes()
    old_params = params_of(model)
    for param in model.parameters():
        param.data += 1.0

    real_savez = np.savez

    def savez_then_fail(file, **arrays):
        file.write(b"PK\x03\x04 half an archive")  # the writer got partway
        raise failure

    monkeypatch.setattr(np, "savez", savez_then_fail)
    with pytest.raises(raised):  # a failed write is a user error (a full disk), an interrupt stays one
        save(path, model, optimizer)
    monkeypatch.setattr(np, "savez", real_savez)
    assert os.listdir(tmp_path) == ["model.npz"]  # no temporary file left behind
    assert path.read_bytes() == before
    assert_same_arrays(load_checkpoint(path).params, old_params)


def test_save_writes_a_temporary_file_in_the_same_directory(tmp_path, monkeypatch):
    model = build_seq2seq(**tiny_config())
    renames = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (renames.append((src, dst)), real_replace(src, dst)))
    save(tmp_path / "m.npz", model)
    save(tmp_path / "m.npz", model)  # overwriting an existing checkpoint goes the same way
    assert len(renames) == 2
    for src, dst in renames:
        assert os.path.dirname(src) == str(tmp_path) and dst == str(tmp_path / "m.npz")
        assert os.path.basename(src).startswith(".m.npz.") and src.endswith(".tmp")
    assert os.listdir(tmp_path) == ["m.npz"]


# ------------------------------------------------------------------ bad files
def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_checkpoint(tmp_path / "nothing.npz")


@pytest.mark.parametrize("cut", [3, 40, 0.5, -22])
def test_truncated_checkpoint(saved, tmp_path, cut):
    data = saved[0].read_bytes()
    keep = int(len(data) * cut) if isinstance(cut, float) else cut % len(data)
    path = tmp_path / "cut.npz"
    path.write_bytes(data[:keep])
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    assert info.value.path == str(path)
    assert ("truncated or corrupt .npz archive" if keep >= 4 else "not an npseq checkpoint") in str(info.value)


def test_corrupted_bytes_inside_an_array(saved, tmp_path):
    data = bytearray(saved[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    path = tmp_path / "flipped.npz"
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="truncated or corrupt .npz archive"):
        load_checkpoint(path)


def test_foreign_files(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("these are not weights\n")
    with pytest.raises(CheckpointError, match=r"notes.txt: not an npseq checkpoint: not a .npz archive "
                                              r"\(it starts with b'these ar'\)") as info:
        load_checkpoint(text)
    assert isinstance(info.value, ValueError) and info.value.reason.startswith("not an npseq checkpoint")

    np.savez(tmp_path / "other.npz", weights=np.ones(3), bias=np.zeros(2))
    with pytest.raises(CheckpointError, match=r"not an npseq checkpoint: no 'meta.json' entry "
                                              r"\(entries: 'bias', 'weights'\)"):
        load_checkpoint(tmp_path / "other.npz")

    np.save(tmp_path / "single.npy", np.ones((2, 3)))
    with pytest.raises(CheckpointError, match=r"a single .npy array of shape \(2, 3\)"):
        load_checkpoint(tmp_path / "single.npy")

    np.savez(tmp_path / "pickled.npz", thing=np.array([{"a": 1}], dtype=object))
    with pytest.raises(CheckpointError, match="object arrays, which are refused"):
        load_checkpoint(tmp_path / "pickled.npz")

    np.savez(tmp_path / "json.npz", **{"meta.json": np.frombuffer(b'{"format": "keras"}', dtype=np.uint8)})
    with pytest.raises(CheckpointError, match="'meta.json' has format 'keras', expected 'npseq-checkpoint'"):
        load_checkpoint(tmp_path / "json.npz")

    np.savez(tmp_path / "str.npz", **{"meta.json": np.array("{}")})
    with pytest.raises(CheckpointError, match="'meta.json' is not UTF-8 JSON"):
        load_checkpoint(tmp_path / "str.npz")


@pytest.mark.parametrize("change, message", [
    (lambda a, m: m.update(format_version=2), r"format version 2 is not one this npseq .* reads \(1 to 1\)"),
    (lambda a, m: m.pop("rng_states"), r"'meta.json' lacks the entries \['rng_states'\]"),
    (lambda a, m: a.pop("param/decoder.dense.b"), r"param/ entries do not match 'meta.json': "
                                                  r"missing \['decoder.dense.b'\], unexpected \[\]"),
    (lambda a, m: a.update({"param/decoder.dense.b": np.zeros(2, np.float32)}),
     r"param/decoder.dense.b: 'meta.json' says shape \(\d+,\) dtype <f4, the array has \(2,\)"),
    (lambda a, m: a.update(stray=np.ones(1)), r"unexpected entries \['stray'\]"),
    (lambda a, m: a.pop("optim/exp_avg.0"), r"the optim/ entries .* do not match"),
    (lambda a, m: m["config"].update(src_vocab_size=3),
     r"vocabulary 'src' has \d+ tokens but config\['src_vocab_size'\] is 3"),
    (lambda a, m: m["vocabs"]["tgt"]["idx_to_token"].append("zzz"), r"a saved vocabulary is inconsistent"),
    (lambda a, m: m.update(parameters=[1, 2]), r"'meta.json' entry 'parameters': expected dict, got list"),
    (lambda a, m: m.update(epoch="two"), r"'meta.json' entry 'epoch': expected int or null, got str"),
    (lambda a, m: m.update(optimizer={"class": "Adam"}),
     r"'meta.json' entry 'optimizer': expected the keys .* missing \['step_count', 'hyperparameters', "
     r"'buffers'\]"),
])
def test_inconsistent_checkpoints(saved, tmp_path, change, message):
    path = tmp_path / "c.npz"
    path.write_bytes(saved[0].read_bytes())
    rewrite(path, change)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)


# ------------------------------------------------------------- mismatched models
@pytest.mark.parametrize("changes, message", [
    (dict(num_hiddens=10), r"parameter shapes differ from the model's \(other vocabulary or layer sizes\?\): "
                           r"encoder.embedding.W|encoder.rnn.Wh_l0: checkpoint \(8, 24\), model \(10, 30\)"),
    (dict(src_vocab_size=len(SRC_VOCAB) + 2), r"encoder.embedding.W: checkpoint \(\d+, 6\), model"),
    (dict(decoder="plain"), r"its parameters do not match the EncoderDecoder being loaded: missing \[\], "
                            r"unexpected \['decoder.attention"),
    (dict(num_layers=1), r"unexpected \['encoder.rnn.Wx_l1'"),
])
def test_restoring_into_a_different_model_changes_nothing(saved, changes, message):
    model = build_seq2seq(**tiny_config(**changes))
    before, rng_before = params_of(model), collect_rng_states(model)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(saved[0]).restore(model)
    assert_same_arrays(params_of(model), before)
    assert collect_rng_states(model) == rng_before


def test_restoring_into_a_different_optimizer_changes_nothing(saved):
    checkpoint = load_checkpoint(saved[0])
    model = build_seq2seq(**tiny_config(seed=5))
    before = params_of(model)
    with pytest.raises(CheckpointError, match="holds Adam state, cannot load it into SGD"):
        checkpoint.restore(model, SGD(model.parameters(), lr=0.1))
    with pytest.raises(CheckpointError, match=r"optimizer state does not match this Adam .* missing \[\], "
                                              r"unexpected \['exp_avg.1'"):
        checkpoint.restore(model, Adam(model.parameters()[:1]))
    assert_same_arrays(params_of(model), before)

    bare = saved[0].parent / "bare.npz"
    save(bare, model)
    with pytest.raises(CheckpointError, match=r"holds no optimizer state \(saved without optimizer=\)"):
        load_checkpoint(bare).restore(model, Adam(model.parameters()))


def test_load_seq2seq_with_a_config_build_seq2seq_rejects(tmp_path):
    model = build_seq2seq(**tiny_config())
    save(tmp_path / "c.npz", model, config={"architecture": "mine"})
    with pytest.raises(CheckpointError, match="its config does not build a model with build_seq2seq"):
        load_seq2seq(tmp_path / "c.npz")


@pytest.mark.parametrize("lacking", ["num_heads", "ffn_num_hiddens"])
def test_a_transformer_config_without_its_heads_is_refused_not_defaulted(tmp_path, lacking):
    """Heads cannot be read from the weights: 2 heads of 4 features have the shapes of 4 heads of 2, so a default
    would load and translate wrongly, and train --resume met a KeyError. Both now read one CheckpointError."""
    config = dict(src_vocab_size=len(SRC_VOCAB), tgt_vocab_size=len(TGT_VOCAB), model="transformer", num_hiddens=8,
                  ffn_num_hiddens=16, num_heads=2, num_layers=1, dropout=0.0)
    save(tmp_path / "t.npz", build_seq2seq(**config), config={k: v for k, v in config.items() if k != lacking})
    with pytest.raises(CheckpointError, match=f"its config names a Transformer but not its {lacking}, which its "
                                              f"weights do not tell"):
        load_seq2seq(tmp_path / "t.npz")


def test_save_rejects_bad_arguments(tmp_path):
    model = build_seq2seq(**tiny_config())
    path = tmp_path / "c.npz"
    with pytest.raises(ValueError, match=r"vocabs\['src'\]: expected 3 tokens \(config\['src_vocab_size'\]\), got"):
        save(path, model, config=tiny_config(src_vocab_size=3))
    with pytest.raises(TypeError, match=r"config\['dtype'\]: expected a JSON value .* got type"):
        save(path, model, config=tiny_config(dtype=np.float32))
    with pytest.raises(TypeError, match=r"extra: expected str keys .* got the key 1 of type int"):
        save(path, model, extra={1: "one"})
    with pytest.raises(TypeError, match=r"extra\['epoch'\]: expected a JSON value .* got int64"):
        save(path, model, extra={"epoch": np.int64(3)})
    with pytest.raises(ValueError, match="step: expected an int >= 0, got -1"):
        save(path, model, step=-1)
    with pytest.raises(TypeError, match=r"vocabs\['src'\]: expected a Vocab"):
        save_checkpoint(path, model, config={}, vocabs={"src": ["a", "b"]})
    with pytest.raises(TypeError, match="model: expected an npseq Module"):
        save_checkpoint(path, [1, 2], config={})
    assert not path.exists()


# ----------------------------------------------------------- exact resumption
@pytest.mark.parametrize("decoder, cell", [("bahdanau", "gru"), ("luong", "lstm")])
def test_resuming_from_a_checkpoint_continues_bit_exactly(tmp_path, decoder, cell):
    config = tiny_config(decoder=decoder, cell=cell)
    straight, _, _, straight_history = trained(config, epochs=4)

    first, optimizer, batches, history = trained(config, epochs=2)
    path = tmp_path / "epoch2.npz"
    save(path, first, optimizer, config=config, epoch=batches.epoch, history=history, extra={"data_seed": 2})
    del first, optimizer, batches

    model, checkpoint = load_seq2seq(path)
    optimizer = Adam(model.parameters(), lr=0.123)  # hyperparameters come back from the checkpoint
    checkpoint.restore(model, optimizer)
    batches = BatchIterator(ARRAYS, 8, seed=checkpoint.extra["data_seed"])
    batches.set_epoch(checkpoint.epoch)
    resumed_history = train_seq2seq(model, batches, TGT_VOCAB, optimizer, 2, progress=False)

    assert_same_arrays(params_of(model), params_of(straight))
    assert checkpoint.history["loss"] + resumed_history.loss == straight_history.loss
    assert optimizer.step_count == 16


def test_resumption_needs_the_dropout_generators(tmp_path):
    """Without the generators' states dropout draws other masks, and the runs part ways."""
    config = tiny_config()
    straight, _, _, _ = trained(config, epochs=3)
    first, optimizer, batches, _ = trained(config, epochs=2)
    save(tmp_path / "c.npz", first, optimizer, config=config, epoch=batches.epoch)
    model, checkpoint = load_seq2seq(tmp_path / "c.npz", rng=False)
    optimizer = Adam(model.parameters())
    checkpoint.restore(model, optimizer, rng=False)
    batches = BatchIterator(ARRAYS, 8, seed=2)
    batches.set_epoch(checkpoint.epoch)
    train_seq2seq(model, batches, TGT_VOCAB, optimizer, 1, progress=False)
    assert not np.array_equal(model.encoder.embedding.W.data, straight.encoder.embedding.W.data)
