"""The tutorials as Jupyter notebooks: what ``npseq tutorials --notebooks DIR [--only NN ...] [--execute]`` runs.

The tutorials are the percent-format scripts ``tutorials/NN_*.py`` of npseq's
repository, with their helper ``_common.py``. The wheel carries a copy of them as
package data, ``npseq/_tutorials/`` (setup.py's build step makes it from the
repository's folder, the one source). :func:`tutorials_dir` reads the repository's
``tutorials/`` when npseq runs from a checkout (``pip install -e .``, the README's
way, so that edits to a tutorial show at once) and the packaged copy otherwise
(``pip install`` of the wheel or the sdist). Each chosen tutorial is converted with
jupytext into ``DIR/NN_*.ipynb`` (a plain notebook for the python3 kernel, not
paired with its script), and the tutorials' helper module ``_common.py`` is copied
beside them, since every tutorial imports it from its own folder; figures then go
to ``DIR/figures`` (or ``$NPSEQ_FIGURES``). The notebooks need nothing else from
the repository: tutorial 08 looks for its corpus through ``NPSEQ_FRA`` or in DIR.

Existing notebooks are learners' work: the command refuses to replace them unless
``--force`` is given (``_common.py`` is npseq's own and is always refreshed, so
that it matches the notebooks written with it).

``--execute`` then runs each notebook top to bottom in a python3 kernel, with DIR
as the working directory, and saves it with its outputs (figures and rendered
equations included); ``NPSEQ_FAST=1`` in the environment selects fast mode, as for
the scripts. A notebook whose cell raises is saved up to that cell, the error is
named in one line, and the command ends with exit code 1.

Writing needs jupytext and executing nbclient and ipykernel: the ``notebooks``
extra (``pip install -e ".[notebooks]"`` in a checkout; :data:`INSTALL_HINT` names
them for an installed wheel), which also installs JupyterLab to open them. They
are imported only here, so that npseq itself does not depend on them.
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from typing import NamedTuple, Optional

from ._files import holds_text
from .errors import UserError

HELPER = "_common.py"
PACKAGED = "_tutorials"  # the wheel's copy of the tutorials, npseq/_tutorials (setup.py writes it)
TUTORIAL_NAME = re.compile(r"^(?P<number>\d\d)_\w+\.py$")
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


class NotebooksError(UserError):
    """The notebooks cannot be written or run (no tutorials, an unknown name, a missing extra); one line."""


class Execution(NamedTuple):
    """How one notebook ran under ``--execute``."""
    path: str
    seconds: float
    error: Optional[str]  # None when every cell ran; else "cell N: ExceptionName: message"


def _checkout_tutorials() -> Optional[str]:
    """``tutorials/`` of the repository npseq runs from (its package folder sits beside the repository's
    setup.cfg and ``tutorials/``: a checkout, or an editable install of one); ``None`` for an installed wheel."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # real: a strict editable install links
    folder = os.path.join(root, "tutorials")
    return folder if os.path.isdir(folder) and os.path.isfile(os.path.join(root, "setup.cfg")) else None


def tutorials_dir() -> str:
    """The folder of the tutorial scripts: the repository's ``tutorials/`` when npseq runs from a checkout,
    else the installed package's own copy, ``npseq/_tutorials``."""
    return _checkout_tutorials() or os.path.join(os.path.dirname(os.path.abspath(__file__)), PACKAGED)


# How to install the notebooks extra: from a checkout, the README's way; an installed wheel has no
# repository to install from, so its packages (setup.cfg's notebooks extra) by name.
INSTALL_HINT = ('pip install -e ".[notebooks]"' if _checkout_tutorials()
                else "pip install jupytext nbformat nbclient ipykernel jupyterlab")


def find_tutorials(only=None) -> list:
    """The paths of the tutorial scripts, in order: all of them, or those ``only`` names.

    Args:
        only: ``None`` for every tutorial, or names each of which is a tutorial's two-digit
            number (``"02"``) or its file name without ``.py`` (``"02_rnn_by_hand"``).

    Raises:
        NotebooksError: the tutorials folder is missing, or a name matches no tutorial.
    """
    folder = tutorials_dir()
    try:
        names = sorted(name for name in os.listdir(folder) if TUTORIAL_NAME.match(name))
    except OSError:
        names = []
    if not names or not os.path.isfile(os.path.join(folder, HELPER)):
        raise NotebooksError(f"the tutorials are not at {folder}: this npseq was installed without them "
                             "(reinstall it from its wheel or sdist, or from its repository with pip install -e .)")
    if not only:
        return [os.path.join(folder, name) for name in names]
    by_key = {}
    for name in names:
        by_key[TUTORIAL_NAME.match(name).group("number")] = name
        by_key[name[:-len(".py")]] = name
    unknown = [key for key in only if key not in by_key]
    if unknown:
        numbers = [TUTORIAL_NAME.match(name).group("number") for name in names]
        raise NotebooksError(f"--only: expected tutorial numbers from {numbers} (or file names without .py), "
                             f"got {unknown}")
    chosen = {by_key[key] for key in only}
    return [os.path.join(folder, name) for name in names if name in chosen]


def notebook_name(script: str) -> str:
    """``NN_name.ipynb``, the notebook's file name for the tutorial script at ``script``."""
    return os.path.splitext(os.path.basename(script))[0] + ".ipynb"


def _import_extra(module: str, purpose: str):
    """Import one module of the ``notebooks`` extra, or say in one line how to install it."""
    try:
        return __import__(module)
    except ImportError:
        raise NotebooksError(f"{purpose} needs {module}, which is not installed: {INSTALL_HINT}") from None


def write_notebooks(out: str, only=None, force: bool = False) -> list:
    """Write the tutorials as notebooks into ``out``, with their helper module beside them.

    A notebook (or the helper) already in ``out`` with exactly the text this would write is npseq's own,
    unchanged: it is written again. One with other text (a learner's edits, outputs of a run) or a link is
    refused unless ``force``, and then nothing is written.

    Args:
        out: the folder (made if missing).
        only: the tutorials to write, as for :func:`find_tutorials` (``None``: all).
        force: replace notebooks that exist already with other content.

    Returns:
        The paths of the notebooks written, in order.

    Raises:
        NotebooksError: no tutorials or an unknown name (:func:`find_tutorials`), jupytext is
            missing, a notebook exists with other content and ``force`` is false, or ``out`` cannot be written.
    """
    scripts = find_tutorials(only)
    jupytext = _import_extra("jupytext", "writing notebooks")
    targets = [os.path.join(out, notebook_name(script)) for script in scripts]
    texts = {}
    for script, target in zip(scripts, targets):
        notebook = jupytext.read(script)
        # A plain notebook: without jupytext's metadata, JupyterLab's jupytext would pair it with a script.
        notebook.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
        for number, cell in enumerate(notebook.cells):  # ids of their place, not random: the same text every time
            cell.id = f"cell-{number}"
        texts[target] = jupytext.writes(notebook, fmt="ipynb")
    with open(os.path.join(tutorials_dir(), HELPER), encoding="utf-8") as handle:
        texts[os.path.join(out, HELPER)] = handle.read()
    # lexists: a link counts as there, dangling or not, so that nothing is written through it out of ``out``
    changed = [os.path.basename(path) for path, text in texts.items()
               if os.path.lexists(path) and not holds_text(path, text)]
    if changed and not force:
        raise NotebooksError(f"--notebooks: {out} already holds {', '.join(changed)} with other content; "
                             "add --force to replace them (edits in them are lost)")
    try:
        os.makedirs(out, exist_ok=True)
        for path, text in texts.items():
            _replace_file(path, text)
    except OSError as exc:
        raise NotebooksError(f"--notebooks: cannot write to {out!r} ({exc.strerror})") from None
    return targets


def _replace_file(path: str, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and move it into place: a link at ``path`` is replaced
    itself, never written through, and a full disk leaves the old file whole."""
    scratch = f"{path}.{os.getpid()}.tmp"
    try:
        with open(scratch, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(scratch, path)
    finally:
        if os.path.lexists(scratch):
            os.unlink(scratch)


def execute_notebook(path: str, timeout: Optional[float] = None) -> Execution:
    """Run the notebook at ``path`` top to bottom in a python3 kernel, in its own folder, and save it with
    its outputs (up to the failing cell when one raises).

    Args:
        path: an ``.ipynb`` file, e.g. one :func:`write_notebooks` wrote.
        timeout: the most seconds one cell may run; ``None``: no limit.

    Raises:
        NotebooksError: nbclient or ipykernel is missing.
    """
    nbformat = _import_extra("nbformat", "--execute")
    nbclient = _import_extra("nbclient", "--execute")
    _import_extra("ipykernel", "--execute")  # the python3 kernel the notebooks name
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=timeout, kernel_name=KERNELSPEC["name"],
                                     resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
    start, error = time.perf_counter(), None
    try:
        client.execute(stderr=subprocess.DEVNULL)  # the kernel's own log (a cell's stderr is an output)
    except (CellExecutionError, CellTimeoutError) as exc:
        error = _failed_cell(notebook, exc)
    seconds = time.perf_counter() - start
    nbformat.write(notebook, path)
    return Execution(path, seconds, error)


def _failed_cell(notebook, exc) -> str:
    """``"cell N: Name: message"`` for the first code cell (counted from 1) whose output is an error."""
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code_cells, start=1):
        for output in cell.get("outputs", ()):
            if output.get("output_type") == "error":
                return f"code cell {number}: {output.get('ename')}: {output.get('evalue')}"
    return str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
