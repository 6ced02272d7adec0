"""BLEU (d2l's sentence score and sacreBLEU's corpus score) and perplexity."""
import math
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optional_tools import require

from npseq.metrics import bleu, corpus_bleu, perplexity

# ----------------------------------------------------------------- d2l BLEU


@pytest.mark.parametrize("pred, label, expected", [
    ("il est bon .", "il est calme .", 0.658),
    # d2l's printed translations (section 10.7), k=2
    ("va !", "va !", 1.000),
    ("j'ai perdu .", "j'ai perdu .", 1.000),
    ("il est riche .", "il est calme .", 0.658),
    ("je suis chez moi .", "je suis chez moi .", 1.000),
])
def test_bleu_d2l_examples(pred, label, expected):
    assert round(bleu(pred, label, k=2), 3) == expected


def test_bleu_formula_by_hand():
    # BP = exp(1 - 4/3); p1 = 3/3; p2 = 1/2 ("a b" matches, "b d" does not)
    assert bleu("a b d", "a b c d", k=2) == pytest.approx(math.exp(1 - 4 / 3) * (1 / 2) ** 0.25, rel=1e-15)
    # clipped counts: "the" occurs twice in the label, five times in the prediction
    assert bleu("the the the the the", "the cat the mat x", k=1) == pytest.approx((2 / 5) ** 0.5)
    # a longer prediction gets no brevity bonus
    assert bleu("a b c d", "a b", k=1) == pytest.approx(0.5 ** 0.5)


def _d2l_bleu(pred_seq, label_seq, k):
    """Current d2l-en's algorithm (orders up to ``min(k, len_pred)``), restated for comparison."""
    pred_tokens, label_tokens = pred_seq.split(" "), label_seq.split(" ")
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    score = math.exp(min(0, 1 - len_label / len_pred))
    for n in range(1, min(k, len_pred) + 1):
        num_matches, label_subs = 0, {}
        for i in range(len_label - n + 1):
            gram = " ".join(label_tokens[i:i + n])
            label_subs[gram] = label_subs.get(gram, 0) + 1
        for i in range(len_pred - n + 1):
            gram = " ".join(pred_tokens[i:i + n])
            if label_subs.get(gram, 0) > 0:
                num_matches += 1
                label_subs[gram] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score


sentences = st.lists(st.sampled_from(["a", "b", "c", "."]), min_size=1, max_size=9)


@given(pred=sentences, label=sentences, k=st.integers(1, 4))
@settings(max_examples=200, deadline=None)
def test_bleu_agrees_with_current_d2l(pred, label, k):
    expected = _d2l_bleu(" ".join(pred), " ".join(label), k)
    assert bleu(" ".join(pred), " ".join(label), k) == pytest.approx(expected, rel=1e-14, abs=0)
    assert bleu(pred, label, k) == pytest.approx(expected, rel=1e-14, abs=0)


@given(sentence=sentences, k=st.integers(1, 6))
@settings(max_examples=50, deadline=None)
def test_bleu_of_a_sentence_with_itself_is_one(sentence, k):
    assert bleu(sentence, sentence, k) == 1.0


def test_bleu_short_predictions():
    assert bleu("va", "va", k=2) == 1.0  # neither has a bigram: they agree
    # current d2l-en skips the orders longer than the prediction: only the brevity penalty charges
    assert round(bleu("va", "va !", k=2), 4) == 0.3679
    assert bleu("va", "va !", k=2) == pytest.approx(math.exp(-1), rel=1e-15)
    assert round(bleu("va !", "va ! ici", k=3), 4) == 0.6065
    assert bleu("", "", k=2) == 1.0
    assert bleu("", "va !", k=2) == 0.0
    assert bleu([], ["va"], k=1) == 0.0
    assert bleu("va !", "", k=2) == 0.0


def test_bleu_accepts_token_lists_and_id_arrays():
    assert bleu(["il", "est", "bon", "."], ("il", "est", "calme", "."), k=2) == bleu(
        "il est bon .", "il est calme .", k=2)
    assert bleu(np.array([4, 5, 6, 7]), [4, 5, 8, 7], k=2) == bleu("4 5 6 7", "4 5 8 7", k=2)


@pytest.mark.parametrize("args, error, match", [
    (("a b", "a b", 0), ValueError, "k"),
    (("a b", "a b", 2.0), ValueError, "k"),
    ((3, "a b", 1), TypeError, "pred_seq"),
    (("a b", [["a"], ["b"]], 1), TypeError, r"label_seq\[0\]"),
    ((np.zeros((2, 2), dtype=int), "a", 1), ValueError, "pred_seq"),
])
def test_bleu_bad_arguments(args, error, match):
    with pytest.raises(error, match=match):
        bleu(*args)


# --------------------------------------------------------------- corpus BLEU


def test_corpus_bleu_perfect_and_disjoint():
    hyps = ["the cat sat on the mat", "a b c d e"]
    assert corpus_bleu(hyps, hyps) == pytest.approx(100.0, rel=1e-14)
    assert corpus_bleu(["x y z w"], ["a b c d"]) == 0.0
    assert corpus_bleu(["a b c"], ["a b c"]) == 0.0  # no 4-gram anywhere in the hypotheses


def test_corpus_bleu_brevity_penalty():
    # Every n-gram of the hypothesis matches, so only the brevity penalty remains.
    hyps, refs = ["a b c d e f"], ["a b c d e f g h i"]
    assert corpus_bleu(hyps, refs) == pytest.approx(100 * math.exp(1 - 9 / 6), rel=1e-14)


def test_corpus_bleu_exp_smoothing_by_hand():
    # hyp "a b c x y": unigrams 3/5, bigrams 2/4, trigrams 1/3, 4-grams 0/2 -> smoothed 1/(2 * 2)
    expected = 100 * math.exp((math.log(3 / 5) + math.log(2 / 4) + math.log(1 / 3) + math.log(1 / 4)) / 4)
    assert corpus_bleu(["a b c x y"], ["a b c d e"]) == pytest.approx(expected, rel=1e-14)


def test_corpus_bleu_pools_statistics_over_the_corpus():
    hyps, refs = ["a b c d", "e f g h i"], ["a b c d", "e f g x i"]
    # unigrams 8/9, bigrams 5/7, trigrams 3/5, 4-grams 1/3; equal lengths
    expected = 100 * (8 / 9 * 5 / 7 * 3 / 5 * 1 / 3) ** 0.25
    assert corpus_bleu(hyps, refs) == pytest.approx(expected, rel=1e-14)


def test_corpus_bleu_reference_layouts_and_whitespace():
    hyps = ["a  b c d\t", " e f g h"]
    assert corpus_bleu(hyps, ["a b c d", "e f g h"]) == pytest.approx(100.0)
    assert corpus_bleu(hyps, [["a b c d", "x"], [None, "e f g h"]]) == pytest.approx(100.0)


@pytest.mark.parametrize("hyps, refs, error, match", [
    ([], ["a"], TypeError, "hyps"),
    ("a b", ["a b"], TypeError, "hyps"),
    ([["a", "b"]], ["a b"], TypeError, r"hyps\[0\].*join"),
    (["a", "b"], ["a"], ValueError, r"refs.*2 reference strings"),
    (["a", "b"], [["a", "b"], ["a"]], ValueError, r"refs\[1\]"),
    (["a"], [[1]], TypeError, r"refs\[0\]\[0\]"),
    (["a"], [None], ValueError, "hypothesis 0"),
    (["a"], "a", TypeError, "refs"),
])
def test_corpus_bleu_bad_arguments(hyps, refs, error, match):
    with pytest.raises(error, match=match):
        corpus_bleu(hyps, refs)


line = st.lists(st.sampled_from(["a", "b", "c", "d", "."]), min_size=0, max_size=10).map(" ".join)


@st.composite
def corpora(draw):
    n = draw(st.integers(1, 6))
    hyps = draw(st.lists(line, min_size=n, max_size=n))
    num_streams = draw(st.integers(1, 3))
    refs = [draw(st.lists(line, min_size=n, max_size=n)) for _ in range(num_streams)]
    return hyps, refs


@given(corpus=corpora())
@settings(max_examples=300, deadline=None)
def test_corpus_bleu_matches_sacrebleu(corpus):
    sacrebleu = require("sacrebleu")
    hyps, refs = corpus
    expected = sacrebleu.metrics.BLEU(tokenize="none").corpus_score(hyps, refs).score
    assert abs(corpus_bleu(hyps, refs) - expected) < 1e-6
    if len(refs) == 1:
        assert abs(corpus_bleu(hyps, refs[0]) - expected) < 1e-6


@pytest.mark.parametrize("hyps, refs", [
    (["il est bon .", "je suis chez moi ."], [["il est calme .", "je suis chez moi ."]]),
    (["the the the the"], [["the cat is on the mat"], ["there is a cat on the mat"]]),
    (["", "a b c d e"], [["a b", "a b c d e f g"]]),
    (["a b c d e f g h"], [["a b c"], ["a b c d e f g h i j"]]),  # closest reference length
    (["a b c d e f"], [["a b c d e f g h"], ["a b c d"]]),  # a tie goes to the shorter one
])
def test_corpus_bleu_matches_sacrebleu_by_hand(hyps, refs):
    sacrebleu = require("sacrebleu")
    expected = sacrebleu.metrics.BLEU(tokenize="none").corpus_score(hyps, refs).score
    assert abs(corpus_bleu(hyps, refs) - expected) < 1e-6


# ---------------------------------------------------------------- perplexity


@pytest.mark.parametrize("vocab_size", [1, 2, 7, 1000])
def test_uniform_model_has_perplexity_vocab_size(vocab_size):
    num_tokens = 37
    total_nll = num_tokens * math.log(vocab_size)
    assert perplexity(total_nll, num_tokens) == pytest.approx(vocab_size, rel=1e-12)


def test_perplexity_values_and_types():
    assert perplexity(0.0, 10) == 1.0
    assert perplexity(np.float32(2.0), np.int64(2)) == pytest.approx(math.e)
    assert perplexity(np.array(3.0), 3.0) == pytest.approx(math.e)
    assert perplexity(math.inf, 5) == math.inf
    assert perplexity(1e6, 1) == math.inf
    assert type(perplexity(1.0, 1)) is float


@pytest.mark.parametrize("args, error, match", [
    ((1.0, 0), ValueError, "num_tokens"),
    ((1.0, -3), ValueError, "num_tokens"),
    ((-1.0, 3), ValueError, "total_nll"),
    ((math.nan, 3), ValueError, "total_nll"),
    ((1.0, True), TypeError, "num_tokens"),
    ((None, 3), TypeError, "total_nll"),
    (("2.0", 3), TypeError, "total_nll"),
])
def test_perplexity_bad_arguments(args, error, match):
    with pytest.raises(error, match=match):
        perplexity(*args)


def test_the_premise_of_tutorial_07_exercise_5_holds():
    # The exercise asks why sentence BLEU is 0 from k = 3 on for this pair; it must be.
    prompt = (pathlib.Path(__file__).resolve().parents[1] / "tutorials" / "07_search.py").read_text()
    assert "Why is the score 0 from $k = 3$ on, although three of the\n#    four tokens match?" in prompt
    scores = [bleu("il est bon .".split(), "il est calme .".split(), k) for k in (1, 2, 3, 4)]
    assert scores[0] > scores[1] > 0 and scores[2] == scores[3] == 0
    assert bleu("il est calme .".split(), "il est calme .".split(), 4) == 1  # only the whole sentence scores at k=4
