"""Wheels an autograder carries, so that the platform's machine installs npseq with no package index.

Every platform grades with exactly the npseq that wrote its files: Gradescope's zip and each
PrairieLearn question carry npseq's own wheel, built here by hand from the installed package
(:func:`wheel_bytes`: it works from an editable install and needs no build tools).
A PrairieLearn grading container has no network, so a question also carries its pure-Python
requirements (:func:`requirement_wheels`: tqdm and threadpoolctl), rebuilt from their installed
copies; the compiled ones (NumPy, Matplotlib) cannot travel as one file for every machine, and the
platform's image must hold them.

A wheel is a zip with the package's files, a ``.dist-info`` folder (METADATA, WHEEL, RECORD)
and, for a command, ``entry_points.txt``; pip makes the commands itself. Entries are sorted and
dated 1980-01-01, so the same files give the same bytes.
"""
from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import importlib.metadata
import io
import os
import re
import zipfile

from .. import __version__
from ..errors import UserError
from .files import write_atomically

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip can hold: the same tree gives the same bytes
_INSTALLERS_FILES = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})
"""What pip writes into an installed ``.dist-info`` (RECORD is written anew for the wheel); not part of a wheel."""


class BundleError(UserError):
    """An autograder's files or npseq's wheel cannot be written (npseq not installed, a file in the way); one line."""


@dataclasses.dataclass(frozen=True)
class ZipEntry:
    """One file of a zip that :func:`zip_bytes` writes."""
    name: str                # its path in the zip, with "/"
    data: bytes
    executable: bool = False  # mode 755 instead of 644 (a script the platform runs)


def zip_bytes(entries) -> bytes:
    """A zip of ``entries``, in their order, with a fixed date and modes: the same entries give the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for entry in entries:
            info = zipfile.ZipInfo(entry.name, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so that unzip honours the modes below
            info.external_attr = (0o100755 if entry.executable else 0o100644) << 16
            archive.writestr(info, entry.data, compresslevel=9)
    return buffer.getvalue()


def _package_folder() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _package_entries() -> list:
    """Every file of the npseq package (but ``__pycache__`` and ``*.pyc``), sorted by its path in the wheel."""
    folder = _package_folder()
    entries = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        for name in files:
            if name.endswith(".pyc"):
                continue
            path = os.path.join(top, name)
            with open(path, "rb") as handle:
                data = handle.read()
            entries.append(ZipEntry("npseq/" + os.path.relpath(path, folder).replace(os.sep, "/"), data))
    return sorted(entries, key=lambda entry: entry.name)


def _npseq_metadata():
    try:
        return importlib.metadata.metadata("npseq"), importlib.metadata.requires("npseq") or []
    except importlib.metadata.PackageNotFoundError:
        raise BundleError("npseq's wheel: npseq's package metadata is not found (npseq is not installed); "
                          "install it first: pip install -e . in its repository, or pip install its wheel") from None


def _metadata_text(version: str) -> str:
    """The wheel's METADATA: name, version, summary, Python and requirements (the extras' markers kept)."""
    installed, requires = _npseq_metadata()
    lines = ["Metadata-Version: 2.1", "Name: npseq", f"Version: {version}"]
    lines += [f"{field}: {installed.get(field)}" for field in ("Summary", "Requires-Python") if installed.get(field)]
    lines += [f"Provides-Extra: {extra}" for extra in installed.get_all("Provides-Extra") or []]
    lines += [f"Requires-Dist: {requirement}" for requirement in requires]
    return "\n".join(lines) + "\n"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _with_record(entries: list, info: str) -> bytes:
    """The wheel of ``entries`` (sorted, RECORD last) whose ``.dist-info`` folder is ``info``."""
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    writer.writerows([entry.name, _record_hash(entry.data), len(entry.data)] for entry in entries)
    writer.writerow([f"{info}/RECORD", "", ""])
    return zip_bytes(entries + [ZipEntry(f"{info}/RECORD", record.getvalue().encode("utf-8"))])


def wheel_name(version: str = __version__) -> str:
    """``npseq-<version>-py3-none-any.whl``, the wheel's file name (a ``-`` in the version becomes ``_``)."""
    return f"npseq-{version.replace('-', '_')}-py3-none-any.whl"


def wheel_bytes(version: str = __version__) -> bytes:
    """npseq's wheel, built from the installed package's files and metadata (see :func:`build_wheel`)."""
    info = f"npseq-{version.replace('-', '_')}.dist-info"
    entries = _package_entries() + [
        ZipEntry(f"{info}/METADATA", _metadata_text(version).encode("utf-8")),
        ZipEntry(f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: npseq\nRoot-Is-Purelib: true\n"
                                  b"Tag: py3-none-any\n"),
        ZipEntry(f"{info}/entry_points.txt", b"[console_scripts]\nnpseq = npseq.cli:main\n")]
    return _with_record(entries, info)


def build_wheel(folder: str) -> str:
    """Write npseq's own wheel into ``folder`` (made if missing); its path.

    The wheel is built by hand from the installed package: every file under the ``npseq``
    package folder (but ``__pycache__`` and ``*.pyc``) and a ``.dist-info`` with METADATA
    (from npseq's installed metadata: summary, Python, requirements), WHEEL, entry_points.txt
    (the ``npseq`` command) and RECORD. So it works from an editable install as from a wheel
    install, with no build tools; with a fixed date and sorted entries, the same tree gives
    the same bytes.

    Raises:
        BundleError: npseq's metadata is not found (npseq is not installed), or ``folder``
            cannot be written.
    """
    path = os.path.join(folder, wheel_name())
    data = wheel_bytes()
    try:
        write_atomically(path, data)
    except OSError as exc:
        raise BundleError(f"npseq's wheel: cannot write {path} ({exc.strerror})") from None
    return path


@dataclasses.dataclass(frozen=True)
class Requirement:
    """One requirement of npseq (``Requires-Dist`` without an extra), as the instructor's machine has it installed."""
    name: str           # as npseq names it: "tqdm"
    specifier: str      # "tqdm>=4.60", as npseq requires it
    version: str        # the installed version
    pure: bool          # its installed copy came from a pure-Python wheel (py3-none-any), which one file carries
    tag: str            # the wheel's tag ("py3-none-any"), or "" when the installed copy says none


def requirements() -> list:
    """npseq's requirements (those of no extra), each as installed here: which are pure Python, which are not.

    Raises:
        BundleError: npseq, or one of its requirements, is not installed.
    """
    _, requires = _npseq_metadata()
    found = []
    for specifier in requires:
        if "extra" in specifier.partition(";")[2]:
            continue
        name = re.match(r"[A-Za-z0-9._-]+", specifier).group()
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise BundleError(f"{name}: npseq requires it ({specifier}) and it is not installed here; "
                              f"pip install {name!r}") from None
        wheel = distribution.read_text("WHEEL") or ""
        tags = re.findall(r"^Tag: (\S+)$", wheel, re.MULTILINE)
        pure = bool(re.search(r"^Root-Is-Purelib: true$", wheel, re.MULTILINE | re.IGNORECASE)) and \
            bool(tags) and all(tag.endswith("-none-any") for tag in tags)
        found.append(Requirement(name, specifier.partition(";")[0].strip(), distribution.version, pure,
                                 _compressed(tags)))
    return found


def _compressed(tags: list) -> str:
    """The tags of a WHEEL file as a wheel's file name holds them: ``py2-none-any`` and ``py3-none-any`` are
    ``py2.py3-none-any`` (PEP 425's compressed tag set); ``""`` for none."""
    if not tags:
        return ""
    fields = zip(*(tag.split("-", 2) for tag in tags))
    return "-".join(".".join(dict.fromkeys(values)) for values in fields)


def _distribution_name(name: str) -> str:
    """A name as a wheel's file name spells it: runs of ``-``, ``_`` and ``.`` become one ``_`` (PEP 427)."""
    return re.sub(r"[-_.]+", "_", name)


def installed_wheel(requirement: Requirement) -> ZipEntry:
    """The wheel of a pure-Python requirement, rebuilt from its installed files; a :class:`ZipEntry` named as its file.

    Its files are those its installer's RECORD lists, less what lies outside the package folder
    (the console scripts, which pip makes again from ``entry_points.txt``), the byte-code caches and
    what the installer added to its ``.dist-info``; RECORD is written anew.

    Raises:
        BundleError: the requirement is not pure Python, or its installed files cannot be read.
    """
    if not requirement.pure:
        raise BundleError(f"{requirement.name}: its installed copy is not a pure-Python wheel's (tag "
                          f"{requirement.tag or 'none'}), so no one file carries it to another machine")
    distribution = importlib.metadata.distribution(requirement.name)
    entries, info = [], ""
    for file in distribution.files or ():
        parts = file.parts
        if parts[0] == ".." or "__pycache__" in parts or file.suffix == ".pyc":
            continue
        if parts[0].endswith(".dist-info"):
            info = parts[0]
            if parts[-1] in _INSTALLERS_FILES:
                continue
        try:
            data = file.locate().read_bytes()
        except OSError as exc:
            raise BundleError(f"{requirement.name}: cannot read its installed file {file} ({exc.strerror})") \
                from None
        entries.append(ZipEntry("/".join(parts), data))
    if not info:
        raise BundleError(f"{requirement.name}: its installed copy lists no .dist-info folder, so it cannot be "
                          "carried as a wheel; pip install it again")
    name = f"{_distribution_name(requirement.name)}-{requirement.version.replace('-', '_')}-{requirement.tag}.whl"
    return ZipEntry(name, _with_record(sorted(entries, key=lambda entry: entry.name), info))


def requirement_wheels() -> list:
    """The wheels of npseq's pure-Python requirements (:func:`installed_wheel`), by name; the others are the
    platform image's to hold (:func:`requirements`)."""
    return [installed_wheel(requirement) for requirement in requirements() if requirement.pure]


__all__ = ["BundleError", "Requirement", "ZipEntry", "build_wheel", "installed_wheel", "requirement_wheels",
           "requirements", "wheel_bytes", "wheel_name", "zip_bytes"]
