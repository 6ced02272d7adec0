"""The Transformer's functional pairs against finite differences, direct formulas and their masks."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npseq.errors import InvalidIndexError, InvalidTypeError, InvalidValueError
from npseq.functional.activations import gelu_backward, gelu_forward, relu_backward, relu_forward
from npseq.functional.normalization import layer_norm_backward, layer_norm_forward
from npseq.functional.transformer import (
    MULTIHEAD_PARAMS,
    NORM_ORDERS,
    add_positions_backward,
    add_positions_forward,
    feed_forward_backward,
    feed_forward_forward,
    merge_heads,
    multihead_attention_backward,
    multihead_attention_forward,
    positional_encoding,
    residual_norm_backward,
    residual_norm_forward,
    scaled_dot_product_attention_backward,
    scaled_dot_product_attention_forward,
    split_heads,
)
from npseq.gradcheck import GradCheckReport, check_function, compare, numerical_gradient, rel_error
from npseq.samples import normal as _normal
from npseq.samples import with_dweights

SDPA = (scaled_dot_product_attention_forward, scaled_dot_product_attention_backward)


def out_only(forward):
    """The forward as ``(out, cache)``: the backward then gets no ``dweights``."""
    def wrapped(*args, **kwargs):
        out, _, cache = forward(*args, **kwargs)
        return out, cache
    return wrapped


# ------------------------------------------------------------------ activations
@pytest.mark.parametrize("pair", [(relu_forward, relu_backward), (gelu_forward, gelu_backward)], ids=["relu", "gelu"])
def test_activation_gradients(pair):
    x = _normal(np.random.default_rng(0), 4, 5, scale=2.0)
    report = check_function(*pair, {"x": x})
    assert report.ok, report


def test_gelu_matches_its_formula_and_keeps_dtype():
    x = np.linspace(-6, 6, 49)
    out, _ = gelu_forward(x)
    expected = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))) for v in x]
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-15)
    assert gelu_forward(x.astype(np.float32))[0].dtype == np.float32
    assert relu_forward(x.astype(np.float32))[0].dtype == np.float32


# ----------------------------------------------------- scaled dot-product attention
N, TQ, TK, D, DV = 2, 3, 4, 3, 2
LENS = {"all_valid": None, "per_example": np.array([3, 1]), "per_query": np.array([[1, 4, 2], [2, 0, 4]])}


def sdpa_inputs(seed, lens=None, heads=None, n=N, q=TQ, k=TK, d=D, dv=DV, scale=1.0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    lead = (n,) if heads is None else (n, heads)
    return {"queries": _normal(rng, *lead, q, d, scale=scale, dtype=dtype),
            "keys": _normal(rng, *lead, k, d, dtype=dtype),
            "values": _normal(rng, *lead, k, dv, dtype=dtype), "valid_lens": lens}


@pytest.mark.parametrize("heads", [None, 2], ids=["3d", "4d"])
@pytest.mark.parametrize("lens_name", list(LENS))
@pytest.mark.parametrize("causal", [False, True], ids=["", "causal"])
@pytest.mark.parametrize("dweights_given", [False, True], ids=["dout", "dout+dweights"])
def test_sdpa_gradients(heads, lens_name, causal, dweights_given):
    forward, backward = SDPA
    inputs = sdpa_inputs(1, LENS[lens_name], heads)
    if dweights_given:
        report = check_function(forward, with_dweights(backward), inputs, kwargs={"causal": causal})
    else:
        report = check_function(out_only(forward), backward, inputs, kwargs={"causal": causal})
    assert report.ok, report


def test_sdpa_gradients_with_dropout():
    forward, backward = SDPA

    def seeded(*args, **kwargs):  # one mask for every call, so finite differences see one function
        return forward(*args, dropout=0.3, rng=np.random.default_rng(5), **kwargs)

    report = check_function(seeded, with_dweights(backward), sdpa_inputs(2, LENS["per_query"], 2),
                            kwargs={"causal": True})
    assert report.ok, report


def reference_sdpa(queries, keys, values, valid_lens, causal):
    """Loops over every (n, q): a softmax over the keys this query may see, then their values."""
    n_batch, n_queries, n_keys = queries.shape[0], queries.shape[1], keys.shape[1]
    weights = np.zeros((n_batch, n_queries, n_keys))
    for n in range(n_batch):
        for q in range(n_queries):
            length = n_keys if valid_lens is None else int(valid_lens[n] if valid_lens.ndim == 1 else valid_lens[n, q])
            seen = [k for k in range(n_keys) if k < length and (not causal or k <= q)]
            if not seen:
                continue
            s = np.array([queries[n, q] @ keys[n, k] / math.sqrt(queries.shape[2]) for k in seen])
            e = np.exp(s - s.max())
            weights[n, q, seen] = e / e.sum()
    return weights @ values, weights


@pytest.mark.parametrize("lens_name", list(LENS))
@pytest.mark.parametrize("causal", [False, True], ids=["", "causal"])
def test_sdpa_matches_direct_formula(lens_name, causal):
    inputs = sdpa_inputs(3, LENS[lens_name])
    out, weights, _ = scaled_dot_product_attention_forward(*inputs.values(), causal=causal)
    ref_out, ref_weights = reference_sdpa(*inputs.values(), causal)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-15)
    assert np.all(weights[ref_weights == 0] == 0)  # masked weights exactly 0


def test_heads_are_independent_batches():
    inputs = sdpa_inputs(4, LENS["per_query"], heads=3)
    out, weights, _ = scaled_dot_product_attention_forward(*inputs.values(), causal=True)
    for h in range(3):
        one = {name: (value if name == "valid_lens" else value[:, h]) for name, value in inputs.items()}
        out_h, weights_h, _ = scaled_dot_product_attention_forward(*one.values(), causal=True)
        np.testing.assert_array_equal(out[:, h], out_h)
        np.testing.assert_array_equal(weights[:, h], weights_h)


def test_causal_first_query_sees_only_itself():
    inputs = sdpa_inputs(5, np.array([3, 1]), k=TQ)
    out, weights, _ = scaled_dot_product_attention_forward(*inputs.values(), causal=True)
    np.testing.assert_array_equal(weights[:, 0], np.eye(TQ)[[0, 0]])
    np.testing.assert_array_equal(out[:, 0], inputs["values"][:, 0])
    assert np.all(np.triu(np.ones((TQ, TQ)), 1)[None] * weights == 0)  # nothing from the future
    assert np.all(weights[1, :, 1:] == 0)  # the second example has one valid key


def test_sdpa_query_with_no_key_is_zero_not_nan():
    inputs = sdpa_inputs(6, np.array([[0, 2, 0], [1, 1, 1]]))
    out, weights, cache = scaled_dot_product_attention_forward(*inputs.values())
    assert np.all(weights[0, [0, 2]] == 0) and np.all(out[0, [0, 2]] == 0)
    grads = scaled_dot_product_attention_backward(np.ones_like(out), cache, np.ones_like(weights))
    assert all(np.all(np.isfinite(g)) for g in grads)
    assert np.all(grads[0][0, [0, 2]] == 0)  # dqueries of the empty rows


def test_sdpa_large_scores_stay_finite():
    inputs = sdpa_inputs(7, LENS["per_example"], heads=2, scale=50.0)
    out, weights, cache = scaled_dot_product_attention_forward(*inputs.values(), causal=True)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)
    grads = scaled_dot_product_attention_backward(np.ones_like(out), cache)
    assert all(np.all(np.isfinite(g)) for g in grads)


def test_sdpa_float32_keeps_dtype():
    inputs = sdpa_inputs(8, LENS["per_query"], heads=2, dtype=np.float32)
    out, weights, cache = scaled_dot_product_attention_forward(*inputs.values(), causal=True)
    assert out.dtype == weights.dtype == np.float32
    assert all(g.dtype == np.float32 for g in scaled_dot_product_attention_backward(np.ones_like(out), cache))
    ref = scaled_dot_product_attention_forward(*sdpa_inputs(8, LENS["per_query"], heads=2).values(), causal=True)
    assert rel_error(out, ref[0]) < 1e-4


@st.composite
def edge_case(draw):
    n, q, k = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
    heads = draw(st.sampled_from([None, 1, 2]))
    lens_kind = draw(st.sampled_from(["none", "one_key", "N", "NQ"]))
    if lens_kind == "none":
        lens = None
    elif lens_kind == "one_key":
        lens = np.ones(n, dtype=np.int64)
    else:
        shape = (n,) if lens_kind == "N" else (n, q)
        lens = np.array(draw(st.lists(st.integers(0, k), min_size=math.prod(shape),
                                      max_size=math.prod(shape)))).reshape(shape)
    return n, q, k, heads, lens, draw(st.booleans()), draw(st.integers(0, 2**31 - 1))


@settings(max_examples=30, deadline=None)
@given(edge_case())
def test_sdpa_gradients_on_edge_shapes(case):
    n, q, k, heads, lens, causal, seed = case
    inputs = sdpa_inputs(seed, lens, heads, n=n, q=q, k=k, d=2, dv=2)
    report = check_function(SDPA[0], with_dweights(SDPA[1]), inputs, kwargs={"causal": causal})
    assert report.ok, report


# ---------------------------------------------------------- multi-head attention
def mha_inputs(seed, n=N, q=TQ, k=TK, dq=5, dk=3, dv=4, hidden=6, do=5, dtype=np.float64):
    rng = np.random.default_rng(seed)
    sizes = {"W_q": (dq, hidden), "b_q": (hidden,), "W_k": (dk, hidden), "b_k": (hidden,),
             "W_v": (dv, hidden), "b_v": (hidden,), "W_o": (hidden, do), "b_o": (do,)}
    inputs = {"queries": _normal(rng, n, q, dq, dtype=dtype), "keys": _normal(rng, n, k, dk, dtype=dtype),
              "values": _normal(rng, n, k, dv, dtype=dtype)}
    return inputs, {name: _normal(rng, *shape, scale=0.7, dtype=dtype) for name, shape in sizes.items()}


def mha_pair(num_heads, checked, **kwargs):
    def forward(queries, keys, values, *weights):
        return multihead_attention_forward(queries, keys, values, dict(zip(MULTIHEAD_PARAMS, weights)),
                                           num_heads, **kwargs)

    def backward(dout, dweights, cache):
        *dinputs, grads = multihead_attention_backward(dout, cache, dweights)
        return (*dinputs, *(grads[name] for name in checked[3:]))
    return forward, backward


@pytest.mark.parametrize("num_heads", [1, 2, 3])
@pytest.mark.parametrize("lens_name", list(LENS))
@pytest.mark.parametrize("causal", [False, True], ids=["", "causal"])
def test_mha_gradients(num_heads, lens_name, causal):
    inputs, params = mha_inputs(10)
    checked = [*inputs, *(name for name in MULTIHEAD_PARAMS if name != "b_k")]
    report = check_function(*mha_pair(num_heads, checked, valid_lens=LENS[lens_name], causal=causal),
                            {**inputs, **params}, grad_names=checked)
    assert report.ok, report


def test_mha_key_bias_gradient_is_zero():
    """A key bias shifts all scores of a query alike, and the softmax ignores that."""
    inputs, params = mha_inputs(11)
    out, weights, cache = multihead_attention_forward(*inputs.values(), params, 2, LENS["per_query"], True)
    rng = np.random.default_rng(11)
    grads = multihead_attention_backward(rng.standard_normal(out.shape), cache, rng.standard_normal(weights.shape))
    assert np.abs(grads[3]["b_k"]).max() < 1e-13 * np.abs(grads[3]["b_q"]).max()
    assert list(grads[3]) == list(MULTIHEAD_PARAMS)


def test_self_attention_gradient_is_the_sum_of_the_three():
    inputs, params = mha_inputs(12, dq=4, dk=4, dv=4, k=TQ)
    x = inputs["queries"]
    dout = np.random.default_rng(12).standard_normal((N, TQ, 5))
    out, _, cache = multihead_attention_forward(x, x, x, params, 2, causal=True)
    dq, dk, dv, _ = multihead_attention_backward(dout, cache)

    def loss(_):
        return float((multihead_attention_forward(x, x, x, params, 2, causal=True)[0] * dout).sum())

    assert compare("x", dq + dk + dv, numerical_gradient(loss, x)).ok


def test_mha_one_head_is_attention_on_the_projections():
    inputs, params = mha_inputs(13)
    q, k, v = (inputs[name] @ params[f"W_{name[0]}"] + params[f"b_{name[0]}"]
               for name in ("queries", "keys", "values"))
    heads, weights, _ = scaled_dot_product_attention_forward(q, k, v, LENS["per_example"])
    out, mha_weights, _ = multihead_attention_forward(*inputs.values(), params, 1, LENS["per_example"])
    np.testing.assert_allclose(out, heads @ params["W_o"] + params["b_o"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mha_weights[:, 0], weights, rtol=1e-12, atol=1e-15)


def test_split_and_merge_heads_are_inverse():
    x = np.arange(2 * 3 * 6.0).reshape(2, 3, 6)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 3, 2)
    np.testing.assert_array_equal(heads[:, 1], x[:, :, 2:4])  # head i holds columns i d .. (i+1) d - 1
    np.testing.assert_array_equal(merge_heads(heads), x)


def test_mha_float32_keeps_dtype():
    inputs, params = mha_inputs(14, dtype=np.float32)
    out, weights, cache = multihead_attention_forward(*inputs.values(), params, 2, LENS["per_query"], True)
    assert out.dtype == weights.dtype == np.float32
    dq, dk, dv, grads = multihead_attention_backward(np.ones_like(out), cache)
    assert all(g.dtype == np.float32 for g in (dq, dk, dv, *grads.values()))


@pytest.mark.parametrize("change, message", [
    (lambda i, p: p.pop("b_o"), "params: expected a dict with the keys"),
    (lambda i, p: p.__setitem__("W_k", p["W_k"][:2]), "W_k: expected 3 rows (the feature size of keys)"),
    (lambda i, p: p.__setitem__("b_v", p["b_v"][:5]), "b_v: expected shape (6,)"),
    (lambda i, p: p.__setitem__("W_o", p["W_o"].astype(np.float32)), "W_o: expected dtype float64"),
    (lambda i, p: i.__setitem__("values", i["values"][:, :3]), "values: expected keys and values of shape"),
])
def test_mha_errors_name_the_argument(change, message):
    inputs, params = mha_inputs(15)
    change(inputs, params)
    with pytest.raises((InvalidValueError, InvalidTypeError), match=message.replace("(", r"\(").replace(")", r"\)")):
        multihead_attention_forward(*inputs.values(), params, 2)


def test_mha_heads_must_divide_the_projection():
    inputs, params = mha_inputs(16)
    with pytest.raises(InvalidValueError, match="num_heads: expected a divisor of the projected size D = 6"):
        multihead_attention_forward(*inputs.values(), params, 4)


def test_sdpa_errors_name_the_argument():
    inputs = sdpa_inputs(17)
    with pytest.raises(InvalidValueError, match="keys: expected feature size 3"):
        scaled_dot_product_attention_forward(inputs["queries"], inputs["keys"][..., :2], inputs["values"])
    with pytest.raises(InvalidIndexError, match=r"valid_lens: expected lengths in \[0, 4\], got 5"):
        scaled_dot_product_attention_forward(inputs["queries"], inputs["keys"], inputs["values"], np.array([5, 1]))
    with pytest.raises(InvalidValueError, match="queries: expected a 3-d array"):
        scaled_dot_product_attention_forward(inputs["queries"][0], inputs["keys"][0], inputs["values"][0])


# -------------------------------------------------------------------- layer norm
@pytest.mark.parametrize("shape", [(5,), (2, 5), (2, 3, 5), (1, 1, 1)])
def test_layer_norm_gradients(shape):
    rng = np.random.default_rng(20)
    dim = shape[-1]
    inputs = {"x": _normal(rng, *shape, scale=3.0), "gamma": _normal(rng, dim), "beta": _normal(rng, dim)}
    report = check_function(layer_norm_forward, layer_norm_backward, inputs, kwargs={"eps": 1e-5})
    assert report.ok, report


def test_layer_norm_standardises_each_row():
    x = _normal(np.random.default_rng(21), 4, 3, 8, scale=10.0) + 5.0
    y, _ = layer_norm_forward(x, np.ones(8), np.zeros(8), eps=0.0)
    np.testing.assert_allclose(y.mean(-1), 0.0, atol=1e-14)
    np.testing.assert_allclose(y.var(-1), 1.0, rtol=1e-12)


def test_layer_norm_constant_row_is_finite():
    x = np.full((2, 4), 3.0)
    y, cache = layer_norm_forward(x, np.ones(4), np.full(4, 0.5))
    np.testing.assert_array_equal(y, 0.5)
    dx, _, _ = layer_norm_backward(np.ones_like(x), cache)
    assert np.all(np.isfinite(dx))


def test_layer_norm_float32_and_errors():
    x = np.ones((2, 3), dtype=np.float32)
    y, cache = layer_norm_forward(x, np.ones(3, np.float32), np.zeros(3, np.float32))
    assert y.dtype == np.float32 and all(g.dtype == np.float32 for g in layer_norm_backward(y, cache))
    with pytest.raises(InvalidValueError, match=r"gamma: expected shape \(3,\)"):
        layer_norm_forward(x, np.ones(4, np.float32), np.zeros(3, np.float32))
    with pytest.raises(InvalidTypeError, match="beta: expected dtype float32"):
        layer_norm_forward(x, np.ones(3, np.float32), np.zeros(3))
    with pytest.raises(InvalidValueError, match="eps: expected a real number >= 0"):
        layer_norm_forward(x, np.ones(3, np.float32), np.zeros(3, np.float32), eps=-1.0)


# ------------------------------------------------------------------- positions
@pytest.mark.parametrize("dim", [1, 4, 7])
def test_positional_encoding_matches_the_formula(dim):
    table = positional_encoding(6, dim, "float64")
    assert table.shape == (6, dim) and table.dtype == np.float64
    for t in range(6):
        for j in range(dim):
            angle = t / 10000 ** ((j - j % 2) / dim)
            assert table[t, j] == pytest.approx(math.sin(angle) if j % 2 == 0 else math.cos(angle), abs=1e-15)
    assert positional_encoding(3, 4, np.float32).dtype == np.float32


def test_add_positions_gradients_and_unused_rows():
    rng = np.random.default_rng(22)
    inputs = {"x": _normal(rng, 3, 4, 5), "positions": _normal(rng, 7, 5)}
    report = check_function(add_positions_forward, add_positions_backward, inputs)
    assert report.ok, report
    y, cache = add_positions_forward(*inputs.values())
    np.testing.assert_array_equal(y, inputs["x"] + inputs["positions"][:4])
    _, dpositions = add_positions_backward(np.ones_like(y), cache)
    np.testing.assert_array_equal(dpositions[:4], 3.0)  # a sum over the 3 examples
    np.testing.assert_array_equal(dpositions[4:], 0.0)


def test_add_positions_needs_enough_rows():
    with pytest.raises(InvalidValueError, match=r"positions: expected shape \(T_max, 5\) with T_max >= 4"):
        add_positions_forward(np.zeros((1, 4, 5)), positional_encoding(3, 5, "float64"))


# -------------------------------------------------------- feed-forward and residual
def ffn_params(rng, dim=4, hidden=6, dtype=np.float64):
    return {"W1": _normal(rng, dim, hidden, scale=0.7, dtype=dtype), "b1": _normal(rng, hidden, dtype=dtype),
            "W2": _normal(rng, hidden, dim, scale=0.7, dtype=dtype), "b2": _normal(rng, dim, dtype=dtype)}


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 4), (5, 4)])
def test_feed_forward_gradients(activation, shape):
    rng = np.random.default_rng(30)
    report = check_function(feed_forward_forward, feed_forward_backward,
                            {"x": _normal(rng, *shape), **ffn_params(rng)}, kwargs={"activation": activation})
    assert report.ok, report


def test_feed_forward_is_the_same_mlp_at_every_position():
    rng = np.random.default_rng(31)
    x, p = _normal(rng, 2, 3, 4), ffn_params(rng)
    y, _ = feed_forward_forward(x, *p.values(), activation="relu")
    for n in range(2):
        for t in range(3):
            expected = np.maximum(x[n, t] @ p["W1"] + p["b1"], 0) @ p["W2"] + p["b2"]
            np.testing.assert_allclose(y[n, t], expected, rtol=1e-13, atol=1e-15)
    with pytest.raises(InvalidValueError, match="activation: expected one of"):
        feed_forward_forward(x, *p.values(), activation="swish")


def _ffn_sublayer(p, activation="gelu"):
    def backward(dy, cache):
        dz, *grads = feed_forward_backward(dy, cache)
        return dz, grads
    return (lambda z: feed_forward_forward(z, *p.values(), activation=activation)), backward


@pytest.mark.parametrize("order", NORM_ORDERS)
def test_residual_norm_gradients_around_feed_forward(order):
    rng = np.random.default_rng(32)
    inputs = {"x": _normal(rng, 2, 3, 4), "gamma": 1 + _normal(rng, 4, scale=0.3), "beta": _normal(rng, 4),
              **ffn_params(rng)}

    def forward(x, gamma, beta, *weights):
        sublayer, _ = _ffn_sublayer(dict(zip(("W1", "b1", "W2", "b2"), weights)))
        return residual_norm_forward(x, sublayer, gamma, beta, order)

    def backward(dy, cache):
        dx, dgamma, dbeta, grads = residual_norm_backward(dy, cache, _ffn_sublayer({})[1])
        return (dx, dgamma, dbeta, *grads)

    report = check_function(forward, backward, inputs)
    assert report.ok, report


@pytest.mark.parametrize("order", NORM_ORDERS)
def test_residual_norm_around_self_attention(order):
    """An encoder's first half: self-attention with padding under a residual and a layer norm."""
    inputs, params = mha_inputs(33, dq=4, dk=4, dv=4, do=4, k=TQ)
    x, rng = inputs["queries"], np.random.default_rng(33)
    gamma, beta, lens = 1 + _normal(rng, 4, scale=0.3), _normal(rng, 4), np.array([3, 2])

    def sublayer(z):
        out, _, cache = multihead_attention_forward(z, z, z, params, 2, lens)
        return out, cache

    def sublayer_backward(dy, cache):
        dq, dk, dv, grads = multihead_attention_backward(dy, cache)
        return dq + dk + dv, grads

    dy = rng.standard_normal(x.shape)
    _, cache = residual_norm_forward(x, sublayer, gamma, beta, order)
    dx, dgamma, dbeta, grads = residual_norm_backward(dy, cache, sublayer_backward)

    def loss(_):
        return float((residual_norm_forward(x, sublayer, gamma, beta, order)[0] * dy).sum())

    rows = [compare("x", dx, numerical_gradient(loss, x)), compare("gamma", dgamma, numerical_gradient(loss, gamma)),
            compare("beta", dbeta, numerical_gradient(loss, beta))]
    rows += [compare(name, grads[name], numerical_gradient(loss, params[name]))
             for name in MULTIHEAD_PARAMS if name != "b_k"]
    report = GradCheckReport(rows)
    assert report.ok, report


def test_residual_norm_orders_differ_as_written():
    rng = np.random.default_rng(34)
    x, p = _normal(rng, 2, 3, 4), ffn_params(rng)
    gamma, beta = 1 + _normal(rng, 4, scale=0.3), _normal(rng, 4)
    sublayer, _ = _ffn_sublayer(p)
    post, _ = residual_norm_forward(x, sublayer, gamma, beta, "post")
    pre, _ = residual_norm_forward(x, sublayer, gamma, beta, "pre")
    np.testing.assert_allclose(post, layer_norm_forward(x + sublayer(x)[0], gamma, beta)[0], rtol=1e-14)
    np.testing.assert_allclose(pre, x + sublayer(layer_norm_forward(x, gamma, beta)[0])[0], rtol=1e-14)
    with pytest.raises(InvalidValueError, match="order: expected one of"):
        residual_norm_forward(x, sublayer, gamma, beta, "sandwich")
    with pytest.raises(InvalidValueError, match="sublayer: expected an output of x's shape"):
        residual_norm_forward(x, lambda z: (z[..., :2], None), gamma, beta)
