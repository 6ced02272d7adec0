"""The Transformer's modules and model: gradients, incremental decoding, masks, search, checkpoints, the command."""
import numpy as np
import pytest
from stepping import step_by_step

import npseq
from npseq.checkpoint import load_seq2seq
from npseq.cli import main
from npseq.decode import beam_search, greedy_search, head_attention, translate
from npseq.errors import InvalidValueError
from npseq.gradcheck import check_module
from npseq.gradient_checks import REGISTRY
from npseq.models import EncoderDecoder, Transformer, build_seq2seq, check_seq2seq_config, reorder_state
from npseq.nn import MultiHeadAttention, TransformerDecoderBlock
from npseq.runs import RUN_DEFAULTS, TranslationRun, demo_settings
from npseq.samples import valid_mask

V_SRC, V_TGT = 7, 6


def build(norm="post", dropout=0.0, layers=2, seed=0, **options):
    return Transformer(V_SRC, V_TGT, num_hiddens=8, ffn_num_hiddens=12, num_heads=2, num_layers=layers,
                       dropout=dropout, norm=norm, rng=seed, dtype="float64", **options)


def batch(seed=0, n=3, s=5, t=4):
    rng = np.random.default_rng(seed)
    return rng.integers(0, V_SRC, (n, s)), rng.integers(0, V_TGT, (n, t)), np.array([s, 2, 1][:n])


# ------------------------------------------------------------------- gradients
@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in REGISTRY if "Transformer" in name])
def test_registered_transformer_gradient_checks_pass(name):
    report = REGISTRY[name](np.random.default_rng([0, list(REGISTRY).index(name)]))
    assert report.ok, f"{name}\n{report}"


def test_key_bias_gradients_are_zero_up_to_rounding():
    # The checks leave the key biases out (a softmax ignores a common shift); here they must be ~0.
    model = build()
    src, tgt_in, lens = batch()
    logits = model(src, tgt_in, lens)
    model.backward(np.random.default_rng(1).standard_normal(logits.shape))
    grads = dict(model.named_parameters())
    key_biases = [name for name in grads if name.endswith("b_k")]
    assert len(key_biases) == 2 * 2 + 2  # self-attention in each encoder and decoder block, cross in each decoder
    scale = max(np.abs(param.grad).max() for param in grads.values())
    for name in key_biases:
        assert np.abs(grads[name].grad).max() < 1e-12 * scale, name


def test_a_wrong_backward_fails_the_check():
    block = TransformerDecoderBlock(6, 10, 2, rng=0, dtype="float64")
    honest = block.cross_attention.backward
    block.cross_attention.backward = lambda dout: tuple(2 * g for g in honest(dout))
    rng = np.random.default_rng(0)
    report = check_module(block, {"x": rng.standard_normal((2, 3, 6)), "enc_outputs": rng.standard_normal((2, 4, 6))})
    assert not report.ok


def test_two_rounds_in_a_row_give_the_same_gradients_and_leave_no_cache():
    model = build()
    src, tgt_in, lens = batch()
    dlogits = np.random.default_rng(2).standard_normal((3, 4, V_TGT))
    rounds = []
    for _ in range(2):
        model.zero_grad()
        model(src, tgt_in, lens)
        model.backward(dlogits)
        rounds.append([param.grad.copy() for param in model.parameters()])
        assert all(module.num_pending == 0 for module in model.modules())
    for first, second in zip(*rounds):
        np.testing.assert_array_equal(first, second)


def test_target_lengths_zero_the_padded_logits_and_their_gradients():
    model = build()
    src, tgt_in, lens = batch(5)
    tgt_lens = np.array([4, 0, 2])
    valid = valid_mask(tgt_lens, 4)
    dlogits = np.random.default_rng(6).standard_normal((3, 4, V_TGT))
    model.zero_grad()
    logits = model(src, tgt_in, lens, tgt_valid_lens=tgt_lens)
    model.backward(dlogits)
    grads = [param.grad.copy() for param in model.parameters()]
    model.zero_grad()
    every = model(src, tgt_in, lens)
    model.backward(dlogits * valid[:, :, None])
    np.testing.assert_array_equal(logits, every * valid[:, :, None])
    for got, expected in zip(grads, [param.grad for param in model.parameters()]):
        np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------ decoding by steps
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_step_by_step_equals_the_teacher_forced_forward(norm):
    model = build(norm)
    src, tgt_in, lens = batch(3)
    logits = model(src, tgt_in, lens)
    weights = model.attention_weights
    model.clear_caches()
    stepped = step_by_step(model, src, tgt_in, lens)
    np.testing.assert_allclose(stepped.logits, logits, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(stepped.weights, weights, rtol=1e-12, atol=1e-14)
    state = stepped.states[-1]
    assert state.step == tgt_in.shape[1]
    assert state.blocks[0].self_attention.keys.shape == (3, 2, tgt_in.shape[1], 4)
    assert all(module.num_pending == 0 for module in model.modules())


def test_the_decoder_is_causal_and_padding_the_source_changes_nothing():
    model = build()
    src, tgt_in, lens = batch(4)
    with npseq.no_grad():
        logits = model(src, tgt_in, lens)
        changed = tgt_in.copy()
        changed[:, 2] = (changed[:, 2] + 1) % V_TGT
        np.testing.assert_array_equal(model(src, changed, lens)[:, :2], logits[:, :2])
        assert not np.allclose(model(src, changed, lens)[:, 2], logits[:, 2])
        padded = np.concatenate([src, np.full((3, 3), 1)], axis=1)
        np.testing.assert_allclose(model(padded, tgt_in, lens), logits, rtol=1e-12, atol=1e-12)
    weights = model.attention_weights
    assert np.all(weights[1, :, 2:] == 0) and np.allclose(weights.sum(-1), 1)


def test_reorder_state_moves_the_key_value_caches_with_their_rows():
    model = build()
    src, tgt_in, lens = batch(5)
    with npseq.no_grad():
        state = model.encode(src, lens)
        for t in range(2):
            _, state, _ = model.decoder.step(tgt_in[:, t], state)
        rows = np.array([2, 2, 0])
        picked = reorder_state(state, rows)
        logits, _, _ = model.decoder.step(tgt_in[rows, 2], picked)
        expected, _, _ = model.decoder.step(tgt_in[:, 2], state)
    np.testing.assert_array_equal(picked.blocks[1].cross_attention.values[1], state.blocks[1].cross_attention.values[2])
    np.testing.assert_allclose(logits, expected[rows], rtol=1e-12, atol=1e-12)


def test_greedy_and_beam_search_decode_and_a_beam_of_one_is_greedy():
    model = build(seed=3)
    src = np.array([3, 1, 4, 2])
    greedy = greedy_search(model, src, bos_id=1, eos_id=2, max_len=6)
    beam = beam_search(model, src, bos_id=1, eos_id=2, max_len=6, beam_size=1)
    wide = beam_search(model, src, bos_id=1, eos_id=2, max_len=6, beam_size=4)
    assert beam.tokens == greedy.tokens and beam.log_prob == pytest.approx(greedy.log_prob, abs=1e-12)
    assert wide.score >= beam.score - 1e-12
    assert greedy.attention.shape == (greedy.length, 4)


def test_dropout_acts_in_training_only():
    model = build(dropout=0.3)
    src, tgt_in, lens = batch()
    first, second = model(src, tgt_in, lens), model(src, tgt_in, lens)
    assert not np.allclose(first, second)
    model.eval()
    with npseq.no_grad():
        np.testing.assert_array_equal(model(src, tgt_in, lens), model(src, tgt_in, lens))


def test_incremental_attention_equals_the_full_forward():
    rng = np.random.default_rng(6)
    attention = MultiHeadAttention(4, 5, 3, 6, 3, rng=1, dtype="float64")
    queries, keys = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    values = rng.standard_normal((2, 4, 3))
    lens = np.array([4, 2])
    with npseq.no_grad():
        expected = attention(queries, keys, values, lens)
        got = attention.attend(queries, attention.project_keys_values(keys, values), lens)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("call, message", [
    (lambda: build_seq2seq(5, 5, model="transformer", num_hiddens=6, num_heads=4), "num_heads: expected a divisor"),
    (lambda: build_seq2seq(5, 5, model="transformer", bidirectional=True), "bidirectional"),
    (lambda: build_seq2seq(5, 5, model="attention"), "model: expected one of"),
    (lambda: MultiHeadAttention(4, 4, 4, 6, 4), "num_heads: expected a divisor of num_hiddens = 6, got 4"),
    (lambda: build()(*batch()[:2], sampling_ratio=0.5, rng=np.random.default_rng()), "sampling_ratio: expected 0"),
])
def test_bad_configuration(call, message):
    with pytest.raises(InvalidValueError, match=message):
        call()


def test_a_config_saved_before_the_transformer_builds_a_recurrent_model():
    old = dict(decoder="bahdanau", cell="gru", embed_size=4, num_hiddens=4, num_layers=1, dropout=0.0,
               bidirectional=False, score="general", input_feeding=True, seed=0)
    assert not isinstance(build_seq2seq(5, 5, **old), Transformer)
    assert isinstance(build_seq2seq(5, 5, model="transformer", num_hiddens=8, num_heads=2), Transformer)
    # The parameter floor that refuses oversized configs holds for the Transformer too.
    model = build_seq2seq(5, 6, model="transformer", num_hiddens=8, num_heads=2, ffn_num_hiddens=12, num_layers=2)
    floor = check_seq2seq_config(5, 6, model="transformer", num_hiddens=8, num_heads=2, ffn_num_hiddens=12,
                                 num_layers=2)
    assert floor <= sum(param.data.size for param in model.parameters())


# ------------------------------------------------------- runs, checkpoints, cli
def test_a_transformer_run_saves_a_checkpoint_that_loads_and_resumes(tmp_path):
    path = str(tmp_path / "t.npz")
    settings = dict(model="transformer", num_hiddens=8, num_heads=2, num_layers=1, ffn_num_hiddens=16,
                    num_examples=200, batch_size=32, lr=0.01)
    run = TranslationRun.start(task="numbers", save=path, **settings)
    run.train(1, progress=False)
    model, checkpoint = load_seq2seq(path)
    assert isinstance(model, Transformer) and checkpoint.config["num_heads"] == 2
    with npseq.no_grad():
        X, X_len, Y, _ = run.corpus.batches.arrays
        np.testing.assert_array_equal(model.eval()(X[:4], Y[:4], X_len[:4]), run.model.eval()(X[:4], Y[:4], X_len[:4]))
    resumed = TranslationRun.resume(path, task="numbers", save=path)
    assert resumed.settings["model"] == "transformer" and resumed.settings["num_heads"] == 2
    with pytest.raises(InvalidValueError, match="--num-heads 4 conflicts"):
        TranslationRun.resume(path, task="numbers", num_heads=4)


def test_npseq_train_takes_the_transformer_flags_and_translate_reads_its_checkpoint(tmp_path, capsys):
    path = str(tmp_path / "t.npz")
    assert main(["train", "--task", "numbers", "--model", "transformer", "--heads", "2", "--layers", "1",
                 "--num-hiddens", "8", "--num-examples", "200", "--epochs", "1", "--save", path,
                 "--no-progress"]) == 0
    assert "Transformer (1 blocks, 2 heads)" in capsys.readouterr().out
    png = str(tmp_path / "a.png")
    assert main(["translate", path, "twenty one", "--beam", "2", "--attention-png", png]) == 0
    assert "twenty one =>" in capsys.readouterr().out
    assert (tmp_path / "a.png").stat().st_size > 0


def test_head_attention_gives_each_block_and_head_and_matches_the_search(tmp_path):
    model = build(seed=2)
    src_vocab = tgt_vocab = _Vocab()
    translation = translate(model, "a b c", src_vocab, tgt_vocab, 5)
    maps = head_attention(model, translation, src_vocab, tgt_vocab)
    length, source = translation.result.attention.shape
    assert maps.cross.shape == (2, 2, length, source) and maps.encoder.shape == (2, 2, source, source)
    assert np.all(np.triu(maps.decoder[0, 0], 1) == 0)
    np.testing.assert_allclose(maps.cross[-1].mean(axis=0), translation.result.attention, rtol=1e-12, atol=1e-15)


class _Vocab:
    """Just enough of a Vocab for translate(): tokens a..e are ids 3..6 (0 <unk>, 1 <bos>, 2 <eos>)."""
    tokens = ["<unk>", "<bos>", "<eos>", "a", "b", "c", "d"]

    def __getitem__(self, tokens):
        return self.tokens.index(tokens) if isinstance(tokens, str) else [self[t] for t in tokens]

    def to_tokens(self, ids):
        return [self.tokens[i] for i in ids]


def test_demo_settings_for_the_transformer_are_run_settings():
    settings = demo_settings("numbers", "transformer")
    assert set(settings) <= set(RUN_DEFAULTS) and settings["model"] == "transformer"
    with pytest.raises(InvalidValueError, match="model: expected one of"):
        demo_settings("numbers", "lstm")
    assert isinstance(build_seq2seq(5, 5, **{key: settings[key] for key in ("model", "num_hiddens", "num_heads",
                                                                             "num_layers")}), EncoderDecoder)


def test_npseq_demo_with_a_transformer_writes_per_head_maps_beside_the_grus_files(tmp_path, capsys):
    gru_model = tmp_path / "numbers" / "model.npz"
    gru_model.parent.mkdir()
    gru_model.write_bytes(b"the GRU demo's model")  # what an earlier `npseq demo` left
    assert main(["demo", "--model", "transformer", "--num-examples", "300", "--epochs", "1", "--out",
                 str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "a Transformer (2 blocks, 4 heads)" in out and "attention_heads.png" in out
    assert gru_model.read_bytes() == b"the GRU demo's model"
    assert (tmp_path / "numbers-transformer" / "model.npz").exists()
    from matplotlib import image
    pixels = image.imread(str(tmp_path / "numbers-transformer" / "attention_heads.png"))
    assert pixels.shape[0] > 300 and pixels.shape[1] > 600  # two rows of four panels
