"""Writing a file of the course whole or not at all, never through a link: the one way the course writes files."""
from __future__ import annotations

import os
import tempfile


def write_atomically(path: str, data: bytes | str, *, private: bool = False) -> None:
    """Write ``data`` to ``path``: a temporary file beside it, then a rename over ``path``.

    A full disk or a crash leaves the old file whole; a link at ``path`` is replaced, never
    written through. The folder is made if missing. The file is readable by everyone
    (``0644``), or by its owner only when ``private`` (a class's grades, the instructor's key).

    Raises:
        OSError: the folder or the file cannot be written.
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=folder, prefix=".npseq-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data.encode("utf-8") if isinstance(data, str) else data)
            os.fchmod(stream.fileno(), 0o600 if private else 0o644)
        os.replace(scratch, path)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
