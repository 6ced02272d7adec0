"""The fast path equals the reference: ``npseq.functional.fast_recurrent`` (what the layers run) against a
loop over the reference steps of ``npseq.functional.recurrent``, within 1e-12 in float64 for
outputs, final states, every gradient and the step norms; then whole stacked and bidirectional
layers against the same loops composed by hand."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from recurrent_cases import KINDS, fast_run, random_problem, reference_run

from npseq.functional import fast_recurrent as seq
from npseq.nn import GRU, LSTM, RNN

TOL = dict(rtol=1e-12, atol=1e-12)


def assert_runs_equal(fast, reference):
    for name in ("out", "h_last", "c_last", "dx", "dh0", "dc0", "norms"):
        got, want = getattr(fast, name), getattr(reference, name)
        if want is None:
            assert got is None, name
        else:
            np.testing.assert_allclose(got, want, **TOL, err_msg=name)
    assert len(fast.dparams) == len(reference.dparams)
    for k, (got, want) in enumerate(zip(fast.dparams, reference.dparams)):
        np.testing.assert_allclose(got, want, **TOL, err_msg=f"dparams[{k}]")


@st.composite
def problems(draw):
    kind, reset_after = draw(st.sampled_from(KINDS))
    N, T = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    D, H = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    padded = draw(st.booleans())
    lens = np.array(draw(st.lists(st.integers(0, T), min_size=N, max_size=N))) if padded else None
    scale = draw(st.sampled_from([1.0, 4.0]))  # 4: saturating gates
    return kind, reset_after, N, T, D, H, lens, scale, draw(st.integers(0, 2**16))


@given(problems())
def test_fast_runners_equal_a_loop_over_the_reference_steps(problem):
    kind, reset_after, N, T, D, H, lens, scale, seed = problem
    x, h0, c0, params = random_problem(kind, N, T, D, H, seed)
    x = scale * x
    rng = np.random.default_rng(seed + 1)
    dh, dh_last, dc_last = rng.standard_normal((N, T, H)), rng.standard_normal((N, H)), rng.standard_normal((N, H))
    c0, dc_last = (c0, dc_last) if kind == "lstm" else (None, None)
    args = (kind, x, h0, c0, params, lens, dh, dh_last, dc_last, reset_after)
    assert_runs_equal(fast_run(*args), reference_run(*args))


@pytest.mark.parametrize("kind,reset_after", KINDS)
def test_every_edge_shape_at_once(kind, reset_after):
    """N=1, T=1, H=1, and a batch whose rows are all padding, one valid token, and full."""
    for N, T, H, lens in ((1, 1, 1, None), (1, 1, 1, np.array([0])), (3, 4, 1, np.array([0, 1, 4])),
                          (2, 3, 2, np.array([0, 0]))):
        x, h0, c0, params = random_problem(kind, N, T, 2, H, seed=N * 10 + T)
        rng = np.random.default_rng(T)
        dh, dh_last, dc_last = rng.standard_normal((N, T, H)), rng.standard_normal((N, H)), rng.standard_normal((N, H))
        c0, dc_last = (c0, dc_last) if kind == "lstm" else (None, None)
        args = (kind, x, h0, c0, params, lens, dh, dh_last, dc_last, reset_after)
        assert_runs_equal(fast_run(*args), reference_run(*args))


def test_padding_is_built_once_with_the_steps_to_run():
    x = np.zeros((3, 6, 2), dtype=np.float32)
    padding = seq.sequence_padding(np.array([4, 0, 2]), 6, x)
    assert padding.steps == 4
    assert padding.mask.shape == (6, 3, 1) and padding.mask.dtype == np.float32
    np.testing.assert_array_equal(padding.mask[:, :, 0].T, [[1, 1, 1, 1, 0, 0], [0] * 6, [1, 1, 0, 0, 0, 0]])
    np.testing.assert_array_equal(padding.padded, padding.mask == 0)
    assert seq.sequence_padding(None, 6, x) is None
    with pytest.raises(IndexError, match="valid_lens: expected lengths in \\[0, 6\\], got 7"):
        seq.sequence_padding(np.array([7, 0, 2]), 6, x)


@pytest.mark.parametrize("kind,reset_after", KINDS)
def test_fast_runners_keep_float32_and_refuse_mixed_dtypes(kind, reset_after):
    x, h0, c0, params = random_problem(kind, 2, 3, 2, 3, seed=4, dtype=np.float32)
    rng = np.random.default_rng(5)
    dh = rng.standard_normal((2, 3, 3)).astype(np.float32)
    run = fast_run(kind, x, h0, c0, params, np.array([3, 1]), dh, reset_after=reset_after)
    for array in (run.out, run.h_last, run.dx, run.dh0, run.norms, *run.dparams):
        assert array.dtype == np.float32
    with pytest.raises(TypeError, match="h0: expected dtype float32 \\(the dtype of x\\), got float64"):
        fast_run(kind, x, h0.astype(np.float64), c0, params, None, dh, reset_after=reset_after)
    narrow = dict(params, Wx=params["Wx"][:, 1:])
    with pytest.raises(ValueError, match="Wx: expected shape \\(2, "):
        fast_run(kind, x, h0, c0, narrow, None, dh, reset_after=reset_after)
    with pytest.raises(ValueError, match="dh: expected shape \\(2, 3, 3\\)"):
        fast_run(kind, x, h0, c0, params, None, dh[:, :2], reset_after=reset_after)


# --------------------------------------------------------------- whole layers
def _reverse_within(a, lens):
    """Each sequence reversed in time within its valid length (its padding stays where it is)."""
    if lens is None:
        return a[:, ::-1]
    out = a.copy()
    for n, length in enumerate(lens):
        out[n, :length] = a[n, :length][::-1]
    return out


def reference_layers(layer, kind, x, state, lens, dout, dstate):
    """A stacked (bidirectional) layer composed by hand from :func:`reference_run`: outputs, final
    states, dx, dstate0 and every parameter's gradient by name."""
    reset_after = getattr(layer, "reset_after", False)
    names = [name for name, _ in layer.named_parameters()]
    params = {name: p.data for name, p in layer.named_parameters()}
    dirs, H = layer.num_directions, layer.hidden_size
    h0, c0 = state if kind == "lstm" else (state, None)
    dh_last, dc_last = dstate if kind == "lstm" else (dstate, None)

    def run(l, d, seq_in, dh):
        suffix = f"_l{l}" + ("_reverse" if d else "")
        own = {name: params[name] for name in names if name.endswith(suffix)}
        k = l * dirs + d
        flip = (lambda a: _reverse_within(a, lens)) if d else (lambda a: a)
        result = reference_run(kind, flip(seq_in), h0[k], None if c0 is None else c0[k], own, lens,
                               flip(dh), dh_last[k], None if dc_last is None else dc_last[k], reset_after)
        return result._replace(out=flip(result.out), dx=flip(result.dx)), suffix

    inputs = [x]
    for l in range(layer.num_layers):  # forward: each layer's input
        zeros = np.zeros(inputs[-1].shape[:2] + (H,))
        inputs.append(np.concatenate([run(l, d, inputs[-1], zeros)[0].out for d in range(dirs)], axis=-1))
    grads, finals, dinitial = {}, {}, {}
    d_above = dout
    for l in reversed(range(layer.num_layers)):
        dx = 0
        for d in range(dirs):
            result, suffix = run(l, d, inputs[l], d_above[..., d * H:(d + 1) * H])
            dx = dx + result.dx
            grads.update(zip([name for name in names if name.endswith(suffix)], result.dparams))
            finals[l * dirs + d] = (result.h_last, result.c_last)
            dinitial[l * dirs + d] = (result.dh0, result.dc0)
        d_above = dx
    order = range(layer.num_layers * dirs)
    stack = lambda part, table: np.stack([table[k][part] for k in order])  # noqa: E731
    final_state = (stack(0, finals), stack(1, finals)) if kind == "lstm" else stack(0, finals)
    dstate0 = (stack(0, dinitial), stack(1, dinitial)) if kind == "lstm" else stack(0, dinitial)
    return inputs[-1], final_state, d_above, dstate0, grads


@given(st.sampled_from(KINDS), st.integers(1, 2), st.booleans(), st.integers(1, 3), st.integers(1, 4),
       st.integers(1, 3), st.booleans(), st.integers(0, 2**16))
def test_stacked_bidirectional_layers_equal_the_reference_loops(kind_variant, num_layers, bidirectional, N, T, H,
                                                                 padded, seed):
    kind, reset_after = kind_variant
    rng = np.random.default_rng(seed)
    D = 2
    layer_class = {"rnn": RNN, "gru": GRU, "lstm": LSTM}[kind]
    extra = {"reset_after": reset_after} if kind == "gru" else {}
    layer = layer_class(D, H, num_layers, bidirectional, rng=seed, dtype="float64", **extra)
    dirs = 2 if bidirectional else 1
    shape = (num_layers * dirs, N, H)
    x = rng.standard_normal((N, T, D))
    lens = rng.integers(0, T + 1, size=N) if padded else None
    parts = 2 if kind == "lstm" else 1
    state = tuple(0.5 * rng.standard_normal(shape) for _ in range(parts))
    dstate = tuple(rng.standard_normal(shape) for _ in range(parts))
    state, dstate = (state, dstate) if kind == "lstm" else (state[0], dstate[0])
    dout = rng.standard_normal((N, T, dirs * H))

    out, final = layer(x, state, valid_lens=lens)
    dx, dstate0 = layer.backward(dout, dstate)
    want_out, want_final, want_dx, want_dstate0, want_grads = reference_layers(
        layer, kind, x, state, lens, dout, dstate)

    np.testing.assert_allclose(out, want_out, **TOL)
    np.testing.assert_allclose(dx, want_dx, **TOL)
    pairs = list(zip(final, want_final)) + list(zip(dstate0, want_dstate0)) if kind == "lstm" else \
        [(final, want_final), (dstate0, want_dstate0)]
    for got, want in pairs:
        np.testing.assert_allclose(got, want, **TOL)
    for name, p in layer.named_parameters():
        np.testing.assert_allclose(p.grad, want_grads[name], **TOL, err_msg=name)
