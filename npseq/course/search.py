"""The search for submissions in a folder: bounded, without recursion, and never through a link.

A class's folder and a Gradescope submission are the students' own: a folder 1,500 levels deep
made :func:`os.walk` (recursive in Python 3.11) hit the interpreter's recursion limit and end the
whole class run, and a link let one student's name carry another's file. So the search here walks
with a stack of its own, stops at :data:`MAX_DEPTH` levels and :data:`MAX_ENTRIES` entries, and
follows no link, of a file or of a folder; it reports what it did not search, and every link it
met, for the caller to name.
"""
from __future__ import annotations

import dataclasses
import os

MAX_DEPTH = 32
"""Folder levels searched below the folder given (a course's layout needs a handful)."""

MAX_ENTRIES = 100_000
"""Files and folders looked at in one search: far beyond a class, well short of a folder built to stall it."""


@dataclasses.dataclass
class Search:
    """What :func:`search` found under a folder; every path relative to it."""
    files: list = dataclasses.field(default_factory=list)       # the files with a suffix searched for, sorted
    links: list = dataclasses.field(default_factory=list)       # (link, where it points) for links met, sorted
    too_deep: list = dataclasses.field(default_factory=list)    # folders at MAX_DEPTH whose insides were not searched
    stopped: bool = False                                        # MAX_ENTRIES reached: the rest was not searched


def search(folder: str, suffixes: tuple, skipped: tuple = ()) -> Search:
    """The files under ``folder`` whose names end with one of ``suffixes``, hidden files and folders (a leading
    ``.``) and the folders named in ``skipped`` left out, at most :data:`MAX_DEPTH` levels down; links met (to files
    with those suffixes, or to folders) are listed, never followed."""
    found = Search()
    pending, seen = [("", 0)], 0
    while pending:
        relative, depth = pending.pop()
        try:
            entries = sorted(os.scandir(os.path.join(folder, relative)), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                found.stopped = True
                pending.clear()
                break
            if entry.name.startswith(".") or entry.name in skipped:
                continue
            path = os.path.join(relative, entry.name)
            if entry.is_symlink():
                if entry.name.endswith(suffixes) or os.path.isdir(entry.path):
                    found.links.append((path, os.readlink(entry.path)))
            elif entry.is_dir(follow_symlinks=False):
                if depth + 1 >= MAX_DEPTH:
                    found.too_deep.append(path)
                else:
                    pending.append((path, depth + 1))
            elif entry.name.endswith(suffixes) and entry.is_file(follow_symlinks=False):
                found.files.append(path)
    found.files.sort()
    found.links.sort()
    found.too_deep.sort()
    return found
