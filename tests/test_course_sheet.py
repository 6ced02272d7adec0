"""One declaration per exercise: the skeleton, the READMEs, the solutions and the grader's table follow from it."""
import ast
import importlib
import pathlib

from npseq import functional as F
from npseq.course import sheet
from npseq.course.exercise import exercise_table
from npseq.course.handout import chosen_exercises, markdown_table, readme, skeleton, solutions
from npseq.course.similarity import hint_formulas

ROOT = pathlib.Path(__file__).resolve().parents[1]
SET_MODULES = [importlib.import_module(f"npseq.course.sets.{name}") for name in sheet.SET_NAMES]
EXERCISE_FOLDER = ROOT / "tutorials" / "exercises"


def test_the_shipped_skeleton_is_what_the_sheet_writes():
    # tutorials/exercises/backprop_exercises.py is generated: `npseq exercises --out tutorials/exercises --force`
    assert (EXERCISE_FOLDER / "backprop_exercises.py").read_text() == skeleton(chosen_exercises())


def test_the_instructors_tables_are_the_sets():
    text = (EXERCISE_FOLDER / "README.md").read_text()
    for name in sheet.SET_NAMES:
        assert f"## The {name} set\n\n" + markdown_table(chosen_exercises(sets=[name])) + "\n" in text, name


def test_the_grader_table_is_the_sets_functions_in_order():
    declared = []
    for module in SET_MODULES:
        declared += [node.name for node in ast.parse(pathlib.Path(module.__file__).read_text()).body
                     if isinstance(node, ast.FunctionDef) and node.decorator_list]
    assert list(sheet.NAMES) == declared
    assert [exercise.name for exercise in sheet.EXERCISES] == [e.name for es in sheet.SETS.values() for e in es]
    for exercise in sheet.EXERCISES:
        # graded against a public backward of npseq, or a reference the course keeps of its own
        assert exercise.engine.__module__.startswith(("npseq.functional", "npseq.course.references"))
        forwards = importlib.import_module(exercise.forwards_module)
        assert all(callable(getattr(forwards, name)) for name in exercise.forwards)
        assert exercise.signature.startswith(exercise.name + "(")
        assert len(exercise.cases) >= 1 and all(len(case.wrt) + case.returns_loss == len(exercise.grads)
                                                for case in exercise.cases)


def test_what_an_exercise_builds_on_is_read_off_its_solution():
    assert {e.name: set(e.builds_on) for e in sheet.EXERCISES if e.builds_on} == {
        "additive_attention_backward": {"masked_softmax_backward"},
        "rnn_backward": {"rnn_step_backward"},
        "lstm_backward": {"lstm_step_backward"},
        "bahdanau_decoder_step_backward": {"gru_step_backward", "additive_attention_backward"},
        "local_p_attention_backward": {"masked_softmax_backward", "general_scores_backward"},
        "masked_dot_attention_backward": {"masked_softmax_backward"},
        "scaled_dot_product_attention_backward": {"masked_softmax_backward"},
        "multihead_attention_backward": {"scaled_dot_product_attention_backward"},
        "residual_norm_backward": {"layer_norm_backward", "feed_forward_backward"},
        "gru_backward": {"gru_step_backward"},
        "translator_step_backward": {"bahdanau_decoder_step_backward", "temporal_softmax_loss",
                                     "word_embedding_backward", "temporal_affine_backward", "gru_backward"},
        "nadaraya_watson_backward": {"masked_softmax_backward"},
        "stacked_rnn_backward": {"rnn_step_backward"},
        "bidirectional_rnn_backward": {"rnn_backward"},
    }


def test_every_part_of_the_handout_comes_from_the_declaration():
    exercises = chosen_exercises()
    text, key, notes = skeleton(exercises), solutions(exercises), readme(exercises)
    for exercise in exercises:
        first_line = exercise.docstring.splitlines()[0]
        assert f"def {exercise.signature}:" in text and f"def {exercise.signature}:" in key
        assert first_line in text and first_line in notes and f"`{exercise.signature}`" in notes
        assert exercise.summary in text and exercise.practises in notes
    assert "raise NotImplementedError" not in key and "@declare" not in key + text


def test_a_new_declaration_is_a_new_exercise():
    from npseq.course.exercise import declare

    def helper(x):
        return x

    @declare(title="T", summary="s", practises="p", grads=("dx",), engine=F.relu_backward, cases=(),
             forwards=("relu_forward",))
    def relu_backward(dout, cache):
        """Backward of ReLU."""
        return helper(dout * (cache.x > 0))

    @declare(title="U", summary="s", practises="p", grads=("dx",), engine=F.relu_backward, cases=(), forwards=())
    def twice_backward(dout, cache):
        """Calls the first."""
        return relu_backward(dout, cache) * 2

    table = exercise_table({"__name__": __name__, "helper": helper, "relu_backward": relu_backward,
                            "twice_backward": twice_backward})
    assert [e.name for e in table] == ["relu_backward", "twice_backward"]
    assert table[0].signature == "relu_backward(dout, cache)" and table[1].builds_on == ("relu_backward",)


def test_every_exercise_gives_its_structure_before_its_equations_and_no_equation_in_it():
    for exercise in sheet.EXERCISES:
        lines = exercise.docstring.splitlines()
        assert lines.count("Structure:") == lines.count("Hints:") == 1, exercise.name
        start, end = lines.index("Structure:"), lines.index("Hints:")
        structure = [line for line in lines[start + 1:end] if line.strip()]
        assert start < end and 3 <= len(structure) <= 8, exercise.name
        assert all(line.startswith("    ") and "=" not in line for line in structure), exercise.name
        assert not hint_formulas("\n".join(structure)) and hint_formulas("\n".join(lines[end:])), exercise.name
