"""What the speed work must never trade away: float32 end to end, caches released, memory linear in T.

* A float32 model stays float32 through a whole training step: every parameter, gradient,
  optimizer buffer, output and every array in every module's forward cache (walked before
  the backward consumes them).
* After a training step no module holds a pending cache, and the step's peak traced memory
  (NumPy reports its buffers to ``tracemalloc``) grows linearly with the number of target
  steps ``T`` (doubling ``T`` adds about twice as much again, not four times).
* Inference under ``no_grad`` keeps nothing: after greedy decoding no module holds a cache,
  the NumPy memory still held is tiny, and neither it nor the peak grows with the number
  of decoded steps.
* The recurrent sequence functions skip the steps after ``max(valid_lens)`` (every sequence
  is padding there); the results are exactly those of the sequence cut to that length.
"""
import gc
import tracemalloc

import numpy as np
import pytest
from recurrent_cases import KINDS, fast_run, random_problem

import npseq
from npseq.decode import greedy_search_batch
from npseq.models import build_seq2seq
from npseq.nn import MaskedSoftmaxCELoss
from npseq.optim import Adam, clip_grad_norm
from npseq.train import teacher_forcing_inputs, train_seq2seq_step

V_SRC, V_TGT, BOS = 13, 11, 1


def make_batch(n, s, t, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, V_SRC, (n, s))
    Y = rng.integers(0, V_TGT, (n, t))
    X_len = rng.integers(1, s + 1, n)
    Y_len = rng.integers(1, t + 1, n)
    X_len[0], Y_len[0] = s, t
    return X, X_len, Y, Y_len


def arrays_in(obj, path="cache"):
    """Every array (and NumPy scalar) inside nested NamedTuples, tuples, lists and dicts, with its path."""
    if isinstance(obj, (np.ndarray, np.generic)):
        yield path, obj
    elif isinstance(obj, tuple) and hasattr(obj, "_fields"):
        for name, value in zip(obj._fields, obj):
            yield from arrays_in(value, f"{path}.{name}")
    elif isinstance(obj, (tuple, list)):
        for i, value in enumerate(obj):
            yield from arrays_in(value, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from arrays_in(value, f"{path}[{key!r}]")


def assert_float32(named_arrays):
    named_arrays = list(named_arrays)
    assert named_arrays
    wrong = [(path, a.dtype) for path, a in named_arrays if a.dtype.kind == "f" and a.dtype != np.float32]
    assert not wrong, wrong


SETTINGS = [
    dict(decoder="bahdanau", cell="gru"),
    dict(decoder="luong", cell="lstm", bidirectional=True, score="concat"),
    dict(decoder="luong", cell="gru", score="general", input_feeding=False),
    dict(decoder="plain", cell="rnn"),
]


@pytest.mark.parametrize("sampling_ratio", [0.0, 0.5], ids=["teacher-forcing", "scheduled-sampling"])
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_a_float32_training_step_is_float32_everywhere(settings, sampling_ratio):
    model = build_seq2seq(V_SRC, V_TGT, embed_size=6, num_hiddens=8, num_layers=2, dropout=0.2, seed=0,
                          dtype=np.float32, **settings)
    loss_fn = MaskedSoftmaxCELoss("d2l")
    optimizer = Adam(model.parameters(), lr=0.01)
    X, X_len, Y, Y_len = make_batch(4, 5, 6)
    rng = np.random.default_rng(0)
    for _ in range(2):  # the second round runs with Adam's buffers already written
        model.zero_grad()
        logits = model(X, teacher_forcing_inputs(Y, BOS), X_len, sampling_ratio, rng)
        loss = loss_fn(logits, Y, Y_len)
        caches = [(f"{type(m).__name__}#{i}", m._caches) for i, m in enumerate(list(model.modules()) + [loss_fn])]
        assert_float32([(path, a) for name, stack in caches for path, a in arrays_in(stack, name)])
        dlogits = loss_fn.backward()
        model.backward(dlogits)
        clip_grad_norm(optimizer.params, 1.0)
        optimizer.step()
        assert_float32([("logits", logits), ("loss", loss), ("dlogits", dlogits)])
        assert_float32((name, array) for name, p in model.named_parameters() for array in (p.data, p.grad))
        assert_float32(arrays_in(optimizer.state, "optimizer.state"))
        assert all(m.num_pending == 0 for m in list(model.modules()) + [loss_fn])


def peak_of_a_training_step(num_steps):
    """Peak traced memory (bytes) of one training step with ``num_steps`` target steps (after a warm-up step)."""
    model = build_seq2seq(V_SRC, V_TGT, embed_size=16, num_hiddens=32, num_layers=2, dropout=0.1, seed=0,
                          dtype=np.float32)
    loss_fn = MaskedSoftmaxCELoss("d2l")
    optimizer = Adam(model.parameters(), lr=0.01)
    batch = make_batch(32, 6, num_steps)
    train_seq2seq_step(model, loss_fn, optimizer, batch, BOS, 1.0)
    gc.collect()
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        train_seq2seq_step(model, loss_fn, optimizer, batch, BOS, 1.0)
        end, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert all(m.num_pending == 0 for m in list(model.modules()) + [loss_fn])
    return peak - start, end - start


@pytest.mark.slow
def test_a_training_step_releases_its_caches_and_its_peak_memory_is_linear_in_T():
    (p8, left8), (p16, left16), (p32, left32) = (peak_of_a_training_step(t) for t in (8, 16, 32))
    # linear in T: each doubling adds about twice what the previous one added (quadratic: four times)
    growth = (p32 - p16) / (p16 - p8)
    assert 1.5 < growth < 2.6, (p8, p16, p32)
    # what a step leaves behind is small (the caches are gone; the last attention weights (N, T, S) stay)
    for left, peak in ((left8, p8), (left16, p16), (left32, p32)):
        assert left < 0.05 * peak, (left8, left16, left32, p8, p16, p32)


def numpy_bytes_held(snapshot):
    return sum(trace.size for trace in snapshot.traces if trace.domain == np.lib.tracemalloc_domain)


def test_greedy_decoding_under_no_grad_keeps_nothing():
    model = build_seq2seq(V_SRC, V_TGT, embed_size=16, num_hiddens=32, num_layers=2, dropout=0.1, seed=0,
                          dtype=np.float32)
    X, X_len, _, _ = make_batch(32, 6, 1)
    results = {}
    for max_len in (5, 40):
        gc.collect()
        tracemalloc.start()
        try:
            start = numpy_bytes_held(tracemalloc.take_snapshot())
            tracemalloc.reset_peak()
            with npseq.no_grad():
                out = greedy_search_batch(model, X, X_len, bos_id=BOS, eos_id=-1, max_len=max_len)
            _, peak = tracemalloc.get_traced_memory()
            held = numpy_bytes_held(tracemalloc.take_snapshot()) - start
        finally:
            tracemalloc.stop()
        assert len(out) == 32 and all(len(row) == max_len for row in out)  # eos_id=-1: never stops early
        assert all(m.num_pending == 0 for m in model.modules())
        results[max_len] = peak, held
    (peak5, held5), (peak40, held40) = results[5], results[40]
    # what stays is at most the attention layer's last weights (N, 1, S), whatever the length
    assert held5 <= 32 * 6 * 4 + 1024 and held40 <= 32 * 6 * 4 + 1024, results
    # eight times the steps: the peak stays that of one step (plus the (N,) token ids of each step)
    assert peak40 < 1.25 * peak5, results


@pytest.mark.parametrize("kind,reset_after", KINDS)
def test_steps_after_the_longest_sequence_are_skipped_exactly(kind, reset_after):
    n, t, cut, d, hidden = 3, 7, 4, 3, 5
    x, h0, c0, params = random_problem(kind, n, t, d, hidden, seed=11)
    rng = np.random.default_rng(12)
    dh, dh_last = rng.standard_normal((n, t, hidden)), rng.standard_normal((n, hidden))
    c0 = c0 if kind == "lstm" else None
    lens = np.array([cut, 2, 0])  # every sequence ends by step `cut`: steps cut..t-1 are all padding
    run = fast_run(kind, x, h0, c0, params, lens, dh, dh_last, reset_after=reset_after)
    short = fast_run(kind, x[:, :cut], h0, c0, params, lens, dh[:, :cut], dh_last, reset_after=reset_after)
    assert run.cache.steps == cut
    np.testing.assert_allclose(run.out[:, :cut], short.out, rtol=0, atol=1e-13)
    np.testing.assert_allclose(run.dx[:, :cut], short.dx, rtol=0, atol=1e-13)
    assert not run.out[:, cut:].any() and not run.dx[:, cut:].any()
    for name in ("h_last", "c_last", "dh0", "dc0"):
        if getattr(short, name) is not None:
            np.testing.assert_allclose(getattr(run, name), getattr(short, name), rtol=0, atol=1e-13)
    for got, want in zip(run.dparams, short.dparams):  # the padded tail adds nothing to a weight gradient
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.norms[:cut], short.norms, rtol=1e-13)
    np.testing.assert_allclose(run.norms[cut:], np.linalg.norm(dh_last), rtol=1e-13)  # g_t = dh_last there
    if kind != "rnn":
        assert not run.cache.gates[cut:].any()  # the skipped steps' gates are left at 0
