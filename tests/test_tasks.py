"""Tests for npseq.data.tasks: the built-in numbers, dates and reverse tasks and load_task."""
import datetime
import doctest
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optional_tools import require

import npseq.data.tasks
from npseq.data import (
    DATE_FORMATS,
    DATE_RANGE,
    SPACE,
    TASKS,
    BatchIterator,
    TaskData,
    Vocab,
    dates_pairs,
    detokenize_french,
    english_number,
    format_date,
    french_number,
    load_task,
    numbers_pairs,
    reverse_pairs,
    tokenize_french,
)

# ------------------------------------------------------------------------------ numbers
# traditional French spelling (see french_number): checked by hand against the rules of
# l'Académie (et only before un/onze from 21 to 71, quatre-vingts/cents plural only at the end)
FRENCH = {
    0: "zéro", 1: "un", 2: "deux", 10: "dix", 11: "onze", 16: "seize", 17: "dix-sept", 19: "dix-neuf",
    20: "vingt", 21: "vingt et un", 22: "vingt-deux", 30: "trente", 31: "trente et un", 41: "quarante et un",
    55: "cinquante-cinq", 60: "soixante", 61: "soixante et un", 69: "soixante-neuf", 70: "soixante-dix",
    71: "soixante et onze", 72: "soixante-douze", 77: "soixante-dix-sept", 79: "soixante-dix-neuf",
    80: "quatre-vingts", 81: "quatre-vingt-un", 88: "quatre-vingt-huit", 90: "quatre-vingt-dix",
    91: "quatre-vingt-onze", 97: "quatre-vingt-dix-sept", 99: "quatre-vingt-dix-neuf",
    100: "cent", 101: "cent un", 111: "cent onze", 121: "cent vingt et un", 180: "cent quatre-vingts",
    181: "cent quatre-vingt-un", 200: "deux cents", 201: "deux cent un", 280: "deux cent quatre-vingts",
    300: "trois cents", 371: "trois cent soixante et onze", 999: "neuf cent quatre-vingt-dix-neuf",
    1000: "mille", 1001: "mille un", 1021: "mille vingt et un", 1080: "mille quatre-vingts", 1100: "mille cent",
    1200: "mille deux cents", 1999: "mille neuf cent quatre-vingt-dix-neuf", 2000: "deux mille",
    2021: "deux mille vingt et un", 3080: "trois mille quatre-vingts", 5200: "cinq mille deux cents",
    7071: "sept mille soixante et onze", 9999: "neuf mille neuf cent quatre-vingt-dix-neuf",
}

ENGLISH = {
    0: "zero", 1: "one", 13: "thirteen", 19: "nineteen", 20: "twenty", 21: "twenty one", 40: "forty",
    71: "seventy one", 80: "eighty", 97: "ninety seven", 100: "one hundred", 101: "one hundred one",
    200: "two hundred", 201: "two hundred one", 1000: "one thousand", 1001: "one thousand one",
    1100: "one thousand one hundred", 1234: "one thousand two hundred thirty four", 2021: "two thousand twenty one",
    9999: "nine thousand nine hundred ninety nine",
}


@pytest.mark.parametrize("n, words", sorted(FRENCH.items()))
def test_french_number_table(n, words):
    assert french_number(n) == words


@pytest.mark.parametrize("n, words", sorted(ENGLISH.items()))
def test_english_number_table(n, words):
    assert english_number(n) == words


def test_french_tokens_round_trip_and_vocabulary():
    assert tokenize_french("quatre-vingt-dix-sept") == ["quatre", "-", "vingt", "-", "dix", "-", "sept"]
    assert tokenize_french("deux cent un") == ["deux", "cent", "un"]
    vocab, longest = set(), 0
    for n in range(10_000):
        text = french_number(n)
        tokens = tokenize_french(text)
        assert detokenize_french(tokens) == text
        assert all(token and " " not in token and (token == "-" or "-" not in token) for token in tokens)
        vocab.update(tokens)
        longest = max(longest, len(tokens))
    assert len(vocab) == 28 and "vingts" in vocab and "cents" in vocab and "mille" in vocab
    assert longest == 11
    assert max(len(english_number(n).split()) for n in range(10_000)) == 6


def test_num2words_parity():
    num2words = require("num2words").num2words
    for n in range(10_000):
        assert french_number(n) == num2words(n, lang="fr"), n
        # num2words writes "one hundred and one", "twenty-one", "one thousand, one hundred"
        english = re.sub(r"\band\b", " ", num2words(n, lang="en").replace(",", " ").replace("-", " "))
        assert english_number(n) == " ".join(english.split()), n


def test_number_errors():
    for fn in (english_number, french_number):
        with pytest.raises(ValueError, match=r"n: expected an int in \[0, 9999\], got 10000"):
            fn(10_000)
        with pytest.raises(ValueError, match="n: expected an int >= 0, got -1"):
            fn(-1)
        with pytest.raises(TypeError, match="n: expected"):
            fn(1.0)
    with pytest.raises(TypeError, match="text: expected a str"):
        tokenize_french(["vingt"])
    with pytest.raises(TypeError, match="tokens: expected a list of str tokens"):
        detokenize_french("vingt")


def test_numbers_pairs():
    pairs = numbers_pairs(seed=3)
    assert len(pairs) == 10_000
    numbers = {" ".join(src): tgt for src, tgt in pairs}
    assert len(numbers) == 10_000
    for n in (0, 71, 9999):
        assert numbers[english_number(n)] == tokenize_french(french_number(n))
    assert numbers_pairs(seed=3, num=50) == pairs[:50]
    assert numbers_pairs(seed=4, num=50) != pairs[:50]
    with pytest.raises(ValueError, match="num: expected at most 10000"):
        numbers_pairs(num=10_001)


# -------------------------------------------------------------------------------- dates
def test_date_formats_example():
    expected = ["3 march 2017", "march 3, 2017", "friday 03/03/17", "03.03.2017", "3rd of march 2017",
                "mar 3 2017", "2017/03/03", "fri, 3 mar 2017", "friday, march 3rd, 2017", "03-mar-17"]
    assert [format_date(datetime.date(2017, 3, 3), style) for style in range(len(DATE_FORMATS))] == expected
    assert format_date(datetime.date(1950, 1, 1), 2) == "sunday 01/01/50"
    assert format_date(datetime.date(2049, 12, 31), 7) == "fri, 31 dec 2049"
    ordinals = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st",
                22: "22nd", 23: "23rd", 30: "30th", 31: "31st"}
    for day, ordinal in ordinals.items():
        assert format_date(datetime.date(2001, 1, day), 4) == f"{ordinal} of january 2001"


MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]


def parse_date(text):
    """An independent reading of any DATE_FORMATS string: (date, weekday word or None)."""
    words = re.findall(r"[a-z]+|\d+", text)
    month = next((MONTHS.index(m) + 1 for w in words for m in MONTHS if len(w) >= 3 and m.startswith(w)), None)
    weekday = next((w for w in words if w.endswith("day") or w in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")),
                   None)
    numbers = [w for w in words if w.isdigit()]

    def year(digits):
        value = int(digits)
        return value if len(digits) == 4 else (1900 + value if value >= 50 else 2000 + value)

    if month is not None:  # day and year around a month name
        assert len(numbers) == 2, text
        return datetime.date(year(numbers[1]), month, int(numbers[0])), weekday
    assert len(numbers) == 3, text
    if len(numbers[0]) == 4:
        return datetime.date(int(numbers[0]), int(numbers[1]), int(numbers[2])), weekday
    return datetime.date(year(numbers[2]), int(numbers[1]), int(numbers[0])), weekday


def check_date_source(text, date):
    parsed, weekday = parse_date(text)
    assert parsed == date, text
    if weekday is not None:  # strftime in the C locale: English names, independent of the task's tables
        assert date.strftime("%A").lower().startswith(weekday), text


@pytest.mark.parametrize("date", [DATE_RANGE[0], DATE_RANGE[1], datetime.date(1999, 12, 31),
                                  datetime.date(2000, 1, 1), datetime.date(2000, 2, 29), datetime.date(1972, 11, 12),
                                  datetime.date(2023, 5, 23), datetime.date(1988, 9, 21)])
def test_every_format_parses_back(date):
    for style in range(len(DATE_FORMATS)):
        check_date_source(format_date(date, style), date)


def test_dates_pairs():
    pairs = dates_pairs(seed=1, num=3000)
    assert len(pairs) == 3000
    sources = ["".join(src) for src, _ in pairs]
    assert len(set(sources)) == 3000
    styles = set()
    for src, tgt in pairs:
        assert " " not in src and all(len(token) == 1 for token in src + tgt)
        text = "".join(src).replace(SPACE, " ")
        date = datetime.date.fromisoformat("".join(tgt))
        assert DATE_RANGE[0] <= date <= DATE_RANGE[1] and len(tgt) == 10
        check_date_source(text, date)
        styles.add(next(s for s in range(len(DATE_FORMATS)) if format_date(date, s) == text))
    assert styles == set(range(len(DATE_FORMATS)))
    assert dates_pairs(seed=1, num=3000) == pairs
    assert dates_pairs(seed=2, num=3000) != pairs
    with pytest.raises(ValueError, match="num: expected at most 365250"):
        dates_pairs(num=365_251)


def test_longest_date_source():
    # the longest weekday, month and ordinal together: 31 characters
    assert max(len(format_date(DATE_RANGE[0] + datetime.timedelta(days=k), 8)) for k in range(36525)) == 31
    assert max(len(f.format(d=31, dd="31", ordinal="23rd", mm="12", month="september", mon="sep", yyyy="2000",
                            yy="00", weekday="wednesday", wkd="wed")) for f in DATE_FORMATS) == 31


def test_format_date_errors():
    with pytest.raises(ValueError, match="date: expected a date in"):
        format_date(datetime.date(1949, 12, 31), 0)
    with pytest.raises(TypeError, match="date: expected a datetime.date, got str"):
        format_date("2017-03-03", 0)
    with pytest.raises(ValueError, match=r"style: expected an int in \[0, 9\], got 10"):
        format_date(datetime.date(2017, 3, 3), 10)


# ------------------------------------------------------------------------------ reverse
def test_reverse_pairs_defaults():
    pairs = reverse_pairs(seed=0)
    assert len(pairs) == 10_000
    assert len({tuple(src) for src, _ in pairs}) == 10_000
    lengths = np.bincount([len(src) for src, _ in pairs], minlength=11)
    assert lengths[:4].sum() == 0 and lengths[4:].min() > 10_000 / 7 - 200
    for src, tgt in pairs:
        assert tgt == src[::-1] and set(src) <= set("abcdefghij")
    assert reverse_pairs(seed=0) == pairs
    assert reverse_pairs(seed=1, num=100) != reverse_pairs(seed=0, num=100)


def test_reverse_pairs_exhaustive():
    pairs = reverse_pairs(seed=5, num=14, min_len=1, max_len=3, alphabet="ab")
    assert sorted("".join(src) for src, _ in pairs) == sorted(
        ["a", "b", "aa", "ab", "ba", "bb"] + [a + b + c for a in "ab" for b in "ab" for c in "ab"])
    for seed in range(20):  # every length full: surplus drawn for the longest must move back down
        assert sorted(len(src) for src, _ in reverse_pairs(seed, 3, min_len=1, max_len=3, alphabet="a")) == [1, 2, 3]
    words = reverse_pairs(seed=0, num=5, min_len=2, max_len=2, alphabet=["<x>", "yy", "z"])
    assert all(tgt == src[::-1] and set(src) <= {"<x>", "yy", "z"} for src, tgt in words)


@settings(max_examples=30, deadline=None)
@given(size=st.integers(1, 5), min_len=st.integers(1, 4), extra=st.integers(0, 3), fraction=st.floats(0.01, 1.0),
       seed=st.integers(0, 2**31))
def test_reverse_pairs_properties(size, min_len, extra, fraction, seed):
    max_len = min_len + extra
    capacity = sum(size ** length for length in range(min_len, max_len + 1))
    num = max(1, min(int(fraction * capacity), 2000))
    alphabet = "abcde"[:size]
    pairs = reverse_pairs(seed, num, min_len=min_len, max_len=max_len, alphabet=alphabet)
    assert len(pairs) == num and len({tuple(src) for src, _ in pairs}) == num
    for src, tgt in pairs:
        assert min_len <= len(src) <= max_len and tgt == src[::-1] and set(src) <= set(alphabet)


def test_reverse_pairs_sparse_long():
    pairs = reverse_pairs(seed=0, num=500, min_len=30, max_len=40, alphabet="abcdefghijklmnopqrstuvwxyz")
    assert len({tuple(src) for src, _ in pairs}) == 500
    assert all(30 <= len(src) <= 40 and tgt == src[::-1] for src, tgt in pairs)


def test_reverse_pairs_errors():
    with pytest.raises(ValueError, match="num: expected at most 6 distinct sequences"):
        reverse_pairs(num=7, min_len=1, max_len=2, alphabet="ab")
    with pytest.raises(ValueError, match="max_len: expected an int >= min_len = 5, got 4"):
        reverse_pairs(min_len=5, max_len=4)
    with pytest.raises(ValueError, match="min_len: expected a positive int, got 0"):
        reverse_pairs(min_len=0)
    with pytest.raises(ValueError, match="alphabet: expected distinct tokens"):
        reverse_pairs(alphabet="aa")
    with pytest.raises(ValueError, match="alphabet: expected non-empty str tokens without whitespace"):
        reverse_pairs(alphabet=["a", "b c"])
    with pytest.raises(ValueError, match="alphabet: expected tokens other than the reserved"):
        reverse_pairs(alphabet=["a", "<eos>"])
    with pytest.raises(TypeError, match="alphabet: expected a non-empty str or list"):
        reverse_pairs(alphabet="")


# ---------------------------------------------------------------------------- load_task
@pytest.fixture(scope="module")
def tasks():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # defaults: closed vocabularies, nothing unseen in valid/test
        return {name: load_task(name, batch_size=64) for name in TASKS}


EXPECTED = {  # (vocab sizes incl. <unk> <pad> <bos> <eos>, default num_steps, longest source, longest target)
    "numbers": ((34, 32), (7, 12), 6, 11),
    "dates": ((41, 15), (32, 11), 31, 10),
    "reverse": ((14, 14), (11, 11), 10, 10),
}


@pytest.mark.parametrize("name", TASKS)
def test_load_task_splits_and_vocabs(tasks, name):
    data = tasks[name]
    assert isinstance(data, TaskData) and data.name == name
    sizes, num_steps, longest_src, longest_tgt = EXPECTED[name]
    assert (len(data.src_vocab), len(data.tgt_vocab)) == sizes
    assert data.num_steps == num_steps
    pairs = data.train_pairs + data.valid_pairs + data.test_pairs
    assert max(len(src) for src, _ in pairs) == longest_src and max(len(tgt) for _, tgt in pairs) == longest_tgt
    assert [len(data.pairs(s)) for s in ("train", "valid", "test")] == [8000, 1000, 1000]
    # no source in two splits
    sources = [{tuple(src) for src, _ in data.pairs(s)} for s in ("train", "valid", "test")]
    assert sum(map(len, sources)) == 10_000 and len(set.union(*sources)) == 10_000
    # vocabularies from train only, closed: every valid/test token known
    for vocab, side in ((data.src_vocab, 0), (data.tgt_vocab, 1)):
        assert vocab.idx_to_token[:4] == ["<unk>", "<pad>", "<bos>", "<eos>"]
        assert vocab == Vocab([pair[side] for pair in data.train_pairs], min_freq=1,
                              reserved_tokens=["<pad>", "<bos>", "<eos>"])
        assert {t for pair in pairs for t in pair[side]} == set(vocab.idx_to_token[4:])


def test_closed_vocabularies(tasks):
    assert set(tasks["numbers"].src_vocab.idx_to_token[4:]) == {w for n in range(10_000)
                                                                 for w in english_number(n).split()}
    assert set(tasks["numbers"].tgt_vocab.idx_to_token[4:]) == {t for n in range(10_000)
                                                                 for t in tokenize_french(french_number(n))}
    names = MONTHS + [datetime.date(2017, 3, d).strftime("%A").lower() for d in range(6, 13)]
    assert set(tasks["dates"].src_vocab.idx_to_token[4:]) == (set("".join(names)) | set("0123456789,./-")
                                                               | {SPACE})
    assert set(tasks["dates"].tgt_vocab.idx_to_token[4:]) == set("0123456789-")
    assert set(tasks["reverse"].src_vocab.idx_to_token[4:]) == set("abcdefghij")


@pytest.mark.parametrize("name", TASKS)
def test_load_task_arrays_and_batches(tasks, name):
    data = tasks[name]
    S, T = data.num_steps
    assert isinstance(data.train, BatchIterator) and data.train.shuffle and not data.valid.shuffle
    rows = 0
    for X, X_len, Y, Y_len in data.train:
        assert X.shape[1:] == (S,) and Y.shape[1:] == (T,) and X_len.shape == Y_len.shape == (X.shape[0],)
        assert all(a.dtype == np.int64 for a in (X, X_len, Y, Y_len))
        assert X.shape[0] <= 64
        rows += X.shape[0]
    assert rows == 8000
    X, X_len, Y, Y_len = next(iter(data.valid))
    for n in range(3):  # valid rows keep the order of valid_pairs
        src, tgt = data.valid_pairs[n]
        assert data.src_vocab.to_tokens(X[n, :X_len[n]]) == src + ["<eos>"]
        assert data.tgt_vocab.to_tokens(Y[n, :Y_len[n]]) == tgt + ["<eos>"]
        assert (X[n, X_len[n]:] == data.src_vocab["<pad>"]).all()
        assert data.detokenize(Y[n]) == data.detokenize(tgt)
        assert data.tokenize_source(data.detokenize_source(X[n].tolist())) == src


def test_detokenize_per_task(tasks):
    numbers, dates, reverse = tasks["numbers"], tasks["dates"], tasks["reverse"]
    assert numbers.detokenize(tokenize_french("quatre-vingt-dix-sept")) == "quatre-vingt-dix-sept"
    assert numbers.tokenize_source("seventy  one") == ["seventy", "one"]
    assert dates.detokenize(list("2017-03-03")) == "2017-03-03"
    assert dates.tokenize_source("3 march 2017")[:3] == ["3", SPACE, "m"]
    assert dates.detokenize_source(dates.tokenize_source("friday, march 3rd, 2017")) == "friday, march 3rd, 2017"
    assert reverse.detokenize(["d", "c", "b", "a"]) == "d c b a"
    ids = reverse.tgt_vocab[["d", "c", "<eos>", "<pad>"]]
    assert reverse.detokenize(ids) == reverse.detokenize(np.array(ids)) == "d c"
    with pytest.raises(ValueError, match="split: expected one of"):
        numbers.pairs("dev")


@pytest.mark.filterwarnings("ignore:load_task")  # few examples: some tokens only in valid/test
def test_load_task_determinism():
    a = load_task("dates", batch_size=32, num_examples=300, seed=7)
    b = load_task("dates", batch_size=32, num_examples=300, seed=7)
    c = load_task("dates", batch_size=32, num_examples=300, seed=8)
    assert a.train_pairs == b.train_pairs and a.test_pairs == b.test_pairs and a.src_vocab == b.src_vocab
    for batch_a, batch_b in zip(a.train, b.train):
        assert all((x == y).all() for x, y in zip(batch_a, batch_b))
    assert a.train_pairs != c.train_pairs
    n1 = load_task("numbers", batch_size=8, num_examples=100, seed=1)
    n2 = load_task("numbers", batch_size=8, num_examples=100, seed=2)
    assert n1.train_pairs != n2.train_pairs
    assert [len(n1.pairs(s)) for s in ("train", "valid", "test")] == [80, 10, 10]


@pytest.mark.filterwarnings("ignore:load_task")  # few examples: some tokens only in valid/test
def test_load_task_options_and_num_steps():
    data = load_task("reverse", batch_size=16, num_examples=200, min_len=2, max_len=5, alphabet="xyz", seed=3)
    assert data.num_steps == (6, 6) and set(data.src_vocab.idx_to_token[4:]) <= set("xyz")
    assert all(2 <= len(src) <= 5 for src, _ in data.train_pairs)
    data = load_task("numbers", batch_size=16, num_examples=100, num_steps=20)
    assert data.num_steps == (20, 20) and next(iter(data.train))[2].shape[1] == 20
    data = load_task("dates", batch_size=16, num_examples=100, num_steps=(40, 11), split=(0.5, 0.25, 0.25))
    assert data.num_steps == (40, 11) and [len(data.pairs(s)) for s in ("train", "valid", "test")] == [50, 25, 25]
    data = load_task("numbers", batch_size=16, num_examples=50, split=(1, 0, 0))
    assert len(data.train_pairs) == 50 and len(data.valid) == 0 and len(data.test_pairs) == 0


def test_load_task_warns_on_unseen_tokens():
    # ten one-letter sequences over 26 letters: the valid and test letters never occur in train
    with pytest.warns(UserWarning, match="valid/test tokens not in the train split"):
        data = load_task("reverse", batch_size=4, num_examples=10, min_len=1, max_len=1,
                         alphabet="abcdefghijklmnopqrstuvwxyz")
    X = next(iter(data.valid))[0]
    assert X[0, 0] == data.src_vocab.unk


def test_load_task_errors():
    with pytest.raises(ValueError, match=r"name: expected one of \('numbers', 'dates', 'reverse'\), got 'french'"):
        load_task("french", batch_size=8)
    with pytest.raises(TypeError, match="options: task 'numbers' takes no options, got \\['max_len'\\]"):
        load_task("numbers", batch_size=8, max_len=3)
    with pytest.raises(TypeError, match="options: task 'reverse' takes only"):
        load_task("reverse", batch_size=8, maxlen=3)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'batch_size'"):
        load_task("numbers")
    with pytest.raises(ValueError, match="batch_size: expected a positive int, got 0"):
        load_task("numbers", batch_size=0)
    with pytest.raises(ValueError, match="num_examples: expected a positive int or None, got 0"):
        load_task("numbers", batch_size=8, num_examples=0)
    with pytest.raises(ValueError, match="num: expected at most 10000"):
        load_task("numbers", batch_size=8, num_examples=20_000)
    with pytest.raises(ValueError, match="split: expected fractions summing to 1"):
        load_task("numbers", batch_size=8, split=(0.8, 0.1, 0.2))
    with pytest.raises(ValueError, match="split: expected fractions in"):
        load_task("numbers", batch_size=8, split=(1.2, -0.1, -0.1))
    with pytest.raises(TypeError, match="split: expected three fractions"):
        load_task("numbers", batch_size=8, split=(0.9, 0.1))
    with pytest.raises(ValueError, match="split: expected at least one training pair"):
        load_task("numbers", batch_size=8, num_examples=4, split=(0.2, 0.4, 0.4))
    with pytest.raises(ValueError, match="num_steps: the longest source of task 'numbers' has 6 tokens, so it "
                                         "needs 7 steps with <eos>, got 6"):
        load_task("numbers", batch_size=8, num_steps=6)
    with pytest.raises(ValueError, match="num_steps: the longest target of task 'dates' has 10 tokens"):
        load_task("dates", batch_size=8, num_examples=50, num_steps=(32, 10))
    with pytest.raises(TypeError, match="num_steps: expected an int or a pair"):
        load_task("dates", batch_size=8, num_steps=(32, 11, 5))
    with pytest.raises(TypeError, match="num_steps: expected a positive int, got float"):
        load_task("dates", batch_size=8, num_steps=11.0)


def test_batches_feed_a_seq2seq_model(tasks):
    from npseq.models import build_seq2seq
    from npseq.train import teacher_forcing_inputs
    data = tasks["dates"]
    model = build_seq2seq(len(data.src_vocab), len(data.tgt_vocab), embed_size=8, num_hiddens=8, num_layers=1,
                          seed=0, dtype="float64")
    X, X_len, Y, _ = next(iter(data.test))
    logits = model(X[:4], teacher_forcing_inputs(Y[:4], data.tgt_vocab["<bos>"]), X_len[:4])
    assert logits.shape == (4, 11, len(data.tgt_vocab))
    assert model.attention_weights.shape[1:] == (11, 32)


def test_docstring_examples():
    result = doctest.testmod(npseq.data.tasks)
    assert result.attempted > 0 and result.failed == 0
