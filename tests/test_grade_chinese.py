"""``npseq grade FILE --lang zh``: the grader's report in Chinese, its machine-readable parts unchanged.

The learner's file is an honest LSTM step backward with one mistake, the candidate gate ``g``'s
columns of ``dWx`` doubled: the report must say it in Chinese (the score line, the tensor, the
gate and the unit), with no English sentence of the report's catalog left, while the JSON keeps
its English keys and its class-wide words (statuses, diagnoses), and a ``zh_CN`` locale speaks
Chinese unless ``--lang en`` says otherwise.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
from learners import honest_work

from npseq.course.autograder import main as autograder_main
from npseq.course.prairielearn import plans, render
from npseq.course.scoring import Scoring
from npseq.course.verdict import ungradable
from npseq.language import LOCALE_FOLDER, speaking

ROOT = pathlib.Path(__file__).resolve().parent.parent
REPORT_PO = LOCALE_FOLDER / "zh_CN" / "LC_MESSAGES" / "report.po"

ONE_GATE_WRONG = '''

_right = lstm_step_backward


def lstm_step_backward(dnext_h, dnext_c, cache):
    dx, dprev_h, dprev_c, dWx, dWh, db = _right(dnext_h, dnext_c, cache)
    H = dWh.shape[0]
    dWx = dWx.copy()
    dWx[:, 3 * H:] *= 2  # the candidate gate g's columns: twice what they should be
    return dx, dprev_h, dprev_c, dWx, dWh, db
'''


@pytest.fixture(scope="module")
def wrong_file(tmp_path_factory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("chinese") / "hw.py"
    path.write_text(honest_work(["lstm_step_backward"]) + ONE_GATE_WRONG)
    return path


def grade(path: pathlib.Path, *options, lang_env: str | None = None) -> subprocess.CompletedProcess:
    """``python -m npseq grade FILE --only lstm_step_backward OPTIONS`` in the file's folder; ``lang_env`` is ``LANG``
    (the other locale variables unset), ``None`` for the C locale."""
    environ = {name: value for name, value in os.environ.items() if name not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    if lang_env is not None:
        environ["LANG"] = lang_env
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "npseq", "grade", path.name, "--only", "lstm_step_backward",
                           *options], cwd=path.parent, env=environ, capture_output=True, text=True, timeout=300)


def catalog_sentences() -> list:
    """The English of every sentence of the report's catalog: each stretch between its placeholders that holds three
    words or more (a single word, "case" or "ok", may well be part of a name)."""
    from babel.messages.pofile import read_po

    with REPORT_PO.open("rb") as file:
        ids = [message.id for message in read_po(file) if message.id]
    stretches = {part.strip(" ;:,.()") for text in ids for part in re.split(r"\{[^{}]*\}", text)}
    return sorted(part for part in stretches if len(re.findall(r"[A-Za-z]+", part)) >= 3)


def test_a_wrong_gate_is_reported_in_chinese(wrong_file):
    done = grade(wrong_file, "--lang", "zh")
    out = done.stdout
    assert done.returncode == 1, done.stderr
    assert out.startswith("正在评分：hw.py\n")
    assert "== lstm_step_backward(dnext_h, dnext_c, cache)：10/12 个张量正确，0.83 分\n" in out
    assert out.rstrip().endswith("得分：0.83 / 1 分 = 83.3%")
    header = next(line for line in out.splitlines() if "张量" in line and "结论" in line)
    assert header.split() == ["用例", "张量", "形状", "与有限差分的相对误差", "与", "npseq", "的绝对差", "结论"]
    failing = [line for line in out.splitlines() if "未通过" in line]
    assert len(failing) == 2 and all(" dWx " in line for line in failing)
    assert all(re.search(r"未通过（偏差最大处在 dWx\[\d+, \d+\]: 门 g，第 \d+ 个单元；你的值是 \S+，有限差分给出 \S+）",
                         line) for line in failing), failing
    assert out.count("正确") >= 10
    sentences = catalog_sentences()
    assert len(sentences) > 100
    left = [sentence for sentence in sentences if sentence in out]
    assert not left, f"English of the catalog left in the Chinese report: {left}"


def test_the_json_report_keeps_its_keys_and_its_class_wide_words_in_chinese(wrong_file):
    english = json.loads(grade(wrong_file, "--format", "json", "--lang", "en").stdout)
    chinese = json.loads(grade(wrong_file, "--format", "json", "--lang", "zh").stdout)

    def keys(value):
        if isinstance(value, dict):
            return {key: keys(item) for key, item in value.items()}
        if isinstance(value, list):
            return [keys(item) for item in value]
        return None

    assert keys(chinese) == keys(english)
    for report in (english, chinese):
        (lstm,) = report["exercises"]
        assert lstm["status"] == "incorrect" and lstm["correct"] == 10 and lstm["total"] == 12
        assert [row["diagnosis"] for row in lstm["tensors"] if not row["ok"]] == ["dWx: gate g, every unit"] * 2
    wrong = [row["problem"] for row in chinese["exercises"][0]["tensors"] if not row["ok"]]
    assert all("门 g" in problem and "有限差分" in problem for problem in wrong), wrong
    assert all("gate g" in row["problem"] for row in english["exercises"][0]["tensors"] if not row["ok"])


def test_a_chinese_locale_speaks_chinese_unless_lang_says_english(wrong_file):
    by_locale = grade(wrong_file, lang_env="zh_CN.UTF-8").stdout
    assert "个张量正确" in by_locale and "得分：0.83 / 1 分 = 83.3%" in by_locale
    told = grade(wrong_file, "--lang", "en", lang_env="zh_CN.UTF-8").stdout
    assert "10/12 tensors correct, 0.83 points" in told and "score: 0.83 / 1 point = 83.3%" in told
    assert not re.search(r"[\u4e00-\u9fff]", told)
    assert "tensors correct" in grade(wrong_file, lang_env="C.UTF-8").stdout


def test_an_autograder_speaks_the_language_of_its_config(tmp_path, wrong_file):
    scoring = Scoring(only=("lstm_step_backward",), lang="zh")
    assert json.loads(scoring.to_json())["lang"] == "zh" and Scoring.from_json(scoring.to_json()) == scoring
    assert "lang" not in json.loads(Scoring(only=("lstm_step_backward",)).to_json())  # English configs unchanged
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "config.json").write_text(scoring.to_json())
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "hw.py").write_text(wrong_file.read_text())
    assert autograder_main(["--root", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    assert data["output"].startswith("**得分：0.8333 分，满分 1 分。**")
    assert "个张量正确" in data["tests"][0]["output"] and "门 g" in data["tests"][0]["output"]
    assert data["tests"][0]["status"] == "failed"


def test_prairielearn_questions_carry_the_language_and_speak_it():
    questions = plans(["lstm_step_backward"], None, Scoring(), lang="zh")
    assert questions and all(question.scoring.lang == "zh" for question in questions)
    assert all(question.scoring.lang == "en" for question in plans(["lstm_step_backward"], None, Scoring()))
    scoring = questions[0].scoring
    with speaking("zh"):
        data = render(ungradable("缺少文件", scoring))
    assert data["gradable"] is False and data["message"].startswith("无法为这次提交评分，所以不占用你的作答次数：")


def test_a_failure_keeps_its_kind_whatever_the_language_of_its_words():
    from npseq.course.report import FunctionGrade

    grade = FunctionGrade("lstm_step_backward", "lstm_step_backward(dnext_h, dnext_c, cache)", attempted=True,
                          total=12, failure="超时：lstm_step_backward 没有在 60 秒内完成（是死循环吗？）",
                          failure_kind="time limit")
    assert grade.status == "time limit" and grade.diagnoses() == ["time limit"]
    assert FunctionGrade.from_dict(grade.to_dict()).status == "time limit"
    english = FunctionGrade(grade.name, grade.signature, attempted=True, total=12,
                            failure="exited: the process running x ended with exit code 3 (os._exit?) before answering")
    assert english.status == "exited"  # the kind read from the English words, as before


PATH_LEFT_OUT = '''

_right = lstm_step_backward


def lstm_step_backward(dnext_h, dnext_c, cache):
    dx, dprev_h, dprev_c, dWx, dWh, db = _right(dnext_h, dnext_c, cache)
    through_h = dnext_h * cache.o * (1 - cache.tanh_c ** 2)
    return dx, dprev_h, dprev_c - through_h * cache.f, dWx, dWh, db  # the path through next_h left out of dprev_c
'''


def test_the_path_left_out_of_a_sum_is_named_in_chinese(tmp_path):
    """The grader names a path the learner left out of a sum (npseq/course/terms.py): in Chinese, the path too."""
    path = tmp_path / "hw.py"
    path.write_text(honest_work(["lstm_step_backward"]) + PATH_LEFT_OUT)
    said = grade(path, "--lang", "zh").stdout
    assert "dprev_c 恰好等于 npseq 的结果减去求和中的一项 经过 next_h = o * tanh(next_c) 的路径：漏掉了这条路径" in said
    assert "the path through next_h" not in said
    english = grade(path, "--lang", "en").stdout
    assert "dprev_c is npseq's minus exactly one term of its sum, the path through next_h = o * tanh(next_c): that " \
           "path is left out" in english
