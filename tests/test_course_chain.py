"""The chain set: one training step of an attention translator, its backward graded link by link.

The reference (:mod:`npseq.course.references.chain`) is held to finite differences of the loss with
respect to every intermediate and parameter, and to torch's autograd with ``retain_grad`` on the
intermediates; the declared solution equals it in every case; and a bug planted in one link leaves
every link before it right and makes it, and the links that depend on it, wrong.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npseq.course import handout, sheet
from npseq.course.cases import chain as chain_cases
from npseq.course.exercise import solution_source
from npseq.course.references import chain as reference
from npseq.course.sets import chain as chain_set
from npseq.errors import InvalidValueError
from npseq.gradcheck import gradient_error
from npseq.samples import normal, valid_mask

LINKS = reference.TranslatorStepGrads._fields
STEP = sheet.EXERCISE_BY_NAME["translator_step_backward"]


def _upstream(case, variant=0):
    outputs = case.forward(**case.make_inputs(variant))[:case.outputs]
    rng = np.random.default_rng([case.seed, 7])
    return tuple(normal(rng, *out.shape) for out in outputs)


def _called(fn, case, douts, variant=0):
    *_, cache = case.forward(**case.make_inputs(variant))
    return case.call(fn, tuple(d.copy() for d in douts), cache)


def _agree(mine, engine, tol=1e-9) -> bool:
    return mine.shape == engine.shape and float(np.abs(mine - engine).max(initial=0.0)) <= \
        tol * max(1.0, float(np.abs(engine).max(initial=0.0)))


def _step_inputs(n, s, t, source_lens, target_lens, seed):
    mask = [[1] * length + [0] * (t - length) for length in target_lens]
    build = chain_cases._translator_inputs(n, s, t, (5, 4, 6, 3, 4, 3), source_lens, mask)
    return build(np.random.default_rng(seed))


# ------------------------------------------------------------ the reference, held to finite differences
@pytest.mark.slow
@pytest.mark.parametrize("width", ["widest", "float64"])
@pytest.mark.parametrize("case", STEP.cases, ids=lambda case: case.label)
def test_every_link_of_the_reference_matches_finite_differences(case, width, monkeypatch):
    if width == "float64":  # where NumPy's longdouble is float64 (ARM, Windows), the differences are float64's
        monkeypatch.setattr(chain_cases, "_widest_float", lambda array: array.dtype)
    douts = _upstream(case)
    links = _called(reference.translator_step_backward, case, douts)
    numeric = case.numerical(case.make_inputs(), douts)
    assert tuple(numeric) == LINKS == case.wrt == STEP.grads
    for name, analytic in zip(LINKS, links):
        assert analytic.shape == numeric[name].shape, name
        assert float(gradient_error(analytic, numeric[name]).max()) < 1e-7, name


def test_the_loss_is_the_mean_over_the_batch_of_the_masked_cross_entropy():
    inputs = _step_inputs(2, 3, 3, [3, 1], [3, 2], seed=1)
    loss, cache = reference.translator_step_forward(**inputs)
    scores = cache.scores - cache.scores.max(axis=-1, keepdims=True)
    log_p = scores - np.log(np.exp(scores).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_p, inputs["target_out"][..., None], axis=-1)[..., 0]
    assert loss.shape == () and loss.dtype == np.float64
    assert np.isclose(loss, -(picked * inputs["target_mask"]).sum() / 2, rtol=1e-14)


def test_a_shift_of_zero_changes_nothing_and_a_shift_of_the_scores_moves_the_loss():
    inputs = _step_inputs(1, 2, 2, [2], [2], seed=2)
    loss, _ = reference.translator_step_forward(**inputs)
    zeros = {"states": np.zeros((1, 2, 4)), "encoder_state": np.zeros((1, 4))}
    assert reference.translator_step_forward(**inputs, shifts=zeros)[0] == loss
    shifted = np.zeros((1, 2, 6))
    shifted[0, 1, inputs["target_out"][0, 1]] = 1.0  # a higher score for the right word: a lower loss
    assert reference.translator_step_forward(**inputs, shifts={"scores": shifted})[0] < loss


def test_the_arguments_are_checked_by_name():
    inputs = _step_inputs(1, 2, 2, [2], [2], seed=3)
    with pytest.raises(InvalidValueError, match=r"params: expected the keys"):
        reference.translator_step_forward(**{**inputs, "params": {**inputs["params"], "extra": np.zeros(1)}})
    with pytest.raises(InvalidValueError, match=r"params\['Wx_dec'\]: expected shape \(7, 12\)"):
        reference.translator_step_forward(**{**inputs, "params": {**inputs["params"], "Wx_dec": np.zeros((6, 12))}})
    with pytest.raises(InvalidValueError, match=r"shifts\['states'\]: expected shape \(1, 2, 4\)"):
        reference.translator_step_forward(**inputs, shifts={"states": np.zeros((1, 4))})
    with pytest.raises(InvalidValueError, match="shifts: expected keys from"):
        reference.translator_step_forward(**inputs, shifts={"context": np.zeros((1, 4))})
    _, cache = reference.translator_step_forward(**inputs)
    with pytest.raises(InvalidValueError, match=r"dloss: expected a number or a 0-d array, got shape \(2,\)"):
        reference.translator_step_backward(np.ones(2), cache)


# ------------------------------------------------------------ the reference against torch
def _torch_step(torch, inputs, dloss):
    """The same training step in torch ops, every intermediate kept with ``retain_grad``: its links, as arrays."""
    p = {name: torch.tensor(value, requires_grad=True) for name, value in inputs["params"].items()}
    source, lens = torch.tensor(inputs["source"]), torch.tensor(inputs["source_lens"])
    n, s = source.shape
    hidden = p["Wh_enc"].shape[0]

    def gru_step(x, h, Wx, Wh, bx, bh):  # reset before: the reset gate scales h inside the candidate
        r_, z_, n_ = slice(0, hidden), slice(hidden, 2 * hidden), slice(2 * hidden, 3 * hidden)
        r = torch.sigmoid(x @ Wx[:, r_] + bx[r_] + h @ Wh[:, r_] + bh[r_])
        z = torch.sigmoid(x @ Wx[:, z_] + bx[z_] + h @ Wh[:, z_] + bh[z_])
        candidate = torch.tanh(x @ Wx[:, n_] + bx[n_] + (r * h) @ Wh[:, n_] + bh[n_])
        return (1 - z) * candidate + z * h

    kept = {}

    def keep(name, value):
        value.retain_grad()
        kept[name] = value
        return value

    embedded = keep("source_embedded", p["W_src_embed"][source])
    h, outputs = torch.zeros(n, hidden, dtype=torch.float64), []
    for t in range(s):
        m = (t < lens).to(torch.float64)[:, None]
        h_new = gru_step(embedded[:, t], h, p["Wx_enc"], p["Wh_enc"], p["bx_enc"], p["bh_enc"])
        outputs.append(m * h_new)
        h = m * h_new + (1 - m) * h
    keys = keep("enc_outputs", torch.stack(outputs, dim=1))
    state = keep("encoder_state", h)
    target = keep("target_embedded", p["W_tgt_embed"][torch.tensor(inputs["target_in"])])
    valid = torch.tensor(valid_mask(inputs["source_lens"], s))
    states = []
    for t in range(target.shape[1]):
        scores = torch.tanh((state @ p["Wq"])[:, None, :] + keys @ p["Wk"]) @ p["wv"]
        weights = torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=-1)
        context = (weights[:, :, None] * keys).sum(dim=1)
        state = gru_step(torch.cat([context, target[:, t]], dim=1), state, p["Wx_dec"], p["Wh_dec"], p["bx_dec"],
                         p["bh_dec"])
        state.retain_grad()
        states.append(state)
    scores = keep("scores", torch.stack(states, dim=1) @ p["W_out"] + p["b_out"])
    log_p = torch.log_softmax(scores, dim=-1)
    picked = log_p.gather(-1, torch.tensor(inputs["target_out"])[..., None])[..., 0]
    loss = -(torch.tensor(inputs["target_mask"], dtype=torch.float64) * picked).sum() / n
    (loss * float(dloss)).backward()
    grads = {f"d{name}": value.grad.numpy() for name, value in {**p, **kept}.items()}
    grads["dstates"] = torch.stack([state.grad for state in states], dim=1).numpy()
    return float(loss.detach()), grads


def _assert_matches_torch(torch, inputs, dloss):
    loss, cache = reference.translator_step_forward(**inputs)
    links = reference.translator_step_backward(dloss, cache)
    torch_loss, expected = _torch_step(torch, inputs, dloss)
    assert abs(float(loss) - torch_loss) <= 1e-12 * max(1.0, abs(torch_loss))
    assert set(expected) == set(LINKS)
    for name, value in links._asdict().items():
        assert _agree(value, expected[name], tol=1e-10), name


@pytest.mark.parametrize("case", STEP.cases, ids=lambda case: case.label)
def test_the_reference_matches_torch_autograd_on_every_case(case):
    torch = pytest.importorskip("torch")
    _assert_matches_torch(torch, case.make_inputs(), _upstream(case)[0])


@settings(max_examples=8, deadline=None)
@given(st.data())
def test_the_reference_matches_torch_autograd_on_edge_shapes(data):
    torch = pytest.importorskip("torch")
    n, s, t = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    source_lens = data.draw(st.lists(st.integers(1, s), min_size=n, max_size=n))
    target_lens = data.draw(st.lists(st.integers(0, t), min_size=n, max_size=n))
    inputs = _step_inputs(n, s, t, source_lens, target_lens, seed=data.draw(st.integers(0, 2 ** 16)))
    _assert_matches_torch(torch, inputs, -0.8)


# ------------------------------------------------------------ the declared solutions
def test_the_step_is_a_chain_built_on_the_exercises_before_it():
    assert STEP.chained and not any(exercise.chained for exercise in chain_set.EXERCISES[:-1])
    assert [exercise.name for exercise in chain_set.EXERCISES] == [
        "temporal_affine_backward", "gru_backward", "translator_step_backward"]
    assert set(STEP.builds_on) == {"temporal_softmax_loss", "temporal_affine_backward", "gru_backward",
                                   "bahdanau_decoder_step_backward", "word_embedding_backward"}
    assert STEP.forwards_module == "npseq.course.references.chain"


@settings(max_examples=10, deadline=None)
@given(st.data())
def test_the_declared_step_solution_equals_the_engine_on_edge_shapes(data):
    n, s, t = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    source_lens = data.draw(st.lists(st.integers(0, s), min_size=n, max_size=n))  # 0: attention over nothing
    target_lens = data.draw(st.lists(st.integers(0, t), min_size=n, max_size=n))
    inputs = _step_inputs(n, s, t, source_lens, target_lens, seed=data.draw(st.integers(0, 2 ** 16)))
    _, cache = reference.translator_step_forward(**inputs)
    for name, mine, engine in zip(LINKS, chain_set.translator_step_backward(0.6, cache),
                                  reference.translator_step_backward(0.6, cache)):
        assert _agree(mine, engine), name


# ------------------------------------------------------------ a planted bug breaks its link and what follows
def _solved_with(exercise: str, right: str, wrong: str) -> dict:
    """The solved hand-out of the chain set with ``right`` replaced by ``wrong`` in ``exercise``'s function."""
    names = sheet.names_of_sets(["chain"])
    solved = handout.solutions([sheet.EXERCISE_BY_NAME[name] for name in names])
    source = solution_source(sheet.EXERCISE_BY_NAME[exercise].solution)
    assert source.count(right) == 1 and solved.count(source) == 1
    namespace = {}
    exec(compile(solved.replace(source, source.replace(right, wrong)), "<planted>", "exec"), namespace)
    return namespace


AFTER_DECODER = ("dWq", "dWk", "dwv", "dWx_dec", "dWh_dec", "dbx_dec", "dbh_dec", "dtarget_embedded",
                 "dW_tgt_embed", "dencoder_state", "denc_outputs")
ENCODER = ("dsource_embedded", "dWx_enc", "dWh_enc", "dbx_enc", "dbh_enc", "dW_src_embed")

PLANTED = [
    pytest.param("translator_step_backward", "dscores = dloss * temporal_softmax_loss",
                 "dscores = temporal_softmax_loss", LINKS, id="dloss not applied: every link"),
    pytest.param("translator_step_backward", "= dz_s[:, t] + dprev\n", "= dz_s[:, t]\n",
                 ("dstates",) + AFTER_DECODER + ENCODER, id="the state's gradient not carried from step t+1"),
    pytest.param("bahdanau_decoder_step_backward", "dq[:, 0], dk + dv,", "dq[:, 0], dk,", ("denc_outputs",) + ENCODER,
                 id="the attention's dkeys without its dvalues"),
    pytest.param("gru_backward", "delta = np.zeros_like(cache.h_last) if dh_last is None else dh_last",
                 "delta = np.zeros_like(cache.h_last)", ENCODER, id="the encoder's last state left out"),
]


@pytest.mark.parametrize("exercise, right, wrong, broken", PLANTED)
def test_a_planted_bug_breaks_its_link_and_those_after_it_and_no_link_before(exercise, right, wrong, broken):
    step = _solved_with(exercise, right, wrong)["translator_step_backward"]
    case = STEP.cases[0]
    douts = _upstream(case)
    mine, engine = _called(step, case, douts), _called(reference.translator_step_backward, case, douts)
    wrong_links = tuple(name for name, given_grad, expected in zip(LINKS, mine, engine)
                        if not _agree(given_grad, expected))
    assert wrong_links == broken
    first = LINKS.index(broken[0])
    assert all(LINKS.index(name) >= first for name in wrong_links)  # every link before the first stays right
    if broken[0] == "dstates":  # the last step has nothing after it, so it is right; the one before is not
        given_states, expected_states = mine[LINKS.index("dstates")], engine[LINKS.index("dstates")]
        assert _agree(given_states[:, -1], expected_states[:, -1])
        assert not _agree(given_states[:, -2], expected_states[:, -2])


@pytest.mark.slow
def test_a_crash_in_a_correct_helper_names_the_link_and_the_call_that_broke_it(tmp_path):
    # The target embedding's backward handed the source embedding's cache: word_embedding_backward (graded correct
    # on its own) raises, and the report names the link being computed and the learner's line that made the call.
    from npseq.course import grade_file

    solved = handout.solutions(handout.chosen_exercises(["translator_step_backward"]))
    right = "dW_tgt_embed = word_embedding_backward(dtarget_embedded, cache.target_embedding)  #"
    assert solved.count(right) == 1
    path = tmp_path / "chain.py"
    path.write_text(solved.replace(right, right.replace("cache.target_embedding", "cache.source_embedding")))
    report = grade_file(path, only=["translator_step_backward"])
    assert report["word_embedding_backward"].status == "correct"
    step = report["translator_step_backward"]
    assert step.diagnoses() == ["error: ValueError computing dW_tgt_embed"]
    planted = right.replace("cache.target_embedding", "cache.source_embedding")
    line = next(number for number, text in enumerate(path.read_text().splitlines(), 1) if planted in text)
    for problem in step.problems:
        assert problem.computing == "dW_tgt_embed"
        assert ("; raised in word_embedding_backward (chain.py, line " in problem.message and
                ", called by translator_step_backward to compute dW_tgt_embed: `word_embedding_backward("
                f"dtarget_embedded, cache.source_embedding)` (chain.py, line {line})" in problem.message), \
            problem.message
