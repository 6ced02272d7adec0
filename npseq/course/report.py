"""The grade of a submission as records, and their renderings: text tables, JSON, Gradescope's results.

A :class:`GradeReport` holds one :class:`FunctionGrade` per exercise graded, each with a
:class:`TensorGrade` per (case, returned gradient) and a :class:`CaseProblem` per case in
which the learner's function gave nothing to check. The records are plain data: the
grader (:mod:`npseq.course.grader`) fills them, and nothing here runs a learner's code.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

from ..language import _, columns
from .copies import CopyCheck


@dataclasses.dataclass
class TensorGrade:
    """One returned gradient in one case."""
    case: str
    tensor: str
    shape: tuple           # the expected shape
    fd_error: float        # largest relative error against finite differences (inf when not comparable)
    engine_diff: float     # largest absolute difference from npseq's own backward (inf when not comparable)
    ok: bool
    problem: str = ""      # what is wrong, for a failing tensor
    first_wrong_step: int | None = None  # sequence gradients: see npseq.gradcheck.first_wrong_step
    diagnosis: str = ""    # for a failing tensor, where it is wrong in class-wide words (grader.diagnose)

    def to_dict(self) -> dict:
        return {"case": self.case, "tensor": self.tensor, "shape": list(self.shape), "ok": self.ok,
                "fd_error": _finite_or_none(self.fd_error), "engine_diff": _finite_or_none(self.engine_diff),
                "problem": self.problem, "first_wrong_step": self.first_wrong_step,
                "diagnosis": self.diagnosis}


@dataclasses.dataclass
class CaseProblem:
    """A case in which the learner's function gave no gradients to check."""
    case: str
    kind: str     # "not implemented", "error", or "grader" (its sandbox could not run it: no fault of the file)
    message: str
    computing: str = ""  # what an error interrupted: the gradient or variable being computed (npseq.course.crashes)


POLICIES = ("note", "zero")
"""What a function that uses npseq's own backward (calls it, or is a copy of it) scores: as graded, with a note
(``"note"``, the default), or 0 (``"zero"``)."""

FAILURES = ("time limit", "crashed", "exited", "sys.exit")
"""How a function can fail as a whole (it then scores 0): what :attr:`FunctionGrade.failure` starts with."""


class Scored(NamedTuple):
    """What one exercise earned of what it is worth, in a platform's points (:meth:`GradeReport.table`)."""
    earned: float
    worth: float


@dataclasses.dataclass
class FunctionGrade:
    """The verdict on one exercise function."""
    name: str
    signature: str
    attempted: bool                            # the file defines the name
    rows: list = dataclasses.field(default_factory=list)      # TensorGrade, case by case
    problems: list = dataclasses.field(default_factory=list)  # CaseProblem
    total: int = 0                             # (case, tensor) pairs
    cases: tuple = ()                          # the case labels, in grading order
    note: str = ""
    failure: str = ""                          # one line starting with one of FAILURES: it scored 0 as a whole
    npseq_calls: tuple = ()                    # npseq backward functions its code ran while graded (the watch's)
    evasions: tuple = ()                       # how its code switched the grader's watch off or reached around it
    copied: str = ""                           # the text its code is a copy of (CopyCheck.copied), "" when none
    likeness: CopyCheck | None = None          # the copy check: the closest text a learner could copy, and how close
    penalty: str = ""                          # why the honesty policy "zero" gives it 0 points
    chained: bool = False                      # its tensors are one chain's links, in the order the backward runs
    failure_kind: str = ""                     # which of FAILURES the failure is ("" : read from its first words)

    @property
    def correct(self) -> int:
        return 0 if self.failure else sum(row.ok for row in self.rows)

    @property
    def points(self) -> float:
        """Fraction of this function's (case, tensor) pairs that are correct, in ``[0, 1]`` (0 under a penalty)."""
        return self.correct / self.total if self.total and not self.penalty else 0.0

    @property
    def status(self) -> str:
        """``"not attempted"``, ``"not implemented"``, ``"correct"``, ``"incorrect"``, ``"honesty"`` (zeroed by
        the policy), or one of :data:`FAILURES`."""
        if self.failure:  # the kind is kept apart from the words, which may be a translation
            return self.failure_kind if self.failure_kind in FAILURES else \
                next((kind for kind in FAILURES if self.failure.startswith(kind)), "crashed")
        if self.penalty:
            return "honesty"
        if not self.attempted:
            return "not attempted"
        if self.problems and all(p.kind == "not implemented" for p in self.problems) and not self.rows:
            return "not implemented"
        return "correct" if self.correct == self.total else "incorrect"

    def diagnoses(self) -> list:
        """What is wrong, one entry per distinct mistake over all cases, in words shared by every file.

        A failure as a whole is its status ("time limit"); a case without gradients is its kind
        and exception ("error: ValueError"); a wrong tensor is its diagnosis ("dWx: gate g, every unit").
        """
        if self.failure:
            return [self.status]
        if self.penalty:
            return ["honesty: npseq's own code, zeroed"]
        found = [f"{p.kind}: {p.message.split(':')[0].split(' (')[0]}" + (f" computing {p.computing}" if p.computing
                                                                          else "") if p.kind == "error" else
                 "grader: the sandbox cannot read the Python installation" if p.kind == "grader" else p.kind
                 for p in self.problems]
        found += [row.diagnosis for row in (self.first_broken_links() if self.chained else self.rows) if not row.ok]
        return list(dict.fromkeys(found))

    def first_broken_links(self) -> list:
        """For a chain: in each case, the first wrong tensor in the order the backward runs (the links after it are
        computed from it, so they say nothing of their own)."""
        first = {}
        for row in self.rows:
            if not row.ok:
                first.setdefault(row.case, row)
        return list(first.values())

    def rows_for(self, tensor: str) -> list:
        return [row for row in self.rows if row.tensor == tensor]

    def section(self, scored: Scored | None = None) -> str:
        """The function's table, headed by its points: :attr:`points` of 1, or ``scored``'s (a platform's)."""
        def headline(bare: str, of_worth: str, **fields) -> str:
            """``== ...`` with the points as ``scored`` has them (``0 of 2 points``) or bare (``0 points``)."""
            text = of_worth if scored else bare
            return "== " + text.format(worth=scored.worth if scored else 0, **fields)
        if self.failure:
            return headline(_("{signature}: {failure}, 0 points"), _("{signature}: {failure}, 0 of {worth:g} points"),
                            signature=self.signature, failure=self.failure)
        if self.status == "not attempted":
            return headline(_("{signature}: not attempted (not defined in the file), 0 points"),
                            _("{signature}: not attempted (not defined in the file), 0 of {worth:g} points"),
                            signature=self.signature)
        if self.status == "not implemented":
            messages = dict.fromkeys(p.message for p in self.problems)
            return "\n".join([headline(_("{signature}: not implemented, 0 points"),
                                        _("{signature}: not implemented, 0 of {worth:g} points"),
                                        signature=self.signature)]
                             + [f"   {message}" for message in messages])
        zeroed = f" ({self.penalty})" if self.penalty else ""
        fields = dict(signature=self.signature, correct=self.correct, total=self.total, zeroed=zeroed)
        if scored:
            lines = ["== " + _("{signature}: {correct}/{total} tensors correct, {earned:g} of {worth:g} points{zeroed}")
                     .format(earned=scored.earned, worth=scored.worth, **fields)]
        else:
            lines = ["== " + _("{signature}: {correct}/{total} tensors correct, {points:.2f} points{zeroed}")
                     .format(points=self.points, **fields)]
        if self.note:
            lines.append("   " + _("note: {note}").format(note=self.note))
        if self.likeness and not self.copied:
            lines.append("   " + _("copy check: {summary}").format(summary=self.likeness.summary()))
        broken = self.first_broken_links() if self.chained else []
        if broken:
            lines.append("   " + _("the chain first breaks at {tensor} (case {case}): every link after it is computed "
                                   "from it, so fix that one first").format(tensor=broken[0].tensor,
                                                                           case=case_label(broken[0].case)))
        header = (_("case"), _("tensor"), _("shape"), _("rel err vs FD"), _("abs diff vs npseq"), _("verdict"))
        cells = []
        problems = {p.case: p for p in self.problems}
        for case in ("all cases",) + tuple(self.cases):
            if case in problems:
                p = problems[case]
                cells.append((case_label(case), "-", "-", "-", "-", f"{kind_label(p.kind)}: {p.message}"))
            for row in (r for r in self.rows if r.case == case):
                cells.append((case_label(case), row.tensor, "x".join(map(str, row.shape)) or _("scalar"),
                              _number(row.fd_error), _number(row.engine_diff),
                              _("ok") if row.ok else _("FAIL ({problem})").format(problem=row.problem)))
        widths = [max(columns(str(cell)) for cell in column) for column in zip(header, *cells)]
        lines += ["   " + _aligned(header, widths), "   " + "  ".join("-" * w for w in widths)]
        lines += ["   " + _aligned(cell, widths) for cell in cells]
        return "\n".join(lines)

    @classmethod
    def from_dict(cls, data: dict) -> FunctionGrade:
        """The grade back from :meth:`to_dict`'s JSON (errors not comparable come back as ``inf``)."""
        def number(value):
            return float("inf") if value is None else value
        rows = [TensorGrade(row["case"], row["tensor"], tuple(row["shape"]), number(row["fd_error"]),
                            number(row["engine_diff"]), row["ok"], row["problem"], row["first_wrong_step"],
                            row["diagnosis"]) for row in data["tensors"]]
        return cls(data["name"], data["signature"], attempted=data["status"] != "not attempted", rows=rows,
                   problems=[CaseProblem(**problem) for problem in data["problems"]], total=data["total"],
                   note=data["note"], failure=data["failure"], npseq_calls=tuple(data["npseq_calls"]),
                   evasions=tuple(data.get("evasions", ())), copied=data.get("copied", ""),
                   penalty=data.get("penalty", ""), chained=data.get("chained", False),
                   failure_kind=data["status"] if data["status"] in FAILURES else "",
                   likeness=CopyCheck.from_dict(data["likeness"]) if data.get("likeness") else None)

    def to_dict(self) -> dict:
        return {"name": self.name, "signature": self.signature, "status": self.status,
                "points": self.points, "max_points": 1, "correct": self.correct, "total": self.total,
                "failure": self.failure, "note": self.note, "npseq_calls": list(self.npseq_calls),
                "evasions": list(self.evasions),
                "copied": self.copied, "penalty": self.penalty, "chained": self.chained,
                "likeness": self.likeness.to_dict() if self.likeness else None,
                "problems": [dataclasses.asdict(p) for p in self.problems],
                "tensors": [row.to_dict() for row in self.rows]}


def case_label(case: str) -> str:
    """A case's label as the report shows it: ``"all cases"`` (the grader's word for a problem of every case) in the
    language spoken, a case's own label (its shapes) as it is."""
    return _("all cases") if case == "all cases" else case


def kind_label(kind: str) -> str:
    """What a case without gradients shows before its message (``NOT IMPLEMENTED``, ``ERROR``) in the language
    spoken; the kind itself (:attr:`CaseProblem.kind`) stays the grader's English word."""
    return {"not implemented": _("NOT IMPLEMENTED"), "error": _("ERROR"), "grader": _("GRADER")}.get(kind, kind.upper())


def _aligned(cells, widths) -> str:
    """A table's row: each cell padded to its column's width (in terminal columns), two spaces between."""
    return "  ".join(cell + " " * (w - columns(cell)) for cell, w in zip(map(str, cells), widths)).rstrip()


def _number(value: float) -> str:
    return "-" if value == float("inf") else f"{value:.1e}"


def _finite_or_none(value: float):
    """JSON has no inf or NaN: a value that cannot be compared is ``null``."""
    return value if value == value and abs(value) != float("inf") else None


@dataclasses.dataclass(repr=False)
class GradeReport:
    """The result of :func:`grade_file`; prints as one table per function and a score."""
    path: str
    functions: list  # FunctionGrade, in exercise order
    honesty: list = dataclasses.field(default_factory=list)  # lines of the file that import or name npseq's backward
    seconds: float = 0.0                                       # wall-clock time of the grading
    notes: list = dataclasses.field(default_factory=list)    # what reading the file skipped (a notebook's magics)
    policy: str = "note"                                       # the honesty policy it was graded under (POLICIES)

    @property
    def score(self) -> float:
        """Total points as a percentage of the graded functions (each worth one point)."""
        return 100.0 * sum(f.points for f in self.functions) / len(self.functions) if self.functions else 0.0

    @property
    def points(self) -> float:
        return sum(f.points for f in self.functions)

    @property
    def ok(self) -> bool:
        """True when every graded function is entirely correct (100 %)."""
        return all(f.status == "correct" for f in self.functions)

    @property
    def missing(self) -> list:
        """Names of the exercise functions the file does not define."""
        return [f.name for f in self.functions if not f.attempted]

    @property
    def flagged(self) -> bool:
        """True when the file imports, names or calls npseq's own backward functions, reaches around the watch, or a
        function is a copy."""
        return bool(self.flag_reasons)

    @property
    def flag_reasons(self) -> list:
        """Why the file is flagged, one short line each: ``gru_step_backward: 98% of its code is in ...``."""
        reasons = [f"{f.name}: called {', '.join(f.npseq_calls)}" for f in self.functions if f.npseq_calls]
        reasons += [f"{f.name}: reached around the watch: {', '.join(f.evasions)}" for f in self.functions
                    if f.evasions]
        reasons += [f"{f.name}: {f.likeness.summary()}" for f in self.functions if f.copied and f.likeness]
        return reasons + [f"the file {line.split(': ', 1)[-1]}" for line in self.honesty]

    @property
    def names(self) -> tuple:
        """The exercises graded, in the order of the sheet."""
        return tuple(function.name for function in self.functions)

    def __getitem__(self, name: str) -> FunctionGrade:
        for function in self.functions:
            if function.name == name:
                return function
        raise KeyError(f"name: no function {name!r} in this report; it has {[f.name for f in self.functions]}")

    def honesty_lines(self) -> list:
        if not self.flagged:
            return []
        called = sorted({name for f in self.functions for name in f.npseq_calls})
        verdict = (_("functions that use it score 0 (policy zero)") if self.policy == "zero" else
                   _("the score is unchanged; the instructor decides"))
        lines = [_("honesty note ({verdict}): this file uses npseq's own code").format(verdict=verdict)]
        lines += [f"   {line}" for line in self.honesty]
        if called:
            lines.append("   " + _("called while graded: {names}").format(names=", ".join(called)))
        evasions = sorted({what for f in self.functions for what in f.evasions})
        if evasions:
            lines.append("   " + _("reached around the grader's watch while graded: {what}").format(
                what=", ".join(evasions)))
        for function in self.functions:
            if function.copied and function.likeness:
                lines.append("   " + _("{name}: {summary}; the lines they share:").format(
                    name=function.name, summary=function.likeness.summary()))
                lines += function.likeness.side_by_side(names=(_("yours"), _("theirs")))
        return lines

    def table(self, scored: dict | None = None) -> str:
        """The report as text. Each function is worth one point, unless ``scored`` (``{name: Scored}``, a
        platform's own scoring: points per exercise, a case without gradients at 0) says what each earned of what,
        so that the text and the platform's file give one score."""
        lines = [_("grading {path}").format(path=self.path), ""]
        if self.notes:
            lines += [_("skipped while reading the notebook (not Python):")] + [f"   {note}" for note in self.notes] \
                + [""]
        for function in self.functions:
            lines += [function.section(scored[function.name] if scored else None), ""]
        if self.missing:
            lines.append(_("not attempted (0 points): {names}").format(names=", ".join(self.missing)))
        lines += self.honesty_lines()
        if scored:
            earned, worth = sum(s.earned for s in scored.values()), sum(s.worth for s in scored.values())
            shown = f"{round(earned, 4):g} / {worth:g}"
        else:
            earned, worth = self.points, len(self.functions)
            shown = f"{earned:.2f} / {worth}"
        percent = 100.0 * earned / worth if worth else 0.0
        said = _("score: {shown} point = {percent:.1f}%") if worth == 1 else _("score: {shown} points = {percent:.1f}%")
        lines.append(said.format(shown=shown, percent=percent) + ("  -- " + _("all correct") if self.ok else ""))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """The report as plain JSON data (``--format json``)."""
        return {"file": self.path, "score": self.score, "points": self.points, "max_points": len(self.functions),
                "all_correct": self.ok, "execution_time": round(self.seconds, 3),
                "flagged": self.flagged, "flagged_because": self.flag_reasons, "honesty": self.honesty,
                "policy": self.policy, "notes": self.notes,
                "exercises": [f.to_dict() for f in self.functions]}

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__


