"""Attention: functional pairs and modules (dot, scaled dot, general, additive)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optional_tools import require

from npseq import no_grad
from npseq.functional.attention import (
    additive_attention_backward,
    additive_attention_forward,
    additive_attention_projected_backward,
    additive_attention_projected_forward,
    attention_pooling_backward,
    attention_pooling_forward,
    dot_attention_backward,
    dot_attention_forward,
    general_attention_backward,
    general_attention_forward,
)
from npseq.gradcheck import GradCheckReport, check_function, check_module, compare, numerical_gradient, rel_error
from npseq.nn.attention import AdditiveAttention, DotProductAttention, GeneralAttention
from npseq.samples import normal as _normal
from npseq.samples import with_dweights

N, Q, K, DQ, DK, DV, H = 2, 3, 4, 3, 5, 2, 4

LENS = {
    "all_valid": None,
    "per_example": np.array([3, 0]),              # the second example has no valid key at all
    "per_query": np.array([[1, 4, 0], [2, 3, 4]]),
}


def make_inputs(kind, seed=0, lens=None, dtype=np.float64, n=N, q=Q, k=K):
    """Forward arguments of one functional pair, by name and in the forward's order."""
    rng = np.random.default_rng(seed)
    dq = DK if kind in ("dot", "scaled_dot") else DQ
    inputs = {"queries": _normal(rng, n, q, dq, dtype=dtype)}
    if kind == "additive_projected":
        inputs["projected_keys"] = _normal(rng, n, k, H, scale=0.5, dtype=dtype)
    else:
        inputs["keys"] = _normal(rng, n, k, DK, dtype=dtype)
    inputs["values"] = _normal(rng, n, k, DV, dtype=dtype)
    if kind == "general":
        inputs["W"] = _normal(rng, DQ, DK, scale=0.5, dtype=dtype)
    if kind in ("additive", "additive_projected"):
        inputs["Wq"] = _normal(rng, DQ, H, scale=0.5, dtype=dtype)
    if kind == "additive":
        inputs["Wk"] = _normal(rng, DK, H, scale=0.5, dtype=dtype)
    if kind in ("additive", "additive_projected"):
        inputs["wv"] = _normal(rng, H, dtype=dtype)
    inputs["valid_lens"] = lens
    return inputs


PAIRS = {
    "dot": (dot_attention_forward, dot_attention_backward, {"scaled": False}),
    "scaled_dot": (dot_attention_forward, dot_attention_backward, {"scaled": True}),
    "general": (general_attention_forward, general_attention_backward, {}),
    "additive": (additive_attention_forward, additive_attention_backward, {}),
    "additive_projected": (additive_attention_projected_forward, additive_attention_projected_backward, {}),
}


def run(kind, inputs, **extra):
    forward, _, kwargs = PAIRS[kind]
    return forward(*inputs.values(), **kwargs, **extra)


def context_only(forward):
    """The forward as ``(context, cache)``: the backward then gets no ``dweights``."""
    def wrapped(*args, **kwargs):
        context, _, cache = forward(*args, **kwargs)
        return context, cache
    return wrapped


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("kind", list(PAIRS))
@pytest.mark.parametrize("lens_name", list(LENS))
@pytest.mark.parametrize("dweights_given", [False, True])
def test_functional_gradients(kind, lens_name, dweights_given):
    forward, backward, kwargs = PAIRS[kind]
    inputs = make_inputs(kind, seed=1, lens=LENS[lens_name])
    if dweights_given:
        report = check_function(forward, with_dweights(backward), inputs, kwargs=kwargs)
    else:
        report = check_function(context_only(forward), backward, inputs, kwargs=kwargs)
    assert report.ok, report


@pytest.mark.parametrize("kind", list(PAIRS))
def test_functional_gradients_with_dropout(kind):
    forward, backward, kwargs = PAIRS[kind]

    def seeded(*args, **kw):  # the same mask at every call, so finite differences see one function
        return forward(*args, dropout=0.4, rng=np.random.default_rng(7), **kw)

    report = check_function(seeded, with_dweights(backward), make_inputs(kind, 2, LENS["per_query"]),
                            kwargs=kwargs)
    assert report.ok, report


def test_pooling_gradients():
    rng = np.random.default_rng(3)
    inputs = {"scores": _normal(rng, N, Q, K), "values": _normal(rng, N, K, DV),
              "valid_lens": LENS["per_query"]}
    report = check_function(attention_pooling_forward, with_dweights(attention_pooling_backward), inputs)
    assert report.ok, report


def make_module(kind, dtype=np.float64, dropout=0.0, rng=4):
    if kind == "dot":
        return DotProductAttention(dropout, scaled=False, rng=rng)
    if kind == "scaled_dot":
        return DotProductAttention(dropout, rng=rng)
    if kind == "general":
        return GeneralAttention(DQ, DK, rng=rng, dtype=dtype)
    return AdditiveAttention(DK, DQ, H, dropout, rng=rng, dtype=dtype)


MODULE_KINDS = ["dot", "scaled_dot", "general", "additive"]


def module_inputs(kind, seed, lens, dtype=np.float64):
    inputs = make_inputs(kind, seed, lens, dtype)
    return {name: inputs[name] for name in ("queries", "keys", "values", "valid_lens")}


@pytest.mark.parametrize("kind", MODULE_KINDS)
@pytest.mark.parametrize("lens_name", list(LENS))
def test_module_gradients(kind, lens_name):
    report = check_module(make_module(kind), module_inputs(kind, 5, LENS[lens_name]))
    assert report.ok, report


@pytest.mark.parametrize("lens", [None, np.array([3, 0]), np.array([[4], [1]])], ids=["all", "N", "NQ"])
def test_additive_projected_protocol_three_steps(lens):
    """project_keys once, forward_projected at 3 steps, backward each (latest first), backward_keys once."""
    attn = AdditiveAttention(DK, DQ, H, rng=6, dtype=np.float64)
    rng = np.random.default_rng(6)
    keys, values = _normal(rng, N, K, DK), _normal(rng, N, K, DV)
    queries = [_normal(rng, N, 1, DQ) for _ in range(3)]
    dcontexts = [_normal(rng, N, 1, DV) for _ in range(3)]

    def total(_):
        with no_grad():
            projected = attn.project_keys(keys)
            return sum(float((attn.forward_projected(q, projected, values, lens) * dc).sum())
                       for q, dc in zip(queries, dcontexts))

    attn.zero_grad()
    projected = attn.project_keys(keys)
    for q in queries:
        attn.forward_projected(q, projected, values, lens)
    dqueries, dprojected, dvalues = [None] * 3, 0, 0
    for t in reversed(range(3)):
        dqueries[t], dprojected_t, dvalues_t = attn.backward(dcontexts[t])
        dprojected, dvalues = dprojected + dprojected_t, dvalues + dvalues_t
    dkeys = attn.backward_keys(dprojected)
    assert attn.num_pending == 0 and attn.W_k.num_pending == 0

    rows = [compare("keys", dkeys, numerical_gradient(total, keys)),
            compare("values", dvalues, numerical_gradient(total, values))]
    rows += [compare(f"queries[{t}]", dqueries[t], numerical_gradient(total, queries[t])) for t in range(3)]
    rows += [compare(name, p.grad, numerical_gradient(total, p.data)) for name, p in attn.named_parameters()]
    report = GradCheckReport(rows)
    assert report.ok, report


def test_additive_projected_matches_plain_forward():
    attn = AdditiveAttention(DK, DQ, H, rng=8, dtype=np.float64)
    inputs = module_inputs("additive", 8, LENS["per_query"])
    dcontext = np.random.default_rng(8).standard_normal((N, Q, DV))

    context = attn(**inputs)
    dplain = attn.backward(dcontext)
    plain_grads = {name: p.grad.copy() for name, p in attn.named_parameters()}

    attn.zero_grad()
    projected = attn.project_keys(inputs["keys"])
    context_split = attn.forward_projected(inputs["queries"], projected, inputs["values"], inputs["valid_lens"])
    dqueries, dprojected, dvalues = attn.backward(dcontext)
    dkeys = attn.backward_keys(dprojected)

    assert rel_error(context, context_split) < 1e-13
    for plain, split in zip(dplain, (dqueries, dkeys, dvalues)):
        assert rel_error(plain, split) < 1e-12
    for name, p in attn.named_parameters():
        assert rel_error(plain_grads[name], p.grad) < 1e-12, name


# ------------------------------------------------------ direct formulas
def score_function(kind, inputs):
    if kind == "dot":
        return lambda q, k: q @ k
    if kind == "scaled_dot":
        return lambda q, k: q @ k / math.sqrt(q.shape[0])
    if kind == "general":
        return lambda q, k: q @ inputs["W"] @ k
    return lambda q, k: inputs["wv"] @ np.tanh(q @ inputs["Wq"] + k @ inputs["Wk"])


def reference_attention(score, queries, keys, values, valid_lens):
    """Loops over n and q: a softmax over the valid keys, then the weighted sum of their values."""
    n_batch, n_queries, n_keys = queries.shape[0], queries.shape[1], keys.shape[1]
    weights = np.zeros((n_batch, n_queries, n_keys))
    context = np.zeros((n_batch, n_queries, values.shape[2]))
    for n in range(n_batch):
        for q in range(n_queries):
            if valid_lens is None:
                length = n_keys
            else:
                length = int(valid_lens[n] if valid_lens.ndim == 1 else valid_lens[n, q])
            if length == 0:
                continue
            s = np.array([score(queries[n, q], keys[n, j]) for j in range(length)])
            e = np.exp(s - s.max())
            weights[n, q, :length] = e / e.sum()
            context[n, q] = weights[n, q, :length] @ values[n, :length]
    return context, weights


@pytest.mark.parametrize("kind", MODULE_KINDS)
@pytest.mark.parametrize("lens_name", list(LENS))
def test_matches_direct_formula(kind, lens_name):
    inputs = make_inputs(kind, 9, LENS[lens_name])
    context, weights, _ = run(kind, inputs)
    ref_context, ref_weights = reference_attention(score_function(kind, inputs), inputs["queries"],
                                                   inputs["keys"], inputs["values"], inputs["valid_lens"])
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(context, ref_context, rtol=1e-12, atol=1e-15)
    assert np.all(weights[ref_weights == 0] == 0)


def test_additive_projected_is_additive_with_projected_keys():
    inputs = make_inputs("additive", 10, LENS["per_example"])
    context, weights, _ = run("additive", inputs)
    split_context, split_weights, _ = additive_attention_projected_forward(
        inputs["queries"], inputs["keys"] @ inputs["Wk"], inputs["values"], inputs["Wq"], inputs["wv"],
        inputs["valid_lens"])
    np.testing.assert_array_equal(context, split_context)
    np.testing.assert_array_equal(weights, split_weights)


# ------------------------------------------------------------- torch
def torch_attention(torch, kind, inputs):
    """The same attention with torch autograd (d2l's masked softmax: masked scores set to -1e6)."""
    t = {name: (None if value is None else torch.tensor(value, requires_grad=value.dtype.kind == "f"))
         for name, value in inputs.items()}
    q, k, v = t["queries"], t["keys"], t["values"]
    if kind in ("dot", "scaled_dot"):
        scores = q @ k.transpose(1, 2)
        if kind == "scaled_dot":
            scores = scores / math.sqrt(q.shape[-1])
    elif kind == "general":
        scores = q @ t["W"] @ k.transpose(1, 2)
    else:
        features = torch.tanh((q @ t["Wq"]).unsqueeze(2) + (k @ t["Wk"]).unsqueeze(1))
        scores = features @ t["wv"]
    if t["valid_lens"] is not None:
        lens = t["valid_lens"]
        lens = lens[:, None] if lens.ndim == 1 else lens
        mask = torch.arange(scores.shape[-1])[None, None, :] < lens[:, :, None]
        scores = scores.masked_fill(~mask, -1e6)
    weights = torch.softmax(scores, dim=-1)
    return t, weights @ v, weights


@pytest.mark.parametrize("kind", MODULE_KINDS)
@pytest.mark.parametrize("lens", [None, np.array([3, 1]), np.array([[1, 4, 2], [2, 3, 4]])], ids=["all", "N", "NQ"])
def test_torch_parity(kind, lens):
    torch = require("torch")
    forward, backward, kwargs = PAIRS[kind]
    inputs = make_inputs(kind, 11, lens)
    rng = np.random.default_rng(11)
    dcontext, dweights = rng.standard_normal((N, Q, DV)), rng.standard_normal((N, Q, K))

    context, weights, cache = forward(*inputs.values(), **kwargs)
    grads = backward(dcontext, cache, dweights)

    tensors, t_context, t_weights = torch_attention(torch, kind, inputs)
    ((t_context * torch.tensor(dcontext)).sum() + (t_weights * torch.tensor(dweights)).sum()).backward()
    assert rel_error(weights, t_weights.detach().numpy()) < 1e-10
    assert rel_error(context, t_context.detach().numpy()) < 1e-10
    float_names = [name for name, value in inputs.items() if value is not None and value.dtype.kind == "f"]
    assert len(grads) == len(float_names)
    for name, grad in zip(float_names, grads):
        assert rel_error(grad, tensors[name].grad.numpy()) < 1e-10, name


# ---------------------------------------------------- masking invariants
@st.composite
def masked_case(draw):
    n, q, k = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 5))
    lens_shape = (n, q) if draw(st.booleans()) else (n,)
    lens = np.array(draw(st.lists(st.integers(0, k), min_size=math.prod(lens_shape),
                                  max_size=math.prod(lens_shape)))).reshape(lens_shape)
    cutoff = np.array(draw(st.lists(st.integers(0, k), min_size=n, max_size=n)))
    kind = draw(st.sampled_from(list(PAIRS)))
    magnitude = draw(st.sampled_from([1.0, 1e2, 1e4]))  # the size of the scores
    return kind, n, q, k, lens, cutoff, magnitude, draw(st.integers(0, 2**31 - 1))


@settings(max_examples=60, deadline=None)
@given(masked_case())
def test_masked_keys_never_matter(case):
    kind, n, q, k, lens, cutoff, magnitude, seed = case
    inputs = make_inputs(kind, seed, lens, n=n, q=q, k=k)
    scaled = "wv" if "wv" in inputs else "queries"  # tanh bounds the additive features: scale w_v
    inputs[scaled] = inputs[scaled] * magnitude
    context, weights, cache = run(kind, inputs)
    per_query = np.broadcast_to(lens[:, None] if lens.ndim == 1 else lens, (n, q))
    key_index = np.arange(k)[None, None, :]

    assert np.all(np.isfinite(context)) and np.all(np.isfinite(weights))
    assert np.all(weights[key_index >= per_query[:, :, None]] == 0)
    sums = weights.sum(axis=-1)
    np.testing.assert_allclose(sums[per_query > 0], 1.0, rtol=1e-12)
    assert np.all(sums[per_query == 0] == 0) and np.all(context[per_query == 0] == 0)
    grads = PAIRS[kind][1](np.ones_like(context), cache, np.ones_like(weights))
    assert all(np.all(np.isfinite(g)) for g in grads)

    # Change every key and value at positions >= cutoff[n]: the queries whose valid
    # length is <= cutoff[n] must see exactly the same weights and context.
    rng = np.random.default_rng(seed + 1)
    changed = dict(inputs)
    keys_name = "projected_keys" if kind == "additive_projected" else "keys"
    for name in (keys_name, "values"):
        changed[name] = inputs[name].copy()
        for b in range(n):
            changed[name][b, cutoff[b]:] = 10 * rng.standard_normal(changed[name][b, cutoff[b]:].shape)
    new_context, new_weights, _ = run(kind, changed)
    unaffected = per_query <= cutoff[:, None]
    np.testing.assert_array_equal(new_weights[unaffected], weights[unaffected])
    np.testing.assert_array_equal(new_context[unaffected], context[unaffected])


@pytest.mark.parametrize("kind", list(PAIRS))
@pytest.mark.parametrize("magnitude", [1e2, 1e4])
def test_large_scores_are_stable(kind, magnitude):
    inputs = make_inputs(kind, 12, LENS["per_query"])
    # Scale whatever multiplies into the scores so that they reach ~magnitude^2 (dot, general)
    # or ~magnitude (additive, whose tanh features are bounded).
    for name in ("queries", "keys", "wv"):
        if name in inputs:
            inputs[name] = inputs[name] * magnitude
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # underflow to 0 is fine
        context, weights, cache = run(kind, inputs)
        grads = PAIRS[kind][1](np.ones_like(context), cache, np.ones_like(weights))
    per_query = LENS["per_query"]
    assert np.all(np.isfinite(weights)) and np.all(np.isfinite(context))
    assert all(np.all(np.isfinite(g)) for g in grads)
    np.testing.assert_allclose(weights.sum(-1)[per_query > 0], 1.0, rtol=1e-12)
    assert np.all(weights.sum(-1)[per_query == 0] == 0)


def test_pooling_large_scores_match_shifted_softmax():
    rng = np.random.default_rng(13)
    scores = 1e4 * rng.standard_normal((N, Q, K))
    weights = attention_pooling_forward(scores, _normal(rng, N, K, DV))[1]
    e = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(weights, e / e.sum(-1, keepdims=True), rtol=1e-12, atol=1e-300)


# ------------------------------------------------------ module behaviour
def functional_twin(kind, module, inputs):
    """The functional call a module makes, with the module's parameters."""
    base = {name: inputs[name] for name in ("queries", "keys", "values")}
    if kind == "general":
        base["W"] = module.W.data
    if kind == "additive":
        base.update(Wq=module.W_q.W.data, Wk=module.W_k.W.data, wv=module.w_v.data)
    base["valid_lens"] = inputs["valid_lens"]
    return base


@pytest.mark.parametrize("kind", MODULE_KINDS)
def test_multiple_calls_backward_in_lifo_order(kind):
    module = make_module(kind)
    calls = [module_inputs(kind, seed, LENS[name]) for seed, name in zip((20, 21, 22), LENS)]
    contexts = [module(**inputs) for inputs in calls]
    assert module.num_pending == 3
    np.testing.assert_array_equal(module.attention_weights, run(kind, functional_twin(kind, module, calls[-1]))[1])
    rng = np.random.default_rng(23)
    for i in reversed(range(3)):
        dcontext = rng.standard_normal(contexts[i].shape)
        expected = PAIRS[kind][1](dcontext, run(kind, functional_twin(kind, module, calls[i]))[2])
        got = module.backward(dcontext)
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(e, g)
    with pytest.raises(RuntimeError, match="more often than"):
        module.backward(np.zeros_like(contexts[0]))


@pytest.mark.parametrize("kind", MODULE_KINDS)
def test_parameter_grads_accumulate_over_calls(kind):
    module = make_module(kind)
    calls = [module_inputs(kind, seed, LENS["per_query"]) for seed in (30, 31)]
    dcontext = np.ones((N, Q, DV))
    expected = {name: 0 for name, _ in module.named_parameters()}
    for inputs in calls:
        module.zero_grad()
        module(**inputs)
        module.backward(dcontext)
        for name, p in module.named_parameters():
            expected[name] = expected[name] + p.grad.copy()
    module.zero_grad()
    for inputs in calls:
        module(**inputs)
    for _ in calls:
        module.backward(dcontext)
    for name, p in module.named_parameters():
        np.testing.assert_allclose(p.grad, expected[name], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", MODULE_KINDS)
def test_no_grad_stores_nothing_but_keeps_weights(kind):
    module = make_module(kind)
    with no_grad():
        module(**module_inputs(kind, 40, LENS["per_example"]))
    assert module.num_pending == 0
    assert module.attention_weights.shape == (N, Q, K)


@pytest.mark.parametrize("kind", ["dot", "scaled_dot", "additive"])
def test_dropout_identity_in_eval_mode(kind):
    inputs = module_inputs(kind, 41, LENS["per_query"])
    plain = make_module(kind, dropout=0.0)
    dropping = make_module(kind, dropout=0.5).eval()
    np.testing.assert_array_equal(dropping(**inputs), plain(**inputs))
    np.testing.assert_array_equal(dropping.attention_weights, plain.attention_weights)
    dcontext = np.ones((N, Q, DV))
    for a, b in zip(dropping.backward(dcontext), plain.backward(dcontext)):
        np.testing.assert_array_equal(a, b)


def test_dropout_in_training_uses_the_modules_rng():
    inputs = module_inputs("scaled_dot", 42, None)
    module = DotProductAttention(dropout=0.5, rng=43)
    context = module(**inputs)
    expected, weights, _ = dot_attention_forward(*inputs.values(), dropout=0.5, rng=np.random.default_rng(43))
    np.testing.assert_array_equal(context, expected)
    np.testing.assert_array_equal(module.attention_weights, weights)  # the weights before dropout
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)
    assert not np.allclose(context, weights @ inputs["values"])


def test_additive_protocol_errors():
    attn = AdditiveAttention(DK, DQ, H, rng=0, dtype=np.float64)
    inputs = module_inputs("additive", 44, None)
    projected = attn.project_keys(inputs["keys"])
    with pytest.raises(RuntimeError, match="backward_keys"):
        attn.backward(np.zeros((N, Q, DV)))
    attn.forward_projected(inputs["queries"], projected, inputs["values"])
    with pytest.raises(RuntimeError, match="call backward for every step first"):
        attn.backward_keys(np.zeros_like(projected))
    _, dprojected, _ = attn.backward(np.ones((N, Q, DV)))
    with pytest.raises(ValueError, match="dprojected_keys: expected shape"):
        attn.backward_keys(dprojected[:, :1])
    with pytest.raises(RuntimeError, match="more often than"):
        attn.backward_keys(dprojected)


# ------------------------------------------------------------- dtypes
@pytest.mark.parametrize("kind", list(PAIRS))
def test_functional_preserves_float32(kind):
    inputs = make_inputs(kind, 50, LENS["per_query"], dtype=np.float32)
    context, weights, cache = run(kind, inputs, dropout=0.3, rng=np.random.default_rng(0))
    grads = PAIRS[kind][1](np.ones_like(context), cache, np.ones_like(weights))
    assert context.dtype == weights.dtype == np.float32
    assert all(g.dtype == np.float32 for g in grads)


@pytest.mark.parametrize("kind", MODULE_KINDS)
def test_module_preserves_float32(kind):
    module = make_module(kind, dtype=np.float32, dropout=0.0)
    context = module(**module_inputs(kind, 51, LENS["per_example"], dtype=np.float32))
    grads = module.backward(np.ones_like(context))
    assert context.dtype == module.attention_weights.dtype == np.float32
    assert all(g.dtype == np.float32 for g in grads)
    assert all(p.data.dtype == p.grad.dtype == np.float32 for p in module.parameters())


# ---------------------------------------------------------- validation
def _bad(kind, **changes):
    inputs = make_inputs(kind, 60)
    inputs.update(changes)
    return inputs


F32 = np.float32


@pytest.mark.parametrize("kind, inputs, error, match", [
    ("scaled_dot", _bad("scaled_dot", queries=np.zeros((N, DK))), ValueError,
     r"queries: expected a 3-d array"),
    ("scaled_dot", _bad("scaled_dot", keys=np.zeros((N + 1, K, DK))), ValueError,
     r"keys: expected batch size 2"),
    ("scaled_dot", _bad("scaled_dot", values=np.zeros((N, K + 1, DV))), ValueError,
     r"values: expected shape \(2, 4, \*\)"),
    ("scaled_dot", _bad("scaled_dot", keys=np.zeros((N, K, DK + 1))), ValueError,
     r"keys: expected feature size 5"),
    ("scaled_dot", _bad("scaled_dot", values=np.zeros((N, K, DV), F32)), TypeError,
     r"values: expected dtype float64"),
    ("scaled_dot", _bad("scaled_dot", keys=np.zeros((N, K, DK), int)), TypeError,
     r"keys: expected a floating-point"),
    ("scaled_dot", _bad("scaled_dot", valid_lens=np.array([1, 2, 3])), ValueError,
     r"valid_lens: expected shape \(2,\) or \(2, 3\)"),
    ("scaled_dot", _bad("scaled_dot", valid_lens=np.array([1, 5])), IndexError,
     r"valid_lens: expected lengths in \[0, 4\]"),
    ("scaled_dot", _bad("scaled_dot", valid_lens=np.array([1.0, 2.0])), TypeError,
     r"valid_lens: expected an integer"),
    ("general", _bad("general", W=np.zeros((DQ + 1, DK))), ValueError,
     r"queries: expected feature size 4 \(the rows of W\)"),
    ("general", _bad("general", W=np.zeros((DQ, DK + 1))), ValueError,
     r"keys: expected feature size 6 \(the columns of W\)"),
    ("additive", _bad("additive", Wk=np.zeros((DK, H + 1))), ValueError,
     r"Wk: expected 4 columns"),
    ("additive", _bad("additive", Wk=np.zeros((DK + 1, H))), ValueError,
     r"keys: expected feature size 6 \(the rows of Wk\)"),
    ("additive", _bad("additive", wv=np.zeros(H + 1)), ValueError,
     r"wv: expected shape \(4,\)"),
    ("additive", _bad("additive", Wq=np.zeros((DQ, H), F32)), TypeError,
     r"Wq: expected dtype float64 \(the dtype of queries\)"),
    ("additive_projected", _bad("additive_projected", projected_keys=np.zeros((N, K, H + 1))), ValueError,
     r"projected_keys: expected feature size 4"),
    ("scaled_dot", _bad("scaled_dot", keys=np.zeros((N, 0, DK)), values=np.zeros((N, 0, DV))), ValueError,
     r"keys: expected at least one key \(K >= 1\)"),
    ("additive", _bad("additive", keys=np.zeros((N, 0, DK)), values=np.zeros((N, 0, DV))), ValueError,
     r"keys: expected at least one key \(K >= 1\)"),
])
def test_functional_input_errors(kind, inputs, error, match):
    with pytest.raises(error, match=match):
        run(kind, inputs)


def test_dropout_needs_rng_and_a_probability():
    inputs = make_inputs("scaled_dot", 61)
    with pytest.raises(ValueError, match="rng: expected a random Generator"):
        run("scaled_dot", inputs, dropout=0.5)
    with pytest.raises(ValueError, match=r"dropout: expected a drop probability in \[0, 1\)"):
        run("scaled_dot", inputs, dropout=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="dropout: expected"):
        DotProductAttention(dropout=-0.1)
    with pytest.raises(ValueError, match="dropout: expected"):
        AdditiveAttention(DK, DQ, H, dropout=1.5)


def test_module_input_errors():
    attn = AdditiveAttention(DK, DQ, H, rng=0, dtype=np.float64)
    inputs = module_inputs("additive", 62, None)
    with pytest.raises(TypeError, match=r"queries: expected dtype float64 \(the dtype of AdditiveAttention's"):
        attn(inputs["queries"].astype(np.float32), inputs["keys"], inputs["values"])
    with pytest.raises(ValueError, match=r"queries: expected feature size 3"):
        attn(np.zeros((N, Q, DQ + 1)), inputs["keys"], inputs["values"])
    with pytest.raises(ValueError, match=r"keys: expected shape \(\*, \*, 5\)"):
        attn.project_keys(np.zeros((N, K, DK + 1)))
    attn(**inputs)
    with pytest.raises(ValueError, match=r"dcontext: expected shape \(2, 3, 2\)"):
        attn.backward(np.zeros((N, Q, DV + 1)))
    general = GeneralAttention(DQ, DK, rng=0)  # float32 by default
    with pytest.raises(TypeError, match=r"queries: expected dtype float32"):
        general(*[v for v in module_inputs("general", 63, None).values()])
