"""Words outside a model's vocabulary, found before translating."""
from npseq.data import UnknownWord, Vocab, unknown_words


def test_unknown_words_in_order_once_with_their_nearest_known_spellings():
    vocab = Vocab([["forty", "two", "thousand", "hundred"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    found = unknown_words("fourty two fourty Hundreds", vocab)
    assert [entry.word for entry in found] == ["fourty", "hundreds"]  # lower-cased as d2l's normalisation does
    assert found[0].nearest[0] == "forty" and found[1].nearest == ("hundred",)
    assert unknown_words("two thousand", vocab) == []
    assert unknown_words("xyzzy", vocab) == [UnknownWord("xyzzy", ())]  # nothing alike, and reserved never offered


def test_digits_given_to_the_numbers_task_are_spelled_out_in_the_hint():
    vocab = Vocab([["forty", "two"]], reserved_tokens=["<pad>", "<bos>", "<eos>"])
    digits, big = unknown_words("42 123456", vocab, task="numbers")
    assert "'forty two'" in digits.hint
    assert big.hint is None  # beyond the task's range: no words to offer
    assert unknown_words("42", vocab)[0].hint is None  # only the numbers task reads number words
