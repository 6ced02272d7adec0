"""The recurrent decoder's two twins: the fast packed engine equals the reference loop over ``step``.

``Decoder.forward`` / ``backward`` (:mod:`npseq.models.seq2seq`) is the reference, ``packed_forward`` /
``packed_backward`` (:mod:`npseq.models.packed_decoder`) the fast twin training runs. Two models built from
the same seed run one twin each on shapes drawn by hypothesis; logits, attention weights, final states,
the decoder's input gradients and every parameter gradient must agree within 1e-12 in float64, for every
decoder (plain, Bahdanau, Luong with each score, global, local-m and local-p, with and without input
feeding) and cell, with padded targets (lengths from 0 to the full length) and with dropout on.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npseq.models import build_seq2seq
from npseq.models.packed_decoder import packed_backward, packed_forward
from npseq.models.seq2seq import state_parts

V_SRC, V_TGT = 7, 6
TOL = dict(rtol=1e-12, atol=1e-12)
DECODERS = {"plain": dict(decoder="plain"), "bahdanau": dict(decoder="bahdanau")}
DECODERS.update({f"luong-{score}-{attention}-{'feed' if feeding else 'nofeed'}":
                 dict(decoder="luong", score=score, attention=attention, input_feeding=feeding)
                 for score in ("dot", "general", "concat") for attention in ("global", "local-m", "local-p")
                 for feeding in (True, False)})


def _run(model, fast, src, src_lens, tgt_in, tgt_lens, dlogits):
    """One forward and backward of the decoder's fast twin or reference, after the model's encoder."""
    model.zero_grad()
    state = model.encode(src, src_lens)
    if fast:
        logits, final = packed_forward(model.decoder, tgt_in, state, tgt_lens)
        weights = model.decoder.attention_weights
        denc_outputs, denc_state = packed_backward(model.decoder, dlogits)
    else:
        logits, final = model.decoder(tgt_in, state, valid_lens=tgt_lens)
        weights = model.decoder.attention_weights
        denc_outputs, denc_state = model.decoder.backward(dlogits)
    model.encoder.backward(denc_outputs, denc_state)
    assert all(m.num_pending == 0 for m in model.modules())
    grads = {name: p.grad.copy() for name, p in model.named_parameters()}
    return logits, weights, final, denc_outputs, state_parts(denc_state), grads


@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=10, deadline=None)
@given(cell=st.sampled_from(["rnn", "gru", "lstm"]), n=st.integers(1, 4), s=st.integers(1, 5),
       t=st.integers(1, 5), layers=st.integers(1, 2), dropout=st.sampled_from([0.0, 0.3]),
       padded=st.booleans(), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_the_fast_twin_equals_the_loop_over_step(decoder, cell, n, s, t, layers, dropout, padded, seed, data):
    rng = np.random.default_rng(seed)
    src, tgt_in = rng.integers(0, V_SRC, (n, s)), rng.integers(0, V_TGT, (n, t))
    src_lens = rng.integers(1, s + 1, n)
    tgt_lens = np.array(data.draw(st.lists(st.integers(0, t), min_size=n, max_size=n))) if padded else None
    dlogits = rng.standard_normal((n, t, V_TGT))
    if dropout:
        # A packed step draws its dropout masks over the rows it runs, and the fast twin attends over the
        # keys in view only: the masks are the same where every row runs every step over every key.
        src_lens[0] = s
    config = dict(DECODERS[decoder], cell=cell, embed_size=3, num_hiddens=4, num_layers=layers, dropout=dropout,
                  window=data.draw(st.integers(1, 2)), seed=seed % 1000, dtype="float64")
    fast_model, reference_model = build_seq2seq(V_SRC, V_TGT, **config), build_seq2seq(V_SRC, V_TGT, **config)
    fast_model.decoder.packs_rows = not dropout
    fast = _run(fast_model, True, src, src_lens, tgt_in, tgt_lens, dlogits)
    reference = _run(reference_model, False, src, src_lens, tgt_in, tgt_lens, dlogits)

    (logits, weights, final, denc_outputs, denc_state, grads) = fast
    np.testing.assert_allclose(logits, reference[0], **TOL)
    if weights is None:
        assert reference[1] is None
    else:
        np.testing.assert_allclose(weights, reference[1], **TOL)
    for a, b in zip(state_parts(final.hidden), state_parts(reference[2].hidden)):
        np.testing.assert_allclose(a, b, **TOL)
    if final.feed is not None:
        np.testing.assert_allclose(final.feed, reference[2].feed, **TOL)
    assert final.step == reference[2].step == t
    np.testing.assert_allclose(denc_outputs, reference[3], **TOL)
    for a, b in zip(denc_state, reference[4]):
        np.testing.assert_allclose(a, b, **TOL)
    assert grads.keys() == reference[5].keys()
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, reference[5][name], err_msg=name, **TOL)
    if tgt_lens is not None:
        assert not logits[np.arange(t)[None, :] >= tgt_lens[:, None]].any()


@pytest.mark.parametrize("decoder", ["bahdanau", "luong-concat-local-p-feed"])
def test_the_edges_lengths_one_and_full_with_every_row_packed(decoder):
    # Lengths 1 and T side by side, out of order, so the packed twin sorts the rows and each finishes apart.
    config = dict(DECODERS[decoder], cell="lstm", embed_size=3, num_hiddens=4, num_layers=2, dropout=0.0, seed=4,
                  dtype="float64")
    rng = np.random.default_rng(9)
    src, tgt_in = rng.integers(0, V_SRC, (4, 5)), rng.integers(0, V_TGT, (4, 6))
    src_lens, tgt_lens = np.array([2, 5, 3, 1]), np.array([1, 6, 1, 6])
    dlogits = rng.standard_normal((4, 6, V_TGT))
    fast = _run(build_seq2seq(V_SRC, V_TGT, **config), True, src, src_lens, tgt_in, tgt_lens, dlogits)
    reference = _run(build_seq2seq(V_SRC, V_TGT, **config), False, src, src_lens, tgt_in, tgt_lens, dlogits)
    np.testing.assert_allclose(fast[0], reference[0], **TOL)
    np.testing.assert_allclose(fast[3], reference[3], **TOL)
    for name, grad in fast[5].items():
        np.testing.assert_allclose(grad, reference[5][name], err_msg=name, **TOL)


def test_the_model_trains_on_the_fast_twin_and_falls_back_to_the_reference_on_request():
    config = dict(decoder="bahdanau", cell="gru", embed_size=3, num_hiddens=4, num_layers=1, dropout=0.0, seed=2,
                  dtype="float64")
    rng = np.random.default_rng(3)
    src, tgt_in, src_lens, tgt_lens = rng.integers(0, V_SRC, (3, 4)), rng.integers(0, V_TGT, (3, 5)), \
        np.array([4, 2, 3]), np.array([5, 1, 3])
    dlogits = rng.standard_normal((3, 5, V_TGT))
    results = []
    for fast in (True, False):
        model = build_seq2seq(V_SRC, V_TGT, **config)
        model.fast_decoder = fast
        rows_run = []
        step = model.decoder._step
        model.decoder._step = lambda embedded, state, rows_run=rows_run, step=step: (
            rows_run.append(len(embedded)) or step(embedded, state))
        logits = model(src, tgt_in, src_lens, tgt_valid_lens=tgt_lens)
        model.backward(dlogits)
        assert rows_run == ([3, 2, 2, 1, 1] if fast else [3] * 5)  # packed rows, or every row every step
        results.append((logits, [p.grad.copy() for p in model.parameters()]))
    np.testing.assert_allclose(results[0][0], results[1][0], **TOL)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, **TOL)
