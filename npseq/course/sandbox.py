"""The sandbox a submission runs in: a child process that can send back data, never code, and cannot reach the grader.

The grader forks one child per piece of work (listing what a file defines, grading one
function) and talks to it over two pipes in a format that cannot carry code: each message
is a small JSON header (what happened, the learner's line, the names of npseq functions
called) followed by NumPy arrays written with ``backend.numpy.save(..., allow_pickle=False)``, every
part length-prefixed and size-capped (:class:`Channel`). The parent reads with a deadline
and decides everything itself; nothing the child sends is unpickled or run.

The child, before it imports anything of the learner's (:func:`_enter_sandbox`):

* starts a session of its own, so the grader kills it as a group, and the grader is the
  *subreaper* of whatever it starts, so a grandchild that escapes into its own session is
  found and killed too (:meth:`Child.close`): no process of a submission outlives its grading;
* gets hard limits it cannot lift (address space, CPU seconds, open files, file size, no core
  files), and, where the grader runs as root (as on Gradescope), becomes an unprivileged user
  of its own, in a scratch folder of its own holding only the submission, so that it cannot
  signal the grader, write the grader's files or read another student's;
* is confined by Landlock where the kernel has it (:mod:`npseq.course.landlock`), without
  any privilege: it reads everything but its own folder, the grader's working folder and home
  folder (with the course secret), the autograder's,
  writes in its scratch folder only, opens no TCP connection and signals no process outside
  the sandbox (where the mounts above are refused, this is what keeps it in);
* has its standard input, output and error on ``/dev/null`` and a file in its scratch folder
  (what it prints reaches the grader's standard error afterwards, capped), and holds no other
  descriptor of the grader's: it cannot write into the grader's output.

What remains the platform's job (and is said in the README): on a kernel without Landlock, a
grader running as a normal user shares that user with the submission, so the submission can
signal it or read that user's files; the network beyond TCP (and all of it without Landlock);
a kernel exploit.
"""
from __future__ import annotations

import ctypes
import dataclasses
import faulthandler
import io
import json
import os
import resource
import select
import shutil
import signal
import stat
import struct
import sys
import tempfile
import time
import traceback
from typing import Callable

from .. import backend
from ..errors import UserError
from ..language import _
from .landlock import confine
from .secret import secret_path

MAX_HEADER_BYTES = 1 << 20
"""The largest JSON header a child may send (1 MiB); messages in it are capped far below that."""

MAX_MESSAGE_BYTES = 64 << 20
"""The most a child may send in one answer, arrays included (64 MiB: every case's gradients are a few KB)."""

MAX_PRINTED_BYTES = 16 << 10
"""What the grader shows of a child's own prints (16 KiB); the rest is cut, and the cut is said."""

SANDBOX_UID_BASE = 61000
"""Where the grader runs as root, its children run as uid ``SANDBOX_UID_BASE + k`` (no such user needs to exist)."""

_LENGTH = struct.Struct(">Q")
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER, _PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38


class ChannelError(Exception):
    """What came down the pipe is not a well-formed message: too big, cut short, not JSON or not arrays."""


class Deadline(Exception):
    """The child did not answer in time."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """What a child may use. ``memory_mb`` and ``timeout`` are the grader's settings; the rest is fixed."""
    timeout: float                 # wall-clock seconds for the whole child
    memory_mb: int | None = None   # address space the child may add to what it holds when it starts; None: no cap
    open_files: int = 64
    file_size_mb: int = 64         # the largest file it may write
    processes: int = 64            # tasks (threads included) it may add: a fork bomb stops there
    private: tuple = ()            # folders it may not see, besides the submission's own and the grader's (hidden)


@dataclasses.dataclass(frozen=True)
class Message:
    """One message: a JSON-able header and the arrays it refers to by position."""
    header: dict
    arrays: tuple = ()


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # no C library to call: no prctl (not Linux)
        return None


def _prctl(option: int, value: int) -> bool:
    libc = _libc()
    return bool(libc is not None and hasattr(libc, "prctl") and libc.prctl(option, value, 0, 0, 0) == 0)


def _encode(message: Message) -> bytes:
    header = json.dumps({**message.header, "arrays": len(message.arrays)}).encode("utf-8")
    parts = [_LENGTH.pack(len(header)), header]
    for array in message.arrays:
        buffer = io.BytesIO()
        backend.numpy.save(buffer, backend.numpy.asarray(array).copy(order="C"), allow_pickle=False)  # 0-d stays 0-d
        parts += [_LENGTH.pack(buffer.tell()), buffer.getvalue()]
    return b"".join(parts)


class Channel:
    """Length-prefixed messages over a pair of pipe descriptors, read with a deadline and a size cap."""

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd
        self._pending = bytearray()

    def send(self, message: Message) -> None:
        data = memoryview(_encode(message))
        while data:
            written = os.write(self.write_fd, data)
            data = data[written:]

    def _read(self, count: int, deadline: float | None) -> bytes:
        while len(self._pending) < count:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.read_fd], [], [], left)[0]:
                    raise Deadline()
            chunk = os.read(self.read_fd, max(65536, count - len(self._pending)))
            if not chunk:
                raise EOFError("the other end closed the pipe")
            self._pending += chunk
        data, self._pending = bytes(self._pending[:count]), self._pending[count:]
        return data

    @staticmethod
    def round_trip(message: Message) -> Message:
        """``message`` encoded and decoded again, as a child's answer would be (it loads what both take)."""
        read_fd, write_fd = os.pipe()
        try:
            channel = Channel(read_fd, write_fd)
            channel.send(message)
            return channel.receive(time.monotonic() + 10)
        finally:
            os.close(read_fd)
            os.close(write_fd)

    def receive(self, deadline: float | None = None, limit: int = MAX_MESSAGE_BYTES) -> Message:
        """The next message; :class:`Deadline` past ``deadline`` (a ``time.monotonic()`` value), ``EOFError`` when
        the other end is gone, :class:`ChannelError` for anything that is not a well-formed message within ``limit``."""
        size = _LENGTH.unpack(self._read(_LENGTH.size, deadline))[0]
        if size > min(MAX_HEADER_BYTES, limit):
            raise ChannelError(f"a header of {size} bytes, over the {MAX_HEADER_BYTES} allowed")
        total = size
        try:
            header = json.loads(self._read(size, deadline).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ChannelError("a header that is not JSON") from None
        count = header.get("arrays") if isinstance(header, dict) else None
        if not isinstance(count, int) or not 0 <= count <= 256:
            raise ChannelError("a header without a valid count of arrays")
        arrays = []
        for _index in range(count):
            size = _LENGTH.unpack(self._read(_LENGTH.size, deadline))[0]
            total += size
            if total > limit:
                raise ChannelError(f"more than {limit} bytes in one answer")
            try:
                arrays.append(backend.numpy.load(io.BytesIO(self._read(size, deadline)), allow_pickle=False))
            except (ValueError, OSError, EOFError):
                raise ChannelError("an array that is not in NumPy's format (or holds objects)") from None
        return Message(header, tuple(arrays))


# ------------------------------------------------------------------ the child
def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _python_folders() -> tuple:
    """The folders of the Python installation a child must read: the standard library's and NumPy's site-packages."""
    return os.path.dirname(os.__file__), os.path.dirname(os.path.dirname(backend.numpy.__file__))


def python_unreadable(exc: BaseException) -> str:
    """For an ``ImportError`` in a child: the sentence that says the child's user cannot read the Python installation
    (the standard library's or the site-packages' folder), or ``""`` when it can and the import failed otherwise.

    Run as root, the grader makes the child a user of its own; a Python installed in a private home folder
    (``/root/.pyenv``) is then out of its reach, and every module the grader had not loaded before the switch
    is "not found": no fault of the learner's file."""
    if not isinstance(exc, ImportError):
        return ""
    unreadable = [folder for folder in _python_folders() if not os.access(folder, os.R_OK | os.X_OK)]
    if not unreadable:
        return ""
    return "; " + _("the grader's sandbox cannot read the Python installation ({folder}): it runs the file as a user "
                    "of its own, who may not read that folder. Not a mistake of this file: the grader must run on a "
                    "Python every user can read (npseq's README, For instructors: What the grader defends "
                    "against)").format(folder=unreadable[0])


def others_cannot_read_python() -> bool:
    """Whether, run as root, the grader's children (users of their own) are kept out of the Python installation: the
    standard library's or NumPy's folder, or one above it, is closed to other users. The grader's own check, from the
    folders' modes, of what a child reports (a child's word alone is the learner's)."""
    if not running_as_root():
        return False
    for folder in _python_folders():
        path = os.path.abspath(folder)
        while True:
            try:
                mode = os.stat(path).st_mode
            except OSError:
                return True
            if not mode & stat.S_IXOTH or (path == os.path.abspath(folder) and not mode & stat.S_IROTH):
                return True
            if path == os.path.dirname(path):
                break
            path = os.path.dirname(path)
    return False


def _limit(kind, value) -> None:
    if value is not None and hasattr(resource, kind):
        resource.setrlimit(getattr(resource, kind), (value, value))


CHILD_NEEDS_MB = 16
"""The least address space a child must be able to add to the grader's to import a submission and run a case: below
it, the child fails before the learner's code has run, and the failure would read as the learner's. (A child is a
fork: the grader's pages count once. Under ``ulimit -v 215000`` a grader holding about 200 MB graded every exercise
of the chain and transformer sets right, with 12 MB of room; at 210000 the grader itself cannot start.)"""


class SandboxError(UserError):
    """The grader cannot give a submission's child what it needs to run (here: memory); the grader's own error,
    never the submission's. One line naming the setting that fixes it."""


def _ceiling():
    """The address-space limit this process runs under (the soft one: what it may grow to), ``None`` without one."""
    if not hasattr(resource, "RLIMIT_AS"):
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def child_address_space(memory_mb: int) -> int:
    """The address space, in bytes, a child gets: what the grader holds plus ``memory_mb``, within the limit the
    grader itself runs under (``ulimit -v``): a child's hard limit cannot exceed its parent's."""
    wanted, ceiling = _in_use() + int(memory_mb) * 2 ** 20, _ceiling()
    return wanted if ceiling is None else min(wanted, ceiling)


def check_memory_room(memory_mb) -> None:
    """Refuse, as the grader's own error, to run submissions where a child cannot get :data:`CHILD_NEEDS_MB`
    beyond what the grader holds (``memory_mb`` falsy: no limit of the grader's own, the platform's still counts).

    Raises:
        SandboxError: naming the limit, what the grader holds, and how to lift it.
    """
    ceiling = _ceiling()
    if ceiling is None:
        return
    room = (ceiling - _in_use()) // 2 ** 20
    if room < CHILD_NEEDS_MB:
        needed_kb = (_in_use() // 2 ** 20 + CHILD_NEEDS_MB + (int(memory_mb or 0))) * 1024
        raise SandboxError(f"the grader runs under an address-space limit of {ceiling // 2 ** 20} MB (ulimit -v) "
                           f"and holds {_in_use() // 2 ** 20} MB itself: a submission's process would get {room} MB, "
                           f"under the {CHILD_NEEDS_MB} MB it needs to run at all; raise that limit (ulimit -v "
                           f"{needed_kb} leaves each submission the --memory-mb {int(memory_mb or 0)} it is given) "
                           "and grade again. Not a fault of any submission")


def _in_use() -> int:
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


_MS_RDONLY, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
_CLONE_NEWNS = 0x00020000


def _mount(source, target, fstype, flags, options=None) -> bool:
    libc = _libc()
    if libc is None or not hasattr(libc, "mount"):
        return False

    def encoded(text):
        return None if text is None else os.fsencode(text)
    return libc.mount(encoded(source), encoded(target), encoded(fstype), flags, encoded(options)) == 0


def _mount_points() -> list:
    try:
        with open("/proc/self/mountinfo", "rb") as handle:
            return [os.fsdecode(line.split()[4]).replace("\\040", " ") for line in handle]
    except OSError:
        return []


def contain_files(scratch: str, hidden: tuple, size_mb: int) -> bool:
    """Make every file system read-only for this process but ``scratch``, and hide the folders ``hidden``.

    A mount namespace of the process's own (root only: ``unshare(CLONE_NEWNS)``): a tmpfs of
    ``size_mb`` covers ``scratch`` (all the child may write, and no more than that: it cannot
    fill the grader's disk), every other mount is remounted read-only, and an empty read-only
    tmpfs covers each folder of ``hidden`` (:func:`hideable` ones: the submission's own folder,
    where other students' files may lie, and the grader's working folder). Returns whether it
    worked; where the platform refuses (a container without ``CAP_SYS_ADMIN``), Landlock confines
    the child instead (:func:`~npseq.course.landlock.confine`).
    """
    libc = _libc()
    if libc is None or not hasattr(libc, "unshare") or libc.unshare(_CLONE_NEWNS) != 0:
        return False
    if not (_mount(None, "/", None, _MS_REC | _MS_PRIVATE)
            and _mount("npseq-scratch", scratch, "tmpfs", 0, f"size={size_mb}m,mode=0700")):
        return False
    for point in sorted(set(_mount_points()) - {scratch}, key=len):
        _mount(None, point, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY)
    for folder in hidden:
        _mount("npseq-hidden", folder, "tmpfs", _MS_RDONLY)
    return True


def hideable(folders: tuple, scratch: str) -> tuple:
    """The folders of ``folders`` that a child may be kept from seeing: never one that holds its scratch folder, a
    folder Python imports from, or a module already loaded (an editable install's package folder), since the child
    goes on importing."""
    needed = [os.path.abspath(entry or os.curdir) for entry in sys.path] + [scratch]
    needed += [os.path.dirname(path) for path in (getattr(module, "__file__", None) for module in
                                                   list(sys.modules.values())) if isinstance(path, str)]
    needed = {os.path.realpath(path) + os.sep for path in needed}
    kept = []
    for folder in folders:
        real = os.path.realpath(folder).rstrip(os.sep) + os.sep
        if os.path.isdir(folder) and not any(path.startswith(real) for path in needed):
            kept.append(os.path.realpath(folder))
    return tuple(dict.fromkeys(kept))


def _close_descriptors(keep: tuple) -> None:
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = range(3, 4096)
    for fd in open_fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _enter_sandbox(limits: Limits, scratch: str, files: dict, uid: int | None, printed: int, keep: tuple,
                   hidden: tuple, grader: int) -> None:
    """In the child, before the learner's code: its own session, no descriptor of the grader's, hard limits, and
    where the grader is root, a user of its own and read-only file systems but its scratch folder. Any failure
    here ends the child (the grader reports it)."""
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(printed, 1)
    os.dup2(printed, 2)
    # new streams on descriptors 1 and 2 (the grader's own sys.stdout may sit on another descriptor, closed
    # below), writing through at once, so that what it prints is on file even if it is killed next
    sys.stdout, sys.stderr = (io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8", errors="replace",
                                               line_buffering=True, write_through=True) for fd in (1, 2))
    faulthandler.disable()  # a crash is the grader's one line, not a stack dump of the grader's own code
    _close_descriptors(keep)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file past its size limit is an error, not a killed child
    hidden = hideable(hidden + (os.path.expanduser("~"), os.path.dirname(secret_path())), scratch)
    if uid is not None and contain_files(scratch, hidden, limits.file_size_mb):
        _write_files(scratch, files)  # into the child's own tmpfs, which now covers what the grader wrote
    if uid is not None:
        for path in [scratch] + [os.path.join(scratch, name) for name in os.listdir(scratch)]:
            os.chown(path, uid, uid)
    os.chdir(scratch)
    os.environ.update({"HOME": scratch, "TMPDIR": scratch, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    if limits.memory_mb:
        _limit("RLIMIT_AS", child_address_space(limits.memory_mb))
    if hasattr(resource, "RLIMIT_CPU"):  # SIGXCPU at the soft limit, SIGKILL a second later
        cpu = int(limits.timeout) + 2
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    _limit("RLIMIT_FSIZE", limits.file_size_mb * 2 ** 20)
    _limit("RLIMIT_CORE", 0)
    _limit("RLIMIT_NOFILE", limits.open_files)
    # RLIMIT_NPROC counts every task of the user: its own user's alone, or the grader's and this many more
    tasks = limits.processes + (0 if uid is not None else _tasks_of(os.getuid()))
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    confine(hidden, scratch)  # no mounts (no CAP_SYS_ADMIN, not root) or on top of them: no TCP, no signal out
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    _limit("RLIMIT_NPROC", tasks)
    # Killed with the grader, however the grader ends (set after the user switch, which clears it); a grader
    # that died before this line leaves the child with another parent, and the child ends itself.
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != grader:
        os._exit(70)


@dataclasses.dataclass
class Child:
    """A sandboxed child process serving the grader, with the parent's ends of its pipes."""
    pid: int
    channel: Channel
    scratch: str
    limits: Limits
    others: frozenset    # the grader's other children when this one started: not the submission's to kill
    printed_fd: int      # the grader's own descriptor of the file the child prints into (unlinked: no path)
    status: int | None = None

    def printed(self) -> str:
        """What the child printed (standard output and error), cut to :data:`MAX_PRINTED_BYTES`.

        Read through the grader's own descriptor, opened before the child existed, so that
        nothing the child does to its folder (a link in place of a file, a pipe) matters.
        """
        try:
            data = os.pread(self.printed_fd, MAX_PRINTED_BYTES + 1, 0)
        except OSError:
            return ""
        text = data[:MAX_PRINTED_BYTES].decode("utf-8", errors="replace")
        return text + ("\n[... the rest of what it printed is cut]\n" if len(data) > MAX_PRINTED_BYTES else "")

    def exit_status(self, wait: float = 0.0):
        """The child's ``os.waitpid`` status once it has ended, else ``None`` (waiting up to ``wait`` seconds)."""
        end = time.monotonic() + wait
        while True:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return 0
            if pid:
                self.status = status
                return status
            if time.monotonic() >= end:
                return None
            time.sleep(0.01)

    def close(self) -> None:
        """Kill the child's whole group and every process it left behind, then remove its scratch folder."""
        for fd in (self.channel.read_fd, self.channel.write_fd, self.printed_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.status is None:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
        _LIVE.discard(self.pid)
        reap_orphans(self.others | _LIVE)
        shutil.rmtree(self.scratch, ignore_errors=True)


def _children_of(parent: int) -> list:
    """The processes whose parent is ``parent``, read from /proc (empty where there is no /proc)."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            found.append(int(name))
    return found


_LIVE: set = set()  # the sandboxed children running now


def reap_orphans(keep) -> None:
    """Kill and reap every child of this process but ``keep``: what a submission left behind.

    The grader is a subreaper (:func:`spawn` makes it one), so a grandchild whose parent died,
    even one in a session of its own, becomes the grader's child and is found here.
    """
    for _attempt in range(100):
        strays = [pid for pid in _children_of(os.getpid()) if pid not in keep]
        if not strays:
            return
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _tasks_of(uid: int) -> int:
    """How many tasks (threads included, as RLIMIT_NPROC counts them) the user ``uid`` runs now."""
    count = 0
    for name in filter(str.isdigit, _listdir("/proc")):
        try:
            if os.stat(f"/proc/{name}").st_uid == uid:
                count += len(_listdir(f"/proc/{name}/task")) or 1
        except OSError:
            pass
    return count


def _listdir(path: str) -> list:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _sandbox_uid() -> int:
    """A user id of its own for a child, unused by any running process (where the grader is root)."""
    used = set()
    try:
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    used.add(os.stat(f"/proc/{name}").st_uid)
                except OSError:
                    pass
    except OSError:
        pass
    uid = SANDBOX_UID_BASE + os.getpid() % 1000 * 4
    while uid in used:
        uid += 1
    return uid


def _write_files(folder: str, files: dict) -> None:
    for name, data in files.items():
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(data)


def spawn(serve: Callable[[Channel], None], limits: Limits, files: dict, hidden: tuple = ()) -> Child:
    """Fork a sandboxed child that runs ``serve(channel)``; ``files`` (name -> bytes) are put in its scratch folder,
    and the folders ``hidden`` are out of its sight where the platform allows it (:func:`contain_files`).

    The grader becomes a subreaper and stops being dumpable (so that a child of the same user
    cannot open ``/proc/<grader>/fd/...`` to write into its output).
    """
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_DUMPABLE, 0)
    others = frozenset(_children_of(os.getpid()))
    scratch = tempfile.mkdtemp(prefix="npseq-sandbox-")
    _write_files(scratch, files)
    printed, printed_path = tempfile.mkstemp(prefix="npseq-printed-")
    os.unlink(printed_path)
    uid = _sandbox_uid() if running_as_root() else None
    to_child_read, to_child_write = os.pipe()
    to_parent_read, to_parent_write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    grader = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the grader's code
        code = 0
        try:
            os.close(to_child_write)
            os.close(to_parent_read)
            _enter_sandbox(limits, scratch, files, uid, printed, (to_child_read, to_parent_write), hidden, grader)
            serve(Channel(to_child_read, to_parent_write))
        except BaseException:  # noqa: B036 (the child ends here whatever happened; the parent reports how)
            traceback.print_exc()  # into the child's own output, which the grader shows
            code = 70
        os._exit(code)
    os.close(to_child_read)
    os.close(to_parent_write)
    _LIVE.add(pid)
    return Child(pid, Channel(to_parent_read, to_child_write), scratch, limits, others, printed)


def end_kind(status: int | None) -> str:
    """Which failure :func:`describe_end` says (``"time limit"``, ``"crashed"`` or ``"exited"``), in the grader's
    words whatever the language of the sentence."""
    if status is not None and os.WIFSIGNALED(status):
        return "time limit" if os.WTERMSIG(status) == signal.SIGXCPU else "crashed"
    return "exited"


def describe_end(status: int | None, what: str) -> str:
    """How a child that gave no answer ended, in one line: ``crashed: ... died of SIGSEGV`` or ``exited: ...``."""
    if status is not None and os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if number == signal.SIGXCPU:
            return _("time limit: {what} ran out of CPU time").format(what=what)
        return _("crashed: the process running {what} died of {signal}").format(what=what, signal=name)
    code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
    return _("exited: the process running {what} ended with exit code {code} (os._exit?) before answering").format(
        what=what, code=code)
