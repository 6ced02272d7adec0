"""The grader's runtime watch: which of npseq's backward functions a submission's code runs while it is graded.

It runs in the sandboxed child that imports the learner's file and grades one function
(:mod:`npseq.course.grader`). :func:`start`, called before the file is imported, installs two
hooks for the rest of the child's life, and npseq's functions stay untouched (there is no
wrapper to take them out of):

* a profile hook (``sys.setprofile``, and ``threading.setprofile`` for the threads the learner
  starts) sees every Python call. A call of one of npseq's backward functions (the code object
  of the function itself, however the submission reached it) or of a function whose bytecode is
  one of theirs (rebuilt from npseq's source text by ``exec`` or ``compile``) is recorded, the
  outermost only: npseq's backward calling its own helpers is npseq's doing. The one call of
  npseq's that is the grader's own, its forward computing a case's cache (:func:`npseq_own`,
  a loss's forward returns a gradient too), is not recorded.
* an audit hook (``sys.addaudithook``, which nothing removes) records the learner's code
  switching the watch off or reaching around it: ``sys.setprofile``, ``sys.settrace``, a search
  through the process's objects (``gc.get_objects``, ``gc.get_referrers``,
  ``gc.get_referents``), a read of the watch's own functions, an audit hook of its own, the
  interpreter's C API reached through ``ctypes``; the profile hook records a thread started
  where it cannot follow.

Each record is written through at once: the child sends it to the grader as a message of its
own (:data:`KINDS`) the moment it is seen, before npseq's code runs, so nothing the learner's
code does afterwards can take it back; at most :data:`MAX_RECORDS` distinct records are sent.
The hooks keep what they need in their default arguments (reading or replacing those is an
audited event, and recorded) and look up no global or builtin name, so that a submission
cannot blind them by patching a module.

A child whose channel to the grader was swapped for another descriptor when the watch has
something to send ends at once (:data:`WATCH_EXIT`): that function scores 0.

What in-process watching cannot see: a function rebuilt from npseq's source *and edited*
(other bytecode), a gradient worked out in another program the submission starts (a
subprocess, multiprocessing's ``spawn``), a thread started below Python (a C extension of the
submission's own), or a submission that rewrites the interpreter's memory (``ctypes``) or
rewires the grader's objects in its process with callables that have no Python frame. Reading
the file (:mod:`npseq.course.honesty`) and the copy check are the other looks.
"""
from __future__ import annotations

import _thread
import dis
import os
import sys
import threading
import types
from types import MappingProxyType

from .honesty import npseq_backward_names
from .sandbox import Message, _encode

WATCHED = ("npseq.functional", "npseq.exercises", "npseq.course.sheet", "npseq.course.sets",
           "npseq.course.references")
"""The modules (and their submodules) whose backward functions the watch records."""

KINDS = ("watched", "evaded")
"""The kinds of a record's message: npseq's backward run (``what`` names it), the watch switched off or reached
around (``what`` says how)."""

MAX_RECORDS = 50
"""The most distinct records one child sends: a flood of them cannot stall the grader."""

WATCH_EXIT = 86
"""The exit code of a child whose channel to the grader was replaced when the watch had something to send."""

REBUILT = " (rebuilt from its source)"

EVASIONS = {
    "sys.setprofile": "switched the watch off (sys.setprofile)",
    "sys._setprofileallthreads": "switched the watch off (threading.setprofile_all_threads)",
    "sys.settrace": "set a trace function of its own (sys.settrace)",
    "sys._settraceallthreads": "set a trace function of its own (threading.settrace_all_threads)",
    "gc.get_objects": "searched the process's objects (gc.get_objects)",
    "gc.get_referrers": "searched the process's objects (gc.get_referrers)",
    "gc.get_referents": "searched the process's objects (gc.get_referents)",
    "sys.addaudithook": "added an audit hook of its own (sys.addaudithook)",
    "ctypes.dlsym": "called the interpreter's C API (ctypes)",
    "object.__getattr__": "read the watch's own functions",
    "object.__setattr__": "changed the watch's own functions",
    "thread": "started a thread the watch does not follow (_thread.start_new_thread)",
    "error": "made the watch itself raise an error",
}
"""What each audited event (and the two the profile hook sees) says in a record."""


def _watched_module(name: str) -> bool:
    return any(name == watched or name.startswith(watched + ".") for watched in WATCHED)


def npseq_own(fn, /, *args, **kwargs):
    """Call ``fn``, npseq's forward of a case, as the grader's own: npseq's functions it calls are not the learner's.

    Only where nothing but npseq's own code lies between this call and the child's start
    (:func:`start`'s ``roots``): the learner's code calling it gains nothing.
    """
    return fn(*args, **kwargs)


def _opcodes(*names) -> frozenset:
    return frozenset(dis.opmap[name] for name in names if name in dis.opmap)


_CACHE, _EXTENDED, _METHOD, _ATTRIBUTE = (dis.opmap.get(name, -1) for name in ("CACHE", "EXTENDED_ARG", "LOAD_METHOD",
                                                                              "LOAD_ATTR"))
_FLAGGED = _opcodes(*(("LOAD_GLOBAL",) if sys.version_info >= (3, 11) else ())
                    + (("LOAD_ATTR",) if sys.version_info >= (3, 12) else ()))  # their low bit: a flag
_JUMPS = frozenset(dis.hasjrel + dis.hasjabs)


def bytecode_key(code, _cache=_CACHE, _extended=_EXTENDED, _method=_METHOD, _attribute=_ATTRIBUTE, _flagged=_FLAGGED,
                 _jumps=_JUMPS, _len=len, _range=range, _tuple=tuple, _isinstance=isinstance, _str=str,
                 _code_type=types.CodeType) -> tuple:
    """What a function rebuilt from another's source text shares with it: its instructions, its constants (the
    docstring's slot and nested code aside) and the names it uses; not its name, file or line numbers.

    The instructions are read as the same code compiled elsewhere gives them: a method call may be
    compiled two ways (``LOAD_METHOD`` or ``LOAD_ATTR``, and the flag bit of ``LOAD_GLOBAL``, depend
    on whether the module imports the name), which moves the jumps, so jumps count without their
    targets. No global name is looked up: the watch calls it on the learner's code.
    """
    consts = code.co_consts
    if consts and (consts[0] is None or _isinstance(consts[0], _str)):
        consts = consts[1:]
    raw, ops, extended = code.co_code, [], 0
    for at in _range(0, _len(raw), 2):
        op, arg = raw[at], raw[at + 1] | extended
        if op == _cache:
            continue
        if op == _extended:
            extended = arg << 8
            continue
        extended = 0
        if op == _method:
            op = _attribute
        if op in _flagged:
            arg >>= 1
        ops.append((op, None if op in _jumps else arg))
    return (_tuple(ops), _tuple(["<code>" if _isinstance(c, _code_type) else c for c in consts]), code.co_names)


def watched_functions() -> dict:
    """``id(code object) -> (code object, dotted name)`` of every backward function of the :data:`WATCHED` modules
    loaded now (by identity: two code objects may compare equal)."""
    names = set(npseq_backward_names())
    found = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not _watched_module(module_name):
            continue
        for name in sorted(names & set(vars(module))):
            function = getattr(module, name)
            while hasattr(function, "__wrapped__"):
                function = function.__wrapped__
            code = getattr(function, "__code__", None)
            if isinstance(code, types.CodeType):
                found.setdefault(id(code), (code, f"{function.__module__}.{function.__name__}"))
    return found


def _codes_in(code, into: dict) -> None:
    into[id(code)] = code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _codes_in(const, into)


def npseq_codes() -> dict:
    """``id(code object) -> code object`` for every code object of npseq's own modules loaded now: their functions,
    their classes' methods, and the functions defined inside those."""
    codes = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "npseq" or module_name.startswith("npseq.")):
            continue
        for value in list(vars(module).values()):
            members = list(vars(value).values()) if isinstance(value, type) and \
                str(getattr(value, "__module__", "")).startswith("npseq") else [value]
            for member in members:
                for function in (member, getattr(member, "__func__", None), getattr(member, "fget", None),
                                 getattr(member, "fset", None)):
                    while function is not None:
                        code = getattr(function, "__code__", None)
                        if isinstance(code, types.CodeType) and \
                                str(getattr(function, "__module__", "")).startswith("npseq"):
                            _codes_in(code, codes)
                        function = getattr(function, "__wrapped__", None) if isinstance(function, types.FunctionType) \
                            else None
    return codes


def _message(kind: str, what: str) -> bytes:
    return _encode(Message({"kind": kind, "what": what}))


_PREPARED: dict = {}


def prepare() -> dict:
    """What the watch looks for, worked out from npseq's modules loaded now: ``by_id`` (``id(code) -> record``),
    ``by_names`` (``co_names -> ((bytecode_key, record), ...)``), ``trusted`` (ids of npseq's own code) and the code
    objects they name. The grader calls it before it forks a child, so that its children share the work; a child
    copies what it uses before the learner's file is imported."""
    loaded = frozenset(name for name in sys.modules if name == "npseq" or name.startswith("npseq."))
    if _PREPARED.get("loaded") != loaded:
        watched = watched_functions()
        by_names = {}  # the names a function uses: what a rebuilt one keeps, and cheap to look up on every call
        for code, name in watched.values():
            by_names[code.co_names] = by_names.get(code.co_names, ()) + ((bytecode_key(code),
                                                                          _message("watched", name + REBUILT)),)
        trusted = npseq_codes()
        trusted.pop(id(npseq_own.__code__), None)
        _PREPARED.clear()
        _PREPARED.update(loaded=loaded, by_names=by_names, trusted=frozenset(trusted),
                         by_id={number: _message("watched", name) for number, (_, name) in watched.items()},
                         codes=tuple(code for code, _ in watched.values()) + tuple(trusted.values()))
    return _PREPARED


_STARTED = []


def start(fd: int, roots: tuple, learners_file: str = "") -> None:
    """Watch this process for the rest of its life, sending each record to the grader on the descriptor ``fd``.

    Args:
        fd: the child's end of its channel to the grader.
        roots: the grader's functions that serve in the child: a call of npseq's below one of these,
            through npseq's code only and :func:`npseq_own`, is the grader's own.
        learners_file: the path the learner's file is compiled under. The code of the first ``exec`` of code
            compiled from it (the import of the file) is the learner's own text: never "rebuilt from npseq's
            source" however much it is like npseq's (a function written from the hints converges on npseq's
            bytecode), since text in the file is the copy check's to judge (:mod:`npseq.course.copies`). Code
            built at run time, even under that file's name, is new code objects and stays watched.

    Raises:
        RuntimeError: the process is watched already (an audit hook cannot be taken back).
    """
    if _STARTED:
        raise RuntimeError("this process is watched already")
    _STARTED.append(True)
    prepared = prepare()
    by_id, by_names = MappingProxyType(dict(prepared["by_id"])), MappingProxyType(dict(prepared["by_names"]))
    evasions = {event: _message("evaded", what) for event, what in EVASIONS.items()}
    pipe = os.fstat(fd)
    sent = set()
    spawn = id(sys.modules["npseq.course.sandbox"].spawn.__code__)
    own, serving = id(npseq_own.__code__), frozenset(id(root.__code__) for root in roots)
    thread_start, threading_names = threading.Thread.start.__code__, vars(threading)
    starters = frozenset(id(getattr(_thread, name)) for name in dir(_thread)
                         if name.startswith(("start_new", "start_joinable")))

    def send(message, _sent=sent, _most=MAX_RECORDS, _write=os.write, _fd=fd, _fstat=os.fstat,
             _where=(pipe.st_dev, pipe.st_ino), _exit=os._exit, _code=WATCH_EXIT, _len=len, _error=OSError):
        if message in _sent or _len(_sent) >= _most:
            return
        _sent.add(message)
        try:
            now = _fstat(_fd)
            if (now.st_dev, now.st_ino) != _where:
                _exit(_code)
            while message:
                message = message[_write(_fd, message):]
        except _error:
            _exit(_code)

    written = {}  # id -> code object of the learner's file as imported (kept alive, so that no id is reused)

    def what_runs(code, _by_id=by_id, _by_names=by_names, _id=id, _key=bytecode_key, _keep=prepared["codes"],
                  _written=written):
        """The record of ``code`` when it is npseq's backward or one rebuilt from its source; else None."""
        message = _by_id.get(_id(code))
        if message is not None:
            return message
        if _id(code) in _written:
            return None
        same = _by_names.get(code.co_names)
        if same is None:
            return None
        key = _key(code)
        for theirs, message in same:
            if theirs == key:
                return message
        return None

    def learners(frame, _what=what_runs, _trusted=prepared["trusted"],
                 _own=own, _roots=serving, _spawn=spawn, _id=id):
        """Whether the call in ``frame`` of npseq's backward is the learner's: not inside another one, and not the
        grader's own forward (npseq's code only, down to the child's start, through :func:`npseq_own`)."""
        caller, own = frame.f_back, False
        while caller is not None:
            code = caller.f_code
            if _what(code) is not None:
                return False  # npseq's backward calling its own helpers: the outer call is recorded
            number = _id(code)
            if number in _roots:
                below = caller.f_back
                return not (own and below is not None and _id(below.f_code) == _spawn)
            if number == _own:
                own = True
            elif number not in _trusted:
                return True
            caller = caller.f_back
        return True  # a thread's or a process's own stack: the learner's

    def hook(frame, event, arg, _what=what_runs, _learners=learners, _send=send, _starters=starters,
             _start=thread_start, _threading=threading_names, _getprofile=sys.getprofile,
             _thread_message=evasions["thread"], _error_message=evasions["error"], _id=id, _base=BaseException,
             _recursion=RecursionError, _memory=MemoryError):
        try:
            if event == "call":
                message = _what(frame.f_code)
                if message is not None and _learners(frame):
                    _send(message)
            elif event == "c_call" and _id(arg) in _starters:
                if not (frame.f_code is _start and _threading.get("_profile_hook") is _getprofile()):
                    _send(_thread_message)
        except (_recursion, _memory):
            pass
        except _base:  # an exception out of a profile hook would switch it off
            _send(_error_message)

    ours = frozenset(id(function) for function in (send, what_runs, learners, hook, bytecode_key, npseq_own))

    def audit(event, args, _evasions=MappingProxyType(evasions), _ours=ours, _send=send, _hook=hook,
              _getprofile=sys.getprofile, _id=id, _len=len, _isinstance=isinstance, _str=str, _base=BaseException,
              _written=written, _file=learners_file, _codes_in=_codes_in, _code_type=types.CodeType):
        if event == "exec" and _file and not _written:
            code = args[0] if _len(args) else None
            if _isinstance(code, _code_type) and code.co_filename == _file:
                _codes_in(code, _written)
            return
        message = _evasions.get(event)
        if message is None:
            return
        try:
            if event == "ctypes.dlsym":
                name = args[1] if _len(args) > 1 else ""
                if not (_isinstance(name, _str) and name.lstrip("_").startswith("Py")):
                    return
            elif event.startswith("object."):
                if _id(args[0]) not in _ours:
                    return
            if _getprofile() is _hook:
                _send(message)
        except _base:
            pass

    sys.addaudithook(audit)
    threading.setprofile(hook)
    sys.setprofile(hook)
