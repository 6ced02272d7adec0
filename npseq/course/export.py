"""Who handed in each folder of a Gradescope export: the names in its ``submission_metadata.yml``.

An instructor's "Export Submissions" zip holds one folder per submission
(``submission_123456/``) and, beside them, ``submission_metadata.yml``, which names the
submitters of each folder:

.. code-block:: yaml

    submission_123456:
      :submitters:
      - :name: Jane Doe
        :sid: '1001'
        :email: jane@uni.example
      :created_at: 2026-11-30 21:14:05.000000000 -08:00
      :history: ...

:func:`export_students` reads that much of it (the folders and their submitters' names,
e-mail addresses and ids) by hand: one file of one shape does not call for a YAML library.
Anything else in the file is skipped; a file it cannot read names nobody, and the class
report then names each student by their folder, as without an export.
"""
from __future__ import annotations

import dataclasses
import os
import re

METADATA_NAME = "submission_metadata.yml"

MAX_METADATA_BYTES = 64 << 20
"""The largest metadata file read (64 MiB: a class of thousands with their histories stays far below)."""

_FOLDER = re.compile(r"^:?([^\s:#][^:#]*):\s*$")            # "submission_123456:" at the left margin
_KEY = re.compile(r"^(\s*)(- )?:(\w+):(?:\s+(.*?))?\s*$")     # "  :submitters:", "  - :name: Jane", "    :sid: '1'"
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "0": "\0"}


@dataclasses.dataclass(frozen=True)
class Submitter:
    """One submitter of a Gradescope submission, as the export names them (a field it lacks is ``""``)."""
    name: str
    email: str = ""
    sid: str = ""


def _scalar(text: str) -> str:
    """A YAML scalar as Ruby's exporter writes them: plain, ``'single'`` (``''`` a quote) or ``"double"`` quoted."""
    text = (text or "").strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        def unescape(match):
            code = match.group(1)
            if code[0] in "xuU":
                return chr(int(code[1:], 16))
            return _ESCAPES.get(code, code)
        return re.sub(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", unescape, text[1:-1])
    return text


def read_metadata(text: str) -> dict:
    """``{folder: (Submitter, ...)}`` from the text of ``submission_metadata.yml``; what it cannot read is skipped."""
    students, folder, submitters, member = {}, None, None, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or line.startswith("---"):
            continue
        top = _FOLDER.match(line)
        if top:
            folder, submitters, member = top.group(1).strip(), None, None
            continue
        key = _KEY.match(line)
        if folder is None or key is None:
            continue
        indent, item, name, value = len(key.group(1)), key.group(2), key.group(3), key.group(4)
        if not item and indent <= 2:  # a key of the submission itself: the submitters' list starts or ends
            submitters = [] if name == "submitters" else None
            if submitters is not None:
                students[folder] = submitters
            member = None
        elif submitters is not None and item:
            member = {name: _scalar(value)}
            submitters.append(member)
        elif member is not None and indent > 2:
            member[name] = _scalar(value)
    return {folder: tuple(Submitter(fields.get("name", ""), fields.get("email", ""), fields.get("sid", ""))
                          for fields in members if fields.get("name") or fields.get("email"))
            for folder, members in students.items()}


def export_students(folder: str) -> dict:
    """``{submission folder: (Submitter, ...)}`` from ``folder``'s ``submission_metadata.yml``, or ``{}`` where
    there is none, it cannot be read, or it is larger than :data:`MAX_METADATA_BYTES`."""
    path = os.path.join(folder, METADATA_NAME)
    try:
        if os.path.islink(path) or os.path.getsize(path) > MAX_METADATA_BYTES:
            return {}
        with open(path, encoding="utf-8", errors="replace") as handle:
            return read_metadata(handle.read())
    except OSError:
        return {}


def display_name(submitters: tuple) -> str:
    """The submitters as the class report names them: their names (or e-mail addresses), joined for a group."""
    return ", ".join(submitter.name or submitter.email for submitter in submitters)


__all__ = ["METADATA_NAME", "Submitter", "display_name", "export_students", "read_metadata"]
