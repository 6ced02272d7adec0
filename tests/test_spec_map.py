"""tests/README.md, the map from each module of npseq to the test files that specify it, stays true.

Every module of the package (a file under ``npseq/``, or a folder named with a trailing slash) is named in
the map, every test file of ``tests/`` is named in it, and every file and test it names exists: a new module or
a new test file that the map forgets, or a test renamed under it, fails here.
"""
import pathlib
import re

TESTS = pathlib.Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "npseq"
MAP = (TESTS / "README.md").read_text(encoding="utf-8")
ROWS = [line for line in MAP.splitlines() if line.startswith("| ") and not line.startswith(("| module", "| ---"))]
NAMED = set(re.findall(r"`([^`]+)`", "\n".join(ROWS)))


def _named(module: pathlib.Path) -> bool:
    """Whether the map names ``module`` (``npseq/x/y.py`` as ``x/y.py``), or a folder that holds it."""
    relative = module.relative_to(PACKAGE).as_posix()
    folders = [parent.as_posix() + "/" for parent in pathlib.PurePosixPath(relative).parents if str(parent) != "."]
    return relative in NAMED or any(folder in NAMED for folder in folders)


def test_every_module_of_the_package_has_its_row():
    modules = [path for path in sorted(PACKAGE.rglob("*.py")) if not path.name.startswith("_")
               and "_tutorials" not in path.parts]  # private modules are specified through their public users
    missing = [path.relative_to(PACKAGE).as_posix() for path in modules if not _named(path)]
    assert not missing, f"tests/README.md names no specification for: {missing}"


def test_every_test_file_is_on_the_map_and_every_named_test_file_exists():
    on_disk = {path.name for path in TESTS.glob("test_*.py")}
    named = {name for name in NAMED if re.fullmatch(r"test_\w+\.py", name)}
    assert not on_disk - named, f"test files the map does not name: {sorted(on_disk - named)}"
    assert not named - on_disk, f"the map names test files that do not exist: {sorted(named - on_disk)}"


def test_every_test_the_map_names_exists():
    defined = {name for path in TESTS.glob("test_*.py")
               for name in re.findall(r"^def (test_\w+)", path.read_text(encoding="utf-8"), re.MULTILINE)}
    named = set(re.findall(r"\b(test_\w+)\b(?![.*])", MAP))  # a test's name, not a file's (test_x.py, test_x*.py)
    assert not named - defined, f"tests/README.md names tests that do not exist: {sorted(named - defined)}"
