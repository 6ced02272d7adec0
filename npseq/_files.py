"""Whether a file is one npseq wrote, unchanged: the test of every writer that never loses a user's work."""
from __future__ import annotations

import os


def holds_text(path: str, text: str) -> bool:
    """Whether ``path`` is a regular file (not a link) holding exactly ``text`` (UTF-8); ``False`` when it cannot
    be read."""
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read() == text
    except (OSError, UnicodeDecodeError):
        return False
