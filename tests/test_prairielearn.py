"""PrairieLearn: the question folders `npseq exercises --prairielearn` writes, results.json against PrairieLearn's
documented fields, the grader run on a root laid out as PrairieLearn's /grade, and a round trip through the question's
run.sh as the grading container runs it (npseq installed from the question's wheels, with no package index)."""
import json
import os
import pathlib
import re
import runpy
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from npseq import samples
from npseq.cli import main as npseq_main
from npseq.course.cases import seed_of
from npseq.course.handout import SKELETON_NAME, chosen_exercises, skeleton_source, solutions
from npseq.course.prairielearn import IMAGE, MAX_JOB_TIMEOUT, MEMORY_MB, not_installed, plans, question_html, render
from npseq.course.prairielearn_grader import main as grader_main
from npseq.course.sandbox import running_as_root
from npseq.course.scoring import Scoring
from npseq.course.sheet import EXERCISE_BY_NAME, SET_NAMES, names_of_sets
from npseq.course.verdict import verdict_of
from npseq.course.wheels import BundleError, requirements, wheel_name

# PrairieLearn's documented fields ("External Grading": Grading results, and the <pl-external-grader-results>
# element), each with its type; a results.json holds these and no others.
RESULTS_FIELDS = {"gradable": bool, "score": (int, float), "message": str, "output": str, "images": list,
                  "tests": list, "format_errors": (str, list)}
TEST_FIELDS = {"name": str, "description": str, "points": (int, float), "max_points": (int, float), "message": str,
               "output": str, "images": list}
RESULTS_BYTES = 1_000_000  # "this file should be limited to 1 MB"
DEFAULT_JOB_TIMEOUT = 30   # seconds: "This property is optional and defaults to 30 seconds"
# info.json: a question's documented properties, and externalGradingOptions' (the infoQuestion schema)
INFO_FIELDS = {"uuid", "type", "title", "topic", "tags", "authors", "comment", "gradingMethod", "singleVariant",
               "showCorrectAnswer", "partialCredit", "externalGradingOptions", "dependencies"}
GRADING_OPTIONS = {"image", "entrypoint", "serverFilesCourse", "timeout", "enableNetworking", "environment"}

STEPS = ("rnn_step_backward", "lstm_step_backward")
GRADE_ONLY = [word for name in STEPS for word in ("--only", name)]  # npseq grade's --only is repeated
EXERCISES_ONLY = ["--only", *STEPS]                                 # npseq exercises' takes several names
SOLVED = solutions(chosen_exercises(list(STEPS)))
HALF_DONE = solutions(chosen_exercises(["rnn_step_backward"])) + "\n\n" + \
    skeleton_source(EXERCISE_BY_NAME["lstm_step_backward"])  # the first written, the second as handed out
BROKEN = "def rnn_step_backward(dnext_h, cache):\n    return (\n"
MISSING_IMPORT = "import numpy_but_misspelled\n\n" + SOLVED
LOOPING = SOLVED + "\n\ndef lstm_step_backward(dnext_h, dnext_c, cache):\n    while True:\n        pass\n"
HANDED_IN_NPSEQ = (SOLVED + "\n\nfrom npseq.functional import lstm_step_backward as npseq_lstm\n\n\n"
                   "def lstm_step_backward(dnext_h, dnext_c, cache):\n"
                   "    return npseq_lstm(dnext_h, dnext_c, cache)\n")
LOUD = 'def rnn_step_backward(dnext_h, cache):\n    raise ValueError("m" * 30_000_000)\n'


def forging(root: pathlib.Path) -> str:
    """The Gradescope bundle's hostile file: it writes a score of its own into results.json when imported, then ends
    the process."""
    results_json = str(root / "results" / "results.json")
    return (f"import json, os\nos.makedirs(os.path.dirname({results_json!r}), exist_ok=True)\n"
            f"with open({results_json!r}, 'w') as handle:\n    json.dump({{'score': 1000, 'tests': []}}, handle)\n"
            "os._exit(0)\n")


KILLING = ("import json, os\njson.dump({'gradable': True, 'score': 1.0}, open('results.json', 'w'))\n"
           "os.kill(os.getppid(), 9)\n")  # the forged report and the killed grader of tests/test_grade_hostile.py


def validate(data: dict) -> None:
    """``data`` is a results.json as PrairieLearn documents it: its fields and theirs, typed, the score in [0, 1]
    (or none, not gradable), the tests' points summing to the score's share, the file under 1 MB."""
    assert len(json.dumps(data, allow_nan=False)) < RESULTS_BYTES
    assert set(data) <= set(RESULTS_FIELDS), set(data) - set(RESULTS_FIELDS)
    for field, kind in RESULTS_FIELDS.items():
        assert field not in data or isinstance(data[field], kind), (field, data[field])
    assert isinstance(data["gradable"], bool) and data["message"]
    if not data["gradable"]:
        assert "score" not in data and "tests" not in data and data["format_errors"]
        assert all(isinstance(error, str) for error in data["format_errors"])
        return
    assert type(data["score"]) is float and 0 <= data["score"] <= 1
    for test in data["tests"]:
        assert set(test) <= set(TEST_FIELDS), set(test) - set(TEST_FIELDS)
        for field, kind in TEST_FIELDS.items():
            assert field not in test or isinstance(test[field], kind), (field, test)
        assert {"name", "points", "max_points"} <= set(test)  # every test: else PrairieLearn shows no points at all
        assert 0 <= test["points"] <= test["max_points"]
    total = sum(test["max_points"] for test in data["tests"])
    assert data["score"] == pytest.approx(sum(test["points"] for test in data["tests"]) / total, abs=1e-6)


def generate(question: pathlib.Path, variant_seed: int) -> dict:
    """The variant's ``data`` as PrairieLearn makes it: the question's ``server.py`` ``generate()`` on a fresh data."""
    data = {"params": {}, "correct_answers": {}, "variant_seed": variant_seed}
    runpy.run_path(str(question / "server.py"))["generate"](data)
    return data


def lay_out(root: pathlib.Path, question: pathlib.Path, text: str, data: dict,
            name: str = SKELETON_NAME) -> pathlib.Path:
    """``root`` as PrairieLearn's /grade: the question's tests/, the student's file, data/data.json; results/ absent
    (PrairieLearn does not make it)."""
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(question / "tests", root / "tests")
    (root / "student").mkdir()
    (root / "student" / name).write_text(text)
    (root / "data").mkdir()
    (root / "data" / "data.json").write_text(json.dumps(data))
    return root / "student" / name


def grade_here(root: pathlib.Path) -> dict:
    """The grader as run.sh runs it, in this process; the results.json it wrote, validated."""
    assert grader_main(["--root", str(root)]) == 0
    data = json.loads((root / "results" / "results.json").read_text())
    validate(data)
    return data


def npseq_grade(path: pathlib.Path, seed: int, capsys) -> dict:
    """``npseq grade FILE --only ... --seed S --timeout 10 --format json``'s report."""
    capsys.readouterr()
    npseq_main(["grade", str(path), *GRADE_ONLY, "--seed", str(seed), "--timeout", "10", "--format", "json"])
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def agrees_with_npseq_grade(data: dict, report: dict) -> None:
    """PrairieLearn's results and ``npseq grade``'s report say the same: not gradable where npseq cannot grade the
    file, else the same score (npseq's in percent, each exercise one point)."""
    assert data["gradable"] == ("error" not in report), (data, report)
    if data["gradable"]:
        assert data["score"] == pytest.approx(report["score"] / 100, abs=1e-6)
    else:
        assert report["error"] in data["format_errors"][0]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The folder `npseq exercises --prairielearn` writes for the two steps: one question, npseq_classic."""
    folder = tmp_path_factory.mktemp("course")
    assert npseq_main(["exercises", "--prairielearn", str(folder), *EXERCISES_ONLY, "--timeout", "10"]) == 0
    return folder


def test_the_command_writes_one_question_per_set_with_what_prairielearn_reads(course):
    question = course / "npseq_classic"
    names = sorted(str(path.relative_to(course)) for path in course.rglob("*") if path.is_file())
    carried = [f"npseq_classic/tests/{name}" for name in [wheel_name()] + [
        f"{r.name}-{r.version}-py3-none-any.whl" for r in requirements() if r.pure]]
    assert names == sorted(["Dockerfile", "README.txt", "npseq_classic/info.json", "npseq_classic/question.html",
                            "npseq_classic/server.py", f"npseq_classic/{SKELETON_NAME}", "npseq_classic/tests/run.sh",
                            "npseq_classic/tests/config.json", *carried])
    assert [r.name for r in requirements() if r.pure] == ["tqdm", "threadpoolctl"]  # numpy, matplotlib: the image's
    info = json.loads((question / "info.json").read_text())
    assert set(info) <= INFO_FIELDS and set(info["externalGradingOptions"]) <= GRADING_OPTIONS
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", info["uuid"])
    assert info["type"] == "v3" and info["gradingMethod"] == "External" and info["title"] and info["topic"]
    options = info["externalGradingOptions"]
    assert options == {"image": IMAGE, "entrypoint": "/grade/tests/run.sh", "timeout": 30 + 3 * 10,
                       "enableNetworking": False}
    assert os.access(question / "tests" / "run.sh", os.X_OK)
    scoring = Scoring.from_json((question / "tests" / "config.json").read_text())
    assert scoring.names == STEPS and scoring.timeout == 10 and scoring.memory_mb == MEMORY_MB
    assert not scoring.per_student and not scoring.secret
    html = (question / "question.html").read_text()
    editor = re.search(r'<pl-file-editor file-name="([^"]+)" ace-mode="ace/mode/python" source-file-name="([^"]+)"',
                       html)
    assert editor and editor.groups() == (SKELETON_NAME, SKELETON_NAME) and (question / SKELETON_NAME).is_file()
    assert "<pl-external-grader-results></pl-external-grader-results>" in html and "{{params.seed}}" in html
    assert html.count("<pl-question-panel>") == 1 and html.count("<pl-submission-panel>") == 1
    for name in STEPS:  # each exercise's text and equations, as the hand-out gives them, escaped for HTML
        assert f"<code>{EXERCISE_BY_NAME[name].signature}</code>" in html
    assert "next_h = tanh(x @ Wx + prev_h @ Wh + b)" in html
    mustache = set(re.findall(r"{{[^}]*}}", html))
    assert mustache == {"{{params.seed}}", "{{params.grade_command}}"}  # no text of the hand-out read as a template
    # the same command again: the same files, the same UUID (PrairieLearn keeps the question)
    before = {path: path.read_bytes() for path in course.rglob("*") if path.is_file()}
    assert npseq_main(["exercises", "--prairielearn", str(course), *EXERCISES_ONLY, "--timeout", "10"]) == 0
    assert {path: path.read_bytes() for path in course.rglob("*") if path.is_file()} == before


def test_two_variant_seeds_give_two_students_numbers_of_their_own(course):
    question = course / "npseq_classic"
    first, second, again = generate(question, 1), generate(question, 2), generate(question, 1)
    assert first["params"] == again["params"] and first["params"]["seed"] != second["params"]["seed"]
    assert set(first["params"]) == {"seed", "grade_command"} and first["correct_answers"] == {}
    for data in (first, second):
        seed = data["params"]["seed"]
        assert isinstance(seed, int) and 1 <= seed < 2 ** 48
        assert data["params"]["grade_command"] == (f"npseq grade {SKELETON_NAME} --only rnn_step_backward --only "
                                                   f"lstm_step_backward --seed {seed}")
    assert generate(question, 0)["params"]["seed"] == 1  # never 0, the sheet's own numbers
    json.dumps(first)  # PrairieLearn stores data as JSON


@pytest.mark.parametrize("kind", ["correct", "half-done", "broken", "missing import", "forging",
                                  pytest.param("looping", marks=pytest.mark.slow)])
def test_each_kind_of_submission_scores_what_npseq_grade_says_on_the_variants_numbers(course, tmp_path, capsys, kind):
    root = tmp_path / "grade"
    data = generate(course / "npseq_classic", 7)
    seed = data["params"]["seed"]
    text = {"correct": SOLVED, "half-done": HALF_DONE, "broken": BROKEN, "missing import": MISSING_IMPORT,
            "forging": forging(root), "looping": LOOPING}[kind]
    path = lay_out(root, course / "npseq_classic", text, data)
    results = grade_here(root)
    printed = capsys.readouterr().out
    agrees_with_npseq_grade(results, npseq_grade(path, seed, capsys))
    if kind == "correct":
        assert results["score"] == 1.0 and results["gradable"] is True
        assert [test["name"] for test in results["tests"]] == ["1.1 rnn_step_backward: N=3 D=4 H=5",
                                                               "1.2 rnn_step_backward: N=1 D=2 H=1",
                                                               "2.1 lstm_step_backward: N=3 D=4 H=5",
                                                               "2.2 lstm_step_backward: N=1 D=2 H=2"]
        assert [test["points"] for test in results["tests"]] == [0.5] * 4
        assert "5/5 tensors correct, 0.5 of 0.5 points" in results["tests"][0]["message"]
        assert "abs diff vs npseq" in results["tests"][0]["output"]
        assert f"--seed {seed} grades your file on the same numbers" in results["message"]
        assert f"grading on the variant's seed {seed}" in printed and "score: 2 / 2 points" in printed
    elif kind == "half-done":
        assert results["score"] == 0.5 and [test["points"] for test in results["tests"]] == [0.5, 0.5, 0, 0]
        assert "not implemented" in results["tests"][2]["message"]
    elif kind in ("broken", "missing import"):  # PrairieLearn: "for example due to a syntax error": no attempt
        said = "SyntaxError" if kind == "broken" else "ModuleNotFoundError: No module named 'numpy_but_misspelled'"
        assert said in results["format_errors"][0] and "costs you no attempt" in results["message"]
    elif kind == "forging":  # exited while imported, or refused its write: ours is the file there
        assert results["gradable"] is False and "cannot import" in results["format_errors"][0]
    else:
        assert [test["points"] for test in results["tests"]] == [0.5, 0.5, 0, 0]
        assert "time limit: lstm_step_backward did not finish within 10 s" in results["tests"][2]["message"]


def test_each_variant_is_graded_on_its_own_numbers_and_one_variants_answers_fail_the_other(course, tmp_path):
    question = course / "npseq_classic"
    first, second = generate(question, 11), generate(question, 12)
    hard_coded = answers_of(first["params"]["seed"])
    for data, expected in ((first, 1.0), (second, 0.0)):
        lay_out(tmp_path / "grade", question, hard_coded, data)
        results = grade_here(tmp_path / "grade")
        assert [test["points"] for test in results["tests"][:2]] == [expected * 0.5] * 2, results["tests"][0]


def answers_of(seed: int) -> str:
    """A file whose rnn_step_backward returns, for each case's shape, npseq's gradients on the numbers of ``seed``:
    right on that variant's cases, and on no other's. (The upstream gradient is drawn as the grader draws it.)"""
    exercise = EXERCISE_BY_NAME["rnn_step_backward"]
    answers = {}
    for case in exercise.cases:
        outputs = case.forward(**case.make_inputs(seed))
        rng = np.random.default_rng(seed_of(case.seed, seed))
        douts = tuple(samples.normal(rng, *out.shape) for out in outputs[:case.outputs])
        grads = case.call(exercise.engine, douts, outputs[-1])
        answers[case.make_inputs(seed)["x"].shape] = [grad.tolist() for grad in grads]
    return ("import numpy as np\n\nANSWERS = " + repr(answers) + "\n\n\ndef rnn_step_backward(dnext_h, cache):\n"
            "    return tuple(np.array(grad) for grad in ANSWERS[cache.x.shape])\n")


def test_points_hidden_cases_and_the_honesty_note_in_prairielearns_terms(tmp_path, capsys):
    folder = tmp_path / "course"
    assert npseq_main(["exercises", "--prairielearn", str(folder), *EXERCISES_ONLY, "--points", "rnn_step_backward=2",
                       "--hidden", "lstm_step_backward:2", "--timeout", "10"]) == 0
    question = folder / "npseq_classic"
    html = (question / "question.html").read_text()
    assert "(2 points)</h4>" in html and "1 case is hidden" in html
    root = tmp_path / "grade"
    lay_out(root, question, HANDED_IN_NPSEQ, generate(question, 3))
    capsys.readouterr()
    results = grade_here(root)
    printed = capsys.readouterr().out
    assert results["score"] == 1.0 and [test["max_points"] for test in results["tests"]] == [1.0, 1.0, 0.5, 0.5]
    hidden = results["tests"][3]
    assert hidden["name"] == "2.2 lstm_step_backward: a hidden case" and hidden["output"] == ""
    assert "N=1" not in json.dumps(hidden)  # its shapes are not given away
    assert "1 case, worth 0.5 points, is hidden" in results["message"]
    # the honesty note is for the staff, who read the job's log; PrairieLearn shows every test to the student
    assert "honesty" not in json.dumps(results) and "honesty note" in printed
    assert "imports lstm_step_backward from npseq.functional" in printed


def test_a_huge_message_is_cut_and_results_json_stays_far_under_a_megabyte(course, tmp_path):
    root = tmp_path / "grade"
    lay_out(root, course / "npseq_classic", LOUD, generate(course / "npseq_classic", 5))
    results = grade_here(root)
    assert (root / "results" / "results.json").stat().st_size < 200_000
    assert results["score"] == 0 and "more characters cut" in results["tests"][0]["output"]


needs_root = pytest.mark.skipif(not running_as_root(), reason="the submission runs as a user of its own only when "
                                "the grader is root (as in PrairieLearn's container)")


@needs_root
def test_the_grader_and_the_variants_data_are_out_of_the_submissions_reach(course):
    root = pathlib.Path(tempfile.mkdtemp(prefix="npseq-open-"))  # anyone may read and write it
    try:
        root.chmod(0o777)
        data = generate(course / "npseq_classic", 9)
        spy = ("import os\n\ndef rnn_step_backward(dnext_h, cache):\n    seen = []\n"
               f"    for name in ('tests/config.json', 'data/data.json', 'student/{SKELETON_NAME}'):\n"
               "        try:\n"
               f"            seen.append(open(os.path.join({str(root)!r}, name)).read()[:20])\n"
               "        except OSError as exc:\n"
               "            seen.append(type(exc).__name__)\n"
               "    try:\n"
               f"        open(os.path.join({str(root)!r}, 'results', 'results.json'), 'w').write('{{}}')\n"
               "        seen.append('wrote results')\n"
               "    except OSError as exc:\n"
               "        seen.append(type(exc).__name__)\n"
               "    raise ValueError(seen)\n")
        lay_out(root, course / "npseq_classic", spy, data)
        (root / "results").mkdir()
        for path in root.rglob("*"):
            path.chmod(0o777 if path.is_dir() else 0o666)
        results = grade_here(root)
        message = results["tests"][0]["output"]
        assert "ValueError" in message and "wrote results" not in message and '"seed"' not in message, message
        assert "only" not in message.split("ValueError", 1)[1], message  # config.json was not read
    finally:
        shutil.rmtree(root, ignore_errors=True)


@needs_root
def test_a_forged_report_and_a_killed_grader_cost_nothing(course, tmp_path):
    root = tmp_path / "grade"
    path = lay_out(root, course / "npseq_classic", KILLING, generate(course / "npseq_classic", 13))
    for command in (["-m", "npseq.course.prairielearn_grader", "--root", str(root)],  # each in a process of its own:
                    ["-m", "npseq", "grade", str(path), *GRADE_ONLY, "--format", "json"]):  # the kill aims at it
        run = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert run.returncode in (0, 2), run.stderr  # the grader lives on: the kill is refused to the child's user
    results = json.loads((root / "results" / "results.json").read_text())
    validate(results)
    agrees_with_npseq_grade(results, json.loads(run.stdout.strip().splitlines()[-1]))
    assert results["gradable"] is False and "PermissionError" in results["format_errors"][0]


def test_a_grader_that_cannot_run_a_child_is_not_the_students_fault(course, tmp_path, monkeypatch):
    from npseq.course import sandbox

    monkeypatch.setattr(sandbox, "_ceiling", lambda: sandbox._in_use() + 5 * 2 ** 20)
    lay_out(tmp_path / "grade", course / "npseq_classic", SOLVED, generate(course / "npseq_classic", 14))
    results = grade_here(tmp_path / "grade")
    assert results["gradable"] is False and "the grader failed (not your fault" in results["format_errors"][0]
    assert "ulimit -v" in results["message"]


def test_a_question_set_up_wrongly_is_not_gradable_and_says_whose_to_fix(course, tmp_path):
    root = tmp_path / "grade"
    lay_out(root, course / "npseq_classic", SOLVED, {"params": {}, "variant_seed": 3})  # server.py never ran
    results = grade_here(root)
    assert results["gradable"] is False and "params.seed" in results["format_errors"][0]
    assert "not your fault; tell your instructor" in results["message"]
    (root / "data" / "data.json").write_text(json.dumps(generate(course / "npseq_classic", 3)))
    (root / "tests" / "config.json").write_text("{nope")
    results = grade_here(root)
    assert results["gradable"] is False and "config.json" in results["format_errors"][0]
    shutil.rmtree(root / "student")
    (root / "tests" / "config.json").write_text(Scoring(only=STEPS).to_json())
    results = grade_here(root)
    assert results["gradable"] is False and "holds no .py or .ipynb file" in results["format_errors"][0]
    assert grader_main(["--root"]) == 2 and grader_main(["-h"]) == 0


def test_one_verdict_two_renderings_the_same_score(tmp_path):
    from npseq.course import grade_file
    from npseq.course.gradescope import render as gradescope_render

    path = tmp_path / "half.py"
    path.write_text(HALF_DONE)
    scoring = Scoring(only=STEPS, points={"rnn_step_backward": 3})
    verdict = verdict_of(grade_file(path, only=STEPS, quiet=True), scoring)
    gradescope, prairielearn = gradescope_render(verdict), render(verdict)
    validate(prairielearn)
    assert gradescope["score"] == 3.0 and prairielearn["score"] == 0.75  # 3 of 4 points
    assert [t["score"] for t in gradescope["tests"]] == [t["points"] for t in prairielearn["tests"]]
    assert [t["name"] for t in gradescope["tests"]] == [t["name"] for t in prairielearn["tests"]]


def test_the_questions_follow_the_sets_and_refuse_what_prairielearn_cannot_score():
    questions = plans(None, ["classic", "transformer"], Scoring(memory_mb=None))
    assert [q.folder for q in questions] == ["npseq_classic", "npseq_transformer"]
    assert questions[1].scoring.names == tuple(names_of_sets(["transformer"]))
    assert questions[1].scoring.memory_mb is None
    across = plans(["rnn_backward", "layer_norm_backward"], None, Scoring(only=("rnn_step_backward", "rnn_backward",
                                                                                "layer_norm_backward")))
    assert [(q.set_name, q.scoring.names) for q in across] == [("classic", ("rnn_step_backward", "rnn_backward")),
                                                               ("transformer", ("layer_norm_backward",))]
    assert questions[0].uuid != plans(["rnn_backward"], None, Scoring(only=("rnn_step_backward", "rnn_backward")))[
        0].uuid  # another question of the same set: another UUID
    assert plans(None, ["classic"], Scoring(timeout=1000))[0].job_timeout == MAX_JOB_TIMEOUT
    with pytest.raises(BundleError, match="worth 0 points in all"):
        plans(["rnn_step_backward"], None, Scoring(only=("rnn_step_backward",), points={"rnn_step_backward": 0}))
    # an equation's < and & are HTML's text, and its text never a template's variable
    masked = question_html(plans(["masked_softmax_backward"], None, Scoring(only=("masked_softmax_backward",)))[0])
    docstring = EXERCISE_BY_NAME["masked_softmax_backward"].docstring
    shown = masked.split("<pre>")[1].split("</pre>")[0]
    assert "<" in docstring and "<" not in shown and "&lt;" in shown


def test_the_command_keeps_what_npseq_did_not_write_and_its_options_need_their_autograder(tmp_path, capsys):
    folder = tmp_path / "questions"
    (folder / "npseq_classic").mkdir(parents=True)
    mine = folder / "npseq_classic" / "question.html"
    mine.write_text("an instructor's own question")
    assert npseq_main(["exercises", "--prairielearn", str(folder), "--only", "rnn_step_backward"]) == 2
    err = capsys.readouterr().err
    assert "npseq did not write it; write into another folder, or add --force" in err and err.count("\n") == 1
    assert mine.read_text() == "an instructor's own question" and sorted(os.listdir(folder)) == ["npseq_classic"]
    assert npseq_main(["exercises", "--prairielearn", str(folder), "--only", "rnn_step_backward", "--force"]) == 0
    assert "<pl-file-editor" in mine.read_text()
    capsys.readouterr()
    assert npseq_main(["exercises", "--prairielearn", str(folder), "--per-student"]) == 2
    assert "--per-student: this sets up Gradescope's autograder" in capsys.readouterr().err
    assert npseq_main(["exercises", "--out", str(folder), "--prairielearn", str(folder)]) == 2
    assert "expected a folder each" in capsys.readouterr().err
    assert npseq_main(["exercises", "--out", str(tmp_path / "h"), "--points", "rnn_step_backward=2"]) == 2
    assert "add --gradescope ZIP or --prairielearn DIR" in capsys.readouterr().err


def _image_python(folder: pathlib.Path, holds: bool = True) -> pathlib.Path:
    """A Python that stands for PrairieLearn's grader image: a fresh virtual environment that sees this environment's
    packages (NumPy, Matplotlib, ...) but neither npseq nor tqdm nor threadpoolctl, so that run.sh must install npseq
    and the wheels the question carries; with ``holds`` false, it sees nothing (an image without NumPy)."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(folder / "image")], check=True, capture_output=True, timeout=300)
    python = folder / "image" / "bin" / "python"
    if holds:
        site = pathlib.Path(np.__file__).resolve().parent.parent
        mirror = folder / "image-packages"
        mirror.mkdir()
        skipped = re.compile(r"(npseq|__editable__|tqdm|threadpoolctl|pip|setuptools|_distutils_hack|pkg_resources"
                             r"|__pycache__)")
        for entry in site.iterdir():
            if not skipped.match(entry.name) and not entry.name.endswith(".pth"):
                (mirror / entry.name).symlink_to(entry)
        purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        (pathlib.Path(purelib) / "image.pth").write_text(f"{mirror}\n")
    return python


def _run_sh(root: pathlib.Path, python: pathlib.Path) -> float:
    """The question's run.sh under ``root`` with ``python`` as the image's, as PrairieLearn's container runs it; the
    seconds it took."""
    env = {**os.environ, "NPSEQ_GRADE_ROOT": str(root), "NPSEQ_PYTHON": str(python)}
    env.pop("PYTHONPATH", None)
    started = time.monotonic()
    run = subprocess.run(["bash", str(root / "tests" / "run.sh")], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    _run_sh.log = run.stdout + run.stderr
    return time.monotonic() - started


@pytest.mark.slow
def test_round_trip_run_sh_installs_npseq_with_no_index_and_grades_as_npseq_grade_does(course, tmp_path, capsys):
    python = _image_python(tmp_path)
    question, root = course / "npseq_classic", tmp_path / "grade"
    for text in (SOLVED, HALF_DONE, BROKEN, None):
        data = generate(question, 21)
        path = lay_out(root, question, text or forging(root), data)
        _run_sh(root, python)
        results = json.loads((root / "results" / "results.json").read_text())
        validate(results)
        agrees_with_npseq_grade(results, npseq_grade(path, data["params"]["seed"], capsys))
    where = subprocess.run([str(python), "-I", "-c", "import npseq, tqdm, threadpoolctl; print(npseq.__file__, "
                            "tqdm.__file__, threadpoolctl.__file__)"], capture_output=True, text=True, timeout=60)
    venv = (tmp_path / "image").resolve()
    assert all(pathlib.Path(p).resolve().is_relative_to(venv) for p in where.stdout.split()), where

    # Every set's question, each grading as in a fresh container (npseq and the wheels installed anew): the key
    # scores 1, well within the question's timeout. The times are what the README quotes.
    everything = tmp_path / "everything"
    assert npseq_main(["exercises", "--prairielearn", str(everything), "--set", *SET_NAMES]) == 0
    for set_name in SET_NAMES:
        question = everything / f"npseq_{set_name}"
        subprocess.run([str(python), "-m", "pip", "uninstall", "--yes", "--quiet", "npseq", "tqdm", "threadpoolctl"],
                       check=True, capture_output=True, timeout=120)
        lay_out(root, question, solutions(chosen_exercises(sets=[set_name])), generate(question, 31))
        seconds = _run_sh(root, python)
        results = json.loads((root / "results" / "results.json").read_text())
        validate(results)
        assert results["score"] == 1.0, results["message"]
        timeout = json.loads((question / "info.json").read_text())["externalGradingOptions"]["timeout"]
        assert seconds < timeout
        print(f"npseq_{set_name}: run.sh took {seconds:.1f} s, the install of npseq included (PrairieLearn's "
              f"default timeout: {DEFAULT_JOB_TIMEOUT} s; this question's: {timeout} s)", file=sys.stderr)

    # an image without what npseq needs: not gradable (the instructor's to fix), and pip's words in the job's log
    bare = _image_python(tmp_path / "bare", holds=False)
    lay_out(root, course / "npseq_classic", SOLVED, generate(course / "npseq_classic", 22))
    _run_sh(root, bare)
    assert "numpy" in _run_sh.log
    results = json.loads((root / "results" / "results.json").read_text())
    validate(results)
    assert results == not_installed()
