"""``npseq exercises --lang zh``: the hand-out in Chinese, written through the real command line.

The prose is Chinese (the intro, the exercises' text, the hints, the classic mistakes, the notebook's
Markdown); the code, the equations, the names and the signatures are what the English hand-out has, so
that the Chinese skeleton, once solved, scores what the English one does.
"""
from __future__ import annotations

import ast
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from npseq.course.exercise import solution_source
from npseq.course.handout import NOTEBOOK_NAME, SKELETON_NAME
from npseq.course.sheet import EXERCISE_BY_NAME

ROOT = pathlib.Path(__file__).resolve().parent.parent
HANDOUT_PO = ROOT / "npseq" / "locale" / "zh_CN" / "LC_MESSAGES" / "handout.po"
_LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _environment(locale: str = "C.UTF-8") -> dict:
    environ = {name: value for name, value in os.environ.items() if name not in _LOCALE_VARIABLES}
    return {**environ, "LANG": locale, "PYTHONPATH": str(ROOT) + os.pathsep + environ.get("PYTHONPATH", "")}


def npseq(*words, locale: str = "C.UTF-8", timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m npseq WORDS`` in the repository, under ``locale``, as a learner or an instructor runs it."""
    return subprocess.run([sys.executable, "-m", "npseq", *map(str, words)], cwd=ROOT, env=_environment(locale),
                          capture_output=True, text=True, timeout=timeout)


def handout(folder: pathlib.Path, *words, locale: str = "C.UTF-8") -> dict:
    """The files ``npseq exercises --out folder WORDS`` writes, name -> text."""
    done = npseq("exercises", "--out", folder, *words, locale=locale)
    assert done.returncode == 0, done.stderr
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def chinese(tmp_path_factory) -> dict:
    return handout(tmp_path_factory.mktemp("zh"), "--lang", "zh")


@pytest.fixture(scope="module")
def english(tmp_path_factory) -> dict:
    return handout(tmp_path_factory.mktemp("en"), "--lang", "en")


def _flat(text: str) -> str:
    return " ".join(text.split())


def catalog_sentences() -> list:
    """The msgids of handout.po that are whole English sentences of prose (no placeholder, no code line)."""
    babel = pytest.importorskip("babel.messages.pofile", reason="babel (the test extra) reads the catalogs")
    with HANDOUT_PO.open("rb") as file:
        ids = [_flat(message.id) for message in babel.read_po(file) if message.id]
    return [text for text in ids if re.fullmatch(r"[A-Z][^{}=\n]*[a-z)][.:]", text) and len(text.split()) >= 5]


def test_the_readme_and_the_skeleton_are_in_chinese(chinese):
    skeleton, readme = chinese[SKELETON_NAME], chinese["README.md"]
    assert skeleton.startswith('"""手写反向传播：序列模型的十个反向传播。\n')
    assert "练习，大致由易到难：" in skeleton and "1. ``rnn_step_backward``               一个 tanh RNN 步" in skeleton
    assert "# ----" in skeleton and " 5. 加性注意力\n" in skeleton
    # the first exercise's own text, its Structure hints included, in the skeleton and in the README
    for text in (skeleton, readme):
        assert "普通 RNN 单步 ``next_h = tanh(x @ Wx + prev_h @ Wh + b)`` 的反向传播。" in text
        assert "损失只通过 next_h 到达这一步。先经过 tanh 回到它的预激活 a" in text
        assert "cache.prev_h  (N, H)  上一步的隐状态" in text
    assert 'raise NotImplementedError("rnn_step_backward：方程在文档字符串里")' in skeleton
    assert readme.startswith("# 反向传播练习\n\n请在 `backprop_exercises.py` 中")
    assert "## 评分" in readme and "## 练习一览" in readme and "| # | 函数 | 评分的梯度 | 练习的内容 |" in readme
    assert "## 如何读懂未通过的检查" in readme and "**db 没有沿批量求和** (`rnn_step_backward`)" in readme
    assert "在 `Structure:` 下说明梯度的流向（方程留给你自己推导）。" in readme


def test_the_equations_code_and_shapes_stay_as_they_are(chinese, english):
    skeleton = chinese[SKELETON_NAME]
    for line in ("        a       = x @ Wx + prev_h @ Wh + b               (N, 4H) = [a_i, a_f, a_o, a_g]",
                 "            cache.Wh      (H, H)",
                 "        dx (N, D), dprev_h (N, H), dWx (D, H), dWh (H, H), db (H,).",
                 "    npseq grade backprop_exercises.py --only rnn_step_backward"):
        assert line in english[SKELETON_NAME] and line in skeleton, line
    def code(text):  # the lines of code that are not the placeholders' messages, their comments left out
        return [line.split("  #")[0] for line in text.splitlines()
                if line.lstrip().startswith(("def ", "from ", "import ", "sys.exit(", "if ", ")"))
                and not _CJK.search(line.split("  #")[0]) and "NotImplementedError" not in line]

    assert len(code(english[SKELETON_NAME])) > 10
    assert [line for line in code(english[SKELETON_NAME]) if line not in code(skeleton)] == []


def test_no_english_sentence_of_the_catalog_is_left_in_the_chinese_handout(chinese, english):
    sentences = catalog_sentences()
    english_text = _flat(english[SKELETON_NAME] + " " + english["README.md"])
    assert sum(sentence in english_text for sentence in sentences) >= 15  # the check is not blind
    chinese_text = _flat(chinese[SKELETON_NAME] + " " + chinese["README.md"])
    assert [sentence for sentence in sentences if sentence in chinese_text] == []


def _solved(skeleton: str) -> str:
    """``skeleton`` with each exercise's body (after its docstring) replaced by the sheet's solution's."""
    lines = skeleton.splitlines(keepends=True)
    for node in reversed([node for node in ast.parse(skeleton).body if isinstance(node, ast.FunctionDef)]):
        source = solution_source(EXERCISE_BY_NAME[node.name].solution)
        solution = ast.parse(source).body[0]
        body = source.splitlines(keepends=True)[solution.body[0].end_lineno:]
        lines[node.body[0].end_lineno:node.end_lineno] = body
    return "".join(lines)


def test_the_chinese_skeleton_keeps_the_signatures_and_solved_scores_full_marks(chinese, english, tmp_path):
    def signatures(text):
        return [(node.name, ast.dump(node.args)) for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)]

    assert signatures(chinese[SKELETON_NAME]) == signatures(english[SKELETON_NAME])
    compile(chinese[SKELETON_NAME], SKELETON_NAME, "exec")
    solved = tmp_path / "my_backprop.py"
    solved.write_text(_solved(chinese[SKELETON_NAME]), encoding="utf-8")
    assert "损失只通过 next_h 到达这一步。" in solved.read_text(encoding="utf-8")
    done = npseq("grade", solved, "--set", "classic", "--format", "json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["points"] == report["max_points"] == 10, {key: report[key] for key in ("points", "max_points")}


def test_the_chinese_notebook_has_chinese_markdown(tmp_path):
    files = handout(tmp_path, "--lang", "zh", "--notebook", "--set", "transformer")
    cells = json.loads(files[NOTEBOOK_NAME])["cells"]
    markdown = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]
    assert markdown[0].startswith("# 反向传播练习\n\n请在下面写出各个反向传播：")
    assert markdown[1].startswith("## 1. 带掩蔽的 softmax: `masked_softmax_backward`\n\n只在有效的键上做 softmax。")
    assert any(text.startswith("## 2. 缩放点积注意力: `scaled_dot_product_attention_backward`") for text in markdown)
    assert markdown[-1].startswith("## 评分\n\n保存笔记本，然后运行下面的单元格")
    assert all(_CJK.search(text) for text in markdown)
    code = "\n\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
    compile(code, NOTEBOOK_NAME, "exec")
    assert '"""缩放点积注意力（Vaswani 等人）的反向传播。（方程在上面的单元格里）"""' in code


def test_a_chinese_locale_writes_chinese_and_lang_en_overrides_it(tmp_path, english):
    by_locale = handout(tmp_path / "locale", locale="zh_CN.UTF-8")
    assert by_locale[SKELETON_NAME].startswith('"""手写反向传播')
    overridden = handout(tmp_path / "en", "--lang", "en", locale="zh_CN.UTF-8")
    assert overridden == english
    assert not _CJK.search(english[SKELETON_NAME] + english["README.md"])
    assert handout(tmp_path / "plain") == english  # no --lang, no Chinese locale: English


def test_the_autograders_carry_the_language(tmp_path):
    """``--gradescope`` and ``--prairielearn`` write the choice into their config.json, so that the students'
    results speak the hand-out's language; an English autograder's config.json has no such field."""
    import zipfile

    for lang, locale in (("zh", "C.UTF-8"), (None, "zh_CN.UTF-8"), ("en", "zh_CN.UTF-8")):
        folder = tmp_path / f"{lang}-{locale}"
        words = ["exercises", "--gradescope", folder / "autograder.zip", "--prairielearn", folder / "questions"]
        done = npseq(*words, *(["--lang", lang] if lang else []), locale=locale)
        assert done.returncode == 0, done.stderr
        with zipfile.ZipFile(folder / "autograder.zip") as bundle:
            gradescope = json.loads(bundle.read("config.json"))
        prairielearn = json.loads((folder / "questions" / "npseq_classic" / "tests" / "config.json").read_text())
        expected = lang or "zh"
        for config in (gradescope, prairielearn):
            assert config.get("lang", "en") == expected, (lang, locale, config)
