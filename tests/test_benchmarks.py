"""The benchmarks time what training runs: their step is npseq.train.train_seq2seq_step itself, its phases read off
as it runs, and it gives training's loss and gradients; their translation is ``npseq translate``'s search (issue:
benchmarks that time what training runs)."""
import copy
import pathlib
import sys
import types

import numpy as np
import pytest

import npseq
from npseq.models import build_seq2seq
from npseq.nn import MaskedSoftmaxCELoss
from npseq.optim import Adam
from npseq.train import train_seq2seq_step

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from seq2seq_step import PHASES, PhaseMissed, TrainingStep, translate_waiting  # noqa: E402


def _batch_and_model():
    rng = np.random.default_rng(0)
    X = rng.integers(4, 30, (6, 7))
    Y = rng.integers(4, 30, (6, 8))
    batch = (X, np.array([7, 5, 3, 7, 1, 4]), Y, np.array([8, 2, 5, 8, 3, 6]))
    model = build_seq2seq(30, 30, embed_size=8, num_hiddens=8, num_layers=2, dropout=0.0, seed=0)
    return batch, model


@pytest.mark.parametrize("fast", [True, False], ids=["packed twin", "reference loop"])
def test_the_benchmarks_step_is_trainings_step_and_gives_its_loss_and_gradients(fast):
    batch, model = _batch_and_model()
    model.fast_decoder = fast
    twin = copy.deepcopy(model)
    step = TrainingStep(npseq, model, bos_id=2)
    phases = dict.fromkeys(PHASES, 0.0)
    loss = step(batch, phases)
    assert all(phases[name] > 0 for name in PHASES), phases
    loss_fn, optimizer = MaskedSoftmaxCELoss("d2l"), Adam(twin.parameters(), lr=0.005)
    _, nll_sum, num_tokens, _ = train_seq2seq_step(twin, loss_fn, optimizer, batch, 2, 1.0)
    assert loss == nll_sum / num_tokens
    for (name, mine), (_, theirs) in zip(model.named_parameters(), twin.named_parameters()):
        assert np.array_equal(mine.grad, theirs.grad) and np.array_equal(mine.data, theirs.data), name
    assert "encode" not in vars(model) and "backward" not in vars(model)  # the timers are gone after the step


def test_a_benchmark_that_times_another_path_than_training_is_an_error():
    """Training that stops running the packed twin the benchmark times (here: a step that switches the model to the
    reference loop, as the benchmarks once timed it while training did not) is refused, not timed as zero."""
    batch, model = _batch_and_model()
    step = TrainingStep(npseq, model, bos_id=2)

    def reference_loop_step(model, *args):
        model.fast_decoder = False
        try:
            return train_seq2seq_step(model, *args)
        finally:
            model.fast_decoder = True
    step.train = types.SimpleNamespace(train_seq2seq_step=reference_loop_step)
    with pytest.raises(PhaseMissed, match="never entered \\['decoder'\\]"):
        step(batch)


def test_the_benchmark_scripts_train_through_the_step():
    for script in ("bench_seq2seq.py", "bench_ab.py"):
        text = (BENCHMARKS / script).read_text()
        assert "TrainingStep(" in text, script
        assert "model.decoder(" not in text, f"{script} calls the decoder itself, not training's step"


def test_the_benchmarks_translation_is_the_search_npseq_translate_runs(checkpoint, tmp_path, monkeypatch, capsys):
    """``translate_waiting`` (what regression.py times) and ``npseq translate`` on lines waiting on stdin call one
    search function with the same options and get the same results."""
    from npseq.checkpoint import load_checkpoint, seq2seq_from_checkpoint
    from npseq.cli import main
    search, calls = npseq.decode.beam_search_batch, []

    def recorded(model, src, src_valid_lens, **options):
        results = search(model, src, src_valid_lens, **options)
        calls.append((src, src_valid_lens, options, [result.tokens for result in results]))
        return results

    monkeypatch.setattr(npseq.decode, "beam_search_batch", recorded)
    lines = tmp_path / "lines.txt"
    lines.write_text("two hundred\nfive\nnine thousand nine\n")
    with lines.open() as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        assert main(["translate", str(checkpoint)]) == 0
    assert capsys.readouterr().out.count(" => ") == 3
    (src, src_valid_lens, options, tokens), = calls
    saved = load_checkpoint(checkpoint)
    special = dict(bos_id=options.pop("bos_id"), eos_id=options.pop("eos_id"), max_len=options.pop("max_len"))
    assert options == dict(beam_size=1, alpha=0.0)
    results = translate_waiting(npseq.decode, seq2seq_from_checkpoint(saved), src, src_valid_lens, **special)
    assert len(calls) == 2 and calls[1][2] == dict(beam_size=1, alpha=0.0, **special)
    assert [result.tokens for result in results] == tokens
