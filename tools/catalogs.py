"""Keep the Chinese catalogs in step with the English text, for the course and for the book.

    python tools/catalogs.py course   # extract the course's _("...") texts, merge them into its .po files, compile
    python tools/catalogs.py book     # extract the book's texts (tutorials executed), merge into docs/locale

A text that is new gets an empty entry, and one whose English changed keeps its old translation
marked fuzzy: both are for a translator to write, and ``tests/test_catalogs.py`` fails until they
are. The course's ``.mo`` files are compiled here and shipped in the package (gettext reads them);
the book's are compiled by Sphinx when it builds.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import io
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from npseq.language import CATALOGS, LOCALE_FOLDER, LOCALES  # noqa: E402

COURSE_SOURCES = [ROOT / "npseq" / "course", ROOT / "npseq" / "commands", ROOT / "npseq" / "gradcheck.py"]
HANDOUT_FILES = {"handout.py", "notebook.py", "hints.py", "mistakes.py", "exercise.py", "sheet.py", "exercises.py"}
"""The files whose texts are the hand-out's (the sets' declarations too); every other file's go to the report's."""
HANDOUT_TEXTS = "npseq.course.handout:texts_to_translate"
"""The function that lists the hand-out's texts that are data rather than _("...") calls (the exercises' docstrings)."""
BOOK_LOCALE = ROOT / "docs" / "locale"
BOOK_LANGUAGE = "zh_CN"
UNTRANSLATED_PAGES = ("api/",)
"""The pages that stay English in the Chinese edition: the API reference, generated from the docstrings."""


def catalog_of(path: pathlib.Path) -> str:
    """The catalog that a source file's texts belong to."""
    return "handout" if path.name in HANDOUT_FILES or path.parent.name == "sets" else "report"


def calls_in(source: str):
    """The literal texts of the ``_("...")`` and ``N_("...")`` calls in ``source``, with their line numbers."""
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("_", "N_") and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.args[0].value, node.lineno


def course_messages() -> dict:
    """``{catalog: {text: [where, ...]}}``: every text of the course that a learner may be shown in translation."""
    found = {catalog: {} for catalog in CATALOGS}
    for source in COURSE_SOURCES:
        for path in sorted(source.rglob("*.py")) if source.is_dir() else [source]:
            for text, line in calls_in(path.read_text(encoding="utf-8")):
                where = f"{path.relative_to(ROOT)}:{line}"
                found[catalog_of(path)].setdefault(text, []).append(where)
    module, function = HANDOUT_TEXTS.split(":")
    for text in getattr(importlib.import_module(module), function)():
        found["handout"].setdefault(text, []).append(HANDOUT_TEXTS)
    return found


def po_path(catalog: str, language: str = "zh") -> pathlib.Path:
    return LOCALE_FOLDER / LOCALES[language] / "LC_MESSAGES" / f"{catalog}.po"


def compiled(po: pathlib.Path) -> bytes:
    """The ``.mo`` of a ``.po`` (fuzzy entries left out, as gettext would not use them)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with po.open("rb") as file:
        catalog = read_po(file)
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def update_course() -> None:
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po, write_po

    for catalog_name, texts in course_messages().items():
        template = Catalog(project="npseq", domain=catalog_name)
        for text, places in texts.items():
            template.add(text, locations=[(place, None) for place in places], flags=("python-brace-format",)
                         if "{" in text else ())
        path = po_path(catalog_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            with path.open("rb") as file:
                catalog = read_po(file)
        else:
            catalog = Catalog(locale=LOCALES["zh"], project="npseq", domain=catalog_name)
        catalog.update(template)
        with path.open("wb") as file:
            write_po(file, catalog, width=0, sort_output=False, omit_header=False, ignore_obsolete=True)
        path.with_suffix(".mo").write_bytes(compiled(path))
        untranslated = sum(1 for message in catalog if message.id and (not message.string or message.fuzzy))
        print(f"{path.relative_to(ROOT)}: {len(texts)} texts, {untranslated} to translate")


def compile_course() -> None:
    for catalog_name in CATALOGS:
        path = po_path(catalog_name)
        path.with_suffix(".mo").write_bytes(compiled(path))
        print(f"compiled {path.with_suffix('.mo').relative_to(ROOT)}")


def extract_book(out: pathlib.Path, execute: bool) -> pathlib.Path:
    """The book's message templates (``.pot``), one per page, in ``out``; with ``execute`` the tutorials run, so
    that the texts their outputs show (the figures' alt texts) are extracted too."""
    command = [sys.executable, "-m", "sphinx", "-q", "-b", "gettext", "-d", str(out / "doctrees"),
               str(ROOT / "docs"), str(out / "pot")]
    if not execute:
        command[3:3] = ["-D", "nb_execution_mode=off"]
    subprocess.run(command, check=True, cwd=ROOT, stderr=subprocess.DEVNULL if not execute else None)
    for page in UNTRANSLATED_PAGES:
        for pot in (out / "pot").glob(page + "**/*.pot"):
            pot.unlink()
    return out / "pot"


def update_book() -> None:
    from npseq.data.datasets import find_dataset, how_to_get

    if find_dataset("fra-eng") is None:
        # Without it tutorial 8 draws fewer figures, and the alt texts of the others would leave the catalog.
        raise SystemExit("catalogs.py book: tutorial 8 needs the fra-eng corpus for all its figures: "
                         + how_to_get("fra-eng"))
    with tempfile.TemporaryDirectory() as folder:
        pot = extract_book(pathlib.Path(folder), execute=True)
        subprocess.run([sys.executable, "-m", "sphinx_intl", "update", "-p", str(pot), "-l", BOOK_LANGUAGE,
                        "-d", str(BOOK_LOCALE), "-w", "0"], check=True, cwd=ROOT)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("course", "course-compile", "book"))
    part = parser.parse_args(argv).part
    {"course": update_course, "course-compile": compile_course, "book": update_book}[part]()


if __name__ == "__main__":
    main()
