"""Tests for npseq.data: text normalisation, Vocab, truncate/pad, batches, the parallel-corpus loader."""
import collections
import doctest
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optional_tools import FRA_TXT, skip_reason

import npseq.data
from npseq.data import (
    NMT_RESERVED_TOKENS,
    BatchIterator,
    Vocab,
    build_array_nmt,
    load_data_nmt,
    load_parallel_corpus,
    preprocess_nmt,
    tokenize_nmt,
    truncate_pad,
)


# d2l's text pipeline, transcribed as the reference the tests compare with
def d2l_preprocess(text):
    def no_space(char, prev_char):
        return char in set(",.!?") and prev_char != " "
    text = text.replace("\u202f", " ").replace("\xa0", " ").lower()
    return "".join(" " + c if i > 0 and no_space(c, text[i - 1]) else c for i, c in enumerate(text))


def d2l_tokenize(text, num_examples=None):
    source, target = [], []
    for i, line in enumerate(text.split("\n")):
        if num_examples and i > num_examples:
            break
        parts = line.split("\t")
        if len(parts) == 2:
            source.append(parts[0].split(" "))
            target.append(parts[1].split(" "))
    return source, target


def d2l_vocab_tokens(lines, min_freq, reserved):
    """The token set of d2l's Vocab (its ids differ only in the order of equal counts)."""
    counts = collections.Counter(token for line in lines for token in line)
    return set(["<unk>", *reserved] + [t for t, f in counts.items() if f >= min_freq])


def write(tmp_path, content, name="corpus.txt", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(content.encode(encoding) if isinstance(content, str) else content)
    return path


# ------------------------------------------------------------------ preprocess / tokenize
def test_preprocess_nmt_examples():
    assert preprocess_nmt("Go.") == "go ."
    assert preprocess_nmt("Au feu\u202f!") == "au feu !"
    assert preprocess_nmt("Ça\xa0alors\u202f!") == "ça alors !"
    assert preprocess_nmt("Who?") == "who ?"
    assert preprocess_nmt("Hi , Tom.") == "hi , tom ."        # a space already there: nothing added
    assert preprocess_nmt("Wait...") == "wait . . ."          # the previous char is read before insertion
    assert preprocess_nmt(".Go") == ".go"                     # position 0 never gets a space
    assert preprocess_nmt("a\t!b\n.c") == "a\t !b\n .c"       # tab and newline are not spaces
    assert preprocess_nmt("It's a well-known fact;") == "it's a well-known fact;"
    assert preprocess_nmt("") == ""
    with pytest.raises(TypeError, match="text: expected a str, got bytes"):
        preprocess_nmt(b"Go.")


text_alphabet = st.sampled_from(list("aB ,.!?\t\n'\u202f\xa0ÉéΣ-"))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=text_alphabet, max_size=40))
def test_preprocess_nmt_matches_d2l(text):
    assert preprocess_nmt(text) == d2l_preprocess(text)


def test_tokenize_nmt_basic():
    source, target = tokenize_nmt(preprocess_nmt("Go.\tVa !\nI won!\tJ'ai gagné\u202f!\n"))
    assert source == [["go", "."], ["i", "won", "!"]]
    assert target == [["va", "!"], ["j'ai", "gagné", "!"]]
    # doubled, leading and trailing spaces give no empty tokens; a third column is ignored
    assert tokenize_nmt(" a  b \t c\tCC-BY 2.0\r\n") == ([["a", "b"]], [["c"]])
    with pytest.raises(ValueError, match="text: expected at least one sentence pair"):
        tokenize_nmt("")
    with pytest.raises(ValueError, match="num_examples: expected a positive int or None, got 0"):
        tokenize_nmt("a\tb", num_examples=0)
    with pytest.raises(TypeError, match="text: expected a str"):
        tokenize_nmt(["a\tb"])


sentence = st.text(alphabet=st.sampled_from(list("aZé ,.!?'\u202f\xa0")), min_size=1, max_size=12).filter(
    lambda s: s.strip())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(sentence, sentence), min_size=1, max_size=8), st.booleans())
def test_sentence_by_sentence_equals_d2l_whole_text(pairs, crlf):
    """Normalising each side alone gives d2l's tokens (whole text normalised first), empty ones dropped."""
    text = "".join(f"{s}\t{t}\n" for s, t in pairs)
    d2l_source, d2l_target = d2l_tokenize(d2l_preprocess(text))
    expected = ([[w for w in line if w] for line in d2l_source], [[w for w in line if w] for line in d2l_target])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pairs.txt"
        path.write_bytes(text.replace("\n", "\r\n" if crlf else "\n").encode("utf-8"))
        assert load_parallel_corpus(path) == expected
    assert tokenize_nmt(preprocess_nmt(text)) == expected


# ------------------------------------------------------------------------------ Vocab
def test_vocab_ids_and_lookup():
    lines = [["b", "a", "c"], ["a", "b", "d", "a"], ["<eos>"]]
    vocab = Vocab(lines, min_freq=2, reserved_tokens=["<pad>", "<bos>", "<eos>"])
    assert vocab.idx_to_token == ["<unk>", "<pad>", "<bos>", "<eos>", "a", "b"]
    assert vocab.unk == 0 and vocab["zebra"] == 0 and vocab["<unk>"] == 0
    assert len(vocab) == 6
    assert vocab["a"] == 4 and vocab[["b", "q", "<eos>"]] == [5, 0, 3]
    assert vocab[[["a"], ("b",)]] == [[4], [5]]
    # every distinct token with its count, below min_freq too, reserved ones included
    assert vocab.token_freqs == [("a", 3), ("b", 2), ("<eos>", 1), ("c", 1), ("d", 1)]
    assert vocab.token_to_idx == {t: i for i, t in enumerate(vocab.idx_to_token)}
    assert "a" in vocab and "c" not in vocab
    assert vocab.to_tokens(4) == "a"
    assert vocab.to_tokens(np.int64(5)) == "b"
    assert vocab.to_tokens([4, 0, 1]) == ["a", "<unk>", "<pad>"]
    assert vocab.to_tokens((5,)) == ["b"]
    assert vocab.to_tokens(np.array([5, 4], dtype=np.int64)) == ["b", "a"]
    assert vocab.to_tokens(np.array(3)) == "<eos>"
    assert vocab.to_tokens(np.array([[1, 2]], dtype=np.int32)) == [["<pad>", "<bos>"]]
    assert "size=6" in repr(vocab)


def test_vocab_flat_tokens_and_defaults():
    vocab = Vocab(list("hello"))
    assert vocab.idx_to_token == ["<unk>", "l", "e", "h", "o"]
    assert Vocab().idx_to_token == ["<unk>"] and Vocab([]).token_freqs == []
    assert Vocab([[], []], reserved_tokens=("<pad>",)).idx_to_token == ["<unk>", "<pad>"]
    assert len(Vocab([["x"]], min_freq=0)) == 2 and len(Vocab([["x"]], min_freq=2)) == 1


def test_vocab_errors():
    vocab = Vocab([["a"]])
    with pytest.raises(TypeError, match="tokens: expected a list of tokens or a list of token lists, got str"):
        Vocab("hello")
    with pytest.raises(TypeError, match="tokens: expected either tokens or token lists"):
        Vocab([["a"], "b"])
    with pytest.raises(TypeError, match="tokens: expected str tokens, got int"):
        Vocab([[1, 2]])
    with pytest.raises(ValueError, match="reserved_tokens: expected distinct tokens other than '<unk>'"):
        Vocab([["a"]], reserved_tokens=["<pad>", "<pad>"])
    with pytest.raises(ValueError, match="reserved_tokens"):
        Vocab([["a"]], reserved_tokens=["<unk>"])
    with pytest.raises(TypeError, match="reserved_tokens: expected a list of str, got str"):
        Vocab([["a"]], reserved_tokens="<pad>")
    with pytest.raises(ValueError, match="min_freq: expected an int >= 0, got -1"):
        Vocab([["a"]], min_freq=-1)
    with pytest.raises(TypeError, match="min_freq"):
        Vocab([["a"]], min_freq=1.5)
    with pytest.raises(TypeError, match="tokens: expected a token \\(str\\) or a list of tokens, got int"):
        vocab[3]
    with pytest.raises(IndexError, match="indices: expected ids in \\[0, 1\\], got 2"):
        vocab.to_tokens(2)
    with pytest.raises(IndexError, match="got -1"):
        vocab.to_tokens([0, -1])
    with pytest.raises(TypeError, match="indices: expected integer ids, got dtype float64"):
        vocab.to_tokens(np.array([0.0]))
    with pytest.raises(TypeError, match="indices: expected an int id"):
        vocab.to_tokens("a")


def test_vocab_dict_round_trip_through_json():
    vocab = Vocab([["b", "a", "c"], ["a", "b", "d"]], min_freq=2, reserved_tokens=list(NMT_RESERVED_TOKENS))
    state = json.loads(json.dumps(vocab.to_dict()))
    assert state["idx_to_token"] == vocab.idx_to_token
    restored = Vocab.from_dict(state)
    assert restored == vocab and restored.idx_to_token == vocab.idx_to_token
    assert restored.token_freqs == vocab.token_freqs and restored["b"] == vocab["b"]
    assert vocab != Vocab([["a"]])
    tampered = dict(state, idx_to_token=state["idx_to_token"][::-1])
    with pytest.raises(ValueError, match="state\\['idx_to_token'\\]: expected the ids"):
        Vocab.from_dict(tampered)
    with pytest.raises(ValueError, match="missing \\['min_freq'\\]"):
        Vocab.from_dict({k: v for k, v in state.items() if k != "min_freq"})
    with pytest.raises(ValueError, match="state\\['token_freqs'\\]: expected \\[token, count >= 1\\] pairs"):
        Vocab.from_dict(dict(state, token_freqs=[["a", 0]]))
    with pytest.raises(ValueError, match="expected distinct tokens"):
        Vocab.from_dict(dict(state, token_freqs=[["a", 2], ["a", 2]], idx_to_token=None))
    with pytest.raises(TypeError, match="state: expected a dict"):
        Vocab.from_dict([1])


token = st.sampled_from(["a", "b", "c", "d", "e", "ab", "B", "é", "<pad>", ""])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(token, max_size=6), max_size=8), st.integers(0, 3), st.randoms(use_true_random=False))
def test_vocab_order_is_independent_of_input_order(lines, min_freq, rnd):
    shuffled = [list(line) for line in lines]
    for line in shuffled:
        rnd.shuffle(line)
    rnd.shuffle(shuffled)
    reserved = ["<pad>", "<bos>", "<eos>"]
    vocab, again = Vocab(lines, min_freq, reserved), Vocab(shuffled, min_freq, reserved)
    assert vocab.idx_to_token == again.idx_to_token and vocab.token_freqs == again.token_freqs
    # the order itself: counts descending, then the token; the set as d2l's Vocab
    counts = collections.Counter(t for line in lines for t in line)
    rest = vocab.idx_to_token[4:]
    assert [(-counts[t], t) for t in rest] == sorted((-counts[t], t) for t in rest)
    assert set(vocab.idx_to_token) == d2l_vocab_tokens(lines, min_freq, reserved)
    assert len(set(vocab.idx_to_token)) == len(vocab)
    assert Vocab.from_dict(vocab.to_dict()) == vocab


# ---------------------------------------------------------------- truncate_pad / build_array
def test_truncate_pad_examples():
    assert truncate_pad([5, 6, 7], 5, 1) == [5, 6, 7, 1, 1]
    assert truncate_pad([5, 6, 7], 2, 1) == [5, 6]
    assert truncate_pad((5, 6), 2, 1) == [5, 6]
    assert truncate_pad([], 3, "<pad>") == ["<pad>"] * 3
    assert truncate_pad([5], 0, 1) == []
    line = [1, 2]
    truncate_pad(line, 4, 0)
    assert line == [1, 2]
    with pytest.raises(ValueError, match="num_steps: expected an int >= 0, got -1"):
        truncate_pad([1], -1, 0)
    with pytest.raises(TypeError, match="line: expected a list"):
        truncate_pad("abc", 2, 0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=12), st.integers(0, 12), st.integers(-1, 9))
def test_truncate_pad_property(line, num_steps, pad):
    out = truncate_pad(line, num_steps, pad)
    assert len(out) == num_steps
    kept = min(len(line), num_steps)
    assert out[:kept] == line[:kept] and out[kept:] == [pad] * (num_steps - kept)


NMT_VOCAB = Vocab([["a", "b", "c", "a"]], reserved_tokens=list(NMT_RESERVED_TOKENS))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "zzz"]), max_size=9), max_size=6), st.integers(1, 10))
def test_build_array_nmt_property(lines, num_steps):
    array, valid_len = build_array_nmt(lines, NMT_VOCAB, num_steps)
    pad, eos = NMT_VOCAB["<pad>"], NMT_VOCAB["<eos>"]
    assert isinstance(array, np.ndarray) and array.dtype == np.int64 and array.shape == (len(lines), num_steps)
    assert isinstance(valid_len, np.ndarray) and valid_len.dtype == np.int64 and valid_len.shape == (len(lines),)
    for n, line in enumerate(lines):
        assert valid_len[n] == min(len(line) + 1, num_steps)
        ids = (NMT_VOCAB[line] + [eos])[:num_steps]
        assert array[n, :valid_len[n]].tolist() == ids
        assert (array[n, valid_len[n]:] == pad).all()
    # d2l's count of non-pad entries agrees when no word is '<pad>'
    np.testing.assert_array_equal(valid_len, (array != pad).sum(axis=1))


def test_build_array_nmt_examples_and_errors():
    array, valid_len = build_array_nmt([["a", "zzz"], ["b", "c", "a", "b"]], NMT_VOCAB, 4)
    a, b, c = NMT_VOCAB["a"], NMT_VOCAB["b"], NMT_VOCAB["c"]
    assert array.tolist() == [[a, 0, 3, 1], [b, c, a, b]]   # the second loses its <eos> to truncation
    assert valid_len.tolist() == [3, 4]
    assert build_array_nmt([], NMT_VOCAB, 3)[0].shape == (0, 3)
    # a literal '<pad>' word still counts as a position (d2l's count would say 1)
    assert build_array_nmt([["<pad>"]], NMT_VOCAB, 3)[1].tolist() == [2]
    with pytest.raises(ValueError, match="vocab: expected a vocabulary with the reserved tokens"):
        build_array_nmt([["a"]], Vocab([["a"]]), 3)
    with pytest.raises(ValueError, match="num_steps: expected a positive int, got 0"):
        build_array_nmt([["a"]], NMT_VOCAB, 0)
    with pytest.raises(TypeError, match="lines\\[1\\]: expected a list of tokens, got str"):
        build_array_nmt([["a"], "a b"], NMT_VOCAB, 3)
    with pytest.raises(TypeError, match="vocab: expected a Vocab"):
        build_array_nmt([["a"]], {"a": 1}, 3)


# ------------------------------------------------------------------------- BatchIterator
def test_batch_iterator_basics():
    x = np.arange(10, dtype=np.int64)
    y = np.arange(20, dtype=np.int64).reshape(10, 2)
    it = BatchIterator((x, y), batch_size=4, shuffle=False)
    assert len(it) == 3 and it.num_examples == 10
    batches = list(it)
    assert [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert all(isinstance(b, tuple) and len(b) == 2 for b in batches)
    np.testing.assert_array_equal(batches[2][1], y[8:])
    assert len(BatchIterator([x], 4, drop_last=True)) == 2
    assert [len(b[0]) for b in BatchIterator([x], 4, drop_last=True)] == [4, 4]
    assert len(BatchIterator([x], 5, drop_last=True)) == 2 and len(BatchIterator([x], 11)) == 1
    assert len(BatchIterator([x[:0]], 3)) == 0 and list(BatchIterator([x[:0]], 3)) == []


def test_batch_iterator_epochs_are_seeded():
    x = np.arange(50)
    it = BatchIterator((x,), batch_size=7, seed=3)
    first, second = [np.concatenate([b[0] for b in it]) for _ in range(2)]
    assert it.epoch == 2
    assert sorted(first.tolist()) == list(range(50)) and sorted(second.tolist()) == list(range(50))
    assert first.tolist() != second.tolist()       # reshuffled each epoch
    np.testing.assert_array_equal(first, it.order(0))
    np.testing.assert_array_equal(first, np.random.default_rng([3, 0]).permutation(50))
    again = BatchIterator((x,), batch_size=7, seed=3)
    assert np.concatenate([b[0] for b in again]).tolist() == first.tolist()   # same seed, same epochs
    again.set_epoch(1)                                                         # resume at epoch 1
    assert np.concatenate([b[0] for b in again]).tolist() == second.tolist()
    assert np.concatenate([b[0] for b in it.batches(0)]).tolist() == first.tolist() and it.epoch == 2
    assert BatchIterator((x,), 7, seed=4).order(0).tolist() != first.tolist()
    assert it.order(5).dtype == np.int64


def test_batch_iterator_errors():
    x = np.arange(4)
    with pytest.raises(ValueError,
                       match="arrays: expected arrays with the same number of rows, got lengths \\[4, 3\\]"):
        BatchIterator((x, x[:3]), 2)
    with pytest.raises(ValueError, match="batch_size: expected a positive int, got 0"):
        BatchIterator((x,), 0)
    with pytest.raises(TypeError, match="batch_size: expected a positive int, got bool"):
        BatchIterator((x,), True)
    with pytest.raises(TypeError, match="arrays: expected a non-empty tuple or list of arrays, got ndarray"):
        BatchIterator(x, 2)
    with pytest.raises(TypeError, match="of length 0"):
        BatchIterator((), 2)
    with pytest.raises(TypeError, match="arrays\\[1\\]: expected an array, got list"):
        BatchIterator((x, [1, 2, 3, 4]), 2)
    with pytest.raises(ValueError, match="arrays\\[0\\]: expected an array with a first"):
        BatchIterator((np.array(3),), 2)
    with pytest.raises(ValueError, match="seed: expected an int >= 0, got -1"):
        BatchIterator((x,), 2, seed=-1)
    it = BatchIterator((x,), 2)
    with pytest.raises(ValueError, match="epoch: expected an int >= 0, got -1"):
        it.batches(-1)           # checked at the call, not at the first next()
    with pytest.raises(ValueError, match="epoch"):
        it.set_epoch(-2)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 30), st.integers(1, 12), st.booleans(), st.booleans(), st.integers(0, 2**32))
def test_batch_iterator_property(n, batch_size, shuffle, drop_last, seed):
    x = np.arange(n, dtype=np.int64)
    it = BatchIterator((x, 2 * x, x.reshape(n, 1)), batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)
    batches = list(it)
    assert len(batches) == len(it) == (n // batch_size if drop_last else -(-n // batch_size))
    for a, b, c in batches:
        np.testing.assert_array_equal(b, 2 * a)                # rows stay aligned
        np.testing.assert_array_equal(c[:, 0], a)
        assert 1 <= len(a) <= batch_size
    assert all(len(batch[0]) == batch_size for batch in batches[:-1])
    seen = np.concatenate([batch[0] for batch in batches]) if batches else np.zeros(0, np.int64)
    assert len(set(seen.tolist())) == len(seen) == (n - n % batch_size if drop_last else n)
    np.testing.assert_array_equal(seen, it.order(0)[:len(seen)])


# ----------------------------------------------------------------- load_parallel_corpus
def test_loader_reads_two_and_three_columns_bom_crlf_and_blank_lines(tmp_path):
    content = ("\ufeffGo.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272 (CM)\r\n"
               "\r\n"
               "Hi.\tSalut !\r\n"
               "   \n"
               "I won!\tJ'ai gagné\u202f!\r\n"
               "\n")
    path = write(tmp_path, content)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # blank lines are not malformed
        source, target = load_parallel_corpus(path)
    assert source == [["go", "."], ["hi", "."], ["i", "won", "!"]]
    assert target == [["va", "!"], ["salut", "!"], ["j'ai", "gagné", "!"]]
    assert load_parallel_corpus(str(path)) == (source, target)
    assert source[0][0] == "go"                 # the byte-order mark is gone
    assert all("\r" not in w for line in target for w in line)


def test_loader_narrow_no_break_space_before_exclamation(tmp_path):
    path = write(tmp_path, "Fire!\tAu feu\u202f!\nWow!\tÇa\xa0alors\u202f!\n")
    source, target = load_parallel_corpus(path)
    assert source == [["fire", "!"], ["wow", "!"]]
    assert target == [["au", "feu", "!"], ["ça", "alors", "!"]]


def test_loader_warns_once_about_malformed_lines(tmp_path):
    content = ("Go.\tVa !\n"
               "no tab here\n"            # line 2: no tab
               "Hi.\t\n"                  # line 3: empty target
               "\tSalut !\n"              # line 4: empty source
               "Run!\t \u202f \n"         # line 5: target only whitespace
               "a\tb\tc\td\n"             # line 6: four columns
               "\t\n"                     # line 7: both sides empty
               "Who?\tQui ?\n")
    path = write(tmp_path, content)
    with pytest.warns(UserWarning) as record:
        source, target = load_parallel_corpus(path)
    assert len(record) == 1
    message = str(record[0].message)
    assert str(path) in message and "skipped 6 malformed lines" in message
    assert "the first is line 2: 'no tab here'" in message
    assert source == [["go", "."], ["who", "?"]] and target == [["va", "!"], ["qui", "?"]]


def test_loader_num_examples_counts_usable_pairs(tmp_path):
    path = write(tmp_path, "A.\tB.\nbroken\nC.\tD.\n\nE.\tF.\nbroken again\n")
    with pytest.warns(UserWarning, match="skipped 1 malformed line \\(.*the first is line 2"):
        source, target = load_parallel_corpus(path, num_examples=2)
    assert source == [["a", "."], ["c", "."]] and target == [["b", "."], ["d", "."]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # reading stops before the broken line
        assert load_parallel_corpus(path, num_examples=1) == ([["a", "."]], [["b", "."]])
    with pytest.warns(UserWarning, match="skipped 2 malformed lines"):
        assert len(load_parallel_corpus(path, num_examples=100)[0]) == 3   # fewer pairs than asked
    with pytest.warns(UserWarning):
        assert load_parallel_corpus(path, num_examples=np.int64(3))[0][-1] == ["e", "."]
    for bad, error in ((0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError), ("3", TypeError)):
        with pytest.raises(error, match="num_examples: expected a positive int or None"):
            load_parallel_corpus(path, num_examples=bad)


def test_loader_missing_file_and_no_usable_pair(tmp_path):
    missing = tmp_path / "nowhere" / "fra.txt"
    with pytest.raises(FileNotFoundError, match="fra.txt") as info:
        load_parallel_corpus(missing)
    assert str(missing) in str(info.value)
    bad = write(tmp_path, "no tab\nstill none\n", name="bad.txt")
    with pytest.raises(ValueError, match="expected at least one sentence pair") as info:
        load_parallel_corpus(bad)
    assert str(bad) in str(info.value) and "2 malformed lines, the first is line 1" in str(info.value)
    empty = write(tmp_path, "\ufeff\r\n\n", name="empty.txt")
    with pytest.raises(ValueError, match="empty.txt: expected at least one sentence pair"):
        load_parallel_corpus(empty)
    latin1 = write(tmp_path, "Ça va.\tÇa va.\n", name="latin1.txt", encoding="latin-1")
    with pytest.raises(ValueError, match="path: expected UTF-8 text in .*latin1.txt"):
        load_parallel_corpus(latin1)
    with pytest.raises(TypeError, match="path: expected a str or os.PathLike, got int"):
        load_parallel_corpus(3)


# --------------------------------------------------------------------------- load_data_nmt
def test_load_data_nmt_on_a_small_corpus(tmp_path):
    content = "".join(f"{s}\t{t}\n" for s, t in [
        ("Go.", "Va !"), ("Go now.", "Va maintenant !"), ("I go.", "Je vais."), ("Run!", "Cours !"),
        ("I run.", "Je cours."), ("Go!", "Va !"), ("I ran far away.", "J'ai couru très loin.")])
    path = write(tmp_path, content)
    batches, src_vocab, tgt_vocab = load_data_nmt(batch_size=3, num_steps=4, num_examples=None, path=path, seed=1)
    source, target = load_parallel_corpus(path)
    assert src_vocab == Vocab(source, min_freq=2, reserved_tokens=["<pad>", "<bos>", "<eos>"])
    assert tgt_vocab == Vocab(target, min_freq=2, reserved_tokens=["<pad>", "<bos>", "<eos>"])
    assert src_vocab.idx_to_token == ["<unk>", "<pad>", "<bos>", "<eos>", ".", "go", "i", "!", "run"]
    assert isinstance(batches, BatchIterator) and len(batches) == 3 and batches.seed == 1
    src_array, src_valid, tgt_array, tgt_valid = batches.arrays
    expected_src = build_array_nmt(source, src_vocab, 4)
    np.testing.assert_array_equal(src_array, expected_src[0])
    np.testing.assert_array_equal(src_valid, expected_src[1])
    np.testing.assert_array_equal(tgt_array, build_array_nmt(target, tgt_vocab, 4)[0])
    assert tgt_valid.tolist() == [3, 4, 4, 3, 4, 3, 4]
    for X, X_valid_len, Y, Y_valid_len in batches:
        assert X.dtype == Y.dtype == X_valid_len.dtype == Y_valid_len.dtype == np.int64
        assert X.shape == Y.shape == (len(X_valid_len), 4) and Y_valid_len.shape == X_valid_len.shape
    again = load_data_nmt(3, 4, num_examples=None, path=path, seed=1)[0]
    assert [b[0].tolist() for b in again] == [b[0].tolist() for b in batches.batches(0)]
    assert len(load_data_nmt(2, 4, num_examples=3, path=path)[0].arrays[0]) == 3


def test_load_data_nmt_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="path: expected the path of a tab-separated parallel corpus"):
        load_data_nmt(2, 8)
    path = write(tmp_path, "a\tb\n")
    with pytest.raises(ValueError, match="batch_size: expected a positive int, got 0"):
        load_data_nmt(0, 8, path=path)
    with pytest.raises(ValueError, match="num_steps: expected a positive int, got 0"):
        load_data_nmt(2, 0, path=path)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        load_data_nmt(2, 8, path=tmp_path / "missing.txt")


# --------------------------------------------------------------------- the real fra.txt
@pytest.mark.skipif(FRA_TXT is None, reason=skip_reason("fra"))
def test_fra_eng_first_pairs_match_d2l():
    raw = FRA_TXT.read_text(encoding="utf-8")
    d2l_source, d2l_target = d2l_tokenize(d2l_preprocess(raw), num_examples=600)
    assert len(d2l_source) == 601                 # d2l's loop keeps lines 0..600
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # the first lines are all well-formed
        batches, src_vocab, tgt_vocab = load_data_nmt(batch_size=2, num_steps=8, num_examples=600, path=FRA_TXT)
        source, target = load_parallel_corpus(FRA_TXT, num_examples=601)
    assert batches.num_examples == 600
    assert (len(src_vocab), len(tgt_vocab)) == (188, 201)
    # d2l's load_data_nmt(num_examples=600) is this loader's num_examples=601
    assert (source, target) == (d2l_source, d2l_target)
    reserved = ["<pad>", "<bos>", "<eos>"]
    src601, tgt601 = Vocab(source, 2, reserved), Vocab(target, 2, reserved)
    assert (len(src601), len(tgt601)) == (188, 202)
    assert set(src601.idx_to_token) == d2l_vocab_tokens(d2l_source, 2, reserved)
    assert set(tgt601.idx_to_token) == d2l_vocab_tokens(d2l_target, 2, reserved)
    X, X_valid_len, Y, Y_valid_len = next(iter(batches))
    assert X.shape == Y.shape == (2, 8) and X.dtype == np.int64


@pytest.mark.skipif(FRA_TXT is None, reason=skip_reason("fra"))
def test_fra_eng_whole_file_matches_d2l_without_empty_tokens():
    d2l_source, d2l_target = d2l_tokenize(d2l_preprocess(FRA_TXT.read_text(encoding="utf-8")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        source, target = load_parallel_corpus(FRA_TXT)
    assert source == [[w for w in line if w] for line in d2l_source]
    assert target == [[w for w in line if w] for line in d2l_target]


# ------------------------------------------------------------------------------ docstrings
@pytest.mark.parametrize("module", ["text", "vocab", "nmt", "batching"])
def test_docstring_examples(module):
    result = doctest.testmod(getattr(npseq.data, module))
    assert result.attempted > 0 and result.failed == 0


def test_every_carriage_return_before_a_newline_is_dropped():
    # Some converters turn \r\n into \r\r\n; no \r may stay glued to the last token of a line.
    assert npseq.data.tokenize_nmt("go .\tva !\r\r\nhi .\tsalut !\r\n") == (
        [["go", "."], ["hi", "."]], [["va", "!"], ["salut", "!"]])
