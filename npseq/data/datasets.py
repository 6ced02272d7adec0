"""Datasets known by name, fetched the d2l way into a local cache (``npseq data fetch fra-eng`` runs it).

d2l keeps a registry, ``DATA_HUB``, that maps a name to a URL and the SHA-1 of the file
there; its ``download`` fetches the file and checks the hash, and ``download_extract``
unpacks a zip beside it. This module does the same for the corpora npseq trains on
(:data:`DATASETS`; today d2l's English-French ``fra-eng``), in one cache folder,
:func:`data_home` (``$NPSEQ_DATA``, default ``~/.cache/npseq``). A dataset lives in
``<cache>/<name>/``, e.g. ``~/.cache/npseq/fra-eng/fra.txt``.

**Nothing half-done is left in the cache.** The download goes to a temporary file in a
hidden scratch folder inside the cache, its SHA-1 is computed as the bytes arrive and
compared with the registry's, the archive is unpacked in the scratch folder, and only then
does a rename put the dataset's folder in place. A hash that differs, a file that is not a
zip, a network error, a full disk or Ctrl-C removes the scratch folder and leaves the cache
as it was. A download ends by :data:`DEADLINE_S` (``--deadline``) however slowly the server
sends (its TLS handshake included), besides :data:`TIMEOUT_S` of silence.

**A fetch killed outright** (SIGKILL, a power cut) cannot clean up after itself, so the next
one does (:func:`tidy_cache`): a scratch folder is named ``.<name>-<host>-<pid>-<random>``,
and one whose process on this host has ended, or that is older than
:data:`STALE_SCRATCH_S`, is removed. A replacement moves the old dataset into the scratch
folder before the new one takes its place; killed between the two renames, it leaves the old
copy there, and the next :func:`tidy_cache` (every fetch, and a lookup that finds the
dataset missing) puts it back before removing the scratch.

**A copy the user already has** is registered with ``source=`` (``--from FILE``):

* the zip (any file that is a zip archive) is checked against the same SHA-1 as a download,
  and refused when it differs;
* the bare text file (``fra.txt``) is taken as it is, since there is no published hash of
  it to check (the command says so); it must be UTF-8 with a tab in its first line that
  has text, as a parallel corpus is.

**Finding a dataset.** :func:`dataset_path` gives the cached file or raises
:class:`DatasetMissing`, whose one line says how to get it; :func:`resolve_data` is what
``--data`` means, a file path or a dataset name; :func:`find_dataset` is for
tests and benchmarks: the dataset's environment variable (``$NPSEQ_FRA``), else the cache,
else ``None``, with :func:`how_to_get` as the skip message.
"""
from __future__ import annotations

import codecs
import dataclasses
import hashlib
import os
import posixpath
import re
import shutil
import socket
import tempfile
import threading
import time
import zipfile
from pathlib import Path

from ..errors import InvalidValueError, LimitError, UserError

__all__ = ["DATASETS", "DATA_URL", "Dataset", "DatasetMissing", "FetchError", "ChecksumMismatch", "data_home",
           "cached_file", "corpus_file", "dataset_path", "fetch_dataset", "find_dataset", "how_to_get", "resolve_data",
           "tidy_cache", "DEADLINE_S"]

DATA_URL = "http://d2l-data.s3-accelerate.amazonaws.com/"
"""d2l's data server (``d2l.DATA_URL``)."""

TIMEOUT_S = 60.0
"""Seconds a connection may stay silent before the download is given up."""

DEADLINE_S = 3600.0
"""Seconds a whole download may take (``npseq data fetch --deadline``): a server that sends a byte now and then,
never silent for :data:`TIMEOUT_S`, would otherwise keep the fetch running for ever. An hour brings
:data:`MAX_DOWNLOAD_BYTES` at 75 KB/s, and d2l's few MB at any speed a fetch is worth waiting for."""

MAX_DEADLINE_S = 12 * 3600.0
"""The longest ``--deadline``; well under :data:`STALE_SCRATCH_S`, so no running fetch's scratch looks stale."""

STALE_SCRATCH_S = 24 * 3600.0
"""A scratch folder older than this is a leftover whatever its name says (its process id may have been reused, or
it was made on another host sharing the cache): the next fetch removes it."""

MAX_DOWNLOAD_BYTES = 256 * 2 ** 20
"""The most bytes a download may bring (d2l's ``fra-eng.zip`` is a few MB): a wrong URL cannot fill the disk."""

CHUNK_BYTES = 2 ** 16


@dataclasses.dataclass(frozen=True)
class Dataset:
    """One entry of the registry: a zip archive at ``url`` whose SHA-1 is ``sha1`` (hex), holding the
    text file ``member`` (a POSIX path inside the archive). ``env_var`` names the environment variable
    that tests and benchmarks read a copy's path from; ``about`` says what the data is, in one line."""
    name: str
    url: str
    sha1: str
    member: str
    env_var: str
    about: str

    @property
    def filename(self) -> str:
        """The text file's name, as it is kept in the cache (``fra.txt``)."""
        return posixpath.basename(self.member)


DATASETS = {
    # d2l's DATA_HUB['fra-eng'] (chapter "Machine Translation and the Dataset").
    "fra-eng": Dataset(name="fra-eng", url=DATA_URL + "fra-eng.zip", sha1="94646ad1522d915e7b0f9296181140edcf86a4f5",
                       member="fra-eng/fra.txt", env_var="NPSEQ_FRA",
                       about="English-French sentence pairs from Tatoeba, d2l's copy (fra-eng.zip, holding fra.txt)"),
}
"""The datasets npseq knows by name: name -> :class:`Dataset`."""


class DatasetMissing(UserError, FileNotFoundError):
    """A dataset asked for by name is not in the cache; the message says how to get it."""


class FetchError(UserError):
    """A dataset could not be fetched or registered (network, archive, cache folder); nothing was kept."""


class ChecksumMismatch(FetchError):
    """A downloaded or given archive's SHA-1 differs from the registry's; nothing was kept."""


def data_home() -> Path:
    """The cache folder: ``$NPSEQ_DATA`` when set, else ``~/.cache/npseq`` (not created here)."""
    return Path(os.environ.get("NPSEQ_DATA") or "~/.cache/npseq").expanduser()


def _dataset(name: str) -> Dataset:
    if name not in DATASETS:
        raise InvalidValueError(f"name: expected a dataset name, one of {', '.join(sorted(DATASETS))}; got {name!r}")
    return DATASETS[name]


def cached_file(name: str) -> Path:
    """Where the cache keeps the text file of dataset ``name`` (``<cache>/fra-eng/fra.txt``), present or not."""
    entry = _dataset(name)
    return data_home() / entry.name / entry.filename


def _fetch_hint(entry: Dataset) -> str:
    return (f"get it with `npseq data fetch {entry.name}`, or register a copy you have with "
            f"`npseq data fetch {entry.name} --from FILE` ({posixpath.basename(entry.url)} or {entry.filename})")


def how_to_get(name: str) -> str:
    """One line saying how to make :func:`find_dataset` find dataset ``name`` (a test's skip message)."""
    entry = _dataset(name)
    return f"{_fetch_hint(entry)}, or set {entry.env_var} to the path of {entry.filename}"


def dataset_path(name: str) -> Path:
    """The cached text file of dataset ``name``.

    Raises:
        DatasetMissing: it is not in the cache; the one-line message says how to get it.
        InvalidValueError: ``name`` is not in :data:`DATASETS`.
    """
    path = cached_file(name)
    if not path.is_file():
        tidy_cache(name)  # a replacement killed between its two renames left the old copy aside: put it back
    if not path.is_file():
        raise DatasetMissing(f"the dataset {name} is not in the cache {data_home()}: {_fetch_hint(_dataset(name))}")
    return path


def find_dataset(name: str) -> Path | None:
    """The text file of dataset ``name`` for tests and benchmarks: the file its environment variable
    names (``$NPSEQ_FRA`` for ``fra-eng``) when that is set, else the cached file; ``None`` when the
    chosen place holds no file (:func:`how_to_get` says what to do then)."""
    entry = _dataset(name)
    given = os.environ.get(entry.env_var)
    path = Path(given).expanduser() if given else cached_file(name)
    if not given and not path.is_file():
        tidy_cache(name)
    return path if path.is_file() else None


def corpus_file(data: str | None = None, name: str = "fra-eng") -> str:
    """The corpus a benchmark or script reads: ``data`` when given (a file, or a dataset name resolved to its
    cached file, as :func:`resolve_data`), else :func:`find_dataset` (its environment variable, else the cache).

    Raises:
        DatasetMissing: none of them has it; the one-line message says how to get it.
    """
    if data is None:
        found = find_dataset(name)
        if found is None:
            raise DatasetMissing(f"no {name} corpus: {how_to_get(name)}, or pass --data PATH")
        return str(found)
    try:
        return resolve_data(data)
    except DatasetMissing as exc:
        raise DatasetMissing(f"--data: {exc}") from None


def resolve_data(text: str) -> str:
    """What ``--data`` names: an existing file, or a dataset name (:data:`DATASETS`), which becomes the
    path of its cached file. A file of that name in the working folder wins over the name.

    Raises:
        DatasetMissing: neither a file nor a dataset in the cache (one line saying how to get it).
    """
    if os.path.isfile(text):
        return text
    if text in DATASETS:
        return str(dataset_path(text))
    raise DatasetMissing(f"no such file: {text} (nor a dataset name: {', '.join(sorted(DATASETS))})")


# ----------------------------------------------------------------- fetching
class _Deadline:
    """The end of a whole download: at ``seconds`` from now the sockets given to :meth:`watch` are shut, which ends
    a read that waits on them (the socket's own timeout bounds only the silence between two reads)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.expired = threading.Event()
        self._lock = threading.Lock()
        self._sockets = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc_info):
        self._timer.cancel()

    def passed(self) -> bool:
        """Whether the end has come: asked of the clock too, since on a busy machine the timer's thread may not have
        run yet when a socket's own timeout, of the same length, ends a read."""
        return self.expired.is_set() or time.monotonic() >= self.ends

    def watch(self, sock) -> None:
        with self._lock:
            self._sockets.append(sock)
            late = self.expired.is_set()
        if late:
            _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired.set()
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock) -> None:
    try:  # socket.socket's own shutdown, also for a TLS socket: its wrapper's would unwrap it under a reading thread
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # closed already
        pass


def _opener(deadline: _Deadline):
    """urllib's opener, with connections whose socket ``deadline`` watches once connected (redirects included)."""
    import http.client
    import urllib.request

    def watched(base):
        class Watched(base):
            def connect(self):
                super().connect()
                deadline.watch(self.sock)
        return Watched

    class HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(watched(http.client.HTTPConnection), req)

    handlers = [HTTPHandler()]
    if hasattr(http.client, "HTTPSConnection"):  # Python built with ssl
        class HTTPSHandler(urllib.request.HTTPSHandler):
            def https_open(self, req):
                options = {"context": self._context}
                if hasattr(self, "_check_hostname"):  # Python < 3.12
                    options["check_hostname"] = self._check_hostname
                return self.do_open(watched(http.client.HTTPSConnection), req, **options)
        handlers.append(HTTPSHandler())
    return urllib.request.build_opener(*handlers)


def _download(url: str, path: Path, progress: bool, name: str, deadline: float = DEADLINE_S) -> str:
    """Stream ``url`` into the file ``path`` behind a progress bar; return the SHA-1 (hex) of the bytes.

    The whole download, from the connection to the last byte, ends by ``deadline`` seconds.
    A network failure or the deadline raises :class:`FetchError` naming the URL; a failure to
    write ``path`` is left as the ``OSError`` it is, for the caller to name the cache folder.
    """
    # Imported here, not at the top: every `npseq` command and `import npseq.data` load this module, few download.
    import http.client
    import urllib.parse
    if urllib.parse.urlsplit(url).scheme.lower() not in ("http", "https"):  # file: and data: answer differently
        raise InvalidValueError(f"url: expected an http(s) URL, got {url!r}; a file you have is registered with "
                                f"`npseq data fetch {name} --from FILE`")

    from tqdm.auto import tqdm
    digest = hashlib.sha1()
    received = 0
    with _Deadline(deadline) as watch:
        def late() -> FetchError:
            return FetchError(f"--deadline: expected {url} within {deadline:g} s, got {received} bytes by then; "
                              f"nothing was kept; a larger --deadline waits longer, or register a copy you have "
                              f"with `npseq data fetch {name} --from FILE`")
        try:
            response = _opener(watch).open(url, timeout=min(TIMEOUT_S, deadline))
        except ValueError as exc:  # urllib's word for a string that is no URL
            raise InvalidValueError(f"url: expected an http(s) URL, got {url!r} ({exc})") from None
        except (OSError, http.client.HTTPException) as exc:
            raise (late() if watch.passed() else _unreachable(url, exc, name)) from None
        length = response.headers.get("Content-Length")
        with response, open(path, "wb") as handle, \
                tqdm(total=int(length) if length and length.isdigit() else None, unit="B", unit_scale=True,
                     unit_divisor=1024, desc=posixpath.basename(url) or "download", disable=not progress) as bar:
            while True:
                try:  # read1: what has arrived, at most one wait on the socket (read would wait for a full chunk)
                    chunk = response.read1(CHUNK_BYTES)
                except (OSError, http.client.HTTPException) as exc:
                    raise (late() if watch.passed() else _unreachable(url, exc, name)) from None
                if watch.passed():  # past the end; and a shut socket reads as the end of the file, not a whole download
                    raise late()
                if not chunk:
                    if response.length:  # the server closed before the bytes it announced
                        raise _unreachable(url, http.client.IncompleteRead(b"", response.length), name)
                    return digest.hexdigest()
                received += len(chunk)
                if received > MAX_DOWNLOAD_BYTES:
                    raise LimitError(f"url: {url} sends more than {MAX_DOWNLOAD_BYTES // 2 ** 20} MiB, the cap of a "
                                     f"download; nothing was kept")
                digest.update(chunk)
                handle.write(chunk)
                bar.update(len(chunk))


def _unreachable(url: str, exc: Exception, name: str) -> FetchError:
    why = getattr(exc, "reason", None) or exc  # URLError wraps the socket's error in .reason
    code = getattr(exc, "code", None)  # an HTTPError: the server answered, but not with the file
    why = f"HTTP {code} {why}" if code else str(why) or type(exc).__name__
    return FetchError(f"cannot download {url} ({why}); offline or behind a proxy? Register a copy you have "
                      f"with `npseq data fetch {name} --from FILE`")


def _sha1_of(path) -> str:
    digest = hashlib.sha1()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(2 ** 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _unpack(archive, scratch: Path, entry: Dataset, origin: str) -> Path:
    """Unpack ``archive`` under ``scratch``; return the folder that holds ``entry.member``."""
    unpacked = scratch / "unpacked"
    try:
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(unpacked)  # extractall drops absolute paths and '..' from member names
    except zipfile.BadZipFile as exc:
        raise FetchError(f"{origin} is not a readable zip archive ({exc}); nothing was kept") from None
    text = unpacked / entry.member
    if not text.is_file():
        raise FetchError(f"{origin} holds no {entry.member}; nothing was kept")
    return text.parent


def _copy_text(source: str, scratch: Path, entry: Dataset) -> Path:
    """Copy the bare text file ``source`` into a folder under ``scratch``, after checking that it looks like a
    parallel corpus (UTF-8, a tab in its first line with text); return that folder."""
    with open(source, "rb") as handle:
        head = handle.read(2 ** 16)
    try:  # incremental: a character cut in two at the end of the sample is not an error
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(head, final=False)
    except UnicodeDecodeError:
        raise FetchError(f"source: {source} is neither a zip archive nor UTF-8 text such as {entry.filename}; "
                         f"nothing was kept") from None
    if "\t" not in next((line for line in text.splitlines() if line.strip()), ""):
        raise FetchError(f"source: {source} is neither a zip archive nor a tab-separated corpus such as "
                         f"{entry.filename} (its first line has no tab); nothing was kept")
    folder = scratch / entry.name
    folder.mkdir()
    shutil.copyfile(source, folder / entry.filename)
    return folder


def _install(folder: Path, destination: Path, scratch: Path) -> None:
    """Put ``folder`` at ``destination`` by renames; a dataset already there moves into ``scratch`` (and goes
    with it), and comes back if the second rename fails. Renames within one file system do not copy."""
    old = scratch / "replaced"
    if destination.exists():
        os.replace(destination, old)
    try:
        os.replace(folder, destination)
    except BaseException:
        if old.exists():
            os.replace(old, destination)
        raise


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32] or "host"


def _scratch_prefix(name: str) -> str:
    """The start of a scratch folder's name: ``.<name>-<host>-<pid>-`` (tempfile adds a random end)."""
    return f".{name}-{_host()}-{os.getpid()}-"


_SCRATCH = re.compile(r"\.(?P<name>.+)-(?P<host>[A-Za-z0-9]+)-(?P<pid>[0-9]+)-[a-z0-9_]+")


def _process_gone(pid: int) -> bool:
    """Whether no process ``pid`` runs on this host (POSIX; elsewhere, ``False``: only age tells)."""
    if os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it runs, under another user
        return False
    return False


def _stale(scratch: Path, name: str) -> bool:
    """Whether the scratch folder ``scratch`` of dataset ``name`` belongs to no running fetch."""
    try:
        if time.time() - scratch.lstat().st_mtime > STALE_SCRATCH_S:
            return True
    except FileNotFoundError:  # removed meanwhile
        return False
    match = _SCRATCH.fullmatch(scratch.name)
    return bool(match and match["name"] == name and match["host"] == _host() and _process_gone(int(match["pid"])))


def tidy_cache(name: str) -> None:
    """Clean up after fetches of dataset ``name`` that were killed outright (SIGKILL, a power cut).

    A scratch folder (``.<name>-<host>-<pid>-<random>`` in the cache) whose process on this host has ended, or
    that is older than :data:`STALE_SCRATCH_S`, is removed, a partial download with it; if it holds the dataset a
    replacement moved aside (``replaced``) and the cache lacks the dataset, that copy is put back first. A
    scratch folder of a running fetch is left alone. A cache that cannot be read or written is left as it is.
    """
    entry = _dataset(name)
    home = data_home()
    try:
        scratches = [path for path in home.glob(f".{entry.name}-*") if path.is_dir() and not path.is_symlink()]
    except OSError:
        return
    for scratch in scratches:
        if not _stale(scratch, entry.name):
            continue
        destination = home / entry.name
        try:
            if (scratch / "replaced").is_dir() and not os.path.lexists(destination):
                os.replace(scratch / "replaced", destination)
        except OSError:  # another process restored it first, or the cache is read-only
            pass
        shutil.rmtree(scratch, ignore_errors=True)


def fetch_dataset(name: str, url: str | None = None, source=None, *, progress: bool = True,
                  force: bool = False, deadline: float = DEADLINE_S) -> Path:
    """Download dataset ``name`` (or register the copy ``source``) into the cache; return its text file.

    Without ``source``: download ``url`` (default: the registry's, d2l's server), check that the
    SHA-1 of the bytes equals the registry's, unpack the zip and keep the folder that holds
    the text file as ``<cache>/<name>/``. A dataset already in the cache is returned as it is,
    without a download, unless ``force``.

    With ``source`` (a path): a zip archive is checked against the same SHA-1 and unpacked; any
    other file is taken as the text file itself, unchecked (there is no published hash of it),
    once it looks like a tab-separated UTF-8 corpus. A dataset already in the cache is replaced.

    Everything is written under a hidden scratch folder in the cache first and moved into place
    by a rename, so that on any failure (and on Ctrl-C) the cache is left as it was.
    ``progress``: a progress bar (tqdm, on standard error) while downloading. ``deadline``: the seconds the
    whole download may take (:data:`DEADLINE_S`, at most :data:`MAX_DEADLINE_S`). What killed fetches left
    behind is cleaned up first (:func:`tidy_cache`).

    Raises:
        ChecksumMismatch: the downloaded or given zip is not the registry's.
        FetchError: the URL cannot be reached or answers with an error (the message names the URL
            and ``--from FILE``), the download takes longer than ``deadline``, the archive is damaged or
            lacks the text file, or the cache folder cannot be written.
        LimitError: the download is larger than :data:`MAX_DOWNLOAD_BYTES`.
        InvalidValueError: ``name`` is not in :data:`DATASETS`, both ``url`` and ``source`` are given,
            ``url`` is no URL, or ``deadline`` is not a number of seconds in (0, :data:`MAX_DEADLINE_S`].
    """
    entry = _dataset(name)
    if not (isinstance(deadline, (int, float)) and 0 < deadline <= MAX_DEADLINE_S):
        raise InvalidValueError(f"deadline: expected seconds in (0, {MAX_DEADLINE_S:g}], got {deadline!r}")
    if url is not None and source is not None:
        raise InvalidValueError(f"url, source: expected at most one place to get {name} from, got url={url!r} "
                                f"and source={str(source)!r}")
    if source is not None and not os.path.isfile(source):
        raise FetchError(f"source: no such file: {source}")
    tidy_cache(name)
    target = cached_file(name)
    if source is None and not force and target.is_file():
        return target
    home = data_home()
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=_scratch_prefix(name), dir=home) as scratch:
            scratch = Path(scratch)
            if source is not None and not zipfile.is_zipfile(source):
                folder = _copy_text(source, scratch, entry)
            else:
                if source is None:
                    url = url or entry.url
                    archive, origin = scratch / "download.zip", f"the download from {url}"
                    sha1 = _download(url, archive, progress, name, deadline)
                    remedy = f"try again, or register a copy you trust with `npseq data fetch {name} --from FILE`"
                else:
                    archive, origin = source, f"source {source}"
                    sha1 = _sha1_of(source)
                    remedy = (f"to use another export, register its {entry.filename} itself, unchecked, with "
                              f"`npseq data fetch {name} --from {entry.filename}`")
                if sha1 != entry.sha1:
                    raise ChecksumMismatch(f"{origin} has SHA-1 {sha1}, but {posixpath.basename(entry.url)} has "
                                           f"{entry.sha1}; nothing was kept; {remedy}")
                folder = _unpack(archive, scratch, entry, origin)
            _install(folder, home / entry.name, scratch)
    except OSError as exc:  # a file, not the network (_download reports that as FetchError): name the file
        raise FetchError(f"{exc.strerror or exc}: {exc.filename or home}; nothing was kept (NPSEQ_DATA chooses "
                         f"another cache folder than {home})") from None
    return target
