"""TranslationRun from Python: what npseq train does, without the command line."""
import numpy as np
import pytest

from npseq.errors import InvalidTypeError, InvalidValueError
from npseq.runs import RUN_DEFAULTS, TranslationRun, demo_settings

SMALL = dict(num_examples=200, embed_size=8, num_hiddens=16, num_layers=1, lr=0.01)


def weights(run):
    return {name: p.data.copy() for name, p in run.model.named_parameters()}


def test_a_run_saved_after_one_epoch_and_resumed_equals_two_epochs_in_one_go(tmp_path):
    straight = TranslationRun.start(task="reverse", **SMALL)
    assert straight.train(2, progress=False)
    first = TranslationRun.start(task="reverse", save=str(tmp_path / "run.npz"), **SMALL)
    assert first.train(1, progress=False) and first.epochs_done == 1
    resumed = TranslationRun.resume(str(tmp_path / "run.npz"), task="reverse", lr=0.01)
    assert resumed.epochs_done == 1 and resumed.settings == straight.settings
    assert resumed.train(2, progress=False)
    a, b = weights(straight), weights(resumed)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert resumed.history.loss == straight.history.loss
    with pytest.raises(InvalidValueError, match="already has 2 epochs"):
        resumed.train(2)


def test_a_stop_request_ends_between_updates_after_saving(tmp_path):
    run = TranslationRun.start(task="reverse", save=str(tmp_path / "run.npz"), **SMALL)
    asked = []
    # Asked before each batch, the second time it says stop: one batch done.
    finished = run.train(3, progress=False, stop=lambda: asked.append(1) or len(asked) >= 2)
    assert not finished and run.epochs_done == 0 and run.position.batches_done == 1
    resumed = TranslationRun.resume(str(tmp_path / "run.npz"), task="reverse")
    assert resumed.position.batches_done == 1


def test_settings_are_checked_by_name_and_against_the_saved_run(tmp_path):
    with pytest.raises(InvalidTypeError, match="unknown hidden_size"):
        TranslationRun.start(task="reverse", hidden_size=8)
    with pytest.raises(InvalidTypeError, match="exactly one of"):
        TranslationRun.start()
    run = TranslationRun.start(task="reverse", save=str(tmp_path / "run.npz"), **SMALL)
    run.train(1, progress=False)
    with pytest.raises(InvalidValueError, match="--num-hiddens 32 conflicts with .*--num-hiddens 16"):
        TranslationRun.resume(str(tmp_path / "run.npz"), task="reverse", num_hiddens=32)
    with pytest.raises(InvalidValueError, match="was trained on reverse, not on numbers"):
        TranslationRun.resume(str(tmp_path / "run.npz"), task="numbers")


def test_evaluation_scores_a_task_and_the_demo_settings_are_run_settings():
    run = TranslationRun.start(task="reverse", **SMALL)
    run.train(1, progress=False)
    scores = run.evaluate()
    assert 0.0 <= scores.bleu <= 1.0 and 0.0 <= scores.exact_match <= 1.0
    for task in ("numbers", "dates", "reverse"):
        assert set(demo_settings(task)) <= set(RUN_DEFAULTS)
    assert demo_settings("reverse")["lr"] < demo_settings("numbers")["lr"]
    assert demo_settings("numbers", lr=0.5)["lr"] == 0.5


@pytest.mark.demo_full  # a minute or two each: pytest -m demo_full
@pytest.mark.parametrize("model", ["rnn", "transformer"])
@pytest.mark.parametrize("task", ["numbers", "dates", "reverse"])
def test_every_demo_task_reaches_its_exact_match_target(task, model):
    from npseq.runs import demo_epochs
    run = TranslationRun.start(task=task, **demo_settings(task, model))
    assert run.train(demo_epochs(task, model), progress=False)
    assert run.evaluate().exact_match >= 0.99
