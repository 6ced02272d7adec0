r"""Notebooks without Jupyter: a learner's notebook read as one Python source, and a hand-out written as one.

**Reading** (:func:`read_notebook_code`): the grader imports a learner's ``.ipynb`` as it
imports a ``.py``, so it needs the code cells as one Python source, and it must name
places as the learner sees them (``cell 3, line 2``). The code cells are joined in
order, a blank line between two cells. IPython's own lines are not Python, and each
becomes an empty line, so that every other line keeps its place:

* line magics, shell escapes and help: a line whose first non-blank character is
  ``%``, ``!`` or ``?`` (``%matplotlib inline``, ``!pip install tqdm``, ``??obj``);
* an assignment from one (``files = !ls``, ``t = %timeit -o f()``);
* help after a name (``np.zeros?``, ``obj.method??``);
* a whole cell that starts with a cell magic (``%%time``, ``%%bash``): its body is not Python.

Such a line counts only where a statement starts: inside a triple-quoted string,
inside brackets or after a backslash, a line that starts with ``%`` is Python
(``(a\n % b)``) and is kept. An indented IPython line below code, as in
``for i in range(3):`` then ``    %time f(i)``, becomes ``pass`` at its indentation rather
than an empty line, so that a block whose only statement it was still compiles.
Markdown and raw cells are left out. Each skipped line or cell gets one note for the report.

**Writing** (:func:`handout_notebook`, :func:`notebook_text`): the hand-out's notebook
is plain nbformat 4.5 JSON built by hand, so that writing it needs no Jupyter package:
a title, the setup code, a heading and a code cell per exercise, and the grading cell.

Only the standard library is used: the grader runs where npseq's requirements are
installed, and no more.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
from typing import Sequence

MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024
"""The largest notebook read (50 MB): a learner's notebook is far smaller, and a huge file is not read whole."""

NOTE_QUOTE_CHARS = 60
"""A skipped line is quoted in its note up to this many characters (``...`` included), so a note stays one line."""

NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}
"""The metadata of a hand-out notebook: the kernel Jupyter opens it with."""

# A line that starts with one of IPython's escapes: % (magic), ! (shell), ? (help before a name).
_ESCAPED_LINE = re.compile(r"\s*[%!?]")
# names = !cmd or names = %magic, the names as IPython takes them (dotted, comma separated).
_ASSIGNED_FROM_IPYTHON = re.compile(r"\s*[\w.]+(\s*,\s*[\w.]+)*\s*=\s*[%!]")
# obj? or obj.attr?? (a * is IPython's wildcard search): only a name and the question marks.
_HELP_AFTER_NAME = re.compile(r"\s*(?!\d)[\w*]+(\.[\w*]+)*\?\??\s*$")

_QUOTES = ('"""', "'''", '"', "'")
# Outside a string, what changes where a statement stands: a comment, a quote that opens a string, a bracket.
_CODE_EVENT = re.compile("|".join(["#", *map(re.escape, _QUOTES), r"[()\[\]{}]"]))
# Inside a string: an escaped character (a backslash alone at the end of a line escapes the newline),
# or the quote that closes it.
_STRING_EVENT = {quote: re.compile(r"\\.?|" + re.escape(quote)) for quote in _QUOTES}


class NotebookError(Exception):
    """A file that cannot be read as a notebook; the message is one line naming the file and what is wrong."""


@dataclasses.dataclass(frozen=True)
class NotebookCode:
    """A notebook's code cells as one Python source.

    ``source`` is the code cells in order, a blank line between two cells, IPython's own
    lines replaced (see the module's docstring); ``notes`` says what was skipped, one
    line each (``cell 3, line 1: skipped the IPython line %matplotlib inline``);
    ``positions[i]`` is ``(cell, line)``, both from 1, of line ``i + 1`` of ``source``
    (code cells are counted, other cells are not), the last line of the cell before for
    a blank line between cells.
    """
    source: str
    notes: tuple[str, ...]
    positions: tuple[tuple[int, int], ...] = dataclasses.field(repr=False)

    def where(self, line: int) -> str:
        """``"cell C, line L"`` of line ``line`` (from 1, as in a traceback) of :attr:`source`."""
        if not 1 <= line <= len(self.positions):
            raise ValueError(f"line {line} is not in the notebook's code, which has {len(self.positions)} lines")
        cell, cell_line = self.positions[line - 1]
        return f"cell {cell}, line {cell_line}"


@dataclasses.dataclass(frozen=True)
class NotebookExercise:
    """One exercise of a hand-out notebook: ``## heading`` and its Markdown, then ``code``, the function to fill in."""
    heading: str
    markdown: str
    code: str


@dataclasses.dataclass(frozen=True)
class _LexState:
    """Where a cell's code stands at the end of a line, as far as telling where the next statement starts."""
    open_quote: str = ""     # the quote of a string the line leaves open: a triple one, or one continued by "\"
    depth: int = 0           # brackets opened and not yet closed
    continued: bool = False  # the line ends with a backslash outside any string and comment

    @property
    def at_statement_start(self) -> bool:
        return not (self.open_quote or self.depth or self.continued)


def _after_line(line: str, state: _LexState) -> _LexState:
    """The state after ``line`` (without its newline), given the state before it."""
    quote, depth, position, escaped_newline, comment = state.open_quote, state.depth, 0, False, False
    while True:
        if quote:
            event = _STRING_EVENT[quote].search(line, position)
            if event is None:
                break
            position = event.end()
            if event.group().startswith("\\"):
                escaped_newline = event.group() == "\\"
            else:
                quote = ""
            continue
        event = _CODE_EVENT.search(line, position)
        if event is None:
            break
        token, position = event.group(), event.end()
        if token == "#":
            comment = True
            break
        if token in _QUOTES:
            quote, escaped_newline = token, False
        elif token in "([{":
            depth += 1
        else:
            depth = max(depth - 1, 0)  # a stray closing bracket is the compiler's to report
    if len(quote) == 1 and not escaped_newline:
        quote = ""  # an unterminated one-line string: a syntax error the compiler reports, not a string that goes on
    return _LexState(quote, depth, not quote and not comment and line.endswith("\\"))


def _is_ipython_line(line: str) -> bool:
    return bool(_ESCAPED_LINE.match(line) or _ASSIGNED_FROM_IPYTHON.match(line) or _HELP_AFTER_NAME.match(line))


def _quoted(text: str) -> str:
    text = text.strip()
    return text if len(text) <= NOTE_QUOTE_CHARS else text[:NOTE_QUOTE_CHARS - 3] + "..."


def _cell_as_python(cell: int, lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines of code cell ``cell`` with IPython's own lines replaced, and a note for each one replaced."""
    first = next((line for line in lines if line.strip()), "")
    if first.lstrip().startswith("%%"):
        return [""] * len(lines), [f"cell {cell}: skipped the whole cell (cell magic {_quoted(first.split()[0])})"]
    python, notes, state, after_code = [], [], _LexState(), False
    for number, line in enumerate(lines, 1):
        if state.at_statement_start and _is_ipython_line(line):
            indent = line[:len(line) - len(line.lstrip())]
            python.append(indent + "pass" if indent and after_code else "")
            notes.append(f"cell {cell}, line {number}: skipped the IPython line {_quoted(line)}")
            continue
        python.append(line)
        state = _after_line(line, state)
        after_code = after_code or bool(line.strip() and not line.lstrip().startswith("#"))
    return python, notes


def _cell_lines(source: str) -> list[str]:
    """A cell's source as lines: Python's line ends (\\n, \\r\\n, \\r), and a final newline ends the last line."""
    if not source:
        return []
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _load_notebook(path) -> dict:
    """The notebook at ``path`` as JSON, checked to be a dict with a list ``cells``; raises :class:`NotebookError`."""
    name = os.path.basename(os.fspath(path))
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError as exc:
        raise NotebookError(f"cannot read {name}: {exc.strerror or exc}") from None
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise NotebookError(f"{name} is not read: it is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB, "
                            "far more than a notebook of exercises")
    not_a_notebook = f"{name} is not a notebook:"
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise NotebookError(f"{not_a_notebook} not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{not_a_notebook} invalid JSON at line {exc.lineno} ({exc.msg})") from None
    except RecursionError:
        raise NotebookError(f"{not_a_notebook} its JSON is nested too deeply") from None
    if not isinstance(notebook, dict):
        raise NotebookError(f"{not_a_notebook} its JSON is {_json_kind(notebook)}, not an object with a list of cells")
    if not isinstance(notebook.get("cells"), list):
        found = "no" if "cells" not in notebook else f"{_json_kind(notebook['cells'])} as"
        raise NotebookError(f'{not_a_notebook} it has {found} "cells", not a list of cells (nbformat 4)')
    return notebook


def _json_kind(value) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


def read_notebook_code(path: str | os.PathLike) -> NotebookCode:
    """The code cells of the notebook at ``path`` as one Python source, with notes of what was skipped.

    Raises:
        NotebookError: the file cannot be read, is over :data:`MAX_NOTEBOOK_BYTES`, or is not
            an nbformat 4 notebook (not JSON, not an object with a list ``cells``, a cell that is
            not an object, or a code cell whose ``source`` is neither a string nor a list of strings).
    """
    notebook = _load_notebook(path)
    name = os.path.basename(os.fspath(path))
    lines, notes, positions, cell = [], [], [], 0
    for index, entry in enumerate(notebook["cells"]):
        if not isinstance(entry, dict):
            raise NotebookError(f"{name} is not a notebook: cells[{index}] is {_json_kind(entry)}, not a cell")
        if entry.get("cell_type") != "code":
            continue
        cell += 1
        source = entry.get("source", "")
        if isinstance(source, list) and all(isinstance(piece, str) for piece in source):
            source = "".join(source)  # nbformat's lines keep their "\n"
        if not isinstance(source, str):
            raise NotebookError(f"{name} is not a notebook: the source of code cell {cell} is neither a string "
                                "nor a list of strings")
        python, cell_notes = _cell_as_python(cell, _cell_lines(source))
        if not python:
            continue
        if lines:
            lines.append("")
            positions.append(positions[-1])  # the blank line between cells: where the cell before ends
        lines += python
        positions += [(cell, number) for number in range(1, len(python) + 1)]
        notes += cell_notes
    return NotebookCode("\n".join(lines) + "\n" if lines else "", tuple(notes), tuple(positions))


def _source_lines(text: str) -> list[str]:
    """``text`` as nbformat stores a cell's source: lines keeping their ``"\\n"``, the last one without it."""
    return text.rstrip("\n").splitlines(keepends=True)


def handout_notebook(title: str, intro: str, setup_code: str, exercises: Sequence[NotebookExercise],
                     grading_intro: str, grading_code: str) -> dict:
    """The hand-out as an nbformat 4.5 notebook (a JSON-ready dict).

    The cells: ``# title`` and ``intro`` (Markdown); ``setup_code`` (the imports); for each
    exercise ``## heading`` and its Markdown, then its code (the function to fill in);
    ``grading_intro`` (Markdown) and ``grading_code``, the cell that grades the notebook.
    The cells' ids are ``cell-1``, ``cell-2``, ... in order, so that writing the same
    hand-out twice gives the same file. Every dict's keys are in the sorted order Jupyter
    saves them in, so that opening and saving the notebook leaves its text as it was.
    """
    texts = [("markdown", f"# {title}\n\n{intro}"), ("code", setup_code)]
    for exercise in exercises:
        texts += [("markdown", f"## {exercise.heading}\n\n{exercise.markdown}"), ("code", exercise.code)]
    texts += [("markdown", grading_intro), ("code", grading_code)]
    cells = []
    for number, (cell_type, text) in enumerate(texts, 1):
        if cell_type == "code":
            cells.append({"cell_type": "code", "execution_count": None, "id": f"cell-{number}", "metadata": {},
                          "outputs": [], "source": _source_lines(text)})
        else:
            cells.append({"cell_type": "markdown", "id": f"cell-{number}", "metadata": {},
                          "source": _source_lines(text)})
    # A copy: a caller that edits one notebook's metadata changes neither the next notebook nor the default.
    return {"cells": cells, "metadata": copy.deepcopy(NOTEBOOK_METADATA), "nbformat": 4, "nbformat_minor": 5}


def notebook_text(notebook: dict) -> str:
    """The notebook's JSON text as Jupyter writes it (one-space indents, UTF-8 unescaped, a final newline)."""
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
