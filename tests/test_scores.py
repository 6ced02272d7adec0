"""The score pairs, the masked pooling pair, the fast twin of additive attention, and the registry of scores.

* every score pair and the masked pooling (with and without a gain, with a head axis) against finite
  differences in float64;
* the fast twins (keys projected once, in-place buffers, 2-d products, one-query outer products) equal
  to their references within 1e-12 in float64 on hypothesis-drawn shapes: outputs and every gradient;
* a score registered at run time, nowhere written in npseq, is usable by ``LuongAttentionDecoder``
  (global and local, finite differences through the whole model) and by ``npseq train --score``.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npseq import functional as F
from npseq.cli import main
from npseq.functional import fast_attention, pooling, scores
from npseq.gradcheck import check_function, check_module
from npseq.models import build_seq2seq
from npseq.nn import SCORES, LocalAttention, Score, ScoredAttention, register_score, unregister_score
from npseq.samples import normal as _normal

# ---------------------------------------------------------------- score pairs
SCORE_CASES = {
    "dot": (scores.dot_scores_forward, scores.dot_scores_backward, lambda rng: {"keys": _normal(rng, 2, 5, 3)}),
    "scaled_dot": (scores.scaled_dot_scores_forward, scores.scaled_dot_scores_backward,
                   lambda rng: {"keys": _normal(rng, 2, 5, 3)}),
    "general": (scores.general_scores_forward, scores.general_scores_backward,
                lambda rng: {"keys": _normal(rng, 2, 5, 4), "W": _normal(rng, 3, 4)}),
    "concat": (scores.concat_scores_forward, scores.concat_scores_backward,
               lambda rng: {"keys": _normal(rng, 2, 5, 4), "Wq": _normal(rng, 3, 6, scale=0.5),
                            "Wk": _normal(rng, 4, 6, scale=0.5), "wv": _normal(rng, 6)}),
}


@pytest.mark.parametrize("name", list(SCORE_CASES))
def test_score_pair_gradients(name):
    forward, backward, rest = SCORE_CASES[name]
    rng = np.random.default_rng(0)
    report = check_function(forward, backward, {"queries": _normal(rng, 2, 3, 3), **rest(rng)})
    assert report.ok, report


@pytest.mark.parametrize("forward, backward", [(scores.dot_scores_forward, scores.dot_scores_backward),
                                               (scores.scaled_dot_scores_forward, scores.scaled_dot_scores_backward)])
def test_dot_scores_take_a_head_axis(forward, backward):
    rng = np.random.default_rng(1)
    queries, keys = _normal(rng, 2, 3, 4, 5), _normal(rng, 2, 3, 6, 5)
    s, _ = forward(queries, keys)
    assert s.shape == (2, 3, 4, 6)
    report = check_function(forward, backward, {"queries": queries, "keys": keys})
    assert report.ok, report


def test_scaled_dot_is_dot_over_root_d():
    rng = np.random.default_rng(2)
    queries, keys = _normal(rng, 2, 3, 9), _normal(rng, 2, 4, 9)
    np.testing.assert_allclose(scores.scaled_dot_scores_forward(queries, keys)[0],
                               scores.dot_scores_forward(queries, keys)[0] / 3, rtol=1e-15)


def test_score_errors_name_the_argument():
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError, match=r"keys: expected feature size 3 \(that of queries"):
        scores.dot_scores_forward(_normal(rng, 2, 3, 3), _normal(rng, 2, 4, 5))
    with pytest.raises(ValueError, match=r"keys: expected feature size 4 \(the columns of W\)"):
        scores.general_scores_forward(_normal(rng, 2, 3, 3), _normal(rng, 2, 4, 5), _normal(rng, 3, 4))
    with pytest.raises(ValueError, match=r"dscores: expected shape \(2, 3, 4\)"):
        _, cache = scores.dot_scores_forward(_normal(rng, 2, 3, 3), _normal(rng, 2, 4, 3))
        scores.dot_scores_backward(np.zeros((2, 3, 5)), cache)


# ---------------------------------------------------------------- masked pooling
@pytest.mark.parametrize("with_gain", [False, True])
@pytest.mark.parametrize("heads", [False, True])
def test_masked_pooling_gradients(with_gain, heads):
    rng = np.random.default_rng(4)
    lead = (2, 3) if heads else (2,)
    mask = rng.random(lead + (4, 5)) < 0.7
    mask[0, ..., 1, :] = False  # a query that sees no key
    inputs = {"scores": _normal(rng, *lead, 4, 5), "values": _normal(rng, *lead, 5, 2)}
    if with_gain:
        inputs["gain"] = rng.random(lead + (4, 5)) + 0.5

    def forward(scores_, values, gain=None):
        return pooling.masked_pooling_forward(scores_, values, mask, gain)

    def backward(dcontext, dweights, cache):
        dscores, dvalues, dgain = pooling.masked_pooling_backward(dcontext, cache, dweights)
        return (dscores, dvalues) if dgain is None else (dscores, dvalues, dgain)

    report = check_function(forward, backward, inputs)
    assert report.ok, report


def test_masked_pooling_gives_masked_keys_exactly_zero_and_empty_rows_zero():
    rng = np.random.default_rng(5)
    mask = np.array([[[True, False, True], [False, False, False]]])
    context, weights, _ = pooling.masked_pooling_forward(_normal(rng, 1, 2, 3, scale=100), _normal(rng, 1, 3, 2), mask)
    assert weights[0, 0, 1] == 0 and not weights[0, 1].any() and not context[0, 1].any()
    np.testing.assert_allclose(weights[0, 0].sum(), 1.0, rtol=1e-15)


def test_masked_pooling_refuses_a_mask_that_is_not_boolean():
    with pytest.raises(ValueError, match="mask: expected a bool array"):
        pooling.masked_pooling_forward(np.zeros((1, 2, 3)), np.zeros((1, 3, 2)), np.ones((1, 2, 3)))


# ---------------------------------------------------------------- the fast twin
@st.composite
def additive_case(draw):
    n, q, k = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 5))
    dq, dk, dv, hidden = (draw(st.integers(1, 4)) for _ in range(4))
    lens_kind = draw(st.sampled_from(["none", "per_example", "per_query"]))
    dropout = draw(st.sampled_from([0.0, 0.3]))
    return n, q, k, dq, dk, dv, hidden, lens_kind, dropout, draw(st.integers(0, 2 ** 31 - 1))


@settings(max_examples=40, deadline=None)
@given(additive_case())
def test_the_fast_twin_equals_the_reference(case):
    """additive_attention_projected_* on keys projected once == additive_attention_* (concat score + pooling)."""
    n, q, k, dq, dk, dv, hidden, lens_kind, dropout, seed = case
    rng = np.random.default_rng(seed)
    queries, keys, values = _normal(rng, n, q, dq), _normal(rng, n, k, dk), _normal(rng, n, k, dv)
    Wq, Wk, wv = _normal(rng, dq, hidden, scale=0.5), _normal(rng, dk, hidden, scale=0.5), _normal(rng, hidden)
    lens = {"none": None, "per_example": rng.integers(0, k + 1, n), "per_query": rng.integers(0, k + 1, (n, q))}[
        lens_kind]
    dcontext, dweights = _normal(rng, n, q, dv), _normal(rng, n, q, k)

    context, weights, cache = F.additive_attention_forward(queries, keys, values, Wq, Wk, wv, lens,
                                                           dropout=dropout, rng=np.random.default_rng(seed))
    dqueries, dkeys, dvalues, dWq, dWk, dwv = F.additive_attention_backward(dcontext, cache, dweights)

    projected_keys = keys @ Wk
    fast_context, fast_weights, fast_cache = fast_attention.additive_attention_projected_forward(
        queries, projected_keys, values, Wq, wv, lens, dropout=dropout, rng=np.random.default_rng(seed))
    fast_dqueries, dprojected, fast_dvalues, fast_dWq, fast_dwv = \
        fast_attention.additive_attention_projected_backward(dcontext, fast_cache, dweights)
    fast_dkeys = dprojected @ Wk.T
    fast_dWk = keys.reshape(-1, dk).T @ dprojected.reshape(-1, hidden)

    pairs = {"context": (context, fast_context), "weights": (weights, fast_weights),
             "dqueries": (dqueries, fast_dqueries), "dkeys": (dkeys, fast_dkeys), "dvalues": (dvalues, fast_dvalues),
             "dWq": (dWq, fast_dWq), "dWk": (dWk, fast_dWk), "dwv": (dwv, fast_dwv)}
    for name, (reference, fast) in pairs.items():
        np.testing.assert_allclose(fast, reference, rtol=1e-12, atol=1e-12, err_msg=name)


@st.composite
def scores_case(draw):
    n, q, k, dq, dk = (draw(st.integers(1, 4)) for _ in range(5))
    return n, q, k, dq, dk, draw(st.sampled_from(["none", "per_example", "per_query"])), \
        draw(st.sampled_from([0.0, 0.3])), draw(st.integers(0, 2 ** 31 - 1))


@settings(max_examples=40, deadline=None)
@given(scores_case())
def test_the_fast_scores_and_pooling_equal_the_reference(case):
    """fast_dot_scores_*, fast_general_scores_* and fast_attention_pooling_backward == their references."""
    n, q, k, dq, dk, lens_kind, dropout, seed = case
    rng = np.random.default_rng(seed)
    queries, keys, same_keys, W = _normal(rng, n, q, dq), _normal(rng, n, k, dk), _normal(rng, n, k, dq), \
        _normal(rng, dq, dk)
    dscores = _normal(rng, n, q, k)
    pairs = {"dot": (scores.dot_scores_forward, scores.dot_scores_backward, fast_attention.fast_dot_scores_forward,
                     fast_attention.fast_dot_scores_backward, (queries, same_keys)),
             "general": (scores.general_scores_forward, scores.general_scores_backward,
                         fast_attention.fast_general_scores_forward, fast_attention.fast_general_scores_backward,
                         (queries, keys, W))}
    for name, (forward, backward, fast_forward, fast_backward, args) in pairs.items():
        reference, cache = forward(*args)
        fast, fast_cache = fast_forward(*args)
        np.testing.assert_allclose(fast, reference, rtol=1e-12, atol=1e-12, err_msg=name)
        grads = zip(backward(dscores, cache), fast_backward(dscores, fast_cache))
        for index, (ref_grad, fast_grad) in enumerate(grads):
            np.testing.assert_allclose(fast_grad, ref_grad, rtol=1e-12, atol=1e-12, err_msg=f"{name} grad {index}")

    values = _normal(rng, n, k, 3)
    lens = {"none": None, "per_example": rng.integers(0, k + 1, n), "per_query": rng.integers(0, k + 1, (n, q))}[
        lens_kind]
    _, _, cache = pooling.attention_pooling_forward(dscores, values, lens, dropout=dropout,
                                                    rng=np.random.default_rng(seed))
    dcontext, dweights = _normal(rng, n, q, 3), _normal(rng, n, q, k)
    for ref_grad, fast_grad in zip(pooling.attention_pooling_backward(dcontext, cache, dweights),
                                   fast_attention.fast_attention_pooling_backward(dcontext, cache, dweights)):
        np.testing.assert_allclose(fast_grad, ref_grad, rtol=1e-12, atol=1e-12)


def test_the_reference_cache_reads_as_the_fast_twins():
    """The course's hand-out reads cache.keys, cache.Wk and cache.projected.* of the reference's cache."""
    rng = np.random.default_rng(6)
    queries, keys, values = _normal(rng, 2, 1, 3), _normal(rng, 2, 4, 5), _normal(rng, 2, 4, 2)
    Wq, Wk, wv = _normal(rng, 3, 6), _normal(rng, 5, 6), _normal(rng, 6)
    _, _, cache = F.additive_attention_forward(queries, keys, values, Wq, Wk, wv)
    assert cache.keys is keys and cache.Wk is Wk
    projected = cache.projected
    assert isinstance(projected, fast_attention.AdditiveAttentionProjectedCache)
    assert projected.queries is queries and projected.features.shape == (2, 1, 4, 6)
    assert projected.pooling.pooled.shape == (2, 1, 4)


# ---------------------------------------------------------------- the registry
def diagonal_scores_forward(queries, keys, d):
    """A throwaway score, s = (q * d) k^T: a general score whose W is diagonal."""
    return (queries * d) @ keys.swapaxes(1, 2), (queries, keys, d)


def diagonal_scores_backward(dscores, cache):
    queries, keys, d = cache
    dscaled = dscores @ keys
    return dscaled * d, dscores.swapaxes(1, 2) @ (queries * d), (dscaled * queries).sum(axis=(0, 1))


DIAGONAL = Score(diagonal_scores_forward, diagonal_scores_backward,
                 lambda query_size, key_size, num_hiddens: {"d": (query_size,)}, equal_sizes=True)


@pytest.fixture
def diagonal():
    """The throwaway score registered as "diagonal" for one test, and the registry as it was afterwards."""
    before = dict(SCORES)
    register_score("diagonal", DIAGONAL)
    try:
        yield "diagonal"
    finally:
        unregister_score("diagonal")
        assert SCORES == before


def test_register_score_refuses_a_taken_name_and_a_plain_tuple(diagonal):
    with pytest.raises(ValueError, match="name: expected a name not yet in SCORES"):
        register_score("diagonal", DIAGONAL)
    with pytest.raises(TypeError, match="score: expected a Score record"):
        register_score("other", (diagonal_scores_forward, diagonal_scores_backward))
    with pytest.raises(ValueError, match="name: expected one of"):
        unregister_score("no such score")


def test_a_registered_score_drives_the_attention_layers(diagonal):
    rng = np.random.default_rng(7)
    inputs = {"queries": _normal(rng, 2, 3, 4), "keys": _normal(rng, 2, 5, 4), "values": _normal(rng, 2, 5, 2),
              "valid_lens": np.array([5, 2])}
    layer = ScoredAttention(diagonal, 4, 4, rng=0, dtype=np.float64)
    assert [name for name, _ in layer.named_parameters()] == ["d"]
    report = check_module(layer, inputs)
    assert report.ok, report
    local = LocalAttention(4, 4, mode="local-p", score=diagonal, half_width=2, rng=0, dtype=np.float64)
    report = check_module(local, {"queries": inputs["queries"], "keys": inputs["keys"], "values": inputs["values"],
                                  "source_lens": np.array([5, 3])})
    assert report.ok, report
    with pytest.raises(TypeError, match="key_size: the diagonal score needs query_size == key_size"):
        ScoredAttention(diagonal, 4, 3)


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["global", "local-m"])
def test_a_registered_score_trains_in_luongs_decoder(diagonal, attention):
    model = build_seq2seq(6, 5, decoder="luong", score=diagonal, attention=attention, cell="gru", embed_size=3,
                          num_hiddens=4, num_layers=1, dropout=0.0, seed=0, dtype="float64")
    assert "decoder.attention.d" in dict(model.named_parameters())
    for name, param in model.named_parameters():
        param.data *= 5.0 if "attention" in name else 2.0
    rng = np.random.default_rng(8)
    inputs = {"src": rng.integers(0, 6, (2, 3)), "tgt_in": rng.integers(0, 5, (2, 3)),
              "src_valid_lens": np.array([3, 1])}
    report = check_module(model, inputs, h=1e-3, order=4)
    assert report.ok, report


def test_npseq_train_takes_a_registered_score(diagonal, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["train", "--task", "reverse", "--num-examples", "200", "--epochs", "1", "--decoder", "luong",
                 "--score", diagonal, "--embed-size", "8", "--num-hiddens", "16", "--num-layers", "1",
                 "--no-progress", "--save", "model.npz"])
    assert code == 0, capsys.readouterr().err
    with np.load(tmp_path / "model.npz") as archive:
        assert any(key.endswith("decoder.attention.d") for key in archive.files)


def test_npseq_train_refuses_an_unknown_score(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--task", "reverse", "--decoder", "luong", "--score", "diagonal"])
    assert "argument --score: invalid choice: 'diagonal'" in capsys.readouterr().err
