"""The teacher-forcing loop, greedy decoding and the d2l example, on corpora the tests make."""
import pathlib

import numpy as np
import pytest
from optional_tools import FRA_TXT, skip_reason

import npseq
from npseq.data import BatchIterator, Vocab, build_array_nmt
from npseq.decode import greedy_search, translate
from npseq.models import EncoderDecoder, Seq2SeqAttentionDecoder, Seq2SeqEncoder
from npseq.nn import MaskedSoftmaxCELoss
from npseq.optim import Adam
from npseq.train import teacher_forcing_inputs, train_seq2seq

RESERVED = ["<pad>", "<bos>", "<eos>"]


def reverse_corpus(num=48, seed=0):
    """Sequences of letters and their reverses: a task attention learns in a few epochs."""
    rng = np.random.default_rng(seed)
    letters = list("abcdef")
    source = [[letters[i] for i in rng.integers(0, 6, rng.integers(2, 5))] for _ in range(num)]
    return source, [list(reversed(s)) for s in source]


def setup(seed=0, num_steps=6, batch_size=16):
    source, target = reverse_corpus()
    src_vocab, tgt_vocab = Vocab(source, reserved_tokens=RESERVED), Vocab(target, reserved_tokens=RESERVED)
    X, X_len = build_array_nmt(source, src_vocab, num_steps)
    Y, Y_len = build_array_nmt(target, tgt_vocab, num_steps)
    batches = BatchIterator((X, X_len, Y, Y_len), batch_size, seed=seed)
    rng = np.random.default_rng(seed)
    model = EncoderDecoder(Seq2SeqEncoder(len(src_vocab), 8, 16, 1, 0.1, "gru", rng=rng),
                           Seq2SeqAttentionDecoder(len(tgt_vocab), 8, 16, 1, 0.1, "gru", rng=rng))
    return model, batches, src_vocab, tgt_vocab


def test_teacher_forcing_inputs_shift_right_after_bos():
    Y = np.array([[5, 6, 2, 0], [7, 2, 0, 0]])
    np.testing.assert_array_equal(teacher_forcing_inputs(Y, 1), [[1, 5, 6, 2], [1, 7, 2, 0]])


def test_training_learns_and_records_history():
    model, batches, _, tgt_vocab = setup()
    history = train_seq2seq(model, batches, tgt_vocab, Adam(model.parameters(), lr=0.02), 30, progress=False)
    assert len(history.loss) == len(history.token_ce) == len(history.grad_norm) == len(history.tokens_per_s) == 30
    assert history.token_ce[-1] < 0.5 * history.token_ce[0]
    assert all(t > 0 for t in history.tokens_per_s) and all(g > 0 for g in history.grad_norm)
    np.testing.assert_allclose(history.loss, history.token_ce, rtol=0.3)  # "mean" is per token, batch-averaged


def test_same_seed_gives_bit_identical_training():
    runs = []
    for _ in range(2):
        model, batches, _, tgt_vocab = setup(seed=3)
        history = train_seq2seq(model, batches, tgt_vocab, Adam(model.parameters(), lr=0.01), 3,
                                sampling_ratio=0.2, seed=3, progress=False)
        runs.append((history.loss, [p.data.copy() for p in model.parameters()]))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_array_equal(a, b)


def test_clipping_bounds_the_update_and_d2l_metric_matches_its_definition():
    model, batches, _, tgt_vocab = setup()
    history = train_seq2seq(model, batches, tgt_vocab, Adam(model.parameters(), lr=0.01), 2,
                            loss_fn=MaskedSoftmaxCELoss("d2l"), clip=0.5, progress=False)
    # With d2l's reduction, its metric is the per-token cross-entropy divided by num_steps.
    np.testing.assert_allclose(history.d2l_metric, np.array(history.token_ce) / 6, rtol=1e-6)


def test_greedy_search_and_translate():
    model, batches, src_vocab, tgt_vocab = setup()
    train_seq2seq(model, batches, tgt_vocab, Adam(model.parameters(), lr=0.02), 60, progress=False)
    assert model.training
    translation = translate(model, "a b c", src_vocab, tgt_vocab, max_len=6)
    result = translation.result
    assert translation.text == "c b a"
    assert model.training and all(m.num_pending == 0 for m in model.modules())
    assert result.attention.shape == (4, 4)  # three tokens and <eos>, over three tokens and <eos>
    np.testing.assert_allclose(result.attention.sum(1), 1.0, rtol=1e-5)
    assert result.score == result.log_prob < 0
    # The score is the sum of the chosen tokens' log-probabilities, <eos> included.
    src = np.array(src_vocab[["a", "b", "c"]] + [src_vocab["<eos>"]])
    direct = greedy_search(model, src, bos_id=tgt_vocab["<bos>"], eos_id=tgt_vocab["<eos>"], max_len=6)
    assert direct.tokens == tgt_vocab[["c", "b", "a"]]
    model.eval()
    with npseq.no_grad():
        logits = model(src[None], np.array([[tgt_vocab["<bos>"]] + tgt_vocab[["c", "b", "a"]]]))
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    chosen = tgt_vocab[["c", "b", "a"]] + [tgt_vocab["<eos>"]]
    np.testing.assert_allclose(direct.log_prob, sum(log_p[0, t, v] for t, v in enumerate(chosen)), atol=1e-5)


def test_greedy_search_stops_at_max_len():
    model, _, src_vocab, tgt_vocab = setup()
    result = greedy_search(model, np.array([3, 4]), bos_id=tgt_vocab["<bos>"], eos_id=-1, max_len=3)
    assert len(result.tokens) == 3 and result.attention.shape == (3, 2)


def test_bad_training_arguments():
    model, batches, _, tgt_vocab = setup()
    with pytest.raises(ValueError, match="num_epochs: expected a positive int, got 0"):
        train_seq2seq(model, batches, tgt_vocab, Adam(model.parameters()), 0, progress=False)
    with pytest.raises(ValueError, match="batches: expected at least one batch per epoch, got none"):
        train_seq2seq(model, [], tgt_vocab, Adam(model.parameters()), 1, progress=False)
    with pytest.raises(ValueError, match=r"method: expected one of \('greedy', 'beam', 'exhaustive'\), got 'sample'"):
        translate(model, "a", Vocab(["a"]), tgt_vocab, 3, method="sample")


@pytest.mark.skipif(FRA_TXT is None, reason=skip_reason("fra"))
def test_d2l_example_runs_and_prints_its_lines(capsys):
    import importlib.util
    example = pathlib.Path(__file__).parents[1] / "examples" / "d2l_fra_eng.py"
    spec = importlib.util.spec_from_file_location("d2l_fra_eng", example)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.main(["--data", str(FRA_TXT), "--epochs", "2", "--no-progress"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("loss (d2l metric) ") and ", per-token cross-entropy " in lines[0]
    sources = ["go .", "i lost .", "he's calm .", "i'm home ."]
    assert [line.split(" => ")[0] for line in lines[1:5]] == sources
    assert all(", bleu " in line for line in lines[1:5] + lines[6:10])
    assert lines[5] == "beam search (k=3):" and [line.split(" => ")[0] for line in lines[6:10]] == sources
    assert lines[10].startswith("mean bleu: greedy ") and ", beam " in lines[10] and len(lines) == 11


def test_a_shared_sampling_generator_makes_split_runs_equal_one_run():
    runs = []
    for split in (False, True):
        model, batches, _, tgt_vocab = setup(seed=4)
        optimizer = Adam(model.parameters(), lr=0.01)
        rng = np.random.default_rng(9)
        options = dict(sampling_ratio=0.5, rng=rng, progress=False)
        if split:
            train_seq2seq(model, batches, tgt_vocab, optimizer, 1, **options)
            train_seq2seq(model, batches, tgt_vocab, optimizer, 1, **options)
        else:
            train_seq2seq(model, batches, tgt_vocab, optimizer, 2, **options)
        runs.append([p.data.copy() for p in model.parameters()])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
