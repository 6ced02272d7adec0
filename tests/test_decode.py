"""Greedy, beam and exhaustive search on tiny random models, checked against teacher-forced scoring."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npseq
from npseq.data import Vocab
from npseq.decode import (
    BeamTrace,
    attention_rows,
    beam_search,
    beam_search_batch,
    exhaustive_search,
    greedy_search,
    sequence_score,
    translate,
    translate_batch,
)
from npseq.errors import InvalidValueError
from npseq.models import build_seq2seq

BOS, EOS = 1, 2
SRC = np.array([3, 4, 5, 4, 2])


def tiny_model(seed, vocab=5, decoder="bahdanau", cell="gru", num_layers=1, scale=3.0, eos_bias=0.0, eos=EOS):
    """A random float64 model whose step distributions are peaked (weights scaled up).

    ``eos_bias`` is added to the ``<eos>`` logit, to make outputs end early (> 0) or never (< 0).
    Dropout is on, so a search that forgot eval mode would not be deterministic.
    """
    model = build_seq2seq(6, vocab, decoder=decoder, cell=cell, embed_size=4, num_hiddens=5, num_layers=num_layers,
                          dropout=0.3, seed=seed, dtype="float64")
    for p in model.parameters():
        p.data *= scale
    model.decoder.dense.b.data[eos] += eos_bias
    return model


def forced(model, sequence, src=SRC):
    """``log P(sequence)`` and the attention ``(T, S)`` by one teacher-forced forward (eval mode)."""
    training = model.training
    model.eval()
    with npseq.no_grad():
        logits = model(src[None], np.array([[BOS] + list(sequence[:-1])]))
    model.train(training)
    log_p = logits[0] - np.log(np.exp(logits[0]).sum(-1, keepdims=True))
    weights = model.attention_weights
    return sum(log_p[t, y] for t, y in enumerate(sequence)), None if weights is None else weights[0]


def output_sequence(result):
    """The generated tokens, ``<eos>`` included when the output ended with it."""
    return result.tokens + [EOS] * (result.length - len(result.tokens))


def penalty(length, alpha, kind):
    return length ** alpha if kind == "d2l" else ((5 + length) / 6) ** alpha


models = st.builds(dict, seed=st.integers(0, 10 ** 6), decoder=st.sampled_from(["plain", "bahdanau", "luong"]),
                   cell=st.sampled_from(["gru", "lstm", "rnn"]), scale=st.floats(1.0, 4.0),
                   eos_bias=st.floats(-2.0, 3.0))


@settings(max_examples=50, deadline=None)
@given(config=models, max_len=st.integers(1, 6), num_layers=st.integers(1, 2))
def test_beam_of_one_is_greedy(config, max_len, num_layers):
    model = tiny_model(num_layers=num_layers, **config)
    greedy = greedy_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=max_len)
    beam = beam_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=max_len, beam_size=1)
    assert beam.tokens == greedy.tokens and beam.length == greedy.length
    assert beam.log_prob == pytest.approx(greedy.log_prob, rel=1e-12, abs=1e-12)
    if greedy.attention is None:
        assert beam.attention is None
    else:
        np.testing.assert_allclose(beam.attention, greedy.attention, rtol=1e-12)


def assert_same_optimum(found, best, model, alpha, kind):
    """Same score; different tokens only for a genuine tie of the model's own scores."""
    assert found.score == pytest.approx(best.score, rel=1e-9, abs=1e-12)
    if output_sequence(found) != output_sequence(best):
        a, b = (sequence_score(forced(model, output_sequence(r))[0], r.length, alpha, kind) for r in (found, best))
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(config=models, vocab=st.integers(5, 6), max_len=st.integers(3, 4), alpha=st.sampled_from([0.0, 0.75, 1.0]),
       kind=st.sampled_from(["d2l", "gnmt"]))
def test_wide_beam_finds_the_exhaustive_optimum(config, vocab, max_len, alpha, kind):
    model = tiny_model(vocab=vocab, **config)
    options = dict(bos_id=BOS, eos_id=EOS, max_len=max_len, alpha=alpha, length_penalty=kind)
    best = exhaustive_search(model, SRC, **options)
    found = beam_search(model, SRC, beam_size=vocab ** max_len, **options)
    assert_same_optimum(found, best, model, alpha, kind)
    # A narrow beam never beats the optimum.
    assert beam_search(model, SRC, beam_size=2, **options).score <= best.score + 1e-12


@pytest.mark.parametrize("kind", ["d2l", "gnmt"])
@pytest.mark.parametrize("decoder", ["plain", "bahdanau", "luong"])
def test_exhaustive_search_is_the_best_of_all_outputs_scored_one_by_one(decoder, kind):
    vocab, max_len, alpha = 4, 3, 0.75
    model = tiny_model(7, vocab=vocab, decoder=decoder, eos_bias=1.0)
    others = [v for v in range(vocab) if v != EOS]
    outputs = [list(p) + [EOS] for n in range(max_len) for p in itertools.product(others, repeat=n)]
    outputs += [list(p) for p in itertools.product(others, repeat=max_len)]
    scores = [forced(model, y)[0] / penalty(len(y), alpha, kind) for y in outputs]
    best = exhaustive_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=max_len, alpha=alpha, length_penalty=kind)
    assert best.score == pytest.approx(max(scores), rel=1e-10)
    assert output_sequence(best) == outputs[int(np.argmax(scores))]


@settings(max_examples=40, deadline=None)
@given(config=models, beam_size=st.integers(1, 4), alpha=st.floats(0.0, 1.5), kind=st.sampled_from(["d2l", "gnmt"]))
def test_scores_are_the_stated_formula_over_the_models_own_probabilities(config, beam_size, alpha, kind):
    model = tiny_model(**config)
    options = dict(bos_id=BOS, eos_id=EOS, max_len=4)
    results = [beam_search(model, SRC, beam_size=beam_size, alpha=alpha, length_penalty=kind, **options),
               exhaustive_search(model, SRC, alpha=alpha, length_penalty=kind, **options)]
    for result in results:
        log_prob, weights = forced(model, output_sequence(result))
        assert result.log_prob == pytest.approx(log_prob, rel=1e-10)
        # L counts <eos> when produced: the number of decoder steps.
        assert result.length == len(output_sequence(result))
        assert result.score == pytest.approx(log_prob / penalty(result.length, alpha, kind), rel=1e-10)
        assert result.score == pytest.approx(sequence_score(log_prob, result.length, alpha, kind), rel=1e-10)
        # The attention rows are the decoding steps of exactly these tokens.
        if weights is None:
            assert result.attention is None
        else:
            assert result.attention.shape == (result.length, SRC.size)
            np.testing.assert_allclose(result.attention, weights, rtol=1e-9, atol=1e-12)
    greedy = greedy_search(model, SRC, **options)
    assert greedy.score == greedy.log_prob == pytest.approx(forced(model, output_sequence(greedy))[0], rel=1e-10)


def test_the_trace_prints_a_table_per_step_and_lists_the_kept_hypotheses():
    vocab = Vocab([list("abc")], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    model = tiny_model(3, vocab=len(vocab), eos_bias=1.5, eos=vocab["<eos>"])
    k = 2
    result = beam_search(model, SRC, bos_id=vocab["<bos>"], eos_id=vocab["<eos>"], max_len=4, beam_size=k,
                         trace=True, tgt_vocab=vocab)
    trace = result.trace
    assert isinstance(trace, BeamTrace) and 1 <= len(trace.steps) <= 4
    for before, after in zip(trace.steps, trace.steps[1:]):
        kept = [row.tokens for row in before.rows if row.status == "kept"]
        assert after.num_hypotheses == len(kept) and after.num_candidates == len(kept) * len(vocab)
        assert {tuple(row.tokens[:-1]) for row in after.rows} <= {tuple(tokens) for tokens in kept}
    for step in trace.steps:
        statuses = [row.status for row in step.rows]
        assert statuses[:k] == [s for s in statuses[:k] if s in ("kept", "finished", "cut")]
        assert set(statuses[k:]) <= {"dropped"}
        assert [row.log_prob for row in step.rows] == sorted((row.log_prob for row in step.rows), reverse=True)
        finished = [row for row in step.rows if row.status == "finished"]
        assert all(row.tokens[-1] == "<eos>" for row in finished)
    assert [row.score for row in trace.finished] == sorted((row.score for row in trace.finished), reverse=True)
    best = trace.finished[0]
    assert best.score == result.score and best.tokens[:len(result.tokens)] == vocab.to_tokens(result.tokens)
    text = str(trace)
    assert "beam search, k=2, score = log P / L**0.75 (d2l)" in text
    assert "step 1: 1 hypothesis x V = 7 candidates" in text and "finished hypotheses, ranked by score:" in text
    assert " ".join(best.tokens) in text and "kept" in text and "dropped" in text
    # Without a vocabulary the trace shows ids.
    plain = beam_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=4, beam_size=k, trace=True).trace
    assert all(isinstance(t, int) for step in plain.steps for row in step.rows for t in row.tokens)
    assert beam_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=4, beam_size=k).trace is None


def test_finished_hypotheses_include_those_cut_at_max_len():
    never = tiny_model(5, eos_bias=-40.0)
    result = beam_search(never, SRC, bos_id=BOS, eos_id=EOS, max_len=3, beam_size=3, trace=True)
    assert [row.status for row in result.trace.finished] == ["cut"] * 3
    assert len(result.tokens) == result.length == 3 and result.attention.shape == (3, SRC.size)
    assert [row.status for row in result.trace.steps[-1].rows[:3]] == ["cut"] * 3
    cut = exhaustive_search(never, SRC, bos_id=BOS, eos_id=EOS, max_len=3)
    assert len(cut.tokens) == cut.length == 3
    # An output ending in <eos> and one cut short compete in the same ranking.
    mixed = tiny_model(5, eos_bias=1.0)
    trace = beam_search(mixed, SRC, bos_id=BOS, eos_id=EOS, max_len=2, beam_size=5, trace=True).trace
    assert {row.status for row in trace.finished} == {"finished", "cut"}
    # Certain <eos> at once: the empty output, one step long.
    now = tiny_model(5, eos_bias=60.0)
    for search in (beam_search, exhaustive_search):
        options = dict(beam_size=2) if search is beam_search else {}
        empty = search(now, SRC, bos_id=BOS, eos_id=EOS, max_len=3, **options)
        assert empty.tokens == [] and empty.length == 1 and empty.attention.shape == (1, SRC.size)


def test_exhaustive_search_refuses_a_large_space_and_the_bound_is_configurable():
    model = tiny_model(0)
    with pytest.raises(ValueError, match=r"max_len: exhaustive search over \|V\|\*\*max_len = 5\*\*10 = 9765625 "
                                         r"sequences exceeds max_space = 1000000"):
        exhaustive_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=10)
    with pytest.raises(ValueError, match=r"5\*\*3 = 125 sequences exceeds max_space = 124"):
        exhaustive_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=3, max_space=124)
    assert exhaustive_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=3, max_space=125).length <= 3


@pytest.mark.parametrize("search", ["greedy", "beam", "exhaustive"])
@pytest.mark.parametrize("training", [True, False])
def test_no_cache_is_left_and_the_training_mode_is_restored(search, training):
    model = tiny_model(1, decoder="luong")  # Luong's step saves a cache of its own
    model.train(training)
    options = dict(beam_size=3) if search == "beam" else {}
    {"greedy": greedy_search, "beam": beam_search, "exhaustive": exhaustive_search}[search](
        model, SRC, bos_id=BOS, eos_id=EOS, max_len=3, **options)
    assert all(m.training == training for m in model.modules())
    assert all(m.num_pending == 0 for m in model.modules())


def counted_steps(model) -> list:
    """The batch size of every ``decoder.step`` that ``model`` runs from now on (the list fills as it runs)."""
    batch_sizes, step = [], model.decoder.step

    def counting_step(tokens, state):
        batch_sizes.append(tokens.shape[0])
        return step(tokens, state)

    model.decoder.step = counting_step
    return batch_sizes


def test_beam_search_runs_one_batched_decoder_step_per_time_step():
    model = tiny_model(2, eos_bias=-40.0)
    batch_sizes = counted_steps(model)
    beam_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=4, beam_size=3)
    assert batch_sizes == [1, 3, 3, 3]
    batch_sizes.clear()
    exhaustive_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=3)
    assert batch_sizes == [1, 4, 16]  # every prefix without <eos>, (V - 1) ** t of them


def test_bad_arguments_are_named():
    model = tiny_model(0)
    options = dict(bos_id=BOS, eos_id=EOS, max_len=3)
    with pytest.raises(ValueError, match="beam_size: expected a positive int, got 0"):
        beam_search(model, SRC, beam_size=0, **options)
    with pytest.raises(ValueError, match=r"length_penalty: expected one of \('d2l', 'gnmt'\), got 'wu'"):
        beam_search(model, SRC, beam_size=2, length_penalty="wu", **options)
    with pytest.raises(ValueError, match="alpha: expected a finite number, got nan"):
        exhaustive_search(model, SRC, alpha=float("nan"), **options)
    with pytest.raises(ValueError, match="max_len: expected a positive int, got 0"):
        greedy_search(model, SRC, bos_id=BOS, eos_id=EOS, max_len=0)
    with pytest.raises(ValueError, match=r"src: expected a 1-d array \(S,\), got shape \(1, 5\)"):
        beam_search(model, SRC[None], beam_size=2, **options)


def test_translate_offers_every_search():
    src_vocab = Vocab([["x", "y"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    tgt_vocab = Vocab([["a", "b"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    model = build_seq2seq(len(src_vocab), len(tgt_vocab), embed_size=4, num_hiddens=5, num_layers=1, seed=4,
                          dtype="float64")
    texts = {}
    wide = dict(beam_size=len(tgt_vocab) ** 3, trace=True)
    for method, options in [("greedy", {}), ("beam", wide), ("exhaustive", {})]:
        translation = translate(model, "x y", src_vocab, tgt_vocab, 3, method=method, **options)
        assert translation.text == " ".join(tgt_vocab.to_tokens(translation.result.tokens))
        assert translation.source_tokens == ["x", "y", "<eos>"]
        texts[method] = (translation.text, translation.result.score)
    assert texts["beam"][0] == texts["exhaustive"][0]
    assert texts["beam"][1] == pytest.approx(texts["exhaustive"][1], rel=1e-9)
    traced = translate(model, "x y", src_vocab, tgt_vocab, 3, method="beam", beam_size=2, trace=True).result
    assert all(isinstance(t, str) for row in traced.trace.finished for t in row.tokens)


def test_translate_cuts_the_source_and_names_an_empty_sentence():
    src_vocab = Vocab([["x", "y"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    tgt_vocab = Vocab([["a", "b"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    model = build_seq2seq(len(src_vocab), len(tgt_vocab), embed_size=4, num_hiddens=5, num_layers=1, seed=4,
                          decoder="bahdanau", dtype="float64")
    cut = translate(model, "x y x y", src_vocab, tgt_vocab, 3, src_max_len=2)
    assert cut.source_tokens == ["x", "y"]
    assert cut.result.attention.shape[1] == 2
    assert cut.attention_rows[:len(cut.output_tokens)] == cut.output_tokens
    assert len(cut.attention_rows) == len(cut.result.attention)
    with pytest.raises(InvalidValueError, match="sentence: expected at least one word, got an empty line"):
        translate(model, "   ", src_vocab, tgt_vocab, 3)
    with pytest.raises(ValueError, match="method: expected one of"):
        translate(model, "x", src_vocab, tgt_vocab, 3, method="sample")


def test_attention_rows_add_eos_only_when_it_was_produced():
    assert attention_rows(["a", "b"], np.zeros((3, 4))) == ["a", "b", "<eos>"]
    assert attention_rows(["a", "b"], np.zeros((2, 4))) == ["a", "b"]
    assert attention_rows(["a"], None) == ["a"]


def test_evaluate_translations_scores_greedy_outputs_against_the_targets():
    from npseq.data import build_array_nmt
    from npseq.decode import evaluate_translations, greedy_search_batch
    src_vocab = Vocab([["x", "y"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    tgt_vocab = Vocab([["a", "b"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    model = build_seq2seq(len(src_vocab), len(tgt_vocab), embed_size=4, num_hiddens=5, num_layers=1, seed=4)
    sources = [["x", "y"], ["y"], ["x", "x", "y"]]
    X, X_len = build_array_nmt(sources, src_vocab, 4)
    outputs = greedy_search_batch(model, X, X_len, bos_id=tgt_vocab["<bos>"], eos_id=tgt_vocab["<eos>"], max_len=3)
    produced = [tgt_vocab.to_tokens(ids) for ids in outputs]
    # the first pair's target is what the model produces, the others differ
    pairs = [(sources[0], produced[0]), (sources[1], produced[1] + ["b", "a"]), (sources[2], ["zz"])]
    scores = evaluate_translations(model, pairs, src_vocab, tgt_vocab, src_len=4, max_len=3)
    assert scores.exact_match == pytest.approx(1 / 3)
    assert 0.0 <= scores.bleu <= 1.0
    perfect = evaluate_translations(model, [(src, out) for src, out in zip(sources, produced)], src_vocab, tgt_vocab,
                                    src_len=4, max_len=3)
    assert perfect.exact_match == 1.0


def test_batched_greedy_equals_greedy_one_sentence_at_a_time():
    from npseq.decode import greedy_search_batch
    model = build_seq2seq(7, 6, embed_size=4, num_hiddens=5, num_layers=2, dropout=0.3, seed=3)
    for p in model.parameters():
        p.data *= 3  # peaked, varied distributions
    rng = np.random.default_rng(0)
    src = rng.integers(3, 7, size=(5, 4))
    lens = np.array([4, 1, 3, 2, 4])
    batched = greedy_search_batch(model, src, lens, bos_id=1, eos_id=2, max_len=6)
    for row, length, tokens in zip(src, lens, batched):
        alone = greedy_search(model, row[:length], bos_id=1, eos_id=2, max_len=6)
        assert tokens == alone.tokens
    assert model.training and all(m.num_pending == 0 for m in model.modules())


def padded_sources(seed, count, vocab=6, longest=5):
    """``count`` random sources (ids 3.., each ending in <eos>) of random lengths, padded with 0: ``(N, S)``,
    ``(N,)``."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(1, longest + 1, count)
    src = np.zeros((count, lens.max()), dtype=np.int64)
    for row, length in enumerate(lens):
        src[row, :length] = [*rng.integers(3, vocab, length - 1), EOS]
    return src, lens


def assert_same_result(batched, alone):
    """Two :class:`SearchResult` of one sentence agree: tokens and length exactly, numbers to 1e-12."""
    assert (batched.tokens, batched.length) == (alone.tokens, alone.length)
    assert batched.score == pytest.approx(alone.score, rel=1e-12, abs=1e-12)
    assert batched.log_prob == pytest.approx(alone.log_prob, rel=1e-12, abs=1e-12)
    if alone.attention is None:
        assert batched.attention is None
    else:
        np.testing.assert_allclose(batched.attention, alone.attention, rtol=1e-12, atol=1e-14)


@settings(max_examples=40, deadline=None)
@given(config=models, num_layers=st.integers(1, 2), count=st.integers(1, 6), beam_size=st.integers(1, 5),
       max_len=st.integers(1, 6), alpha=st.sampled_from([0.0, 0.75, 1.3]), kind=st.sampled_from(["d2l", "gnmt"]),
       seed=st.integers(0, 10 ** 6))
def test_batched_beam_equals_beam_one_sentence_at_a_time(config, num_layers, count, beam_size, max_len, alpha, kind,
                                                          seed):
    model = tiny_model(num_layers=num_layers, **config)
    src, lens = padded_sources(seed, count)
    options = dict(bos_id=BOS, eos_id=EOS, max_len=max_len, beam_size=beam_size, alpha=alpha, length_penalty=kind)
    batched = beam_search_batch(model, src, lens, **options)
    assert len(batched) == count
    for row, length, result in zip(src, lens, batched):
        assert_same_result(result, beam_search(model, row[:length], **options))
    assert model.training and all(m.num_pending == 0 for m in model.modules())


@settings(max_examples=30, deadline=None)
@given(config=models, count=st.integers(1, 5), max_len=st.integers(1, 6), seed=st.integers(0, 10 ** 6))
def test_a_batched_beam_of_one_without_penalty_is_greedy_score_included(config, count, max_len, seed):
    model = tiny_model(**config)
    src, lens = padded_sources(seed, count)
    batched = beam_search_batch(model, src, lens, bos_id=BOS, eos_id=EOS, max_len=max_len, beam_size=1, alpha=0.0)
    for row, length, result in zip(src, lens, batched):
        assert_same_result(result, greedy_search(model, row[:length], bos_id=BOS, eos_id=EOS, max_len=max_len))


def test_batched_beam_runs_one_decoder_step_per_time_step_for_every_sentence():
    model = tiny_model(2, eos_bias=-40.0)  # <eos> never wins: every beam stays full to max_len
    batch_sizes = counted_steps(model)
    src, lens = padded_sources(0, 4)
    beam_search_batch(model, src, lens, bos_id=BOS, eos_id=EOS, max_len=4, beam_size=3)
    assert batch_sizes == [4, 12, 12, 12]  # the beams of all four sentences, k rows each after the first step


def test_a_sentence_whose_beam_has_finished_leaves_the_batch():
    model = tiny_model(5)
    src, lens = padded_sources(1, 3)
    model.decoder.dense.b.data[EOS] -= 40.0  # no sentence ends before max_len ...
    long = beam_search_batch(model, src, lens, bos_id=BOS, eos_id=EOS, max_len=5, beam_size=2)
    assert [result.length for result in long] == [5, 5, 5]
    model.decoder.dense.b.data[EOS] += 80.0  # ... or every sentence ends at once
    short = beam_search_batch(model, src, lens, bos_id=BOS, eos_id=EOS, max_len=5, beam_size=2)
    assert [(result.tokens, result.length) for result in short] == [([], 1)] * 3


def test_the_transformer_decodes_a_batch_as_one_sentence_at_a_time():
    model = build_seq2seq(6, 5, model="transformer", embed_size=8, num_hiddens=8, num_heads=2, num_layers=2,
                          ffn_num_hiddens=16, seed=7, dtype="float64")
    for p in model.parameters():
        p.data *= 2.0
    src, lens = padded_sources(3, 5)
    options = dict(bos_id=BOS, eos_id=EOS, max_len=5, beam_size=3)
    for row, length, result in zip(src, lens, beam_search_batch(model, src, lens, **options)):
        assert_same_result(result, beam_search(model, row[:length], **options))


@pytest.mark.parametrize("method, options", [("greedy", {}), ("beam", dict(beam_size=3, alpha=0.5))])
def test_translate_batch_equals_translate_sentence_by_sentence(method, options):
    src_vocab = Vocab([["x", "y", "z"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    tgt_vocab = Vocab([["a", "b", "c"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    model = build_seq2seq(len(src_vocab), len(tgt_vocab), embed_size=4, num_hiddens=5, num_layers=2, seed=4,
                          decoder="bahdanau", dtype="float64")
    for p in model.parameters():
        p.data *= 3.0
    sentences = ["x", "y z x", "x y z x y z", "w", "z z"]  # one cut at src_max_len, one of an unknown word
    settings_ = dict(task=None, src_max_len=4)
    batch = translate_batch(model, sentences, src_vocab, tgt_vocab, 4, method, **settings_, **options)
    for sentence, translation in zip(sentences, batch, strict=True):
        alone = translate(model, sentence, src_vocab, tgt_vocab, 4, method, **settings_, **options)
        assert (translation.text, translation.source_tokens, translation.output_tokens) == (
            alone.text, alone.source_tokens, alone.output_tokens)
        assert_same_result(translation.result, alone.result)
    assert batch[2].source_tokens == ["x", "y", "z", "x"]
    assert translate_batch(model, [], src_vocab, tgt_vocab, 4, method, **options) == []


def test_translate_batch_names_what_it_cannot_do():
    src_vocab = Vocab([["x"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    model = build_seq2seq(len(src_vocab), len(src_vocab), embed_size=4, num_hiddens=5, num_layers=1, seed=4)
    with pytest.raises(InvalidValueError, match=r"sentences\[1\]: expected at least one word, got '  '"):
        translate_batch(model, ["x", "  "], src_vocab, src_vocab, 3)
    with pytest.raises(InvalidValueError, match="method: expected one of \\('greedy', 'beam'\\) .*got 'exhaustive'"):
        translate_batch(model, ["x"], src_vocab, src_vocab, 3, method="exhaustive")
    with pytest.raises(InvalidValueError, match="options: greedy search takes none, got beam_size"):
        translate_batch(model, ["x"], src_vocab, src_vocab, 3, beam_size=2)


def test_a_hypothesis_becomes_a_search_result_without_its_eos():
    from npseq.decode import Hypothesis
    finished = Hypothesis([5, 6, EOS], score=-0.5, log_prob=-1.0, attention=None, status="finished").result()
    assert (finished.tokens, finished.length, finished.score, finished.log_prob) == ([5, 6], 3, -0.5, -1.0)
    cut = Hypothesis([5, 6], score=-0.7, log_prob=-1.4, attention=None, status="cut").result()
    assert (cut.tokens, cut.length) == ([5, 6], 2)
