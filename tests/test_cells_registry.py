"""A new recurrent cell is its functional pair, its layer and one registry line: here the GRU of Cho et al. (2014)
and d2l, reset before the product with ``W_hn``, registered beside the reset-after GRU the models use, and then
built, trained, gradient-checked and offered on the command line with nothing else added."""
import numpy as np
import pytest

from npseq import functional as F
from npseq.cli import build_parser
from npseq.errors import InvalidTypeError, InvalidValueError
from npseq.gradcheck import check_function, check_module
from npseq.models import RNNLM, CaptioningRNN, build_seq2seq, estimate_rnnlm_memory
from npseq.nn import CELLS, GRU, Cell, make_rnn, make_rnn_parameters, register_cell, unregister_cell

RESET_BEFORE = Cell(GRU, F.gru_forward, F.gru_backward, {"reset_after": False})


@pytest.fixture
def reset_before():
    register_cell("gru_d2l", RESET_BEFORE)
    yield "gru_d2l"
    unregister_cell("gru_d2l")


def test_a_registered_cell_builds_its_variant_with_the_parameters_counted(reset_before):
    layer = make_rnn(reset_before, 3, 5, 2, 0.0, True, 0, "float64")
    assert isinstance(layer, GRU) and layer.reset_after is False
    assert sum(p.data.size for p in layer.parameters()) == make_rnn_parameters(reset_before, 3, 5, 2, True)
    assert estimate_rnnlm_memory(20, 5, 1, reset_before, batch_size=2, num_steps=3).parameters > 0


def test_the_models_train_with_it_and_their_gradients_check(reset_before):
    rng = np.random.default_rng(0)
    lm = RNNLM(11, 4, 2, reset_before, embed_size=3, rng=0, dtype="float64")
    report = check_module(lm, {"X": rng.integers(0, 11, (2, 3))})
    assert report.ok, report
    captioner = CaptioningRNN(5, 7, 4, mode="first_step", cell=reset_before, embed_size=3, rng=1, dtype="float64")
    inputs = {"features": rng.standard_normal((3, 5)), "captions_in": rng.integers(0, 7, (3, 4)),
              "valid_lens": np.array([4, 2, 1])}
    report = check_module(captioner, inputs)
    assert report.ok, report
    model = build_seq2seq(9, 8, cell=reset_before, embed_size=4, num_hiddens=5, num_layers=1, dtype="float64")
    assert model.encoder.rnn.reset_after is False


def test_its_functional_pair_checks_against_finite_differences(reset_before):
    cell, rng = CELLS[reset_before], np.random.default_rng(2)
    width = cell.gates * 4
    inputs = {"x": rng.standard_normal((2, 3, 3)), "h0": rng.standard_normal((2, 4)),
              "Wx": rng.standard_normal((3, width)), "Wh": rng.standard_normal((4, width)),
              **{name: rng.standard_normal(width) for name in cell.bias_names}}
    report = check_function(cell.forward, cell.backward, inputs, kwargs=dict(cell.options))
    assert report.ok, report


@pytest.mark.parametrize("command", ["lm", "train"])
def test_the_commands_offer_it_as_a_cell(reset_before, command):
    args = build_parser([command]).parse_args([command, "--cell", reset_before])
    assert args.cell == reset_before


def test_the_registry_refuses_what_is_not_a_cell_or_a_name_taken():
    with pytest.raises(InvalidValueError, match=r"name: expected a name not yet in CELLS .* got 'gru'"):
        register_cell("gru", RESET_BEFORE)
    with pytest.raises(InvalidTypeError, match="cell: expected a Cell record, got dict"):
        register_cell("mine", {"layer": GRU})
    with pytest.raises(InvalidValueError, match=r"cell: expected one of \('rnn', 'gru', 'lstm'\), got 'gru_d2l'"):
        make_rnn("gru_d2l", 3, 5, 1, 0.0, False, 0, "float64")
