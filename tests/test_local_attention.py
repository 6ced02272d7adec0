"""Luong's local attention (local-m, local-p) and the location-based score: values by hand, the window's
zeros, and every backward against finite differences in float64."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stepping import step_by_step

from npseq.errors import InvalidTypeError, InvalidValueError
from npseq.functional import local_attention as L
from npseq.functional import scores as S
from npseq.gradcheck import check_function, check_module
from npseq.nn import LocalAttention
from npseq.samples import normal as _normal
from npseq.samples import with_dweights

N, Q, K, DQ, DK, DV, H = 2, 3, 7, 4, 5, 3, 6
SOURCE_LENS = np.array([7, 4])


# ------------------------------------------------------------------ the window
def test_the_window_holds_2d_plus_1_positions_cut_at_the_sentence_ends():
    centers = np.array([[0.0, 3.0, 6.4], [2.0, 5.0, 9.0]])
    mask = L.local_window(centers, SOURCE_LENS, K, 2)
    assert mask[0, 0].tolist() == [True, True, True, False, False, False, False]  # cut at the start
    assert mask[0, 1].tolist() == [False, True, True, True, True, True, False]    # 2D + 1 = 5
    assert mask[0, 2].tolist() == [False, False, False, False, False, True, True]  # |s - 6.4| <= 2: 5, 6
    assert mask[1, 1].tolist() == [False, False, False, True, False, False, False]  # cut at S = 4
    assert not mask[1, 2].any()  # a centre beyond the sentence by more than D sees nothing


@pytest.mark.parametrize("gaussian", [False, True])
def test_pooling_by_hand_and_exact_zeros_outside_the_window(gaussian):
    rng = np.random.default_rng(0)
    scores, values = _normal(rng, N, Q, K, scale=3), _normal(rng, N, K, DV)
    centers = np.array([[0.3, 3.6, 6.2], [1.4, 3.1, 8.5]])
    context, weights, _ = L.local_attention_pooling_forward(scores, values, centers, SOURCE_LENS, 2,
                                                            gaussian=gaussian)
    mask = L.local_window(centers, SOURCE_LENS, K, 2)
    for n in range(N):
        for q in range(Q):
            inside = np.flatnonzero(mask[n, q])
            expected = np.zeros(K)
            if inside.size:
                e = np.exp(scores[n, q, inside] - scores[n, q, inside].max())
                expected[inside] = e / e.sum()
                if gaussian:
                    expected[inside] *= np.exp(-(inside - centers[n, q]) ** 2 / (2 * 1.0 ** 2))  # sigma = D/2 = 1
            np.testing.assert_allclose(weights[n, q], expected, rtol=1e-13, atol=0)
            np.testing.assert_allclose(context[n, q], expected @ values[n], rtol=1e-12, atol=1e-15)
    assert (weights[~mask] == 0).all()
    assert (context[1, 2] == 0).all()  # the empty window: a zero context, not NaN


def test_huge_scores_stay_finite_inside_a_one_position_window():
    scores = np.full((1, 1, 5), 1e300)
    scores[0, 0, 2] = -1e300
    context, weights, _ = L.local_attention_pooling_forward(scores, np.ones((1, 5, 2)), np.array([[2.0]]),
                                                            np.array([5]), 0)
    assert weights.tolist() == [[[0.0, 0.0, 1.0, 0.0, 0.0]]] and np.isfinite(context).all()


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("gaussian", [False, True])
@pytest.mark.parametrize("dweights_given", [False, True])
def test_pooling_gradients_including_centres_near_both_ends(gaussian, dweights_given):
    rng = np.random.default_rng(1)
    # Centres near 0 and near S, and none within 1e-5 of a window edge, where the window jumps.
    inputs = {"scores": _normal(rng, N, Q, K), "values": _normal(rng, N, K, DV),
              "centers": np.array([[0.05, 3.3, 6.9], [0.2, 2.6, 3.95]])}

    def forward(scores, values, centers):
        # D = 3, so sigma = 1.5 and sigma**2 != sigma: a backward that confuses them fails.
        return L.local_attention_pooling_forward(scores, values, centers, SOURCE_LENS, 3, gaussian=gaussian)

    names = ["scores", "values", "centers"] if gaussian else ["scores", "values"]
    backward = L.local_attention_pooling_backward
    if dweights_given:
        report = check_function(forward, with_dweights(backward, len(names)), inputs, grad_names=names)
    else:
        def context_only(*args):
            context, _, cache = forward(*args)
            return context, cache
        report = check_function(context_only, lambda dc, cache: backward(dc, cache)[:len(names)], inputs,
                                grad_names=names)
    assert report.ok, report


def test_predicted_position_gradients_and_its_range():
    rng = np.random.default_rng(2)
    inputs = {"queries": _normal(rng, N, Q, DQ), "Wp": _normal(rng, DQ, H), "vp": _normal(rng, H, scale=3)}
    report = check_function(lambda q, Wp, vp: L.predictive_position_forward(q, Wp, vp, SOURCE_LENS),
                            L.predictive_position_backward, inputs)
    assert report.ok, report
    centers, _ = L.predictive_position_forward(*inputs.values(), SOURCE_LENS)
    assert ((0 <= centers) & (centers <= SOURCE_LENS[:, None])).all()


@pytest.mark.parametrize("score", ["dot", "general", "concat", "location"])
def test_score_function_gradients(score):
    rng = np.random.default_rng(3)
    queries = _normal(rng, N, Q, DQ)
    cases = {
        "dot": (S.dot_scores_forward, S.dot_scores_backward, {"keys": _normal(rng, N, K, DQ)}, {}),
        "general": (S.general_scores_forward, S.general_scores_backward,
                    {"keys": _normal(rng, N, K, DK), "W": _normal(rng, DQ, DK)}, {}),
        "concat": (S.concat_scores_forward, S.concat_scores_backward,
                   {"keys": _normal(rng, N, K, DK), "Wq": _normal(rng, DQ, H), "Wk": _normal(rng, DK, H),
                    "wv": _normal(rng, H)}, {}),
        "location": (S.location_scores_forward, S.location_scores_backward, {"Wa": _normal(rng, DQ, K + 3)},
                     {"num_keys": K}),
    }
    forward, backward, rest, kwargs = cases[score]
    report = check_function(forward, backward, {"queries": queries, **rest}, kwargs=kwargs)
    assert report.ok, report


@pytest.mark.parametrize("mode", ["local-m", "local-p"])
@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_the_layer_end_to_end_into_every_parameter(mode, score):
    rng = np.random.default_rng(4)
    layer = LocalAttention(DQ, DQ if score == "dot" else DK, mode=mode, score=score, half_width=3, num_hiddens=H,
                           rng=5, dtype=np.float64)
    keys = _normal(rng, N, K, DQ if score == "dot" else DK)
    inputs = {"queries": _normal(rng, N, Q, DQ), "keys": keys, "values": _normal(rng, N, K, DV),
              "source_lens": SOURCE_LENS, "step": 2}
    report = check_module(layer, inputs)
    assert report.ok, report
    if mode == "local-p":
        assert {"Wp", "vp"} <= {row.name for row in report.rows}


def test_local_m_centres_on_the_decoder_step():
    layer = LocalAttention(3, 3, mode="local-m", score="dot", half_width=1, dtype=np.float64)
    rng = np.random.default_rng(6)
    layer(_normal(rng, 2, 2, 3), _normal(rng, 2, 6, 3), _normal(rng, 2, 6, 2), np.array([6, 6]), step=3)
    assert layer.centers.tolist() == [[3, 4], [3, 4]]
    assert (layer.attention_weights[:, 0, [0, 1, 5]] == 0).all() and (layer.attention_weights[:, 0, 2:5] > 0).all()


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 3), q=st.integers(1, 3), k=st.integers(1, 6), half_width=st.integers(1, 3),
       scale=st.sampled_from([1.0, 30.0]), data=st.data())
def test_edge_shapes_one_valid_key_and_empty_windows(n, q, k, half_width, scale, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    lens = np.array(data.draw(st.lists(st.integers(0, k), min_size=n, max_size=n)))
    centers = rng.uniform(-1, k + half_width + 1, size=(n, q))
    scores, values = _normal(rng, n, q, k, scale=scale), _normal(rng, n, k, 2)
    context, weights, cache = L.local_attention_pooling_forward(scores, values, centers, lens, half_width,
                                                                gaussian=True)
    mask = L.local_window(centers, lens, k, half_width)
    assert np.isfinite(context).all() and (weights[~mask] == 0).all()
    assert (weights.sum(-1) <= 1 + 1e-12).all()
    dscores, dvalues, dcenters = L.local_attention_pooling_backward(np.ones_like(context), cache)
    assert np.isfinite(dscores).all() and np.isfinite(dcenters).all() and (dscores[~mask] == 0).all()


def test_bad_arguments_name_themselves():
    rng = np.random.default_rng(7)
    scores, values = _normal(rng, 1, 1, 4), _normal(rng, 1, 4, 2)
    with pytest.raises(InvalidValueError, match="half_width: expected at least 1 with the Gaussian"):
        L.local_attention_pooling_forward(scores, values, np.zeros((1, 1)), np.array([4]), 0, gaussian=True)
    with pytest.raises(InvalidValueError, match="centers: expected shape"):
        L.local_attention_pooling_forward(scores, values, np.zeros((1, 2)), np.array([4]), 1)
    with pytest.raises(InvalidValueError, match="num_keys: expected 1 to 3"):
        S.location_scores_forward(_normal(rng, 1, 1, 2), _normal(rng, 2, 3), 4)
    with pytest.raises(InvalidTypeError, match="mode: expected one of"):
        LocalAttention(2, 2, mode="local-x")
    with pytest.raises(InvalidTypeError, match="dot score needs query_size == key_size"):
        LocalAttention(2, 3, score="dot")


# ------------------------------------------------------------ in the Luong decoder
def _local_model(attention, window=1, cell="gru", score="general"):
    from npseq.models import build_seq2seq
    return build_seq2seq(7, 6, decoder="luong", attention=attention, window=window, cell=cell, score=score,
                         embed_size=4, num_hiddens=5, num_layers=1, dropout=0.0, seed=3, dtype="float64")


@pytest.mark.parametrize("attention", ["local-m", "local-p"])
def test_the_decoder_steps_one_at_a_time_as_the_teacher_forced_forward(attention):
    model = _local_model(attention)
    rng = np.random.default_rng(8)
    src, tgt_in, lens = rng.integers(0, 7, (3, 6)), rng.integers(0, 6, (3, 4)), np.array([6, 3, 1])
    logits = model(src, tgt_in, lens)
    weights = model.attention_weights
    model.clear_caches()
    stepped = step_by_step(model, src, tgt_in, lens)
    assert [state.step for state in stepped.states[:-1]] == list(range(tgt_in.shape[1]))
    np.testing.assert_allclose(stepped.logits, logits, rtol=1e-12)
    np.testing.assert_allclose(stepped.weights, weights, rtol=1e-12)
    for n, length in enumerate(lens):
        assert not weights[n, :, length:].any()  # nothing beyond a sentence's own length


def test_local_m_looks_at_the_diagonal_band_only():
    model = _local_model("local-m", window=1)
    rng = np.random.default_rng(9)
    model(rng.integers(0, 7, (2, 6)), rng.integers(0, 6, (2, 5)))
    band = np.abs(np.arange(5)[:, None] - np.arange(6)[None, :]) <= 1
    weights = model.attention_weights
    assert (weights[:, ~band] == 0).all() and (weights[:, band] > 0).all()
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)  # the softmax is renormalised in the window
    model.clear_caches()


@pytest.mark.parametrize("config, message", [
    (dict(decoder="bahdanau", attention="local-p"), "for decoder='luong' only"),
    (dict(decoder="luong", attention="local-x"), "attention: expected one of"),
    (dict(decoder="luong", attention="local-p", window=0), "local-p needs at least 1"),
    (dict(decoder="luong", attention="local-m", window=-1), "window: expected an int"),
])
def test_bad_local_configurations_name_the_setting(config, message):
    from npseq.errors import UserError
    from npseq.models import build_seq2seq
    with pytest.raises(UserError, match=message):
        build_seq2seq(5, 5, **config)
