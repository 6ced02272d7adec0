"""Encoder–decoders: gradients through the whole model, masking invariants, state handling, errors."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from stepping import step_by_step

import npseq
from npseq.gradcheck import check_module
from npseq.models import (
    EncoderDecoder,
    LuongAttentionDecoder,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
    reorder_state,
)
from npseq.models.packed_decoder import packed_backward, packed_forward
from npseq.models.seq2seq import state_parts
from npseq.nn import MaskedSoftmaxCELoss

V_SRC, V_TGT, EMBED, HIDDEN = 6, 5, 3, 4
DECODERS = ["plain", "bahdanau", "luong-general", "luong-dot", "luong-concat", "luong-nofeed"]


def build(decoder, cell="gru", bidirectional=False, layers=2, dropout=0.0, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    encoder = Seq2SeqEncoder(V_SRC, EMBED, HIDDEN, layers, dropout, cell, bidirectional, rng=rng, dtype=dtype)
    size = encoder.output_size
    if decoder == "plain":
        dec = Seq2SeqDecoder(V_TGT, EMBED, HIDDEN, layers, dropout, cell, rng=rng, dtype=dtype)
    elif decoder == "bahdanau":
        dec = Seq2SeqAttentionDecoder(V_TGT, EMBED, HIDDEN, layers, dropout, cell, size, rng=rng, dtype=dtype)
    else:
        score = {"luong-nofeed": "general"}.get(decoder, decoder.split("-")[-1])
        dec = LuongAttentionDecoder(V_TGT, EMBED, HIDDEN, layers, dropout, cell, score, decoder != "luong-nofeed",
                                    size, rng=rng, dtype=dtype)
    return EncoderDecoder(encoder, dec)


def batch(seed=0, n=3, s=4, t=3):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, V_SRC, (n, s)), rng.integers(0, V_TGT, (n, t)),
            np.array([s, 2, 1][:n]))


# -------------------------------------------------------------- gradients
@pytest.mark.slow
@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("decoder", DECODERS)
def test_whole_model_gradients(decoder, cell):
    model = build(decoder, cell)
    # Weights larger than the initialisation's make attention clearly non-uniform, so every
    # gradient stands far above the finite differences' rounding floor.
    for name, param in model.named_parameters():
        param.data *= 5.0 if "attention" in name else 2.0
    src, tgt_in, lens = batch(1, n=2, s=3)
    lens = lens[:2]
    report = check_module(model, {"src": src, "tgt_in": tgt_in, "src_valid_lens": lens}, h=1e-3, order=4)
    assert report.ok, report


@pytest.mark.slow
@pytest.mark.parametrize("decoder, cell", [("bahdanau", "gru"), ("luong-general", "lstm"), ("plain", "lstm")])
def test_bidirectional_encoder_gradients(decoder, cell):
    model = build(decoder, cell, bidirectional=True)
    for name, param in model.named_parameters():
        param.data *= 5.0 if "attention" in name else 2.0
    src, tgt_in, lens = batch(2, n=2, s=3)
    report = check_module(model, {"src": src, "tgt_in": tgt_in, "src_valid_lens": lens[:2]}, h=1e-3, order=4)
    assert report.ok, report
    assert any(name.startswith("encoder.bridge") for name, _ in model.named_parameters())


# ------------------------------------------------------- masking invariants
@pytest.mark.parametrize("decoder", DECODERS)
@given(extra=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_padding_the_source_changes_nothing(decoder, extra, seed):
    model = build(decoder, "gru", layers=1, seed=seed % 1000)
    src, tgt_in, lens = batch(seed)
    rng = np.random.default_rng(seed)
    padded = np.concatenate([src, rng.integers(0, V_SRC, (3, extra))], axis=1)
    loss_fn = MaskedSoftmaxCELoss()
    results = []
    for source in (src, padded):
        model.zero_grad()
        logits = model(source, tgt_in, lens)
        loss = loss_fn(logits, tgt_in, np.array([3, 2, 3]))
        model.backward(loss_fn.backward())
        results.append((logits, loss, [p.grad.copy() for p in model.parameters()], model.attention_weights))
    (logits, loss, grads, weights), (p_logits, p_loss, p_grads, p_weights) = results
    np.testing.assert_allclose(p_logits, logits, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(p_loss, loss, rtol=1e-12)
    for g, pg in zip(grads, p_grads):
        np.testing.assert_allclose(pg, g, rtol=1e-10, atol=1e-14)
    if weights is not None:
        np.testing.assert_allclose(p_weights[:, :, :src.shape[1]], weights, rtol=1e-12, atol=1e-15)
        assert not p_weights[:, :, src.shape[1]:].any()


@pytest.mark.parametrize("decoder", DECODERS[1:])
def test_attention_weights_are_distributions_over_valid_source_steps(decoder):
    model = build(decoder)
    src, tgt_in, lens = batch(3)
    model(src, tgt_in, lens)
    weights = model.attention_weights
    assert weights.shape == (3, 3, 4)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)
    for n, length in enumerate(lens):
        assert not weights[n, :, length:].any()
    model.clear_caches()


def test_plain_decoder_has_no_attention_weights():
    model = build("plain")
    model(*batch(0))
    assert model.attention_weights is None


# ------------------------------------------------------------ state handling
def _gradients(model, src, tgt_in, lens, dlogits):
    """Every parameter's gradient after one forward and backward from zero (no cache left behind)."""
    model.zero_grad()
    model(src, tgt_in, lens)
    model.backward(dlogits)
    assert all(m.num_pending == 0 for m in model.modules())
    return [p.grad.copy() for p in model.parameters()]


def test_two_rounds_in_a_row_give_the_same_gradients():
    model = build("bahdanau", "lstm")
    src, tgt_in, lens = batch(4)
    dlogits = np.random.default_rng(0).standard_normal((3, 3, V_TGT))
    rounds = [_gradients(model, src, tgt_in, lens, dlogits) for _ in range(2)]
    for first, second in zip(*rounds):
        np.testing.assert_array_equal(first, second)


def test_step_by_step_equals_the_teacher_forced_forward():
    model = build("luong-concat", "gru")
    src, tgt_in, lens = batch(5)
    logits = model(src, tgt_in, lens)
    model.clear_caches()
    np.testing.assert_allclose(step_by_step(model, src, tgt_in, lens).logits, logits, rtol=1e-12)


@pytest.mark.parametrize("lens", [[2, 1, 2], [0, 1, 0], [0, 0, 0], [4, 4, 4]])
def test_bahdanau_attends_only_over_the_keys_in_view(lens):
    # forward cuts the keys to the first max(lens) (at least one); step, which greedy and beam
    # search call, sees them all: both must give the same logits and weights, exact zeros included.
    model = build("bahdanau", "lstm")
    src, tgt_in, _ = batch(9)
    lens = np.array(lens)
    logits = model(src, tgt_in, lens)
    weights = model.attention_weights
    model.clear_caches()
    assert weights.shape == (3, 3, 4)
    stepped = step_by_step(model, src, tgt_in, lens)
    np.testing.assert_allclose(stepped.logits, logits, rtol=1e-12)
    np.testing.assert_allclose(stepped.weights, weights, rtol=1e-12, atol=0)
    for n, length in enumerate(lens):
        assert not weights[n, :, length:].any()


@pytest.mark.parametrize("decoder, cell", [("bahdanau", "gru"), ("bahdanau", "lstm"), ("plain", "gru")])
def test_the_keys_out_of_view_get_the_same_gradients(decoder, cell):
    model = build(decoder, cell)
    src, tgt_in, _ = batch(10)
    lens = np.array([2, 1, 2])  # two of the four keys are out of view
    dlogits = np.random.default_rng(1).standard_normal((3, 3, V_TGT))
    cut = _gradients(model, src, tgt_in, lens, dlogits)
    model.decoder._keys_in_view = lambda state: state  # attend over all four keys
    whole = _gradients(model, src, tgt_in, lens, dlogits)
    for a, b in zip(cut, whole):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


class _LastStepsCut(npseq.nn.Module):
    """The model with its logits zeroed from step ``keep`` on: what a masked loss does to padded targets."""

    def __init__(self, model, keep):
        super().__init__()
        self.model, self.keep = model, keep

    def forward(self, src, tgt_in, src_valid_lens):
        logits = self.model(src, tgt_in, src_valid_lens).copy()
        logits[:, self.keep:] = 0
        return logits

    def backward(self, dlogits):
        dlogits = dlogits.copy()
        dlogits[:, self.keep:] = 0
        return self.model.backward(dlogits)


@pytest.mark.slow
@pytest.mark.parametrize("decoder, cell", [("bahdanau", "gru"), ("bahdanau", "lstm"), ("plain", "rnn")])
@pytest.mark.parametrize("keep", [0, 1, 3])
def test_the_steps_without_gradient_are_skipped_exactly(decoder, cell, keep, monkeypatch):
    model = build(decoder, cell)
    for name, param in model.named_parameters():
        param.data *= 5.0 if "attention" in name else 2.0
    src, tgt_in, lens = batch(11, n=2, s=3, t=4)
    if keep == 1:  # finite differences once per model (the slow part); below, every cut must equal the full walk
        cut = _LastStepsCut(model, keep)
        report = check_module(cut, {"src": src, "tgt_in": tgt_in, "src_valid_lens": lens[:2]}, h=1e-3, order=4)
        assert report.ok, report
    dlogits = np.random.default_rng(2).standard_normal((2, 4, V_TGT))
    dlogits[:, keep:] = 0
    walked = []
    step_backward = model.decoder._step_backward
    monkeypatch.setattr(model.decoder, "_step_backward",
                        lambda *args: walked.append(1) or step_backward(*args))
    skipped = _gradients(model, src, tgt_in, lens[:2], dlogits)
    assert len(walked) == keep
    monkeypatch.setattr(model.decoder, "discards_zero_steps", False)
    every_step = _gradients(model, src, tgt_in, lens[:2], dlogits)
    assert len(walked) == keep + 4
    for a, b in zip(skipped, every_step):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------- packed target rows
def _decoder_run(model, src, tgt_in, src_lens, tgt_lens, dlogits, packed):
    """Logits, weights, final state and every gradient of one pass of the decoder's fast twin with target lengths."""
    model.decoder.packs_rows = packed
    model.zero_grad()
    logits, final = packed_forward(model.decoder, tgt_in, model.encode(src, src_lens), tgt_lens)
    weights = model.attention_weights
    model.encoder.backward(*packed_backward(model.decoder, dlogits))
    assert all(m.num_pending == 0 for m in model.modules())
    return logits, weights, final, [p.grad.copy() for p in model.parameters()]


def _assert_same_run(packed, masked):
    logits, weights, final, grads = packed
    np.testing.assert_allclose(logits, masked[0], rtol=1e-12, atol=1e-14)
    if weights is not None:
        np.testing.assert_allclose(weights, masked[1], rtol=1e-12, atol=1e-14)
    for a, b in zip(state_parts(final.hidden), state_parts(masked[2].hidden)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    if final.feed is not None:
        np.testing.assert_allclose(final.feed, masked[2].feed, rtol=1e-12, atol=1e-14)
    assert final.step == masked[2].step
    for a, b in zip(grads, masked[3]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("decoder, cell", [("plain", "lstm"), ("bahdanau", "gru"), ("bahdanau", "lstm"),
                                           ("luong-general", "gru"), ("luong-concat", "lstm"),
                                           ("luong-nofeed", "rnn")])
def test_packed_target_rows_equal_the_masked_run(decoder, cell, monkeypatch):
    # Packed, step t runs only the rows whose target is longer than t, longest first; masked (the
    # device's way), every row runs every step. Lengths out of order, with a 0 and a full one.
    model = build(decoder, cell)
    rng = np.random.default_rng(3)
    src, tgt_in = rng.integers(0, V_SRC, (5, 4)), rng.integers(0, V_TGT, (5, 6))
    src_lens, tgt_lens = np.array([4, 2, 1, 3, 4]), np.array([2, 6, 0, 3, 6])
    dlogits = rng.standard_normal((5, 6, V_TGT))
    rows_run = []
    step = model.decoder._step
    monkeypatch.setattr(model.decoder, "_step", lambda embedded, state: rows_run.append(len(embedded))
                        or step(embedded, state))
    packed = _decoder_run(model, src, tgt_in, src_lens, tgt_lens, dlogits, packed=True)
    assert rows_run == [4, 4, 3, 2, 2, 2]  # sum(tgt_lens) positions, nothing past an end
    masked = _decoder_run(model, src, tgt_in, src_lens, tgt_lens, dlogits, packed=False)
    assert rows_run[6:] == [5] * 6
    _assert_same_run(packed, masked)
    assert not packed[0][2].any() and not packed[0][0, 2:].any()


def test_packed_rows_stop_each_row_at_its_own_end():
    # Against decode-style steps: the valid logits are the steps' logits, the padded ones are zero,
    # and each row's final state is its state after its own last valid step.
    model = build("luong-concat", "lstm")
    src, tgt_in, src_lens = batch(12, n=3, s=4, t=5)
    tgt_lens = np.array([2, 5, 1])
    with npseq.no_grad():
        logits, final = model.decoder(tgt_in, model.encode(src, src_lens), valid_lens=tgt_lens)
    stepped = step_by_step(model, src, tgt_in, src_lens)
    for n, length in enumerate(tgt_lens):
        np.testing.assert_allclose(logits[n, :length], stepped.logits[n, :length], rtol=1e-12)
        assert not logits[n, length:].any()
        after = stepped.states[length]
        for a, b in zip(final.hidden, after.hidden):
            np.testing.assert_allclose(a[:, n], b[:, n], rtol=1e-12)
        np.testing.assert_allclose(final.feed[n], after.feed[n], rtol=1e-12)
    assert final.step == 5


@pytest.mark.slow
@pytest.mark.parametrize("decoder, cell", [("bahdanau", "gru"), ("luong-general", "lstm"), ("plain", "rnn")])
def test_packed_target_rows_gradients(decoder, cell):
    model = build(decoder, cell)
    for name, param in model.named_parameters():
        param.data *= 5.0 if "attention" in name else 2.0
    src, tgt_in, lens = batch(13, n=3, s=3, t=4)
    inputs = {"src": src, "tgt_in": tgt_in, "src_valid_lens": lens, "tgt_valid_lens": np.array([3, 4, 1])}
    report = check_module(model, inputs, h=1e-3, order=4)
    assert report.ok, report


@given(n=st.integers(1, 3), t=st.integers(1, 4), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_packed_target_rows_at_the_edges(n, t, seed, data):
    # One row, one step, all padding, one valid token: packed still equals masked.
    tgt_lens = np.array(data.draw(st.lists(st.integers(0, t), min_size=n, max_size=n)))
    model = build("bahdanau", "gru", layers=1, seed=seed % 1000)
    rng = np.random.default_rng(seed)
    src, tgt_in = rng.integers(0, V_SRC, (n, 3)), rng.integers(0, V_TGT, (n, t))
    src_lens, dlogits = rng.integers(0, 4, n), rng.standard_normal((n, t, V_TGT))
    packed = _decoder_run(model, src, tgt_in, src_lens, tgt_lens, dlogits, packed=True)
    _assert_same_run(packed, _decoder_run(model, src, tgt_in, src_lens, tgt_lens, dlogits, packed=False))


def test_scheduled_sampling_runs_the_reference_loop():
    # Each step may read the previous step's own guess, so the model runs the decoder's loop over step,
    # and with target lengths the padded logits are zero and every cache is consumed.
    model = build("bahdanau", "lstm")
    src, tgt_in, src_lens = batch(14, n=3, s=4, t=5)
    tgt_lens, dlogits = np.array([3, 5, 2]), np.random.default_rng(4).standard_normal((3, 5, V_TGT))
    steps = []
    step = model.decoder.step
    model.decoder.step = lambda tokens, state: steps.append(len(tokens)) or step(tokens, state)
    logits = model(src, tgt_in, src_lens, 0.5, np.random.default_rng(5), tgt_lens)
    model.backward(dlogits)
    assert steps == [3] * 5
    assert all(m.num_pending == 0 for m in model.modules())
    for n, length in enumerate(tgt_lens):
        assert not logits[n, length:].any() and logits[n, :length].all()


def test_target_lengths_are_checked_and_named():
    model = build("bahdanau")
    src, tgt_in, src_lens = batch(15)
    with pytest.raises(ValueError, match=r"tgt_valid_lens: expected shape \(3,\)"):
        model(src, tgt_in, src_lens, tgt_valid_lens=np.array([1, 2]))
    with pytest.raises(IndexError, match=r"tgt_valid_lens: expected lengths in \[0, 3\], got 4"):
        model(src, tgt_in, src_lens, tgt_valid_lens=np.array([1, 2, 4]))


def test_reorder_state_picks_batch_rows():
    model = build("luong-concat", "lstm")
    src, _, lens = batch(6)
    with npseq.no_grad():
        state = model.encode(src, lens)
    picked = reorder_state(state, np.array([2, 2, 0]))
    np.testing.assert_array_equal(picked.hidden[0][:, 0], state.hidden[0][:, 2])
    np.testing.assert_array_equal(picked.hidden[1][:, 2], state.hidden[1][:, 0])
    np.testing.assert_array_equal(picked.enc_outputs[1], state.enc_outputs[2])
    np.testing.assert_array_equal(picked.projected_keys[0], state.projected_keys[2])
    np.testing.assert_array_equal(picked.enc_valid_lens, lens[[2, 2, 0]])


def test_scheduled_sampling_with_ratio_one_ignores_the_targets_after_the_first():
    model = build("bahdanau").eval()
    src, tgt_in, lens = batch(7)
    other = tgt_in.copy()
    other[:, 1:] = (other[:, 1:] + 1) % V_TGT
    with npseq.no_grad():
        a = model(src, tgt_in, lens, sampling_ratio=1.0, rng=np.random.default_rng(0))
        b = model(src, other, lens, sampling_ratio=1.0, rng=np.random.default_rng(0))
        c = model(src, other, lens)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_float32_through_a_training_step():
    model = build("bahdanau", "gru", dtype=np.float32)
    optimizer = npseq.optim.Adam(model.parameters(), lr=0.01)
    src, tgt_in, lens = batch(8)
    loss_fn = MaskedSoftmaxCELoss("d2l")
    logits = model(src, tgt_in, lens)
    loss = loss_fn(logits, tgt_in, np.array([3, 1, 2]))
    dlogits = loss_fn.backward()
    model.backward(dlogits)
    optimizer.step()
    assert logits.dtype == loss.dtype == dlogits.dtype == np.float32
    assert all(p.data.dtype == p.grad.dtype == np.float32 for p in model.parameters())


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("call, error, message", [
    (lambda m: m(np.zeros((2, 3), int), np.zeros((3, 2), int)), ValueError,
     r"tgt_in: expected shape \(2, \*\), got \(3, 2\)"),
    (lambda m: m(np.zeros(3, int), np.zeros((3, 2), int)), ValueError,
     r"src: expected a 2-d array \(N, S\), got shape \(3,\)"),
    (lambda m: m(np.zeros((2, 3), int), np.full((2, 2), V_TGT)), IndexError,
     rf"tgt_in: expected token ids \(vocabulary of {V_TGT}\) in \[0, {V_TGT - 1}\], got {V_TGT}"),
    (lambda m: m(np.zeros((2, 3), int), np.zeros((2, 2), int), sampling_ratio=0.5), ValueError,
     r"rng: scheduled sampling \(sampling_ratio > 0\) needs a numpy.random.Generator"),
    (lambda m: m.backward(np.zeros((2, 2, V_TGT))), RuntimeError, r"backward: called more often than forward"),
])
def test_bad_input(call, error, message):
    model = build("bahdanau")
    with pytest.raises(error, match=message):
        call(model)


@pytest.mark.parametrize("make, message", [
    (lambda: Seq2SeqEncoder(5, 3, 4, cell="transformer"),
     r"cell: expected one of \('rnn', 'gru', 'lstm'\), got 'transformer'"),
    (lambda: LuongAttentionDecoder(5, 3, 4, score="cosine"),
     r"score: expected one of \('dot', 'general', 'concat'\), got 'cosine'"),
    (lambda: LuongAttentionDecoder(5, 3, 4, score="dot", enc_output_size=8),
     r"enc_output_size: the dot score needs it equal to num_hiddens \(4\), got 8"),
])
def test_bad_configuration(make, message):
    with pytest.raises(ValueError, match=message):
        make()
