"""The Chinese catalogs are complete, current and consistent: the book's (docs/locale) and the course's.

A text of the English book or course that changed, or is new, has no translation or a fuzzy one
until a translator writes it: these tests fail on either, so that stale Chinese cannot ship. A
translation must keep its paragraph's maths, code and numbers, and say each glossary term
(docs/glossary.md) the one way the glossary does.
"""
from __future__ import annotations

import importlib.util
import pathlib
import re
from typing import NamedTuple

import pytest
from optional_tools import require

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytest.importorskip("babel", reason="babel (the test extra) reads the catalogs: pip install -e '.[test]'")
from babel.messages.pofile import read_po  # noqa: E402

_spec = importlib.util.spec_from_file_location("catalogs", ROOT / "tools" / "catalogs.py")
catalogs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(catalogs)

BOOK_CATALOGS = ROOT / "docs" / "locale" / catalogs.BOOK_LANGUAGE / "LC_MESSAGES"
GLOSSARY_PAGE = ROOT / "docs" / "glossary.md"

VARIANTS = {
    "隐状态": ("隐藏状态",),
    "掩蔽": ("掩码",),
    "暂退法": ("丢弃法",),
    "记忆元": ("记忆单元",),
    "强制教学": ("教师强制",),
    "束搜索": ("集束搜索",),
    "注意力汇聚": ("注意力池化",),
    "词元": ("标记", "令牌"),
    "词表": ("词汇表",),
    "层规范化": ("层归一化",),
    "困惑度": ("困惑率",),
}
"""Other translations, seen elsewhere, of some glossary terms: none may appear (the glossary's is the one)."""

# A cross-reference such as {doc}`text <page>`, whose text is translated (not a `{placeholder}` in code).
_ROLE = re.compile(r"(?<![`\w])\{[\w:-]+\}`[^`]+`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]+\$", re.S)
_CODE = re.compile(r"``.*?``|`[^`]+`", re.S)
_TARGET = re.compile(r"\]\([^)]*\)|<[^>]*>|https?://\S+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")


def messages(path: pathlib.Path) -> list:
    """The entries of a ``.po`` or ``.pot`` file, header left out."""
    with path.open("rb") as file:
        return [message for message in read_po(file) if message.id]


def prose(text: str) -> str:
    """``text`` without its maths, code and link targets: what a translator writes anew."""
    return _TARGET.sub(" ", _MATH.sub(" ", _CODE.sub(" ", _ROLE.sub(" ", text))))


def kept_pieces(text: str) -> list:
    """The maths and the code of ``text``, which a translation carries over unchanged."""
    text = _ROLE.sub(" ", text)
    return _MATH.findall(_CODE.sub(" ", text)) + _CODE.findall(text)  # a `$NAME` in code is no formula


class Term(NamedTuple):
    english: str
    chinese: str
    sense: str = ""  # a word the English names alongside when it means this term (``key (attention)``), or ""


def glossary() -> list:
    """The :class:`Term` records of the glossary page's table. An English ``term (ABBREVIATION)`` gives the term;
    ``term (word)`` a term of everyday English (key, value) that means the glossary's only beside ``word``."""
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \| \{doc\}", GLOSSARY_PAGE.read_text(encoding="utf-8"), re.M)
    terms = []
    for english, chinese in rows:
        term, _, qualifier = english.partition(" (")
        qualifier = qualifier.rstrip(")")
        terms.append(Term(term, chinese, qualifier if qualifier.islower() else ""))
    return terms


def _uses(text: str, term: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(term).replace(r"\-", "[- ]") + r"(?:s|es)?(?![\w-])",
                     prose(text), re.I) is not None


def translated_entries() -> list:
    """``(catalog, msgid, msgstr)`` of every translated entry of every Chinese catalog, the book's and the course's."""
    paths = sorted(BOOK_CATALOGS.rglob("*.po")) + [catalogs.po_path(name) for name in catalogs.CATALOGS]
    return [(path, message.id, message.string) for path in paths if path.exists()
            for message in messages(path) if message.string]


# ---------------------------------------------------------------------------------------------------------- the book

@pytest.fixture(scope="module")
def book_templates(tmp_path_factory):
    """The book's texts as they stand, one ``.pot`` per page (the tutorials not run: the texts of their outputs, the
    figures' alt texts, are held by the Chinese build itself, which warns about one without a translation)."""
    for module in ("sphinx", "myst_nb", "jupytext"):
        require(module, "docs")
    return catalogs.extract_book(tmp_path_factory.mktemp("gettext"), execute=False)


@pytest.mark.slow
def test_every_text_of_the_book_has_a_current_chinese_translation(book_templates):
    pots = sorted(book_templates.rglob("*.pot"))
    assert len(pots) >= 17, [str(p) for p in pots]  # 13 tutorials, the landing, demo, design and results pages
    missing = []
    for pot in pots:
        page = pot.relative_to(book_templates).with_suffix(".po")
        translated = {message.id: message for message in messages(BOOK_CATALOGS / page)} \
            if (BOOK_CATALOGS / page).exists() else {}
        for message in messages(pot):
            entry = translated.get(message.id)
            if entry is None or not entry.string or entry.fuzzy:
                state = "missing" if entry is None or not entry.string else "fuzzy"
                missing.append(f"{page}: {state}: {message.id[:90]!r}")
    assert not missing, f"{len(missing)} texts of the book lack a current Chinese translation " \
                        f"(python tools/catalogs.py book, then translate):\n" + "\n".join(missing[:40])


# -------------------------------------------------------------------------------------------------------- the course

def test_every_text_of_the_course_has_a_current_chinese_translation():
    missing = []
    for name, texts in catalogs.course_messages().items():
        path = catalogs.po_path(name)
        translated = {message.id: message for message in messages(path)} if path.exists() else {}
        for text, places in texts.items():
            entry = translated.get(text)
            if entry is None or not entry.string or entry.fuzzy:
                missing.append(f"{name}: {places[0]}: {text[:90]!r}")
    assert not missing, f"{len(missing)} texts of the course lack a current Chinese translation " \
                        f"(python tools/catalogs.py course, then translate):\n" + "\n".join(missing[:40])


@pytest.mark.parametrize("name", catalogs.CATALOGS)
def test_the_shipped_course_catalog_is_compiled_from_its_po(name):
    path = catalogs.po_path(name)
    assert path.with_suffix(".mo").read_bytes() == catalogs.compiled(path), \
        f"{path.with_suffix('.mo').name} is older than {path.name}: python tools/catalogs.py course-compile"


@pytest.mark.parametrize("name", catalogs.CATALOGS)
def test_a_course_translation_keeps_the_placeholders_of_its_text(name):
    placeholder = re.compile(r"(?<!\{)\{([A-Za-z_]\w*)")
    wrong = [(message.id, message.string) for message in messages(catalogs.po_path(name)) if message.string
             and set(placeholder.findall(message.id)) != set(placeholder.findall(message.string))]
    assert not wrong, "\n".join(f"{english!r}\n  -> {chinese!r}" for english, chinese in wrong[:10])


# ------------------------------------------------------------------------------------------------------ every catalog

def test_a_translation_keeps_the_maths_code_and_numbers_of_its_text():
    """A Chinese paragraph states what its English one does: the same formulas, names and numbers."""
    wrong = []
    for path, english, chinese in translated_entries():
        kept = kept_pieces(english)
        lost = [piece for piece in kept if piece not in chinese]
        numbers = set(_NUMBER.findall(prose(english).replace(",", ""))) - set(_NUMBER.findall(chinese.replace(",", "")))
        if lost or numbers:
            wrong.append(f"{path.name}: {english[:70]!r}: lost {lost[:3] + sorted(numbers)[:3]}")
    assert not wrong, f"{len(wrong)} translations lose a formula, a name or a number:\n" + "\n".join(wrong[:30])


def glossary_breaks(english: str, chinese: str, terms: list) -> list:
    """What ``chinese`` says otherwise than the glossary: a term of ``english`` without its translation, a variant."""
    broken = [f"{term.english!r} is not translated as {term.chinese}" for term in terms
              if _uses(english, term.english) and (not term.sense or _uses(english, term.sense))
              and term.chinese not in chinese]
    return broken + [f"{other} where the glossary has {translation}" for translation, others in VARIANTS.items()
                     for other in others if other in chinese]


def test_each_glossary_term_has_one_translation_everywhere():
    terms = glossary()
    assert len(terms) >= 40 and Term("beam search", "束搜索") in terms and Term("key", "键", "attention") in terms
    wrong = [f"{path.name}: {problem}: {chinese[:80]!r}" for path, english, chinese in translated_entries()
             if path.name != "glossary.po"  # the table itself: its English column stays English
             for problem in glossary_breaks(english, chinese, terms)]
    assert not wrong, f"{len(wrong)} translations break the glossary:\n" + "\n".join(wrong[:30])


def test_the_glossary_check_catches_a_second_translation():
    """The check above is not blind: another translation of a term, or a known variant, is caught; a term named
    only in code is not asked for."""
    terms = glossary()
    assert glossary_breaks("Beam search keeps the k best prefixes.", "集束搜索保留 k 个最好的前缀。", terms) == [
        "集束搜索 where the glossary has 束搜索"]
    assert glossary_breaks("the hidden states of the encoder", "编码器的隐藏状态", terms)[0] == \
        "'hidden state' is not translated as 隐状态"
    assert glossary_breaks("`beam_search(decoder, k)` returns", "`beam_search(decoder, k)` 返回", terms) == []
    assert glossary_breaks("Beam search keeps the k best prefixes.", "束搜索保留 k 个最好的前缀。", terms) == []
    assert glossary_breaks("Each query scores every key of the attention.", "每个查询给注意力的每个索引打分。", terms) \
        == ["'key' is not translated as 键"]
    assert glossary_breaks("the key of the exercises", "练习的参考答案", terms) == []  # not attention's key


def test_the_shipped_course_catalogs_are_what_gettext_reads():
    """The package's .mo files are where :mod:`npseq.language` looks, and answer in Chinese."""
    from npseq.language import _, speaking

    first = next(message for message in messages(catalogs.po_path("report")) if message.string and not message.fuzzy)
    with speaking("zh"):
        assert _(first.id) == first.string
    assert _(first.id) == first.id
