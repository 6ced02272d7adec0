"""One code path for CPU and GPU: the whole engine on every available backend.

Each test runs on three backends:

* ``numpy``: the host;
* ``double``: :mod:`device_double`, NumPy's arithmetic behind CuPy's rules (no mixing
  of host and device arrays, no implicit copies back, 0-d results of reductions),
  standing in for a GPU on machines without one; it also counts every crossing;
* ``cupy``: CuPy on a real GPU, skipped where CuPy or a GPU is missing.

Parity: the same seed gives the same forward values and gradients as the numpy backend,
within 1e-10 in float64 and 1e-4 (relative) in float32. On a GPU the engine runs every
padded step instead of reading ``max(valid_lens)`` (which would stop the device), so the
sums differ in rounding only.
"""
import device_double
import numpy as np
import pytest
from optional_tools import skip_reason

import npseq
from npseq import backend
from npseq.checkpoint import load_checkpoint, load_seq2seq, save_checkpoint
from npseq.data import Vocab
from npseq.decode import beam_search, exhaustive_search, greedy_search, greedy_search_batch
from npseq.gradient_checks import REGISTRY
from npseq.models import RNNLM, build_seq2seq
from npseq.nn import GRU, MaskedSoftmaxCELoss
from npseq.optim import SGD, Adagrad, Adam, clip_grad_norm
from npseq.samples import valid_mask
from npseq.train import evaluate_perplexity, predict, train_lm, train_seq2seq_step

TOLERANCE = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1e-4, atol=1e-6)}


@pytest.fixture(params=["numpy", "double", "cupy"])
def device(request, monkeypatch):
    """Select a backend for one test and restore NumPy afterwards."""
    if request.param == "double":
        device_double.install(monkeypatch)
        backend.set_backend("cupy")
    elif request.param == "cupy":
        try:
            backend.set_backend("cupy")
        except backend.BackendError:
            pytest.skip(skip_reason("cupy"))
    yield request.param
    backend.set_backend("numpy")


def on_numpy(build):
    """``build()`` run on the numpy backend (the parity reference), whatever is selected now."""
    selected = backend.backend_name()
    backend.set_backend("numpy")
    try:
        return build()
    finally:
        backend.set_backend(selected)


def host(value):
    return backend.to_numpy(value)


def assert_on_device(name, array):
    assert backend.get_array_module(array) is backend.xp, f"{name} is a {type(array).__module__} array"


def assert_close(name, got, expected, dtype, **tolerance):
    np.testing.assert_allclose(host(got), host(expected), err_msg=name, **{**TOLERANCE[dtype], **tolerance})


# ------------------------------------------------------------- gradient checks
@pytest.mark.slow
@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_gradient_check_passes_and_matches_numpy(device, name):
    seed = [0, list(REGISTRY).index(name)]  # what `npseq gradcheck` uses
    report = REGISTRY[name](np.random.default_rng(seed))
    # On the numpy backend the reference is this very run; the check is run once, not twice.
    reference = report if device == "numpy" else on_numpy(lambda: REGISTRY[name](np.random.default_rng(seed)))
    assert report.ok, f"{device}: {name}\n{report.table()}"
    for row, expected in zip(report.rows, reference.rows):
        assert row.name == expected.name
        assert_close(f"{name}: {row.name}", row.analytic, expected.analytic, "float64")


# ------------------------------------------------------------- training a translator
SRC_VOCAB, TGT_VOCAB, BOS = 11, 9, 1
LEARNING_RATE, TRAINING_STEPS = 0.05, 3


def synthetic_batches(num_batches=TRAINING_STEPS, n=4, t=6, seed=0):
    """Host batches ``(X, X_valid_len, Y, Y_valid_len)`` with padding after each length."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(num_batches):
        X_len, Y_len = rng.integers(1, t + 1, size=n), rng.integers(1, t + 1, size=n)
        X, Y = rng.integers(3, SRC_VOCAB, size=(n, t)), rng.integers(3, TGT_VOCAB, size=(n, t))
        X[~valid_mask(X_len, t)] = 0
        Y[~valid_mask(Y_len, t)] = 0
        batches.append((X, X_len, Y, Y_len))
    return batches


def train_translator(dtype, decoder, cell, optimizer_class, steps_of=None):
    model = build_seq2seq(SRC_VOCAB, TGT_VOCAB, decoder=decoder, cell=cell, embed_size=6, num_hiddens=8,
                          num_layers=2, bidirectional=decoder == "bahdanau", dropout=0.2, seed=3, dtype=dtype)
    # A device runs every target row at every step and masks the padding; the NumPy reference
    # does the same (it would pack the rows), so that both draw the same dropout masks.
    model.decoder.packs_rows = False
    optimizer = optimizer_class(model.parameters(), lr=LEARNING_RATE)
    loss_fn = MaskedSoftmaxCELoss("mean")
    results = []
    for batch in synthetic_batches():
        device_double.TRANSFERS.clear()
        results.append(train_seq2seq_step(model, loss_fn, optimizer, batch, BOS, clip=1.0))
        if steps_of is not None:
            steps_of.append(dict(device_double.TRANSFERS))
    return model, optimizer, results


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("decoder, cell, optimizer_class",
                         [("bahdanau", "gru", Adam), ("luong", "lstm", SGD), ("plain", "rnn", Adagrad)])
def test_training_matches_numpy_and_keeps_its_arrays_on_the_device(device, dtype, decoder, cell, optimizer_class):
    transfers = []
    model, optimizer, results = train_translator(dtype, decoder, cell, optimizer_class, transfers)
    ref_model, _, ref_results = on_numpy(lambda: train_translator(dtype, decoder, cell, optimizer_class))
    for (loss, _nll, tokens, norm), (ref_loss, _ref_nll, ref_tokens, ref_norm) in zip(results, ref_results):
        assert tokens == ref_tokens
        assert_close("loss", loss, ref_loss, dtype)
        assert_close("grad norm", norm, ref_norm, dtype)
    # A step moves a parameter by about lr times its (adaptively scaled) gradient, so gradients that agree to
    # rtol let a parameter drift by up to lr * rtol a step: on a GPU, float32 sums in another order reach
    # that for entries whose gradients nearly cancel (3.5e-6 after 3 Adam steps was seen on an H200).
    parameter_atol = max(TOLERANCE[dtype]["atol"], LEARNING_RATE * TRAINING_STEPS * TOLERANCE[dtype]["rtol"])
    reference = dict(ref_model.named_parameters())
    for name, param in model.named_parameters():
        assert_on_device(name, param.data)
        assert_on_device(f"{name}.grad", param.grad)
        assert param.data.dtype == dtype and param.grad.dtype == dtype
        assert_close(name, param.data, reference[name].data, dtype, atol=parameter_atol)
        assert_close(f"{name}.grad", param.grad, reference[name].grad, dtype)
    for name, buffer in optimizer.state_dict().items():
        if hasattr(buffer, "shape") and buffer.ndim > 0:
            assert_on_device(f"optimizer {name}", buffer)
    if device == "double":
        for step in transfers:  # two reads come back per step: the gradient norm, then both loss sums
            assert step.get("to_host", 0) == 2, step


# ------------------------------------------------------------- decoding
def trained_translator():
    model, _, _ = train_translator("float64", "bahdanau", "gru", Adam)
    return model


def test_decoding_matches_numpy(device):
    model, reference = trained_translator(), on_numpy(trained_translator)
    src = np.array([4, 7, 5, 9])
    options = dict(bos_id=BOS, eos_id=2, max_len=5)
    for search, extra in ((greedy_search, {}), (beam_search, {"beam_size": 3}), (exhaustive_search, {})):
        got = search(model, src, **options, **extra)
        expected = on_numpy(lambda search=search, extra=extra: search(reference, src, **options, **extra))
        assert got.tokens == expected.tokens, search.__name__
        assert got.score == pytest.approx(expected.score, rel=1e-10), search.__name__
    batch_src, batch_lens = synthetic_batches(1)[0][:2]
    got = greedy_search_batch(model, batch_src, batch_lens, **options)
    assert got == on_numpy(lambda: greedy_search_batch(reference, batch_src, batch_lens, **options))


# ------------------------------------------------------------- language model
def trained_lm():
    corpus = np.random.default_rng(5).integers(0, 12, size=400)
    batches = [(corpus[i:i + 40].reshape(4, 10), corpus[i + 1:i + 41].reshape(4, 10)) for i in range(0, 320, 40)]
    model = RNNLM(12, 16, num_layers=2, cell="lstm", dropout=0.1, rng=4, dtype="float64")
    history = train_lm(model, batches, Adam(model.parameters(), lr=0.01), 2, partition="sequential",
                       progress=False)
    return model, history, corpus


def test_language_model_training_perplexity_and_prediction_match_numpy(device):
    model, history, corpus = trained_lm()
    ref_model, ref_history, _ = on_numpy(trained_lm)
    np.testing.assert_allclose(history.train_ppl, ref_history.train_ppl, rtol=1e-10)
    ppl = evaluate_perplexity(model, corpus, num_steps=7, batch_size=3)
    assert ppl == pytest.approx(on_numpy(lambda: evaluate_perplexity(ref_model, corpus, 7, 3)), rel=1e-10)
    vocab = Vocab([[chr(ord("a") + i) for i in range(11)]])  # 11 letters and <unk>
    assert len(vocab) == 12
    text = predict(model, "abc", 8, vocab, temperature=1.0, rng=0)
    assert text == on_numpy(lambda: predict(ref_model, "abc", 8, vocab, temperature=1.0, rng=0))


# ------------------------------------------------------------- optimizers and clipping
@pytest.mark.parametrize("optimizer_class", [SGD, Adagrad, Adam])
def test_optimizers_and_clipping_update_in_place_on_the_device(device, optimizer_class):
    def run():
        layer = GRU(3, 5, rng=2, dtype="float64")
        optimizer = optimizer_class(layer.parameters(), lr=0.1)
        x = backend.asarray(np.random.default_rng(1).standard_normal((2, 4, 3)))
        norms = []
        for _ in range(3):
            layer.zero_grad()
            outputs, _ = layer(x)
            layer.backward(outputs)
            norms.append(clip_grad_norm(optimizer.params, 0.5))
            optimizer.step()
        return layer, norms

    layer, norms = run()
    ref_layer, ref_norms = on_numpy(run)
    assert all(isinstance(norm, float) for norm in norms)
    np.testing.assert_allclose(norms, ref_norms, rtol=1e-10)
    for (name, param), (_, ref_param) in zip(layer.named_parameters(), ref_layer.named_parameters()):
        assert_on_device(name, param.data)
        assert_close(name, param.data, ref_param.data, "float64")


# ------------------------------------------------------------- checkpoints
def test_checkpoints_are_saved_from_the_device_and_load_onto_any_backend(device, tmp_path):
    model = trained_translator()
    config = dict(src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB, decoder="bahdanau", cell="gru", embed_size=6,
                  num_hiddens=8, num_layers=2, bidirectional=True, dropout=0.2, dtype="float64")
    path = save_checkpoint(tmp_path / "device.npz", model, config=config)
    saved = load_checkpoint(path)
    for name, param in model.named_parameters():
        assert type(saved.params[name]) is np.ndarray
        np.testing.assert_array_equal(saved.params[name], host(param.data))
    loaded, _ = load_seq2seq(path)
    for name, param in loaded.named_parameters():
        assert_on_device(name, param.data)
        np.testing.assert_array_equal(host(param.data), saved.params[name])
    on_host, _ = on_numpy(lambda: load_seq2seq(path))
    for param in on_host.parameters():
        assert type(param.data) is np.ndarray


# ------------------------------------------------------------- mixing host and device
def test_a_numpy_array_given_to_a_device_model_is_named(device):
    if device == "numpy":
        pytest.skip("nothing to mix on the host backend")
    model = build_seq2seq(SRC_VOCAB, TGT_VOCAB, embed_size=6, num_hiddens=8, seed=0)
    X, X_len, Y, _ = synthetic_batches(1)[0]
    with pytest.raises(TypeError, match=r"^src: expected a cupy array \(the model's backend\), got a numpy array"):
        model(X, backend.asarray(Y), backend.asarray(X_len))
    with pytest.raises(TypeError, match=r"^tgt_in: expected a cupy array"):
        model(backend.asarray(X), Y, backend.asarray(X_len))
    with pytest.raises(TypeError, match=r"^src_valid_lens: expected a cupy array"):
        model(backend.asarray(X), backend.asarray(Y), X_len)
    layer = GRU(3, 4, rng=0)
    with pytest.raises(TypeError, match=r"^x: expected a cupy array"):
        layer(np.zeros((2, 3, 3), dtype=np.float32))
    loss = MaskedSoftmaxCELoss("mean")
    logits = backend.asarray(np.zeros((4, 6, TGT_VOCAB), dtype=np.float32))
    with pytest.raises(TypeError, match=r"^labels: expected a cupy array"):
        loss(logits, Y, backend.asarray(X_len))


def test_ids_out_of_range_are_caught_on_the_host_before_they_reach_the_device(device):
    model = build_seq2seq(SRC_VOCAB, TGT_VOCAB, embed_size=6, num_hiddens=8, seed=0)
    X, X_len, Y, Y_len = synthetic_batches(1)[0]
    X = X.copy()
    X[1, 0] = SRC_VOCAB
    with pytest.raises(IndexError, match=rf"^X: expected token ids \(vocabulary of {SRC_VOCAB}\) in \[0, 10\], got 11"):
        train_seq2seq_step(model, MaskedSoftmaxCELoss(), Adam(model.parameters()), (X, X_len, Y, Y_len), BOS, 1.0)
    with pytest.raises(IndexError, match=r"^src: expected token ids"):
        greedy_search(model, [3, SRC_VOCAB + 4], bos_id=BOS, eos_id=2, max_len=3)


def test_the_device_double_keeps_cupys_rules(monkeypatch):
    cupy = device_double.install(monkeypatch)
    a = cupy.asarray(np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match="Unsupported type"):
        a + np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        cupy.concatenate([a, np.ones((1, 3))])
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(a)
    total = a.sum()
    assert type(total) is device_double.DeviceArray and total.shape == ()
    with pytest.raises(TypeError):
        range(total)
    source = np.zeros(2)
    copy = cupy.asarray(source)
    source[0] = 5.0
    assert float(copy[0]) == 0.0
    assert type(np.concatenate([a, a])) is device_double.DeviceArray
    assert backend.get_array_module(a) is cupy
    assert backend.to_numpy(a).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_selecting_cupy_either_works_or_says_why():
    try:
        backend.set_backend("cupy")
    except backend.BackendError as exc:
        assert "cupy" in str(exc)
    else:
        assert npseq.backend.backend_name() == "cupy"
    finally:
        backend.set_backend("numpy")


def test_the_command_line_trains_translates_and_draws_on_the_backend(device, tmp_path, monkeypatch, capsys):
    from npseq import cli

    monkeypatch.chdir(tmp_path)
    model_path = str(tmp_path / "numbers.npz")
    assert cli.main(["train", "--task", "numbers", "--num-examples", "300", "--epochs", "1", "--save", model_path,
                     "--no-progress"]) == 0
    assert cli.main(["translate", model_path, "two hundred one"]) == 0
    assert cli.main(["demo", "--num-examples", "300", "--epochs", "1", "--no-progress", "--out", "demo"]) == 0
    out = capsys.readouterr().out
    assert "saved" in out and "two hundred one =>" in out and "test: BLEU" in out
    assert (tmp_path / "demo" / "numbers" / "attention.png").stat().st_size > 0
    assert backend.backend_name() == ("numpy" if device == "numpy" else "cupy")
