"""Is a learner's function a copy of a text they could copy? npseq's source, the tutorials, the key, a classmate.

Every text a learner could copy from is indexed once per process (:func:`copyable`): each
function of npseq's own source where the maths lives (``functional``, ``nn``, ``models``,
``decode``, the course's references; a tutorial that prints one says so in its label), each
function a tutorial defines, and each solution of the key (``npseq exercises --solutions``).
:func:`closest_copy` holds a learner's exercise function against all of them with the
measure of :mod:`npseq.course.similarity` and returns the closest as a :class:`CopyCheck`;
:func:`similar_pairs` holds a class's submissions against each other. Reading a file here
only parses it: nothing of the learner's runs.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import glob
import os
import sys

from .. import tutorials as tutorial_files
from ..language import _
from .sheet import EXERCISE_BY_NAME, EXERCISES, NAMES
from .similarity import SIZE_FLOOR, Code, code_of, compare, hint_formulas, is_copy, too_short

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SOURCE_FOLDERS = ("functional", "nn", "models", "course/references", "decode.py", "train.py")
"""Where in npseq's source a learner finds backward passes to copy (relative to the package)."""

KEY = "the solutions key (npseq exercises --solutions)"

SHOWN_PAIRS = 6
"""The most stretches of shared lines a report shows side by side for one match."""

SHOWN_WIDTH = 60
"""Characters of a line shown in each column of the side-by-side view."""


@dataclasses.dataclass(frozen=True)
class SharedLines:
    """A stretch of code two texts share: the learner's lines and the other's, numbered as in each file."""
    yours: tuple        # (first, last) line in the learner's file
    theirs: tuple       # (first, last) line in the other text's file
    your_text: str
    their_text: str
    your_place: str = ""  # where the learner's lines are, as they see their file ("cell 3, line 2"); "" for "line n"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class CopyCheck:
    """What the measure says of one learner's function: the closest text and how much of the function it holds."""
    source: str           # the closest text's label; "" when nothing shares a fingerprint
    score: float          # share of the function's own tokens found in it, in [0, 1]
    own: int              # the function's own tokens (the hand-out's formulas aside)
    copied: bool          # above both the size floor and the threshold (similarity.is_copy)
    lines: tuple = ()     # SharedLines, at most SHOWN_PAIRS

    @property
    def too_short(self) -> bool:
        return too_short(self.own)

    def summary(self) -> str:
        """One line: ``92% of its code is in tutorial 03 ...`` or ``too short to compare (31 tokens of its own)``."""
        if self.too_short:
            return _("too short to compare ({own} tokens of its own, under {floor})").format(own=self.own,
                                                                                            floor=SIZE_FLOOR)
        if not self.source:
            return _("shares no code with any text it could be copied from")
        return _("{score:.0%} of its code is in {source}").format(score=self.score, source=self.source)

    def side_by_side(self, indent: str = "      ", names: tuple = ("yours", "theirs")) -> list:
        """The shared stretches as two columns, the learner's on the left; ``names`` head the two columns."""
        out = []
        for shared in self.lines:
            left, right = shared.your_text.splitlines(), shared.their_text.splitlines()
            place = shared.your_place or _("line {lines}").format(lines=_span(shared.yours))
            yours = f"{names[0]}, {place}"
            theirs = _("line {lines}").format(lines=_span(shared.theirs))
            out.append(f"{indent}{yours:<{SHOWN_WIDTH}} | {names[1]}, {theirs}")
            for number in range(max(len(left), len(right))):
                mine = left[number] if number < len(left) else ""
                other = right[number] if number < len(right) else ""
                out.append(f"{indent}{_cut(mine):<{SHOWN_WIDTH}} | {_cut(other)}")
        return out

    def to_dict(self) -> dict:
        return {"source": self.source, "score": round(self.score, 4), "own_tokens": self.own, "copied": self.copied,
                "too_short": self.too_short, "lines": [shared.to_dict() for shared in self.lines]}

    @classmethod
    def from_dict(cls, data: dict) -> CopyCheck:
        return cls(data["source"], data["score"], data["own_tokens"], data["copied"],
                   tuple(SharedLines(tuple(s["yours"]), tuple(s["theirs"]), s["your_text"], s["their_text"],
                                     s.get("your_place", "")) for s in data["lines"]))


def _span(lines: tuple) -> str:
    return str(lines[0]) if lines[0] == lines[1] else f"{lines[0]}-{lines[1]}"


def _cut(line: str) -> str:
    line = line.rstrip().expandtabs(4)
    return line if len(line) <= SHOWN_WIDTH else line[:SHOWN_WIDTH - 3] + "..."


# ------------------------------------------------------------------ the texts a learner could copy
def _functions(module: ast.Module):
    """Every function of a module with its qualified name: module-level ones and methods of module-level classes."""
    for node in module.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef):
                    yield f"{node.name}.{inner.name}", inner


def _printed_by_tutorials() -> dict:
    """``qualified name -> "tutorial NN"`` for every function a tutorial prints with ``code(...)`` (its first)."""
    printed = {}
    for path in sorted(glob.glob(os.path.join(tutorial_files.tutorials_dir(), "[0-9][0-9]_*.py"))):
        number = os.path.basename(path)[:2]
        tree = ast.parse(_read(path))
        loops = {node.target.id: node.iter for node in ast.walk(tree)
                 if isinstance(node, ast.For) and isinstance(node.target, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "code" \
                    and node.args:
                argument = node.args[0]
                shown = loops.get(argument.id, argument) if isinstance(argument, ast.Name) else argument
                for item in shown.elts if isinstance(shown, (ast.Tuple, ast.List)) else [shown]:
                    text = ast.unparse(item)
                    printed.setdefault(text, f"tutorial {number}")
                    module_alias = isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name) and (
                        len(item.value.id) <= 2 or item.value.id.islower())  # S.concat_scores_backward, not a method
                    if module_alias:
                        printed.setdefault(item.attr, f"tutorial {number}")
    return printed


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _npseq_sources() -> list:
    paths = []
    for entry in SOURCE_FOLDERS:
        where = os.path.join(PACKAGE, entry)
        paths += [where] if where.endswith(".py") else sorted(glob.glob(os.path.join(where, "*.py")))
    printed = _printed_by_tutorials()
    codes = []
    for path in paths:
        source = _read(path)
        module = ast.parse(source)
        dotted = "npseq." + os.path.relpath(path, PACKAGE)[:-3].replace(os.sep, ".").removesuffix(".__init__")
        for name, node in _functions(module):
            shown = printed.get(name)
            label = f"{dotted}.{name}" + (f" (what {shown} prints)" if shown else " (npseq's source)")
            codes.append(code_of(node, module, source, label))
    return codes


def _tutorial_sources() -> list:
    codes = []
    for path in sorted(glob.glob(os.path.join(tutorial_files.tutorials_dir(), "*.py"))):
        source = _read(path)
        module = ast.parse(source)
        number = os.path.basename(path)[:2]
        where = f"tutorial {number}" if number.isdigit() else f"the tutorials' {os.path.basename(path)}"
        codes += [code_of(node, module, source, f"{where}: {name}") for name, node in _functions(module)]
    return codes


def _key_sources() -> list:
    codes = []
    for path in sorted({os.path.abspath(_module_file(exercise.solution)) for exercise in EXERCISES}):
        source = _read(path)
        module = ast.parse(source)
        for name, node in _functions(module):
            if name in NAMES:
                codes.append(code_of(node, module, source, f"{KEY}: {name}", not_helpers=frozenset(NAMES)))
    return codes


def _module_file(function) -> str:
    return sys.modules[function.__module__].__file__


@functools.lru_cache(maxsize=1)
def copyable() -> tuple:
    """Every text a learner could copy, as :class:`~npseq.course.similarity.Code`, and an index ``hash -> [i]``."""
    codes = tuple(_key_sources() + _npseq_sources() + _tutorial_sources())
    index = {}
    for number, code in enumerate(codes):
        for fingerprint in code.prints:
            index.setdefault(fingerprint, []).append(number)
    return codes, index


@functools.lru_cache(maxsize=None)
def _hints(name: str) -> frozenset:
    return hint_formulas(EXERCISE_BY_NAME[name].docstring)


# ------------------------------------------------------------------ a learner's function against them
def learner_code(source: str, name: str, label: str = "yours"):
    """The :class:`~npseq.course.similarity.Code` of the learner's function ``name`` in ``source`` (the file's text),
    with the hand-out's formulas of that exercise marked; ``None`` when the file does not parse or lacks it."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    node = next((node for node in reversed(module.body) if isinstance(node, ast.FunctionDef) and node.name == name),
                None)
    if node is None:
        return None
    return code_of(node, module, source, label, hints=_hints(name), not_helpers=frozenset(NAMES))


def check(mine: Code, theirs: Code, place=None) -> CopyCheck:
    """:func:`~npseq.course.similarity.compare` as a :class:`CopyCheck`, with the shared lines' texts; ``place`` names
    a line of the learner's file as they see it (a notebook's ``cell 3, line 2``)."""
    similarity = compare(mine, theirs)
    return CopyCheck(theirs.label, similarity.score, similarity.own, is_copy(similarity),
                     tuple(_shared(mine, theirs, pair, place) for pair in similarity.pairs[:SHOWN_PAIRS]))


def _shared(mine: Code, theirs: Code, pair, place) -> SharedLines:
    def lines(code: Code, span: tuple) -> str:
        text = code.text.splitlines()
        return "\n".join(text[span[0] - code.first_line:span[1] - code.first_line + 1])
    where = f"{place(pair.yours[0])} to {place(pair.yours[1])}" if place else ""
    return SharedLines(pair.yours, pair.theirs, lines(mine, pair.yours), lines(theirs, pair.theirs), where)


def closest_copy(source: str, name: str, place=None) -> CopyCheck | None:
    """The text the learner's function ``name`` (in the file's ``source``) is most like, of all :func:`copyable`;
    ``None`` when the file does not define it. ``place``: as for :func:`check`."""
    mine = learner_code(source, name)
    if mine is None:
        return None
    codes, index = copyable()
    candidates = sorted({number for fingerprint in mine.prints for number in index.get(fingerprint, ())})
    best = CopyCheck("", 0.0, mine.own, False)
    for number in candidates:
        found = check(mine, codes[number], place)
        if found.score > best.score:
            best = found
    return best


# ------------------------------------------------------------------ a class against itself
@dataclasses.dataclass(frozen=True)
class SimilarPair:
    """Two students' functions for one exercise, one largely the other's: the check of the first against the second."""
    exercise: str
    first: str          # a student's name
    second: str
    check: CopyCheck    # the first's function held against the second's (the direction with the higher score)

    def to_dict(self) -> dict:
        return {"exercise": self.exercise, "students": [self.first, self.second], **self.check.to_dict()}


def similar_pairs(sources: dict, exercises) -> list:
    """Every pair of students whose functions for one of ``exercises`` are copies of each other (either way).

    Args:
        sources: ``student -> the text of their file`` (a notebook's code cells joined, as the grader reads it).
        exercises: the names to compare.

    Returns:
        :class:`SimilarPair` records, by exercise in ``exercises``' order, then by score, highest first.
    """
    pairs = []
    for name in exercises:
        codes = {student: learner_code(text, name, label=f"{student}'s {name}") for student, text in sources.items()}
        codes = {student: code for student, code in codes.items() if code is not None}
        index = {}
        for student, code in codes.items():
            for fingerprint in code.prints:
                index.setdefault(fingerprint, set()).add(student)
        found = []
        students = sorted(codes)
        for first in students:
            near = {other for fingerprint in codes[first].prints for other in index[fingerprint] if other > first}
            for second in sorted(near):
                checks = [check(codes[first], codes[second]), check(codes[second], codes[first])]
                best = max(checks, key=lambda c: (c.copied, c.score))
                if best.copied:
                    one, other = (first, second) if best is checks[0] else (second, first)
                    found.append(SimilarPair(name, one, other, best))
        pairs += sorted(found, key=lambda pair: -pair.check.score)
    return pairs

