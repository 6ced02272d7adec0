"""Faults of size and of sense on the command line (issue #33, items 5, 9, 11 and 12).

Sizes each within its cap can still ask together for more memory than the machine has; flags of the other
model kind used to be accepted and saved; ``npseq train --data`` reported no held-out score and a "loss" that
was not d2l's number; an input outside a task's format was translated without a word. Each case runs the
command in this process (``npseq.cli.main``) and asserts what a user sees: the exit code, one line on stderr
that names the flag, and nothing allocated, trained or written before the refusal.
"""
import datetime
import os
import tracemalloc

import numpy as np
import pytest

import npseq._checks
import npseq.captions_demo
import npseq.models
import npseq.runs
from npseq._checks import MemoryEstimate, check_memory, memory_budget
from npseq.captions_demo import build_captioner, captions_demo_memory
from npseq.checkpoint import load_checkpoint
from npseq.cli import main
from npseq.data import (
    DATE_FORMATS,
    FILE_HELD_OUT,
    TASKS,
    format_date,
    load_caption_data,
    load_translation_data,
    outside_task_format,
    task_capacity,
    task_text,
)
from npseq.data.tasks import dates_pairs, numbers_pairs, reverse_pairs
from npseq.errors import LimitError
from npseq.models import RNNLM, build_seq2seq, estimate_rnnlm_memory, estimate_seq2seq_memory
from npseq.nn import MaskedSoftmaxCELoss
from npseq.optim import Adam
from npseq.train import train_seq2seq_step

TINY = ["--num-hiddens", "8", "--embed-size", "4", "--num-layers", "1", "--no-progress"]
BUDGET = 8 * 2 ** 30  # the tests' memory budget: the same messages on every machine


def run(capsys, *args):
    """``npseq ARGS`` in this process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code, err, command):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"npseq {command}: ") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def budget(monkeypatch):
    monkeypatch.setattr(npseq._checks, "memory_budget", lambda: BUDGET)


@pytest.fixture
def nothing_built(monkeypatch):
    """Building a model or drawing scenes fails the test: a refusal must come before them."""
    def forbidden(*args, **kwargs):
        raise AssertionError("allocated before the size check")
    monkeypatch.setattr(npseq.runs, "build_seq2seq", forbidden)
    monkeypatch.setattr(npseq.models, "RNNLM", forbidden)
    monkeypatch.setattr(npseq.captions_demo, "load_caption_data", forbidden)


# ------------------------------------------------------- item 5: sizes huge together
@pytest.mark.slow
@pytest.mark.parametrize("args, flags", [
    (["train", "--task", "numbers", "--model", "transformer", "--num-hiddens", "65536", "--heads", "1"],
     "--model transformer, --num-hiddens 65536, --heads 1: "),
    (["train", "--task", "numbers", "--model", "transformer", "--num-hiddens", "4096", "--ffn-num-hiddens", "65536",
      "--layers", "64"], "--model transformer, --num-hiddens 4096, --layers 64, --ffn-num-hiddens 65536: "),
    (["train", "--task", "numbers", "--num-hiddens", "65536", "--cell", "lstm"],
     "--cell lstm, --num-hiddens 65536: "),
    (["train", "--task", "numbers", "--num-hiddens", "4096", "--batch-size", "100000"],
     "--num-hiddens 4096, --batch-size 100000: "),  # a batch of the whole task: 8,000 pairs, additive scores
    (["lm", "--num-hiddens", "65536"], "--num-hiddens 65536, --num-layers 1, --batch-size 32, --num-steps 35 "),
    (["lm", "--num-hiddens", "4096", "--num-layers", "64"], "--num-hiddens 4096, --num-layers 64, "),
    (["demo", "--task", "captions", "--num-examples", 10 ** 9], "--num-examples 1000000000: "),
    (["demo", "--task", "reverse", "--num-examples", 10 ** 9], "--num-examples 1000000000: "),
    (["train", "--task", "reverse", "--num-examples", 10 ** 9], "--num-examples 1000000000: "),
])
def test_sizes_within_their_caps_but_huge_together_are_refused_before_anything_is_built(
        args, flags, capsys, tmp_path, budget, nothing_built):
    code, _, err = run(capsys, *args, "--no-progress", *(["--out", tmp_path] if args[0] == "demo" else []))
    line = assert_one_line(code, err, args[0])
    assert f"{args[0]}: {flags}" in line, line
    assert "expected a run within the memory budget of 8 GiB (half of this machine's memory), got an estimate of " \
           in line and line.endswith("; ask for smaller sizes")


@pytest.mark.parametrize("heads", ["--heads", "--num-heads"])
def test_a_model_setting_the_builder_refuses_is_named_by_its_flag(heads, capsys, nothing_built):
    """The builder's own checks say num_heads and num_hiddens; the command line says the flags as typed."""
    code, _, err = run(capsys, "train", "--task", "reverse", "--model", "transformer", "--num-hiddens", "10", heads,
                       "4", "--no-progress")
    line = assert_one_line(code, err, "train")
    assert line == (f"npseq train: {heads} 4: expected a divisor of --num-hiddens = 10 (each head gets --num-hiddens "
                    f"/ {heads} features), got 4"), line


@pytest.mark.parametrize("args, message", [
    (["lm", "--num-hiddens", "1000000"], "argument --num-hiddens: expected a positive int up to 65536"),
    (["lm", "--num-layers", "1000"], "argument --num-layers: expected a positive int up to 64"),
    (["lm", "--num-preds", 10 ** 12], "argument --num-preds: expected a positive int up to 10000"),
    (["lm", "--samples", "-1"], "argument --samples: expected an int in [0, 100], got '-1'"),
])
def test_lm_caps_its_sizes_and_its_samples(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and err.count("\n") == 1, err


def test_the_budget_is_half_the_machines_memory():
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert memory_budget() == physical // 2
    check_memory("small", MemoryEstimate(10, 40, 0, memory_budget() - 40))  # exactly the budget passes
    with pytest.raises(LimitError, match=r"^big: expected a run within the memory budget"):
        check_memory("big", MemoryEstimate(10, 40, 0, memory_budget()))


def _peak_of_a_training_step(model, batch):
    optimizer = Adam(model.parameters(), lr=0.01)
    train_seq2seq_step(model, MaskedSoftmaxCELoss("mean"), optimizer, batch, 1, 1.0)  # gradients and moments exist
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        train_seq2seq_step(model, MaskedSoftmaxCELoss("mean"), optimizer, batch, 1, 1.0)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("settings", [
    dict(), dict(decoder="plain", cell="rnn", bidirectional=True), dict(decoder="luong", score="dot"),
    dict(decoder="luong", score="concat", attention="local-p", cell="lstm"),
    dict(decoder="luong", score="general", input_feeding=False, bidirectional=True, attention="local-m"),
    dict(model="transformer", num_heads=4, ffn_num_hiddens=96), dict(model="transformer", num_heads=1, num_layers=1),
])
def test_the_seq2seq_estimate_counts_the_parameters_exactly_and_the_activations_from_above(settings):
    N, S, T, V = 16, 9, 11, 40
    config = dict(src_vocab_size=V - 5, tgt_vocab_size=V, num_hiddens=32, embed_size=8, num_layers=2)
    config.update(settings)
    estimate = estimate_seq2seq_memory(config, batch_size=N, num_steps=(S, T))
    model = build_seq2seq(**config)
    assert estimate.parameters == sum(param.data.size for param in model.parameters())
    assert estimate.parameter_bytes == 4 * estimate.parameters * 4  # float32: parameters, gradients, two moments
    rng = np.random.default_rng(0)
    batch = (rng.integers(3, V - 5, (N, S)), np.full(N, S), rng.integers(3, V, (N, T)), np.full(N, T))
    peak = _peak_of_a_training_step(model, batch)
    assert peak <= estimate.activation_bytes <= 3 * peak, (peak, estimate.activation_bytes)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_the_lm_and_captions_estimates_count_the_parameters_exactly(cell):
    estimate = estimate_rnnlm_memory(50, 24, 2, cell, batch_size=8, num_steps=10)
    assert estimate.parameters == sum(param.data.size for param in RNNLM(50, 24, 2, cell=cell).parameters())
    data = load_caption_data(40, 300)
    model = build_captioner(data, num_hiddens=64, embed_size=32, cell="gru", mode="first_step")
    demo = captions_demo_memory(40)
    assert demo.parameters == sum(param.data.size for param in model.parameters())
    assert demo.data_bytes >= data.train.features.nbytes + data.test.features.nbytes


# ------------------------------------------------- item 9: flags of the other model
@pytest.mark.parametrize("args, message", [
    (["--model", "transformer", "--decoder", "luong"],
     "--decoder luong: a setting of the rnn model, which --model transformer does not read; leave it out"),
    (["--model", "transformer", "--cell", "lstm"], "--cell lstm: a setting of the rnn model, which --model "),
    (["--model", "transformer", "--bidirectional"], "--bidirectional: a setting of the rnn model, "),
    (["--heads", "4"], "--heads 4: a setting of the transformer model, which --model rnn (the default) does not "),
    (["--num-heads", "4"], "--num-heads 4: a setting of the transformer model"),
    (["--model", "rnn", "--ffn-num-hiddens", "64"], "--ffn-num-hiddens 64: a setting of the transformer model, "
                                                    "which --model rnn does not read"),
    (["--score", "dot"], "--score dot: Luong's decoder reads it, --decoder bahdanau (the default) does not"),
    (["--decoder", "plain", "--attention", "local-m"], "--attention local-m: Luong's decoder reads it, --decoder "
                                                       "plain does not"),
    (["--decoder", "luong", "--window", "3"], "--window 3: the half-width of a local window, read with --attention "
                                              "local-m or local-p only"),
    (["--bidirectional", "--decoder", "luong", "--score", "dot"],
     "--bidirectional with --score dot: the dot score needs encoder outputs of the decoder's size 8, a "
     "bidirectional encoder gives 16; use --score general or concat, or leave --bidirectional out"),
    (["--num-examples", 10 ** 18],
     "--num-examples: expected at most 10,000 for the task 'numbers' (all its distinct examples), got "
     "1,000,000,000,000,000,000"),
])
def test_a_flag_the_model_would_not_read_is_refused_in_one_line_and_nothing_is_saved(args, message, capsys,
                                                                                     tmp_path):
    saved = tmp_path / "run.npz"
    code, _, err = run(capsys, "train", "--task", "numbers", "--num-hiddens", "8", "--no-progress", "--save", saved,
                       *args)
    assert message in assert_one_line(code, err, "train")
    assert not saved.exists()


def test_demo_names_num_examples_and_refuses_a_transformer_captioner(capsys, tmp_path, nothing_built):
    code, _, err = run(capsys, "demo", "--num-examples", 10 ** 18, "--out", tmp_path, "--no-progress")
    assert "--num-examples: expected at most 10,000 for the task 'numbers'" in assert_one_line(code, err, "demo")
    code, _, err = run(capsys, "demo", "--task", "captions", "--model", "transformer", "--out", tmp_path)
    assert assert_one_line(code, err, "demo") == ("npseq demo: --model transformer: the captions demo trains a GRU "
                                                  "captioner, not a transformer; leave --model out with --task "
                                                  "captions")


def test_every_task_names_its_capacity():
    assert [task_capacity(task) for task in TASKS] == [10_000, 36_525 * len(DATE_FORMATS), 11_111_110_000]


def test_resume_names_the_flag_as_it_was_typed_and_refuses_flags_the_saved_model_does_not_read(capsys, tmp_path):
    saved = tmp_path / "t.npz"
    common = ["train", "--task", "numbers", "--num-examples", "120", "--no-progress"]
    assert main([*common, "--model", "transformer", "--heads", "2", "--layers", "1", "--num-hiddens", "8",
                 "--epochs", "1", "--save", str(saved)]) == 0
    capsys.readouterr()
    code, _, err = run(capsys, *common, "--epochs", "2", "--resume", saved, "--heads", "4")
    assert "--resume: --heads 4 conflicts with" in assert_one_line(code, err, "train")
    code, _, err = run(capsys, *common, "--epochs", "2", "--resume", saved, "--cell", "gru")
    assert ("--cell gru: a setting of the rnn model, which --model transformer (the saved run's) does not read"
            in assert_one_line(code, err, "train"))


def test_luong_with_the_general_score_takes_a_bidirectional_encoder(capsys, tmp_path):
    code, out, err = run(capsys, "train", "--task", "reverse", "--num-examples", "100", *TINY, "--epochs", "1",
                         "--bidirectional", "--decoder", "luong", "--score", "general")
    assert code == 0 and "test: BLEU " in out, err


# --------------------------------------- item 11: held-out BLEU and the loss it prints
def _corpus(path, count=60):
    words = "go run stop look eat come sit walk".split()
    lines = [f"{a} {b} .\t{b} {a} !" for a in words for b in words][:count]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_train_on_a_file_holds_a_seeded_share_out_and_ends_with_its_bleu(capsys, tmp_path):
    corpus = _corpus(tmp_path / "pairs.txt")
    code, out, err = run(capsys, "train", "--data", corpus, *TINY, "--epochs", "2", "--batch-size", "16")
    assert code == 0, err
    assert f"on {corpus}: 54 pairs (6 more held out to test on)" in out
    assert "per-token cross-entropy " in out and "(--loss d2l, mean over batches); d2l's printed loss " in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("test: BLEU ") and last.endswith(
        "(6 pairs held out of training: a seeded 10% of the file, greedy)"), out


def test_the_held_out_pairs_are_seeded_and_never_trained_on(tmp_path):
    corpus = _corpus(tmp_path / "pairs.txt")
    data = load_translation_data(path=str(corpus), held_out=FILE_HELD_OUT, seed=3, batch_size=8)
    again = load_translation_data(path=str(corpus), held_out=FILE_HELD_OUT, seed=3, batch_size=8)
    other = load_translation_data(path=str(corpus), held_out=FILE_HELD_OUT, seed=4, batch_size=8)
    assert data.test_pairs == again.test_pairs != other.test_pairs and len(data.test_pairs) == 6
    X, X_len, _, _ = data.batches.arrays
    trained = {tuple(data.src_vocab.to_tokens(row[:length - 1])) for row, length in zip(X.tolist(), X_len.tolist())}
    assert len(trained) == 54 and not trained & {tuple(src) for src, _ in data.test_pairs}
    whole = load_translation_data(path=str(corpus), batch_size=8)  # held_out=0: d2l's whole file
    assert whole.test_pairs is None and len(whole.batches.arrays[0]) == 60


def test_a_run_saved_before_pairs_were_held_out_resumes_on_the_whole_file(capsys, tmp_path, monkeypatch):
    corpus, saved = _corpus(tmp_path / "pairs.txt"), tmp_path / "old.npz"
    with monkeypatch.context() as patch:  # a run as npseq started one before: the whole file, no held_out saved
        patch.setattr(npseq.runs, "FILE_HELD_OUT", 0.0)
        run_ = npseq.runs.TranslationRun.start(data=str(corpus), save=str(saved), num_hiddens=8, embed_size=4,
                                               num_layers=1)
        run_.train(1, progress=False)
    checkpoint = load_checkpoint(str(saved))
    assert checkpoint.extra["held_out"] == 0.0
    code, out, err = run(capsys, "train", "--data", corpus, "--epochs", "2", "--resume", saved, "--no-progress")
    assert code == 0, err
    assert out.strip().splitlines()[-1] == ("test: nothing to test on (none held out: the run trains on the whole "
                                            "file, as runs started before npseq held pairs out did)")


# ------------------------------------------- item 12: inputs outside a task's format
@pytest.fixture(scope="module")
def dates_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("dates") / "dates.npz"
    assert main(["train", "--task", "dates", "--num-examples", "300", *TINY, "--epochs", "1", "--save",
                 str(path)]) == 0
    return path


def test_translate_names_a_date_outside_the_tasks_formats(dates_model, capsys):
    code, out, err = run(capsys, "translate", dates_model, "2020-12-25", "25 december 2020")
    assert code == 0 and out.count(" => ") == 2
    assert err.strip() == ("npseq translate: outside the task's inputs: not a date of 1950..2049 in one of the "
                           "task's 10 formats (like '3 march 2017', '2017/03/03', '03.03.2017') (in '2020-12-25')")
    code, out, err = run(capsys, "translate", dates_model, "25 december 2020", "2020-12-25", "--strict")
    assert "--strict: outside the task's inputs: " in assert_one_line(code, err, "translate") and out == ""


@pytest.mark.parametrize("task, text, inside", [
    ("dates", "2020-12-25", False), ("dates", "25 december 2020", True), ("dates", "3 march 1900", False),
    ("dates", "thursday 03/03/17", False),  # 3 march 2017 was a Friday: no sentence the task writes
    ("dates", "  Friday 03/03/17 ", True), ("dates", "31 february 2020", False),
    ("numbers", "forty two", True), ("numbers", "Forty  two", True), ("numbers", "forty-two", False),
    ("numbers", "12", False),
    ("reverse", "a b c d", True), ("reverse", "a b c", False), ("reverse", "a b c d e f g h i j a", False),
    ("reverse", "ab c d e", False),
])
def test_a_tasks_format_is_what_its_generator_writes(task, text, inside):
    assert (outside_task_format(task, text) is None) == inside


@pytest.mark.parametrize("task, pairs", [("numbers", numbers_pairs), ("dates", dates_pairs),
                                         ("reverse", reverse_pairs)])
def test_every_generated_source_is_inside_its_tasks_format(task, pairs):
    text = task_text(task)
    assert not [src for src, _ in pairs(0, 10_000) if outside_task_format(task, text.detokenize_source(src))]


def test_the_dates_message_shows_formats_the_task_writes():
    message = outside_task_format("dates", "2020-12-25")
    for style in (0, 6, 3):
        assert repr(format_date(datetime.date(2017, 3, 3), style)) in message
