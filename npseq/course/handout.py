"""The hand-out, written from the sheet: the skeleton (a ``.py`` or a notebook), its README, and a solved copy.

Everything here follows from the declarations of the sets (:mod:`npseq.course.sets`): each
exercise's section is its solved function with the body replaced by ``raise
NotImplementedError`` (:func:`skeleton_source`), the README's section is its docstring,
the list at the top of the skeleton is the exercises' summaries, and the hand-out
imports the forwards they name. A hand-out holds one or several sets
(:func:`chosen_exercises`), or a subset, which brings along what it builds on
(:func:`with_prerequisites`).

No work is lost: a file of the hand-out that already exists with other content (a
skeleton a learner has filled in) is never replaced unless ``force`` is given, and no
other file in the folder is touched (:func:`write_files`).
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import textwrap

from .._files import holds_text
from ..language import _, columns, current, speaking
from .exercise import Exercise, solution_source
from .files import write_atomically
from .grader import DEFAULT_TIMEOUT
from .hints import DEFAULT_HINTS, SECTION_OF_LEVEL, at_level, check_level
from .mistakes import MISTAKES, mistakes_of
from .notebook import NotebookExercise, handout_notebook, notebook_text
from .sheet import (
    DEFAULT_SETS,
    EXERCISE_BY_NAME,
    EXERCISES,
    NAMES,
    SET_NAMES,
    SETS,
    graded_names,
    names_of_sets,
    with_prerequisites,
)

SKELETON_NAME = "backprop_exercises.py"
NOTEBOOK_NAME = "backprop_exercises.ipynb"
SOLUTIONS_NAME = "backprop_solutions.py"

_COUNTS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
           "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")

INTRO = """\
Backpropagation by hand: {count} backward passes of sequence models.

Replace each ``raise NotImplementedError`` by your code, and grade the file as often
as you like:

    npseq grade {skeleton}{arguments}       # or: python -m npseq.grade {skeleton}{arguments}
    npseq grade {skeleton} --only {first}

(running the file itself, ``python {skeleton}``, grades it too). If this is
the copy in npseq's repository, work in a copy of it (``my_backprop.py``, say) and
grade that.

The forward passes are npseq's own, imported below, so every cache you receive has
npseq's layout; each exercise lists the fields you may use. The grader runs the
forward on fixed float64 inputs, calls your backward on the cache, and compares
each gradient you return with finite differences of the forward and with npseq's
own backward. Keep the signatures and the order of the returned gradients.

Notation in the equations: ``*`` multiplies elementwise (with NumPy broadcasting),
``@`` is a matrix product, ``A^T`` a transpose, ``sum_n`` a sum over the batch
axis. Shapes: N batch, T time steps, D input features, H hidden units, V vocabulary;
attention: Q queries, K keys, Dq/Dk/Dv query/key/value features, h the scoring MLP's
hidden size; the decoder step: E embedding, S source steps, H_enc encoder features;
multi-head attention: h heads, T_q/T_k query/key steps, D projected features,
d = D/h per head.
Gradient names mirror the forward's arguments: ``dWx`` is dLoss/dWx, and so on.
The gradient of an array always has that array's shape.
"""

_DOCSTRING_HEADERS = ("Args:", "Returns:", *SECTION_OF_LEVEL.values())
"""The header lines of an exercise's docstring: they stay as they are (the hint levels are found by them), and each
starts a new unit of translation."""


def _numpy_import() -> str:
    return "import numpy as np  # noqa: F401 " + _("(you will need it)") + "\n"


def docstring_units(docstring: str) -> list:
    """The units of translation of an exercise's docstring (as :func:`inspect.getdoc` gives it): its paragraphs
    (blank-line separated) and the bodies of its sections, split at ``Args:``, ``Returns:``, ``Structure:`` and
    ``Hints:``, each dedented."""
    return [unit for kind, unit, _indent in _docstring_pieces(docstring.splitlines()) if kind == "unit"]


def _docstring_pieces(lines: list) -> list:
    """``lines`` (dedented) as ``("unit", text, indent)`` (a unit dedented, and the indentation it had) and
    ``("keep", line, "")`` pieces, in order."""
    pieces, block = [], []
    for line in lines + [None]:
        if line is None or not line.strip() or line.strip() in _DOCSTRING_HEADERS and not line.startswith(" "):
            if block:
                indent = min(len(line) - len(line.lstrip(" ")) for line in block)
                pieces.append(("unit", "\n".join(line[indent:] for line in block), " " * indent))
                block = []
            if line is not None:
                pieces.append(("keep", line, ""))
        else:
            block.append(line)
    return pieces


def translate_docstring(docstring: str) -> str:
    """``docstring`` (dedented, as :func:`inspect.getdoc` gives it) in the current language, unit by unit
    (:func:`docstring_units`); the headers and the blank lines stay as they are."""
    if current() == "en":
        return docstring
    return "\n".join(textwrap.indent(_(text), indent) if kind == "unit" else text
                     for kind, text, indent in _docstring_pieces(docstring.splitlines()))


def _translated_source(source: str, indent: str = "    ") -> str:
    """A function's ``source`` with its docstring in the current language (:func:`translate_docstring`)."""
    if current() == "en":
        return source
    node = ast.parse(source).body[0].body[0]
    lines = source.splitlines(keepends=True)
    first, last = node.lineno - 1, node.end_lineno - 1
    opening = lines[first].index('"""') + 3
    closing = lines[last]
    if lines[last].strip() != '"""':
        raise ValueError(f"expected the docstring's closing quotes on a line of their own, got {closing!r}")
    inner = [lines[first][opening:].rstrip("\n")] + [line.rstrip("\n")[len(indent):] if line.strip() else ""
                                                     for line in lines[first + 1:last]]
    translated = translate_docstring("\n".join(inner)).split("\n")
    body = [lines[first][:opening] + translated[0] + "\n"] + [f"{indent}{line}\n" if line else "\n"
                                                             for line in translated[1:]]
    return "".join(lines[:first] + body + lines[last:])


def texts_to_translate() -> list:
    """The hand-out's texts that are data rather than ``_("...")`` calls, for the catalogs
    (``python tools/catalogs.py course``): the intro's paragraphs, the numbers in words, the exercises' titles,
    summaries, what each practises, their placeholders and their docstrings' units (:func:`docstring_units`), the
    mistakes' titles and lessons, and the README's hint sentences."""
    texts = INTRO.rstrip("\n").split("\n\n") + list(_COUNTS[1:])
    for exercise in EXERCISES:
        texts += [exercise.title, exercise.summary, exercise.practises]
        texts += [exercise.placeholder] if exercise.placeholder else []
        texts += docstring_units(exercise.docstring)
    for mistake in MISTAKES:
        texts += [mistake.title, mistake.lesson]
    texts += list(_HINTS_SENTENCE.values())
    return list(dict.fromkeys(text for text in texts if text.strip()))


class HandoutError(Exception):
    """The hand-out cannot be written (an unknown name, a file it would replace, a folder it cannot write); one line."""


def chosen_exercises(only=None, sets=None) -> list:
    """The exercises of a hand-out, numbered from 1 in the order of the sheet: those of ``only`` with what they build
    on (``sets``, given too, must hold them), else every exercise of ``sets``, with what they build on (neither: the
    default sets, :data:`~npseq.course.sheet.DEFAULT_SETS`): what ``npseq grade`` grades with the same options
    (:func:`~npseq.course.sheet.graded_names`).

    The autograder numbers its tests the same way (exercise 3, case 2 is test ``3.2``).

    Raises:
        HandoutError: ``only`` names something that is not an exercise, or one that ``sets`` lack; ``sets``
            something that is not a set.
    """
    unknown = [name for name in (only or ()) if name not in NAMES]
    if unknown:
        raise HandoutError(f"--only: expected names from {list(NAMES)}, got {unknown}")
    unknown = [name for name in (sets or ()) if name not in SETS]
    if unknown:
        raise HandoutError(f"--set: expected names from {list(SET_NAMES)}, got {unknown}")
    try:
        names = graded_names(only, sets or (() if only else DEFAULT_SETS))
    except ValueError as exc:
        raise HandoutError(f"--{exc}") from None
    return [dataclasses.replace(EXERCISE_BY_NAME[name], number=number) for number, name in enumerate(names, 1)]


def number_of(exercise: Exercise) -> int:
    """The exercise's number in its hand-out (from 1), as :func:`chosen_exercises` gave it."""
    return exercise.number


def numbered(exercises: list) -> list:
    """``exercises`` as a hand-out lists them: as they are if :func:`chosen_exercises` numbered them, else numbered
    in the order given."""
    if all(exercise.number for exercise in exercises):
        return list(exercises)
    return [dataclasses.replace(exercise, number=position) for position, exercise in enumerate(exercises, 1)]


def grade_arguments(exercises: list, seed: int = 0) -> list:
    """The words that make ``npseq grade`` grade exactly ``exercises`` (``--set`` for whole sets, ``--only`` for a
    subset) with the numbers of the hand-out's ``seed`` (no ``--seed`` for the sheet's own, 0)."""
    names = [exercise.name for exercise in exercises]
    whole = [name for name, members in SETS.items() if members and all(e.name in names for e in members)]
    if whole and names_of_sets(whole) == names:
        chosen = [word for name in whole for word in ("--set", name)]
    else:
        chosen = [word for name in names for word in ("--only", name)]
    return chosen + (["--seed", str(seed)] if seed else [])


def grade_command(file_name: str, exercises: list, seed: int = 0) -> str:
    return " ".join(["npseq grade", file_name] + grade_arguments(exercises, seed))


def skeleton_source(exercise: Exercise, hints: str = DEFAULT_HINTS) -> str:
    """The exercise as the learner gets it: its signature and docstring with the hints of level ``hints``
    (:data:`~npseq.course.hints.HINT_LEVELS`), the body ``raise NotImplementedError``."""
    source = solution_source(exercise.solution)
    docstring_end = ast.parse(source).body[0].body[0].end_lineno
    head = _translated_source(at_level("".join(source.splitlines(keepends=True)[:docstring_end]), hints))
    default = 'raise NotImplementedError("' + _("{name}: the equations are in the docstring").format(
        name=exercise.name) + '")'
    placeholder = _(exercise.placeholder) if exercise.placeholder else default
    return head + "".join(f"    {line}\n" for line in placeholder.splitlines())


def _uses(exercise: Exercise, exercises: list) -> str:
    """`` (uses exercises 3 and 5)``: the numbers of the hand-out's exercises its solution builds on, or ``""``."""
    numbers = {other.name: other.number for other in exercises}
    uses = [str(number) for number in sorted(numbers[name] for name in exercise.builds_on if name in numbers)]
    if not uses:
        return ""
    if len(uses) == 1:
        return _(" (uses exercise {number})").format(number=uses[0])
    listed = _("{numbers} and {last}").format(numbers=_(", ").join(uses[:-1]), last=uses[-1])
    return _(" (uses exercises {numbers})").format(numbers=listed)


def _summary_list(exercises: list) -> str:
    width = max(len(exercise.name) for exercise in exercises) + 8
    return "\n".join(f"{f'{number_of(exercise)}. ``{exercise.name}``':<{width}} {_(exercise.summary)}"
                     f"{_uses(exercise, exercises)}" for exercise in exercises)


def markdown_table(exercises: list) -> str:
    """The exercises as a Markdown table: number, signature, graded gradients, what each practises."""
    exercises = numbered(exercises)
    rows = [_("| # | function | graded gradients | what it practises |"), "| --- | --- | --- | --- |"]
    rows += [f"| {number_of(e)} | `{e.signature}` | `{', '.join(e.grads)}` | {_(e.practises)}{_uses(e, exercises)} |"
             for e in exercises]
    return "\n".join(rows)


def _docstring(exercises: list, seed: int = 0) -> str:
    count = _(_COUNTS[len(exercises)]) if len(exercises) < len(_COUNTS) else str(len(exercises))
    arguments = "".join(f" {word}" for word in grade_arguments(exercises, seed))
    intro = "\n\n".join(_(paragraph) for paragraph in INTRO.rstrip("\n").split("\n\n")) + "\n"
    return ('"""' + intro.format(count=count, first=exercises[0].name, arguments=arguments, skeleton=SKELETON_NAME)
            + "\n" + _("Exercises, roughly easiest first:") + "\n\n"
            + _summary_list(exercises)
            + "\n\n" + _("An exercise may call your own earlier functions (they are in this file).") + "\n"
            + '"""\n')


def forwards_import(exercises: list) -> str:
    """``from npseq.functional import (...)``: the forwards the exercises' caches come from, module by module."""
    by_module = {}
    for exercise in exercises:
        by_module.setdefault(exercise.forwards_module, set()).update(exercise.forwards)
    lines = []
    for module, names in by_module.items():
        if names:
            listed = "".join(f"    {name},\n" for name in sorted(names))
            lines.append(f"from {module} import (  # noqa: F401 "
                         + _("(the forwards, to experiment with: their caches are your inputs)") + "\n" + listed
                         + ")\n")
    return "".join(lines)


def _section_comment(exercise: Exercise) -> str:
    title = f" {number_of(exercise)}. {_(exercise.title)}"
    return "# " + "-" * (90 - columns(title)) + title + "\n"


def _main_block(file_name: str, exercises: list, seed: int = 0) -> str:
    arguments = ", ".join(repr(word) for word in grade_arguments(exercises, seed))
    return ('if __name__ == "__main__":\n    import sys\n\n    from npseq.grade import main\n\n'
            f"    sys.exit(main([__file__{', ' + arguments if arguments else ''}] + sys.argv[1:]))\n")


def skeleton(exercises: list, hints: str = DEFAULT_HINTS, seed: int = 0) -> str:
    """The text of ``backprop_exercises.py`` for ``exercises``."""
    exercises = numbered(exercises)
    imports = _numpy_import() + "\n" + forwards_import(exercises)
    sections = [_section_comment(exercise) + skeleton_source(exercise, hints) for exercise in exercises]
    parts = [_docstring(exercises, seed) + imports] + sections + [_main_block(SKELETON_NAME, exercises, seed)]
    return "\n\n\n".join(part.rstrip("\n") for part in parts) + "\n"


def _helpers_of(exercises: list) -> list:
    """The sets' own helper functions that the chosen solutions call (``_split`` for multi-head attention)."""
    called = set().union(*(ast_names(solution_source(exercise.solution)) for exercise in exercises))
    modules = dict.fromkeys(inspect.getmodule(exercise.solution) for exercise in exercises)
    helpers = {}
    for module in modules:
        for name, value in vars(module).items():
            if name.startswith("_") and callable(value) and getattr(value, "__module__", None) == module.__name__ \
                    and name in called:
                helpers.setdefault(name, value)
    return list(helpers.values())


def ast_names(source: str) -> set:
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}


def solutions(exercises: list) -> str:
    """A solved copy of the hand-out: every chosen exercise's solution, in plain NumPy (for the instructor's key)."""
    helpers = [inspect.getsource(helper) for helper in _helpers_of(exercises)]
    bodies = helpers + [solution_source(exercise.solution) for exercise in exercises]
    return ('"""Solutions of the backpropagation exercises: the instructor\'s key, not for learners."""\n'
            "import numpy as np\n\n\n" + "\n\n".join(body.rstrip("\n") + "\n" for body in bodies))


_HINTS_SENTENCE = {
    "none": ".",
    "structure": " and says which way the gradients flow, under `Structure:` (the equations are yours to derive).",
    "equations": " and says which way the gradients flow (`Structure:`) and what the backward equations are "
                 "(`Hints:`).",
}


def readme(exercises: list, hints: str = DEFAULT_HINTS, seed: int = 0) -> str:
    """The hand-out's README: how to grade, what the score means, and each exercise's docstring.

    The same for a ``.py`` and a notebook hand-out, so that both can be written into one folder.
    """
    exercises = numbered(exercises)
    parts = _(", the layer or the direction where a mistake enters") if any(e.parts for e in exercises) else ""
    lines = ["# " + _("Backpropagation exercises"), "",
             _("Write the backward passes in `{skeleton}` (or in the notebook `{notebook}`, if that is your "
               "hand-out): replace each `raise NotImplementedError` by your code, keeping the names, the signatures "
               "and the order of the returned gradients. The forward passes are npseq's own (the file imports them), "
               "so every cache has npseq's layout; each docstring lists the fields you may use").format(
                 skeleton=SKELETON_NAME, notebook=NOTEBOOK_NAME) + _(_HINTS_SENTENCE[hints]),
             "", _("You need npseq installed, as your course says: `pip install` the npseq wheel it hands out, or "
                   "`pip install -e .` in npseq's repository."), "",
             "## " + _("Grading"), "",
             *([_("Your cases are numbered {seed}: the same shapes as everyone's, numbers of your own (the commands "
                  "below carry the number).").format(seed=seed), ""] if seed else []), "```",
             grade_command(SKELETON_NAME, exercises, seed),
             f"python {SKELETON_NAME}              # " + _("the same"),
             grade_command(NOTEBOOK_NAME, exercises, seed),
             "# " + _("a notebook hand-out: the command above, or the notebook's last cell once it is saved"),
             "```", "",
             _("The grader runs npseq's forward on fixed float64 inputs in a few cases (edge cases included: N=1, "
               "T=1, a row of all padding, repeated ids), calls your function on the cache and checks each gradient "
               "against finite differences and against npseq's own backward. A wrong tensor is located: its worst "
               "element, the gate and unit of a gate weight, the first wrong time step of a sequence "
               "gradient{parts}. Each function is worth one point, shared by its (case, tensor) pairs. Each "
               "function runs in its own process with a time limit ({timeout} s, `--timeout`). Exit code 0 when all "
               "is correct, 1 otherwise, 2 when the file cannot be loaded.").format(
                 parts=parts, timeout=f"{DEFAULT_TIMEOUT:g}"), "",
             _("Using npseq's own backward functions is reported to the instructor."), "",
             _("For an autograder: `--format json` prints one JSON object; `--format gradescope --results "
               "/autograder/results/results.json` writes Gradescope's results."), "",
             "## " + _("The exercises"), "", markdown_table(exercises), ""]
    for exercise in exercises:
        docstring = ast.get_docstring(ast.parse(skeleton_source(exercise, hints)).body[0])
        lines += [f"### {number_of(exercise)}. `{exercise.signature}`", "", "```text", docstring, "```", ""]
    return "\n".join(lines + _reading_a_failing_check(exercises, hints))


def _reading_a_failing_check(exercises: list, hints: str) -> list:
    """The README's last section: the classic mistakes in these exercises and what the grader says of each; with
    hints below ``equations``, without the lessons (they name the terms), and with none, left out."""
    planted = mistakes_of(exercises)
    if not planted or hints == "none":
        return []
    lines = ["## " + _("Reading a failing check"), "",
             _("Classic mistakes in these exercises, and what the grader says of each, word for word (every tensor "
               "it names is wrong; gates and first wrong time steps point at the line to fix):"), ""]
    for mistake in planted:
        lesson = _(": {lesson}").format(lesson=_(mistake.lesson)) if hints == "equations" else ""
        lines += [f"**{_(mistake.title)}** (`{mistake.exercise}`){lesson}", "", "```text",
                  *mistake.diagnoses, "```", ""]
    return lines


def notebook(exercises: list, hints: str = DEFAULT_HINTS, seed: int = 0) -> str:
    """The text of ``backprop_exercises.ipynb``: equations as Markdown, a code cell per function, a grading cell."""
    exercises = numbered(exercises)
    sections = []
    for exercise in exercises:
        source = skeleton_source(exercise, hints)
        docstring = ast.get_docstring(ast.parse(source).body[0])
        code = _without_docstring(source, exercise)
        heading = f"{number_of(exercise)}. {_(exercise.title)}: `{exercise.name}`"
        summary = _("{summary}.").format(summary=_(exercise.summary))
        sections.append(NotebookExercise(heading, f"{summary}\n\n```text\n{docstring}\n```", code))
    arguments = ", ".join(repr(word) for word in [NOTEBOOK_NAME] + grade_arguments(exercises, seed))
    grading = ('if __name__ == "__main__":  # '
               + _("runs here; the grader reads this notebook without running this cell") + "\n"
               "    from npseq.grade import main\n\n"
               f"    exit_code = main([{arguments}])")
    intro = _("Write the backward passes below: replace each `raise NotImplementedError` by your code, keeping "
              "the names, the signatures and the order of the returned gradients. The forward passes are npseq's "
              "own (the first cell imports them), so every cache has npseq's layout. The notation is NumPy's: `*` "
              "multiplies elementwise, `@` is a matrix product, `A^T` a transpose, `sum_n` a sum over the batch.")
    grading_intro = "## " + _("Grading") + "\n\n" + _(
        "Save the notebook, then run the cell below: it grades `{notebook}` as `{command}` does in a "
        "terminal.").format(notebook=NOTEBOOK_NAME, command=grade_command(NOTEBOOK_NAME, exercises, seed))
    setup = (_numpy_import() + "\n" + forwards_import(exercises)).rstrip("\n")
    return notebook_text(handout_notebook(_("Backpropagation exercises"), intro, setup, sections, grading_intro,
                                          grading))


def _without_docstring(source: str, exercise: Exercise) -> str:
    """The skeleton's code for a notebook cell: the ``def`` line, a one-line docstring, the ``raise``."""
    node = ast.parse(source).body[0]
    lines = source.splitlines(keepends=True)
    header = "".join(lines[:node.body[0].lineno - 1])
    first_line = ast.get_docstring(node).splitlines()[0]
    return (header + f'    """{first_line}' + _(" (the equations are in the cell above)") + '"""\n'
            + "".join(lines[node.body[0].end_lineno:])).rstrip("\n")


@dataclasses.dataclass(frozen=True)
class Written:
    """What :func:`write_files` did."""
    written: tuple    # paths written (new, or replaced with force)
    unchanged: tuple  # paths that already held exactly this text


def write_files(out: str, files: dict, force: bool = False, *, private: bool = False, flag: str = "--out") -> Written:
    """Write ``files`` (name -> text) into the folder ``out`` without losing anyone's work.

    A file that exists with other content is refused unless ``force`` (all are checked before
    any is written, so a refusal writes nothing); one with the same content is left alone; a
    link is never written through (the new file replaces the link itself, and only with
    ``force``). Each file is written to a temporary file beside it and moved into place, so a
    full disk leaves the old file whole. Nothing else in ``out`` is touched. The files are
    readable by everyone, or by their owner only when ``private`` (the instructor's key); a
    private file with the same content that others can read is written again, private. ``flag`` names the
    folder in the errors (``--out``, or ``--solutions`` for the key).

    Returns:
        :class:`Written`: the paths written and the paths left unchanged.

    Raises:
        HandoutError: a file would be replaced, or ``out`` cannot be written (one line).
    """
    targets = {os.path.join(out, name): text for name, text in files.items()}
    refused, unchanged = [], []
    for path, text in targets.items():
        if not os.path.lexists(path):
            continue
        if not holds_text(path, text):  # a link, a folder, a learner's edits
            refused.append(path)
        elif not (private and os.stat(path).st_mode & 0o077):
            unchanged.append(path)
    if refused and not force:
        raise HandoutError(f"{flag}: {', '.join(refused)} already exist{'s' if len(refused) == 1 else ''} with "
                           "other content (edited, or written for other exercises?); write into another "
                           f"{flag} folder, or add --force to replace {'it' if len(refused) == 1 else 'them'}")
    written = []
    try:
        os.makedirs(out, exist_ok=True)
        for path, text in targets.items():
            if path in unchanged:
                continue
            write_atomically(path, text, private=private)
            written.append(path)
    except OSError as exc:
        raise HandoutError(f"{flag}: cannot write to {out!r} ({exc.strerror})") from None
    return Written(tuple(written), tuple(unchanged))


def handout_files(only=None, hints: str = DEFAULT_HINTS, as_notebook: bool = False, seed: int = 0, sets=None,
                  lang: str = "en") -> dict:
    """The files of a hand-out, name -> text: the skeleton (``.py`` or ``.ipynb``) and its README, in ``lang``
    (:data:`~npseq.language.LANGUAGES`: the prose in it, the code, the equations and the names as they are).

    Raises:
        HandoutError: as :func:`chosen_exercises`, or ``hints`` is not a level.
    """
    try:
        check_level(hints)
    except ValueError as exc:
        raise HandoutError(f"--{exc}") from None
    exercises = chosen_exercises(only, sets)
    with speaking(lang):
        if as_notebook:
            return {NOTEBOOK_NAME: notebook(exercises, hints, seed), "README.md": readme(exercises, hints, seed)}
        return {SKELETON_NAME: skeleton(exercises, hints, seed), "README.md": readme(exercises, hints, seed)}


def write_handout(out: str, only=None, hints: str = DEFAULT_HINTS, as_notebook: bool = False, force: bool = False,
                  seed: int = 0, sets=None, lang: str = "en") -> Written:
    """Write the hand-out into ``out``: the skeleton with the chosen exercises and a README with their equations.

    Args:
        out: the folder (made if missing).
        only: ``None`` for every exercise of ``sets``, or names from :data:`~npseq.course.sheet.NAMES`; the
            exercises they build on come too.
        hints: how much of the derivation each exercise's text gives (:data:`~npseq.course.hints.HINT_LEVELS`):
            ``"none"`` (the forward equations, the cache fields and the shapes only), ``"structure"`` (and which
            way the gradients flow), ``"equations"`` (and the backward equations).
        as_notebook: write ``backprop_exercises.ipynb`` instead of ``backprop_exercises.py``.
        force: replace files of the hand-out that hold other content.
        seed: the numbers of the learner's cases (:func:`~npseq.course.cases.student_seed` of a name, say):
            the hand-out's grading commands carry it, so the learner is graded on cases of their own.
        sets: names of exercise sets (:data:`~npseq.course.sheet.SET_NAMES`); default the classic set.
        lang: the language of its prose, ``"en"`` or ``"zh"`` (:data:`~npseq.language.LANGUAGES`).

    Raises:
        HandoutError: ``only`` names no exercise, ``sets`` no set, a file would be replaced, or ``out`` cannot be
            written.
    """
    return write_files(out, handout_files(only, hints, as_notebook, seed, sets, lang), force)


def write_solutions(out: str, only=None, force: bool = False, sets=None) -> Written:
    """Write the solved copy, ``backprop_solutions.py``, into ``out`` (for the instructor and the tests).

    The key is readable by its owner only: a course folder is often shared with the students.

    Returns:
        :class:`Written`: the key's path, as written or as left unchanged.
    """
    return write_files(out, {SOLUTIONS_NAME: solutions(chosen_exercises(only, sets))}, force, private=True,
                       flag="--solutions")


__all__ = ["EXERCISES", "HandoutError", "Written", "chosen_exercises", "docstring_units", "handout_files", "skeleton",
           "solutions", "texts_to_translate", "translate_docstring", "with_prerequisites", "write_files",
           "write_handout", "write_solutions"]
