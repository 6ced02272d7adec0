"""The bug zoo: each classic backprop mistake, planted in the sheet's own solution, gets the diagnosis it should.

The assertion is the diagnosis (the tensor, the gate, the first wrong time step), word for
word as the catalogue says and the hand-out's README shows it, and not only a failing score.
"""
import pytest

from npseq.course import grade_file
from npseq.course.handout import chosen_exercises, readme, solutions
from npseq.course.mistakes import MISTAKES, mistakes_of
from npseq.course.sheet import EXERCISE_BY_NAME, NAMES


@pytest.mark.slow
@pytest.mark.parametrize("mistake", MISTAKES, ids=[mistake.title for mistake in MISTAKES])
def test_each_mistake_is_diagnosed_where_it_is(tmp_path, mistake):
    path = tmp_path / "learner.py"
    path.write_text(mistake.planted_in(solutions(chosen_exercises([mistake.exercise]))))
    report = grade_file(path, only=[mistake.exercise])
    function = report[mistake.exercise]
    assert function.status == "incorrect" and 0 <= function.points < 1
    assert tuple(function.diagnoses()) == mistake.diagnoses
    for helper in EXERCISE_BY_NAME[mistake.exercise].builds_on:  # graded with it, right, and maybe at fault
        assert report[helper].status == "correct"
        assert (f"it calls your {helper}, correct on its own cases; on the numbers {mistake.exercise} hands it, it "
                "may still be at fault" in function.note or f"your {helper} is right on the shapes" in function.note)


def test_the_catalogue_covers_the_classic_mistakes_and_the_readme_shows_them():
    titles = " | ".join(mistake.title for mistake in MISTAKES)
    for words in ("untransposed weight", "not summed over the batch", "mask forgotten", "not carried back",
                  "gates swapped", "sigma' written as sigma", "not summed over the steps", "path back through time",
                  "summed instead", "without the row sum"):
        assert words in titles, words
    assert {mistake.exercise for mistake in MISTAKES} <= set(NAMES)
    text = readme(chosen_exercises())
    assert "## Reading a failing check" in text
    for mistake in mistakes_of(chosen_exercises()):
        assert mistake.title in text and "\n".join(mistake.diagnoses) in text
    for mistake in MISTAKES:  # each in the hand-out of its own exercise, whatever its set
        text = readme(chosen_exercises([mistake.exercise]))
        assert mistake.title in text and "\n".join(mistake.diagnoses) in text
    only_gru = readme(chosen_exercises(["gru_step_backward"]))
    assert "Reading a failing check" not in only_gru and mistakes_of(["gru_step_backward"]) == []


def test_a_mistake_that_no_longer_fits_its_solution_says_so():
    with pytest.raises(ValueError, match="expected once"):
        MISTAKES[0].planted_in("def unrelated(): pass\n")
