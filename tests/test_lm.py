"""Language models: corpora, d2l's two partitions, RNNLM gradients, truncated BPTT in train_lm, n-grams, sampling."""
import doctest
import importlib.util
import math
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npseq
from npseq.data import (
    CHAR_ALPHABET,
    SeqDataLoader,
    load_corpus,
    load_data_lm,
    num_lm_batches,
    preprocess_lm,
    pydoc_text,
    seq_data_iter_random,
    seq_data_iter_sequential,
    split_corpus,
    tokenize_lm,
)
from npseq.errors import TrainingDiverged
from npseq.gradcheck import check_module
from npseq.models.lm import RNNLM
from npseq.models.ngram import NGramLM
from npseq.nn import MaskedSoftmaxCELoss, Module
from npseq.optim import SGD, Adam
from npseq.train import evaluate_perplexity, predict, train_lm

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "char_lm.py"


# ------------------------------------------------------------------- corpora
def test_char_and_word_corpus_from_a_file(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("The cat’s hat.\nThe CAT sat; 42 times!\n", encoding="utf-8")
    ids, vocab = load_corpus(path=path, level="char")
    text = "the cat's hat. the cat sat; times!"
    assert preprocess_lm(path.read_text(encoding="utf-8")) == text
    assert vocab.to_tokens(ids) == list(text) and ids.dtype == np.int64
    assert vocab.idx_to_token[:4] == ["<unk>", "t", " ", "a"]  # by count, then code point
    words, word_vocab = load_corpus(path=str(path), level="word")
    assert word_vocab.to_tokens(words) == ["the", "cat's", "hat", ".", "the", "cat", "sat", ";", "times", "!"]
    capped, _ = load_corpus(path=path, level="word", max_tokens=3)
    assert len(capped) == 3
    rare, rare_vocab = load_corpus(path=path, level="word", min_freq=2)
    assert rare_vocab.idx_to_token == ["<unk>", "the"] and (rare == 0).sum() == 8


def test_corpus_from_a_string_matches_the_file(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("Hello, world (again)!", encoding="utf-8")
    a, va = load_corpus(path=path, level="word")
    b, vb = load_corpus(text="Hello, world (again)!", level="word")
    assert va == vb and a.tolist() == b.tolist()
    assert tokenize_lm("it's (x)", "word") == ["it's", "(", "x", ")"]


def test_builtin_pydoc_corpus_is_deterministic_english_prose():
    text = pydoc_text()
    assert text == pydoc_text() and len(text) > 150_000
    assert "::=" not in text and ">>>" not in text and "  " not in text
    ids, vocab = load_corpus(max_tokens=100_000)
    assert len(ids) == 100_000
    assert set(vocab.idx_to_token[1:]) <= set(CHAR_ALPHABET) and len(vocab) <= len(CHAR_ALPHABET) + 1
    assert vocab.idx_to_token[1] == " " and vocab.idx_to_token[2] == "e"  # English letter frequencies
    assert "assert statement" in "".join(vocab.to_tokens(ids[:300]))  # topics in sorted order: "assert" first
    words, word_vocab = load_corpus(level="word", max_tokens=5_000)
    assert "the" in word_vocab and len(words) == 5_000


def test_split_is_by_position():
    ids = np.arange(100)
    train, valid = split_corpus(ids, 0.1)
    assert train.tolist() == list(range(90)) and valid.tolist() == list(range(90, 100))
    loader, valid, vocab = load_data_lm(4, 5, text="abcdefgh " * 40, partition="sequential")
    assert len(valid) == 35 and loader.partition == "sequential" and len(vocab) == 10


def test_corpus_errors(tmp_path):
    with pytest.raises(ValueError, match="path, text: expected at most one source of text, got both"):
        load_corpus(path="x", text="y")
    with pytest.raises(FileNotFoundError, match="path: no text file at"):
        load_corpus(path=tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="level: expected one of"):
        load_corpus(text="abc", level="byte")
    with pytest.raises(ValueError, match="text: expected at least one char token after normalisation, got none"):
        load_corpus(text="123 456")
    with pytest.raises(ValueError, match=r"corpus: expected at least \(batch_size \+ 1\) \* num_steps = 12 tokens"):
        SeqDataLoader(np.arange(11), 2, 4)
    with pytest.raises(ValueError, match="partition: expected one of"):
        SeqDataLoader(np.arange(100), 2, 4, partition="shuffled")


def test_data_docstring_examples():
    result = doctest.testmod(npseq.data.lm)
    assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------- partitions
sizes = st.tuples(st.integers(1, 6), st.integers(1, 7), st.integers(0, 60), st.integers(0, 2**32 - 1))


@settings(max_examples=60, deadline=None)
@given(sizes)
def test_sequential_partition_continues_each_row(args):
    batch_size, num_steps, extra, seed = args
    corpus = np.arange((batch_size + 1) * num_steps + extra)  # each id is its own position
    batches = list(seq_data_iter_sequential(corpus, batch_size, num_steps, np.random.default_rng(seed)))
    assert len(batches) == num_lm_batches(len(corpus), batch_size, num_steps) >= 1
    for X, Y in batches:
        assert X.shape == Y.shape == (batch_size, num_steps) and X.dtype == np.int64
        np.testing.assert_array_equal(Y, X + 1)
        np.testing.assert_array_equal(np.diff(X, axis=1), 1)
    for (_X0, Y0), (X1, _) in zip(batches, batches[1:]):
        np.testing.assert_array_equal(X1[:, 0], Y0[:, -1])  # row i of b+1 starts where row i of b ended
    assert 0 <= batches[0][0][0, 0] < num_steps and batches[-1][1].max() < len(corpus)


@settings(max_examples=60, deadline=None)
@given(sizes)
def test_random_partition_is_disjoint_aligned_and_covers_all_batches(args):
    batch_size, num_steps, extra, seed = args
    corpus = np.arange((batch_size + 1) * num_steps + extra)
    batches = list(seq_data_iter_random(corpus, batch_size, num_steps, seed))
    assert len(batches) == num_lm_batches(len(corpus), batch_size, num_steps) >= 1
    starts = np.concatenate([X[:, 0] for X, _ in batches])
    positions = np.concatenate([X.reshape(-1) for X, _ in batches])
    assert len(set(positions.tolist())) == len(positions)  # no two subsequences overlap
    assert len(set((starts % num_steps).tolist())) == 1  # all on one grid: offset + j * num_steps
    offset = int(starts.min() % num_steps)
    # Every whole subsequence of the grid but fewer than batch_size of them is used.
    on_grid = (len(corpus) - num_steps) // num_steps
    assert on_grid - batch_size < len(starts) <= on_grid
    assert starts.max() + num_steps < len(corpus) and offset < num_steps
    for X, Y in batches:
        np.testing.assert_array_equal(Y, X + 1)
        np.testing.assert_array_equal(np.diff(X, axis=1), 1)


def test_loaders_replay_epochs_from_the_seed():
    corpus = np.arange(500)
    for partition in ("random", "sequential"):
        loader = SeqDataLoader(corpus, 3, 5, partition=partition, seed=7)
        epochs = [[x.tolist() for x, _ in loader] for _ in range(5)]
        first = epochs[0]
        assert any(epoch != first for epoch in epochs) and loader.epoch == 5
        loader.set_epoch(0)
        assert [x.tolist() for x, _ in loader] == first == [x.tolist() for x, _ in loader.batches(0)]
        assert len(loader) == len(first) == num_lm_batches(500, 3, 5)


# -------------------------------------------------------------------- RNNLM
class StateGradient(Module):
    """Returns ``backward``'s state gradient as a one-item tuple, so check_module pairs an LSTM's (h, c) with it."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, X, state=None):
        return self.model(X, state)

    def backward(self, dlogits, dstate=None):
        return (self.model.backward(dlogits, dstate),)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_rnnlm_gradients(cell):
    rng = np.random.default_rng(0)
    model = RNNLM(7, 4, num_layers=2, cell=cell, embed_size=3, rng=rng, dtype=np.float64)
    X = rng.integers(0, 7, (2, 3))
    state = model.begin_state(2)
    state = tuple(0.5 * rng.standard_normal(s.shape) for s in state) if cell == "lstm" \
        else 0.5 * rng.standard_normal(state.shape)
    report = check_module(StateGradient(model), {"X": X, "state": state})
    assert report.ok, report
    report = check_module(model, {"X": X[:1, :1]})  # N = T = 1, zero initial state
    assert report.ok, report


def test_rnnlm_shapes_dropout_and_errors():
    model = RNNLM(5, 3, cell="lstm", dropout=0.5, rng=0)
    logits, (h, c) = model(np.zeros((2, 4), dtype=np.int64))
    assert logits.shape == (2, 4, 5) and logits.dtype == np.float32 and h.shape == c.shape == (1, 2, 3)
    dstate = model.backward(np.ones_like(logits))
    assert dstate[0].shape == (1, 2, 3)
    model.eval()
    with npseq.no_grad():
        a, _ = model(np.ones((1, 3), dtype=np.int64))
        b, _ = model(np.ones((1, 3), dtype=np.int64))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(IndexError, match=r"X: expected token ids in \[0, 4\], got 5"):
        model(np.full((1, 2), 5))
    with pytest.raises(ValueError, match=r"X: expected a 2-d array \(N, T\), got shape \(3,\)"):
        model(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="cell: expected one of"):
        RNNLM(5, 3, cell="tcn")


def test_uniform_model_has_the_vocabulary_size_as_perplexity():
    model = RNNLM(11, 4, cell="gru", rng=0, dtype=np.float64)
    model.dense.W.data[...] = 0.0
    model.dense.b.data[...] = 0.0
    ids = np.random.default_rng(1).integers(0, 11, 200)
    for num_steps, batch_size in ((7, 3), (50, 1)):
        assert abs(evaluate_perplexity(model, ids, num_steps, batch_size) - 11) < 1e-9


def test_evaluation_carries_the_state_across_chunks():
    model = RNNLM(6, 5, cell="lstm", rng=2, dtype=np.float64)
    ids = np.random.default_rng(3).integers(0, 6, 61)
    whole = evaluate_perplexity(model, ids, 60, 1)
    np.testing.assert_allclose(evaluate_perplexity(model, ids, 7, 1), whole, rtol=1e-12)
    with npseq.no_grad():
        logits, _ = model(ids[None, :-1])
    log_p = logits[0] - np.log(np.exp(logits[0]).sum(-1, keepdims=True))
    np.testing.assert_allclose(whole, np.exp(-log_p[np.arange(60), ids[1:]].mean()), rtol=1e-12)
    assert model.training and all(m.num_pending == 0 for m in model.modules())


# --------------------------------------------------------------- train_lm
class Recorder(Module):
    """An RNNLM that remembers every batch, the state it was given and the state it returned."""

    def __init__(self, model):
        super().__init__()
        self.model, self.calls = model, []

    def forward(self, X, state=None):
        logits, final = self.model(X, state)
        given = None if state is None else state.copy()
        self.calls.append((X.copy(), given, final.copy()))
        return logits, final

    def backward(self, dlogits, dstate=None):
        return self.model.backward(dlogits, dstate)


class RecordingSGD(SGD):
    """SGD that keeps each step's gradients and the weights they were computed at."""

    def __init__(self, params, lr):
        super().__init__(params, lr)
        self.grads, self.weights = [], []

    def step(self):
        self.grads.append([p.grad.copy() for p in self.params])
        self.weights.append([p.data.copy() for p in self.params])
        super().step()


def lm_setup(partition, seed=0):
    corpus = np.random.default_rng(seed).integers(0, 6, 160)
    loader = SeqDataLoader(corpus, 3, 8, partition=partition, seed=seed)
    model = Recorder(RNNLM(6, 5, cell="gru", rng=seed, dtype=np.float64))
    return model, loader


def test_sequential_partition_carries_the_exact_final_state():
    model, loader = lm_setup("sequential")
    train_lm(model, loader, RecordingSGD(model.parameters(), 0.5), 2, progress=False)
    per_epoch = len(loader)
    assert len(model.calls) == 2 * per_epoch >= 6
    for epoch in range(2):
        calls = model.calls[epoch * per_epoch:(epoch + 1) * per_epoch]
        assert calls[0][1] is None  # each epoch starts from zeros
        for (_, _, returned), (_, received, _) in zip(calls, calls[1:]):
            np.testing.assert_array_equal(received, returned)
            assert np.abs(received).max() > 0


def test_random_partition_starts_every_batch_from_zeros():
    model, loader = lm_setup("random")
    train_lm(model, loader, SGD(model.parameters(), 0.5), 1, progress=False)
    assert len(model.calls) == len(loader) and all(given is None for _, given, _ in model.calls)


@pytest.mark.parametrize("poison", [np.inf, np.nan])
def test_a_language_model_that_diverges_is_one_named_error(poison):
    """As train_seq2seq does: NaN or inf gradients end training with TrainingDiverged, which the command line
    prints as one line, not a FloatingPointError from clip_grad_norm."""
    model, loader = lm_setup("random")
    next(iter(model.parameters())).data[...] = poison
    with pytest.raises(TrainingDiverged, match=r"training diverged in epoch 1, batch 1: the (gradients hold NaN or "
                                               r"inf|loss is nan)"):
        train_lm(model, loader, SGD(model.parameters(), 0.5), 1, progress=False)


def test_sequential_training_truncates_backpropagation_at_the_batch_boundary():
    model, loader = lm_setup("sequential", seed=4)
    optimizer = RecordingSGD(model.parameters(), 0.5)
    train_lm(model, loader, optimizer, 1, clip=None, progress=False)
    names = [name.removeprefix("model.") for name, _ in model.named_parameters()]
    loss_fn = MaskedSoftmaxCELoss("mean")
    for b in (1, 2):
        X, given, _ = model.calls[b]
        Y = next(y for i, (_, y) in enumerate(loader.batches(0)) if i == b)
        fresh = RNNLM(6, 5, cell="gru", rng=99, dtype=np.float64)
        fresh.load_state_dict(dict(zip(names, optimizer.weights[b])))

        def gradients(state, fresh=fresh, X=X, Y=Y):  # this iteration's model and batch
            fresh.zero_grad()
            logits, _ = fresh(X, state)
            loss_fn(logits, Y, np.full(3, 8))
            fresh.backward(loss_fn.backward())
            return [p.grad.copy() for p in fresh.parameters()]

        # The gradient of batch b is that of batch b alone from its (constant) initial state ...
        for recorded, manual in zip(optimizer.grads[b], gradients(given)):
            np.testing.assert_allclose(recorded, manual, rtol=1e-12, atol=1e-15)
        # ... which is not what a reset state gives: the carried state matters.
        assert any(not np.allclose(r, m) for r, m in zip(optimizer.grads[b], gradients(None)))


def test_training_learns_records_history_and_validates():
    corpus = np.tile(np.array([1, 2, 3, 4, 2, 3, 5]), 60)
    loader = SeqDataLoader(corpus[:350], 4, 10, partition="sequential", seed=0)
    model = RNNLM(6, 16, cell="lstm", rng=0)
    history = train_lm(model, loader, Adam(model.parameters(), lr=0.05), 8, valid_ids=corpus[350:],
                       record_step_norms=True, progress=False)
    assert len(history.train_ppl) == len(history.valid_ppl) == len(history.grad_norm) == 8
    assert history.train_ppl[-1] < 1.3 < history.train_ppl[0] and history.valid_ppl[-1] < 1.3
    np.testing.assert_allclose(history.train_ppl, np.exp(history.token_ce))
    assert history.num_batches == [len(loader)] * 8 and not history.stopped_early
    assert history.step_grad_norms[-1][0, 0].shape == (10,) and not model.rnn.record_step_norms
    assert all(m.num_pending == 0 for m in model.modules())


def test_time_budget_stops_training():
    model, loader = lm_setup("sequential")
    history = train_lm(model, loader, SGD(model.parameters(), 0.1), None, max_seconds=1e-9, valid_ids=np.arange(6),
                       progress=False)
    assert history.stopped_early and history.num_batches == [1] and len(history.valid_ppl) == 1


def test_train_lm_errors():
    model, loader = lm_setup("random")
    optimizer = SGD(model.parameters(), 0.1)
    with pytest.raises(ValueError, match="num_epochs: expected a positive int"):
        train_lm(model, loader, optimizer, None, progress=False)
    with pytest.raises(ValueError, match="partition: expected the batches' own partition 'random', got 'sequential'"):
        train_lm(model, loader, optimizer, 1, partition="sequential", progress=False)
    with pytest.raises(ValueError, match="partition: expected one of"):
        train_lm(model, [(np.zeros((2, 3), np.int64),) * 2], optimizer, 1, progress=False)
    ragged = [(np.zeros((2, 3), np.int64),) * 2, (np.zeros((1, 3), np.int64),) * 2]
    with pytest.raises(ValueError, match="batches: sequential partitioning carries the state"):
        train_lm(model, ragged, optimizer, 1, partition="sequential", progress=False)


# ------------------------------------------------------------------ predict
def trained_char_model():
    text = "the cat sat on the mat. " * 30
    loader, _, vocab = load_data_lm(4, 12, text=text, partition="sequential")
    model = RNNLM(len(vocab), 24, cell="gru", rng=0)
    train_lm(model, loader, Adam(model.parameters(), lr=0.03), 25, progress=False)
    return model, vocab


def test_predict_greedy_sampling_and_temperature():
    model, vocab = trained_char_model()
    greedy = predict(model, "the c", 15, vocab)
    assert greedy.startswith("the cat sat on t")
    assert predict(model, "the c", 15, vocab) == greedy and model.training
    sample = predict(model, "the c", 40, vocab, temperature=1.0, rng=5)
    assert sample == predict(model, "the c", 40, vocab, temperature=1.0, rng=np.random.default_rng(5))
    assert len(sample) == 45 and sample.startswith("the c")
    assert predict(model, "the c", 15, vocab, temperature=1e-4, rng=1) == greedy
    assert all(m.num_pending == 0 for m in model.modules())
    assert predict(model, ["t", "h"], 2, vocab) == "t h " + " ".join(greedy[2:4])
    with pytest.raises(ValueError, match="rng: expected a numpy.random.Generator or an int seed when sampling"):
        predict(model, "a", 3, vocab, temperature=0.5)
    with pytest.raises(ValueError, match="prefix: expected at least one token"):
        predict(model, "", 3, vocab)


# ------------------------------------------------------------------- n-grams
@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.floats(1e-3, 5.0), st.integers(2, 6), st.integers(1, 40), st.integers(0, 1000))
def test_ngram_probabilities_sum_to_one_for_any_context(order, k, vocab_size, length, seed):
    rng = np.random.default_rng(seed)
    model = NGramLM(order, k, vocab_size).fit(rng.integers(0, vocab_size, length))
    for context in ([], rng.integers(0, vocab_size, 1), rng.integers(0, vocab_size, 5)):
        p = model.probs(context)
        assert p.shape == (vocab_size,) and (p > 0).all()
        assert abs(p.sum() - 1.0) < 1e-12


def brute_force_nll(train, test, order, k, vocab_size):
    def count(gram, followed):  # occurrences of gram in train (followed: with a token after it)
        n = len(gram)
        return sum(tuple(train[i:i + n]) == tuple(gram) for i in range(len(train) - n + 1 - followed))
    nll = 0.0
    for t in range(1, len(test)):
        context = tuple(test[max(0, t - order + 1):t])
        total = count(context, True) if context else len(train)
        nll -= math.log((count(context + (test[t],), False) + k) / (total + k * vocab_size))
    return nll


@pytest.mark.parametrize("order", [1, 2, 3])
def test_ngram_matches_the_formula(order):
    rng = np.random.default_rng(order)
    train, test = rng.integers(0, 4, 60), rng.integers(0, 4, 25)
    model = NGramLM(order, 0.3, 4).fit(train)
    nll, count = model.nll(test)
    assert count == 24
    np.testing.assert_allclose(nll, brute_force_nll(train.tolist(), test.tolist(), order, 0.3, 4), rtol=1e-12)
    np.testing.assert_allclose(model.perplexity(test), math.exp(nll / 24), rtol=1e-12)


def test_unigram_formula_and_errors():
    model = NGramLM(1, 0.5, 4).fit([0, 1, 1, 3, 3, 3])
    np.testing.assert_allclose(model.probs(), (np.array([1, 2, 0, 3]) + 0.5) / (6 + 0.5 * 4))
    np.testing.assert_allclose(model.probs([2, 2]), model.probs())  # the context is ignored
    with pytest.raises(ValueError, match="k: expected a finite pseudo-count > 0, got 0"):
        NGramLM(2, 0, 4)
    with pytest.raises(IndexError, match=r"ids: expected token ids in \[0, 3\], got 4"):
        model.fit([1, 4])
    with pytest.raises(RuntimeError, match="call fit"):
        NGramLM(2, 1.0, 4).perplexity([1, 2])


# ------------------------------------------------------------------ example
@pytest.mark.slow
def test_char_lm_example_runs_in_a_fast_setting(capsys):
    spec = importlib.util.spec_from_file_location("char_lm", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    rows, history = example.main(["--chars", "6000", "--seconds", "1", "--hidden", "16", "--batch-size", "8",
                                  "--num-steps", "10", "--no-progress"])
    out = capsys.readouterr().out
    assert [row[0] for row in rows] == ["unigram", "bigram", "trigram", "GRU"]
    assert all(math.isfinite(row[2]) and row[2] > 1 for row in rows) and history.stopped_early
    # repr() quotes a sample with double quotes when it holds an apostrophe: match either quote.
    assert len(re.findall(r"sample \(temperature 0\.8\): (['\"])the ", out)) == 1 and "valid ppl" in out


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet="ab 'Σ\n.", max_size=300), level=st.sampled_from(["char", "word"]),
       max_tokens=st.integers(1, 200), first_read=st.integers(1, 40))
def test_load_corpus_reads_a_prefix_that_gives_the_same_tokens(text, level, max_tokens, first_read):
    # Reading a file piece by piece (first_read bytes, then doubling) must give exactly the tokens of the whole text.
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        path = pathlib.Path(folder) / "text.txt"
        path.write_text(text, encoding="utf-8")
        patch.setattr(npseq.data.lm, "_FIRST_READ_BYTES", first_read)
        try:
            expected = load_corpus(text=text, level=level, max_tokens=max_tokens)
        except ValueError:
            with pytest.raises(ValueError, match="expected at least one"):
                load_corpus(path=path, level=level, max_tokens=max_tokens)
            return
        ids, vocab = load_corpus(path=path, level=level, max_tokens=max_tokens)
    assert ids.tolist() == expected[0].tolist() and vocab == expected[1]


def test_load_corpus_with_max_tokens_stops_reading_early(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("the quick brown fox jumps over the lazy dog. " * 100_000, encoding="utf-8")  # 4.5 MB
    opened = []
    real_open = type(path).open

    def counting_open(self, *args, **kwargs):
        file = real_open(self, *args, **kwargs)
        real_read = file.read
        file.read = lambda size=-1: opened.append(size) or real_read(size)
        return file

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pathlib.Path, "open", counting_open)
        ids, _ = load_corpus(path=path, max_tokens=1000)
    # Bounded reads only (read() of everything would ask for size -1), one first piece of 64 KiB in all.
    assert len(ids) == 1000 and opened and min(opened) > 0 and sum(opened) <= 2 ** 16


def test_word_level_prompt_is_tokenised_as_words(tmp_path):
    text = tmp_path / "words.txt"
    text.write_text("the cat sat on the mat. it is a cat. " * 300, encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "npseq", "lm", "--data", str(text), "--level", "word",
                             "--epochs", "1", "--num-hiddens", "8", "--num-steps", "5", "--batch-size", "4",
                             "--no-progress", "--prefix", "The cat", "--samples", "1", "--num-preds", "5"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    sample = re.search(r"sample: (['\"])(.*)\1", result.stdout).group(2)
    words = sample.split(" ")
    assert words[:2] == ["the", "cat"] and len(words) == 7  # the prompt's two words, then five more, spaced
