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
``--force`` is given. It writes again, without ``--force``, a notebook that holds exactly
what it would write, and one that holds exactly what its own ``--execute`` saved (a
digest of the notebook in its metadata says so; an edit anywhere, code or outputs, breaks it).
``_common.py`` is npseq's own too, and is refreshed while it holds the text npseq wrote.

``--execute`` then runs each notebook top to bottom in a python3 kernel, with DIR
as the working directory, and saves it with its outputs (figures and rendered
equations included), in full mode or, with ``fast=True`` (``--fast``, or ``NPSEQ_FAST=1``
in the environment, as for the scripts), in fast mode: :data:`FULL_COST` and
:data:`FAST_COST` say what each costs. A notebook whose cell raises is saved up to
that cell, the error is named in one line, and the command ends with exit code 1.
Ctrl-C stops the running cell at once (its kernel is killed) and saves the notebook
with the outputs so far; every notebook is saved whole or not at all (a temporary
file moved into place).

Writing needs jupytext and executing nbclient and ipykernel: the ``notebooks``
extra (``pip install -e ".[notebooks]"`` in a checkout; :data:`INSTALL_HINT` names
them for an installed wheel), which also installs JupyterLab to open them. They
are imported only here, so that npseq itself does not depend on them.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from typing import NamedTuple, Optional

from ._files import holds_text
from .errors import UserError

HELPER = "_common.py"
PACKAGED = "_tutorials"  # the wheel's copy of the tutorials, npseq/_tutorials (setup.py writes it)
TUTORIAL_NAME = re.compile(r"^(?P<number>\d\d)_\w+\.py$")
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
FAST_ENV = "NPSEQ_FAST"  # "1" selects fast mode in tutorials/_common.py, which the kernel imports
RUN_MARK = "npseq"  # the notebook metadata entry of a notebook npseq's --execute saved: {"run_sha256": digest}

# What each mode costs, as `npseq tutorials --notebooks DIR --execute [--fast] [--only 02]` printed it on the
# machine named (the README says the same).
FAST_COST = ("small corpora, epochs and sizes, so their numbers are not the results the text "
             "discusses; all thirteen tutorials ran in 129 s on a 2-core AMD EPYC")
FULL_COST = ("the sizes whose results the text discusses; tutorial 02 ran in 1.6 s on a 2-core "
             "AMD EPYC, and the tutorials that train take far longer than in fast mode")


class NotebooksError(UserError):
    """The notebooks cannot be written or run (no tutorials, an unknown name, a missing extra); one line."""


class Execution(NamedTuple):
    """How one notebook ran under ``--execute``."""
    path: str
    seconds: float
    error: Optional[str]  # None when every cell ran (or Ctrl-C stopped it); else "code cell N: Name: message"
    interrupted: bool = False  # Ctrl-C stopped it: saved with the outputs so far


class _Stopped(Exception):
    """Raised before a cell once Ctrl-C was pressed: no cell runs after it."""


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
    unchanged: it is written again, and so is a notebook exactly as :func:`execute_notebook` saved it
    (:func:`saved_by_npseq_run`). One with other text (a learner's edits, the outputs of a run in Jupyter) or a
    link is refused unless ``force``, and then nothing is written.

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
               if os.path.lexists(path) and not holds_text(path, text) and not saved_by_npseq_run(path)]
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


def run_digest(notebook: dict) -> str:
    """The SHA-256 (hex) of ``notebook``, a notebook as parsed JSON, without its :data:`RUN_MARK` entry: keys
    sorted, so that any change to a cell, an output or the metadata changes it and nothing else does."""
    metadata = {key: value for key, value in notebook.get("metadata", {}).items() if key != RUN_MARK}
    text = json.dumps({**notebook, "metadata": metadata}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def saved_by_npseq_run(path: str) -> bool:
    """Whether ``path`` is a regular file (not a link) holding a notebook exactly as :func:`execute_notebook` saved
    it: its :data:`RUN_MARK` digest is that of the rest. ``False`` when it cannot be read or is not JSON."""
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    try:
        with open(path, encoding="utf-8") as handle:
            notebook = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    mark = notebook.get("metadata", {}).get(RUN_MARK) if isinstance(notebook, dict) else None
    return isinstance(mark, dict) and mark.get("run_sha256") == run_digest(notebook)


class _CtrlC:
    """Ctrl-C while a notebook runs: the running cell is cut short (its kernel killed) and no other cell starts.

    nbclient answers SIGINT itself, on an event loop of the main thread, by shutting the kernel down under the
    running cell, which ends in a traceback (DeadKernelError, then an AssertionError from its second clean-up).
    It cannot add that handler to a loop in another thread, so the notebook runs in a worker thread and this
    handler takes Ctrl-C in the main one, for as long as the ``with`` block lasts (main thread only). Further
    presses change nothing: the kernel is killed, not asked, so the run ends within a second or two.
    """

    def __init__(self, client):
        self.client = client
        self.pressed = False
        self.loop = None  # the worker's event loop while it runs

    def __enter__(self):
        self.previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc_info):
        signal.signal(signal.SIGINT, self.previous)
        return False

    def _handler(self, signum, frame):
        self.pressed = True
        loop = self.loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._stop_cell)
            except RuntimeError:  # the loop closed meanwhile: the run is over, nothing is left to stop
                pass

    def _stop_cell(self) -> None:
        """On the worker's loop: end the cell now. nbclient reads a cancelled reply as a dead kernel and cleans up,
        and the kernel is killed rather than left to finish the cell first."""
        self.client.shutdown_kernel = "immediate"
        if self.client.task_poll_for_reply is not None:
            self.client.task_poll_for_reply.cancel()

    def before_cell(self, cell, cell_index) -> None:
        """nbclient's ``on_cell_start`` hook: after Ctrl-C (while the kernel started, between cells), stop."""
        if self.pressed:
            raise _Stopped


def _execute_in_worker(client, ctrl_c: _CtrlC, env: dict) -> Optional[BaseException]:
    """Run ``client``'s notebook in a worker thread with its own event loop (see :class:`_CtrlC`), the kernel in
    ``env`` and its log sent nowhere (a cell's stderr is an output); return what it raised, or ``None``."""
    raised = []

    async def execute():
        ctrl_c.loop = asyncio.get_running_loop()
        try:
            await client.async_execute(env=env, stderr=subprocess.DEVNULL)
        finally:
            ctrl_c.loop = None

    def work():
        try:
            asyncio.run(execute())
        except BaseException as exc:  # the main thread reports it
            raised.append(exc)

    worker = threading.Thread(target=work, name="npseq-notebook")
    worker.start()
    worker.join()
    return raised[0] if raised else None


def execute_notebook(path: str, timeout: Optional[float] = None, fast: bool = False) -> Execution:
    """Run the notebook at ``path`` top to bottom in a python3 kernel, in its own folder, and save it with
    its outputs (up to the failing cell when one raises; up to where it stopped after Ctrl-C), marked as npseq's
    run (:func:`saved_by_npseq_run`). Main thread only (it takes Ctrl-C while the notebook runs).

    Args:
        path: an ``.ipynb`` file, e.g. one :func:`write_notebooks` wrote.
        timeout: the most seconds one cell may run; ``None``: no limit.
        fast: fast mode (``NPSEQ_FAST=1`` in the kernel), else full mode (see :data:`FAST_COST`, :data:`FULL_COST`).

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
    env = {key: value for key, value in os.environ.items() if key != FAST_ENV}
    if fast:
        env[FAST_ENV] = "1"
    with _CtrlC(client) as ctrl_c:  # held while saving too: Ctrl-C then cannot cut the save short
        client.on_cell_start = ctrl_c.before_cell
        start = time.perf_counter()
        raised = _execute_in_worker(client, ctrl_c, env)
        seconds = time.perf_counter() - start
        error = None
        if not ctrl_c.pressed:  # after Ctrl-C, what the run raised (a "dead" kernel, _Stopped) is the stop itself
            if isinstance(raised, (CellExecutionError, CellTimeoutError)):
                error = _failed_cell(notebook, raised)
            elif raised is not None:
                raise raised
        notebook.metadata[RUN_MARK] = {"run_sha256": run_digest(json.loads(nbformat.writes(notebook)))}
        _replace_file(path, nbformat.writes(notebook) + "\n")  # with the newline nbformat.write ends a file with
    return Execution(path, seconds, error, ctrl_c.pressed)


def _failed_cell(notebook, exc) -> str:
    """``"cell N: Name: message"`` for the first code cell (counted from 1) whose output is an error."""
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code_cells, start=1):
        for output in cell.get("outputs", ()):
            if output.get("output_type") == "error":
                return f"code cell {number}: {output.get('ename')}: {output.get('evalue')}"
    return str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
