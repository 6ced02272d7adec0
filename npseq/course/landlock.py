"""Landlock: a process confines its own access to files, TCP and signals, without any privilege (Linux >= 5.13).

The sandbox's child calls :func:`confine` before it runs a learner's code. Where the grader
cannot make a mount namespace (a container without ``CAP_SYS_ADMIN``, or a grader that is
not root), this is what keeps the child from reading the folders it has no business
seeing and from writing anywhere but its scratch folder; where it can, it adds what mounts
do not give: no TCP, no signal to a process outside the sandbox.

A Landlock *ruleset* names the kinds of access it handles; every access of those kinds is
then denied unless a rule grants it beneath a folder. The kernel's ABI version says which
kinds it knows (:func:`abi_version`): files from version 1 (with renames across folders
from 2, truncation from 3, device ioctls from 5), TCP bind and connect from 4, signals and
abstract Unix sockets leaving the sandbox from 6. Each is handled where the kernel has it.
"""
from __future__ import annotations

import ctypes
import os
import stat
import struct

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same number on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_MAKE_AND_REMOVE = sum(1 << bit for bit in range(4, 13))  # remove dir/file, make char/dir/reg/sock/fifo/block/sym
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_RIGHTS = {1: EXECUTE | WRITE_FILE | READ_FILE, 3: TRUNCATE, 5: IOCTL_DEV}
_ALL_RIGHTS = {1: EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | _MAKE_AND_REMOVE, 2: REFER, 3: TRUNCATE, 5: IOCTL_DEV}
READ_ONLY = EXECUTE | READ_FILE | READ_DIR

_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1


def _syscall():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    call = getattr(libc, "syscall", None)
    if call is not None:
        call.restype = ctypes.c_long
    return call


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 where it has none (an older kernel, Landlock off, not Linux)."""
    call = _syscall()
    if call is None:
        return 0
    version = call(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _rights(table: dict, abi: int) -> int:
    return sum(bits for version, bits in table.items() if version <= abi)


def _ruleset_attr(abi: int) -> bytes:
    """``struct landlock_ruleset_attr`` as this ABI knows it: files; then TCP (4); then scopes (6)."""
    files = _rights(_ALL_RIGHTS, abi)
    if abi < 4:
        return struct.pack("=Q", files)
    if abi < 6:
        return struct.pack("=QQ", files, _NET_BIND_TCP | _NET_CONNECT_TCP)
    return struct.pack("=QQQ", files, _NET_BIND_TCP | _NET_CONNECT_TCP, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)


def _grant(call, ruleset: int, path: str, rights: int, abi: int) -> None:
    """Grant ``rights`` beneath ``path`` (a file: its file rights only). A link gets no rule: its target is reached,
    or not, through the path it resolves to."""
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode):
            return
        if not stat.S_ISDIR(mode):
            rights &= _rights(_FILE_RIGHTS, abi)
        attr = struct.pack("=Qi", rights, fd)  # struct landlock_path_beneath_attr is packed: 12 bytes
        call(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.c_char_p(attr),
             ctypes.c_uint32(0))
    finally:
        os.close(fd)


def readable_around(hidden: tuple, root: str = os.sep) -> list:
    """The paths whose trees hold everything under ``root`` but the folders ``hidden`` (absolute, real paths): the
    other entries of every folder on the way down to a hidden one, and ``root`` itself where none lies under it."""
    hidden = {folder.rstrip(os.sep) or os.sep for folder in hidden}
    if root in hidden:
        return []
    if not any(folder.startswith(root.rstrip(os.sep) + os.sep) for folder in hidden):
        return [root]
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return []
    paths = []
    for entry in entries:
        paths += readable_around(tuple(hidden), os.path.join(root, entry))
    return paths


def confine(hidden: tuple, writable: str) -> int:
    """Confine this process, and whatever it starts, for good: it may read everything but the folders ``hidden``,
    write beneath ``writable`` only (and into ``/dev/null``), neither bind nor connect TCP sockets, and neither
    signal nor reach by an abstract Unix socket a process outside (what the kernel's ABI has of these).

    The process must hold no-new-privileges (``prctl(PR_SET_NO_NEW_PRIVS)``) or ``CAP_SYS_ADMIN``.
    Descriptors it already holds keep their access.

    Returns:
        the ABI version enforced, or 0 where the kernel has no Landlock or refuses (nothing changed then).
    """
    abi, call = abi_version(), _syscall()
    if not abi or call is None:
        return 0
    attr = _ruleset_attr(abi)
    ruleset = call(_CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return 0
    try:
        for path in readable_around(tuple(os.path.realpath(folder) for folder in hidden)):
            _grant(call, ruleset, path, READ_ONLY, abi)
        for path in (os.path.realpath(writable), os.devnull):  # writing to /dev/null is what discarding output is
            _grant(call, ruleset, path, _rights(_ALL_RIGHTS, abi), abi)
        if call(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return 0
    finally:
        os.close(ruleset)
    return abi


__all__ = ["abi_version", "confine", "readable_around"]
