"""The npseq command, driven as a user drives it: a subprocess on small settings."""
import os
import pathlib
import re
import shlex
import signal
import subprocess
import sys

import numpy as np
import pytest

SMALL = ["--embed-size", "8", "--num-hiddens", "16", "--num-layers", "1", "--lr", "0.01", "--no-progress"]


def npseq(*args, stdin=None, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "npseq", *map(str, args)], input=stdin, capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def params(path):
    with np.load(path) as archive:
        return {k: archive[k] for k in archive.files if k.startswith("param/")}


@pytest.mark.slow
def test_help_and_version():
    assert "demo" in npseq("--help").stdout and "gradcheck" in npseq("--help").stdout
    assert npseq("--version").stdout.startswith("npseq ")


def test_a_run_into_a_log_file_or_a_pipe_draws_no_progress_bar(tmp_path):
    # stderr is a pipe here, as in `npseq train ... 2> log`: a bar would be redrawn into it line after line
    result = npseq("train", "--task", "numbers", "--num-examples", "600", "--num-hiddens", "8", "--embed-size", "4",
                   "--num-layers", "1", "--epochs", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "train:" not in result.stderr and "epoch/s" not in result.stderr and "\r" not in result.stderr
    assert "epoch 2: per-token cross-entropy " in result.stdout


@pytest.mark.slow
def test_demo_trains_reports_draws_and_hands_over_a_model(tmp_path):
    result = npseq("demo", "--task", "reverse", "--epochs", "1", "--num-examples", "300", "--no-progress",
                   "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "test: BLEU " in out and "exact match" in out
    assert out.count("  =>  ") == 5  # five sample translations, greedy | beam
    for name in ("attention.png", "loss.png"):
        png = tmp_path / "out" / "reverse" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"out/reverse/{name}" in out  # as typed
    # The last line is a command to run next, from the same folder, on a sentence the demo held out.
    command = shlex.split(out.strip().splitlines()[-1])
    assert command[:3] == ["npseq", "translate", "out/reverse/model.npz"] and len(command) == 4
    test_sources = {line.split("  =>  ")[0].strip() for line in out.splitlines() if "  =>  " in line}
    assert command[3] not in test_sources
    translated = npseq(*command[1:], cwd=tmp_path)
    assert translated.returncode == 0 and translated.stdout.startswith(f"{command[3]} => "), translated.stderr


@pytest.mark.slow
def test_demos_of_two_tasks_keep_their_own_files(tmp_path):
    for task in ("reverse", "numbers"):
        assert npseq("demo", "--task", task, "--epochs", "1", "--num-examples", "200", "--no-progress",
                     "--out", tmp_path).returncode == 0
    assert {path.name for path in tmp_path.iterdir()} == {"reverse", "numbers"}
    assert all((tmp_path / task / "model.npz").is_file() for task in ("reverse", "numbers"))


@pytest.mark.slow
def test_translate_names_unknown_words_on_stderr_and_refuses_them_with_strict(tmp_path):
    model = tmp_path / "numbers.npz"
    assert npseq("train", "--task", "numbers", "--num-examples", "200", "--epochs", "1", *SMALL,
                 "--save", model).returncode == 0
    result = npseq("translate", model, "twenty one", "Forty-Two 12 thousand")
    assert result.returncode == 0, result.stderr
    assert [line.split(" => ")[0] for line in result.stdout.splitlines()] == ["twenty one", "Forty-Two 12 thousand"]
    warning, = result.stderr.splitlines()  # one line, for the one sentence with unknown words
    assert "'forty-two'" in warning and "'12'" in warning and "'thousand'" not in warning.split("(in")[0]
    assert "'twelve'" in warning  # digits get the number in words
    strict = npseq("translate", "--strict", model, "twenty one", "Forty-Two")
    assert strict.returncode == 2 and strict.stdout == "" and "--strict" in strict.stderr
    assert "'forty-two'" in strict.stderr and len(strict.stderr.splitlines()) == 1
    assert "--strict: not in the vocabulary: 'forty-two'" in strict.stderr and "<unk>" not in strict.stderr


@pytest.mark.slow
def test_train_save_translate_and_resume_exactly(tmp_path):
    straight, resumed = tmp_path / "straight.npz", tmp_path / "resumed.npz"
    common = ["--task", "reverse", "--num-examples", "300", *SMALL]
    assert npseq("train", *common, "--epochs", "3", "--save", straight).returncode == 0
    assert npseq("train", *common, "--epochs", "2", "--save", resumed).returncode == 0
    result = npseq("train", *common, "--epochs", "3", "--resume", resumed, "--save", resumed)
    assert result.returncode == 0 and "resuming" in result.stdout
    a, b = params(straight), params(resumed)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)

    result = npseq("translate", straight, "a b c", "j i", "--attention-png", tmp_path / "attn.png")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if " => " in line]
    assert [line.split(" => ")[0] for line in lines] == ["a b c", "j i"]
    assert (tmp_path / "attn-1.png").exists() and (tmp_path / "attn-2.png").exists()
    piped = npseq("translate", straight, "--beam", "3", stdin="a b c\n\nd e\n")
    assert piped.returncode == 0 and piped.stdout.count(" => ") == 2
    after_options = npseq("translate", straight, "--beam", "2", "a b c", "d e")
    assert after_options.returncode == 0 and after_options.stdout.count(" => ") == 2


def test_ctrl_c_during_training_keeps_a_checkpoint(tmp_path):
    checkpoint = tmp_path / "run.npz"
    process = subprocess.Popen([sys.executable, "-m", "npseq", "train", "--task", "reverse", "--num-examples",
                                "2000", *SMALL, "--epochs", "500", "--save", str(checkpoint)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The command prints this line once its Ctrl-C handler is in place: no fixed wait, however busy the machine.
    assert process.stdout.readline().startswith("training a ")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert "interrupted: the checkpoint of epoch" in err and "Traceback" not in err
    assert npseq("translate", checkpoint, "a b").returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("args, stdin, message", [
    (["train", "--data", "no/such/file.txt"], None, "npseq train: argument --data: no such file: no/such/file.txt"),
    (["train", "--task", "reverse", "--lr", "-1"], None, "argument --lr: expected a positive float, got '-1'"),
    (["train", "--task", "reverse", "--dropout", "1.5"], None, "argument --dropout: expected a probability"),
    (["train", "--task", "chess"], None, "argument --task: invalid choice: 'chess'"),
    (["train"], None, "npseq train: give exactly one of --task NAME or --data PATH"),
    (["demo", "--epochs", "0"], None, "argument --epochs: expected a positive int, got '0'"),
    (["translate", "README.md", "hello"], None, "not an npseq checkpoint"),
    (["gradcheck", "--only", "no_such_check"], None,
     "npseq gradcheck: --only: no registered check is named 'no_such_check' (npseq gradcheck --list prints the "),
])
def test_user_errors_are_one_line_with_exit_code_2(args, stdin, message):
    root = pathlib.Path(__file__).resolve().parents[1]
    result = npseq(*args, stdin=stdin, cwd=root)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


@pytest.mark.slow
def test_checkpoint_and_input_mismatches(tmp_path):
    checkpoint = tmp_path / "reverse.npz"
    assert npseq("train", "--task", "reverse", "--num-examples", "300", *SMALL, "--epochs", "1", "--save",
                 checkpoint).returncode == 0
    other = npseq("train", "--task", "numbers", "--num-examples", "300", *SMALL, "--epochs", "2", "--resume",
                  checkpoint)
    assert other.returncode == 2 and "was trained on reverse, not on numbers" in other.stderr
    vocab = npseq("train", "--task", "reverse", "--num-examples", "200", *SMALL, "--epochs", "2", "--resume",
                  checkpoint)
    assert vocab.returncode == 2 and "vocabularies" in vocab.stderr
    done = npseq("train", "--task", "reverse", "--num-examples", "300", *SMALL, "--epochs", "1", "--resume",
                 checkpoint)
    assert done.returncode == 2 and "already has 1 epochs" in done.stderr
    empty = npseq("translate", checkpoint, stdin="\n  \n")
    assert empty.returncode == 2 and "no sentence to translate" in empty.stderr
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(checkpoint.read_bytes()[:200])
    broken = npseq("translate", truncated, "a b")
    assert broken.returncode == 2 and str(truncated) in broken.stderr


def test_gradcheck_runs_registered_checks_and_prints_tables():
    result = npseq("gradcheck", "--only", "affine", "gru (reset_after=True)")
    assert result.returncode == 0, result.stdout
    assert "== affine" in result.stdout and "max rel error" in result.stdout
    assert "all 2 gradient checks passed" in result.stdout


def test_gradcheck_lists_its_checks_and_runs_every_variant_of_a_name():
    from npseq.gradient_checks import REGISTRY
    listed = npseq("gradcheck", "--list")
    assert listed.returncode == 0 and listed.stdout.splitlines() == list(REGISTRY)
    variants = npseq("gradcheck", "--only", "gru_step", "affine")
    assert variants.returncode == 0, variants.stdout
    assert [line[3:] for line in variants.stdout.splitlines() if line.startswith("== ")] == [
        "affine", "gru_step (reset_after=False)", "gru_step (reset_after=True)"]


def test_gradcheck_exit_code_1_on_a_failing_check():
    code = ("import sys\n"
            "import npseq.gradient_checks as checks\n"
            "from npseq.cli import main\n"
            "orig = checks.REGISTRY['affine']\n"
            "def broken(rng):\n"
            "    report = orig(rng)\n"
            "    report.rows[0].ok = False\n"
            "    return report\n"
            "checks.REGISTRY['affine'] = broken\n"
            "sys.exit(main(['gradcheck', '--only', 'affine']))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "1 of 1 gradient checks FAILED: affine" in result.stdout


def test_lm_trains_and_samples(tmp_path):
    text = tmp_path / "tiny.txt"
    text.write_text("the cat sat on the mat. " * 200, encoding="utf-8")
    result = npseq("lm", "--data", text, "--epochs", "1", "--num-hiddens", "16", "--num-steps", "10",
                   "--no-progress", "--samples", "1")
    assert result.returncode == 0, result.stderr
    # repr() quotes a sample with double quotes when it holds an apostrophe: match either quote.
    assert "validation perplexity" in result.stdout and re.search(r"sample: (['\"])the ", result.stdout)


def test_cupy_backend_without_a_gpu_says_why_in_one_line():
    pytest.importorskip("numpy")
    env = dict(os.environ, NPSEQ_BACKEND="cupy")
    result = npseq("demo", "--epochs", "1", "--num-examples", "100", "--no-progress", env=env)
    try:
        import cupy  # noqa: F401
        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_gpu = False
    if has_gpu:
        pytest.skip("a GPU is visible here: the cupy backend can run")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("npseq demo: NPSEQ_BACKEND=cupy: backend 'cupy' needs")


@pytest.mark.slow
def test_grade_subcommand_scores_the_skeleton_zero_and_the_engine_full(tmp_path):
    root = pathlib.Path(__file__).resolve().parents[1]
    skeleton = npseq("grade", root / "tutorials" / "exercises" / "backprop_exercises.py")
    assert skeleton.returncode == 1 and "= 0.0%" in skeleton.stdout
    engine = tmp_path / "engine.py"
    engine.write_text("from npseq.functional import rnn_step_backward, lstm_step_backward, gru_step_backward, "
                      "masked_softmax_backward, additive_attention_backward, rnn_backward, lstm_backward, "
                      "word_embedding_backward, temporal_softmax_loss, layer_norm_backward, "
                      "multihead_attention_backward\n"
                      "from npseq.exercises import bahdanau_decoder_step_backward\n")
    graded = npseq("grade", engine)
    assert graded.returncode == 0 and "100.0%" in graded.stdout


def test_dates_sources_longer_than_the_target_are_not_cut(tmp_path):
    checkpoint = tmp_path / "dates.npz"
    assert npseq("train", "--task", "dates", "--num-examples", "300", *SMALL, "--epochs", "1", "--save",
                 checkpoint).returncode == 0
    from npseq.checkpoint import load_checkpoint
    assert load_checkpoint(checkpoint).extra["num_steps"] == [32, 11]
    from npseq.checkpoint import load_seq2seq
    from npseq.decode import translate
    model, ck = load_seq2seq(checkpoint)
    src_tokens = translate(model, "thursday, january 26th, 2034", ck.vocabs["src"], ck.vocabs["tgt"], 11,
                           task="dates", src_max_len=32).source_tokens
    assert len(src_tokens) == len("thursday, january 26th, 2034") + 1  # every character and <eos>


@pytest.mark.slow
def test_a_bug_inside_the_library_shows_its_traceback_not_a_user_error_line(tmp_path):
    """Only the UserError family is a one-line exit 2: a plain ValueError from inside npseq is a bug."""
    checkpoint = tmp_path / "numbers.npz"
    assert npseq("train", "--task", "numbers", "--num-examples", "300", *SMALL, "--epochs", "1", "--save",
                 checkpoint).returncode == 0
    code = ("import sys\n"
            "import npseq.decode as decode\n"
            "from npseq.cli import main\n"
            "def planted(*args, **kwargs):\n"
            "    raise ValueError('planted bug in beam_search_batch')\n"
            "decode.beam_search_batch = planted\n"
            f"sys.exit(main(['translate', {str(checkpoint)!r}, 'two hundred one']))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "Traceback (most recent call last)" in result.stderr
    assert "ValueError: planted bug in beam_search_batch" in result.stderr
    # the same command without the planted bug translates
    assert npseq("translate", checkpoint, "two hundred one").returncode == 0


@pytest.mark.slow
def test_luong_local_attention_from_the_command_line(tmp_path):
    model = tmp_path / "local.npz"
    result = npseq("train", "--task", "numbers", "--num-examples", "300", "--epochs", "1", *SMALL,
                   "--decoder", "luong", "--attention", "local-p", "--window", "2", "--save", model)
    assert result.returncode == 0, result.stderr
    result = npseq("translate", model, "two hundred one", "--attention-png", tmp_path / "window.png")
    assert result.returncode == 0 and (tmp_path / "window.png").stat().st_size > 0, result.stderr
    resumed = npseq("train", "--task", "numbers", "--num-examples", "300", "--epochs", "2", "--no-progress",
                    "--resume", model, "--attention", "local-m")
    assert resumed.returncode == 2 and "--attention local-m conflicts with" in resumed.stderr
    wrong = npseq("train", "--task", "numbers", "--decoder", "bahdanau", "--attention", "local-p", "--epochs", "1")
    assert wrong.returncode == 2
    assert "--attention local-p: Luong's decoder reads it, --decoder bahdanau does not" in wrong.stderr
