"""The scripts of ``examples/``, which the README offers beside the ``npseq`` command, run as a user runs them:
``python examples/NAME.py`` in a child process, at the smallest settings that reach their last line."""
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
PAIRS = "".join(f"{english}\t{french}\tCC-BY 2.0 (France) Attribution: tatoeba.org #{i}\n" for i, (english, french)
                in enumerate([("go .", "va !"), ("hi .", "salut !"), ("run !", "cours !"), ("i lost .", "j'ai perdu ."),
                              ("he's calm .", "il est calme ."), ("i'm home .", "je suis chez moi .")] * 10))


def example(name, *args, cwd):
    """``python examples/NAME ARGS`` in ``cwd``: the finished process (stdout and stderr as text)."""
    return subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_the_d2l_translator_trains_and_prints_its_table_row(tmp_path):
    corpus = tmp_path / "fra.txt"
    corpus.write_text(PAIRS, encoding="utf-8")
    done = example("d2l_fra_eng.py", "--data", corpus, "--epochs", "1", "--num-examples", "60", "--beam", "2",
                   "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "beam search (k=2):" in done.stdout and "i'm home . => " in done.stdout
    assert done.stdout.splitlines()[-1].startswith("| bahdanau GRU (2 layers, hidden 32) | 1 | ")


def test_the_d2l_translator_without_its_corpus_says_how_to_get_it(tmp_path, home):
    done = example("d2l_fra_eng.py", "--data", "fra-eng", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("d2l_fra_eng.py: error: argument --data: the dataset fra-eng is not in the cache ") and \
        "`npseq data fetch fra-eng`" in last, done.stderr


@pytest.mark.slow
def test_the_character_model_trains_for_its_seconds_and_compares_with_ngrams(tmp_path):
    done = example("char_lm.py", "--seconds", "1", "--chars", "5000", "--hidden", "16", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "trigram" in done.stdout, done.stdout
