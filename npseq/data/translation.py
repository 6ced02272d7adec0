"""A translation dataset ready to train on and to translate with: a built-in task or a parallel corpus file.

What ``npseq train``, ``npseq demo`` and the tutorials share: :func:`load_translation_data`
loads either kind of data behind one record, and :func:`source_tokens` / :func:`target_text`
turn a raw sentence into the tokens a model of that data reads, and its output back into text;
:func:`unknown_words` names the words of a sentence that the model would read as ``<unk>``.
"""
from __future__ import annotations

import dataclasses
import difflib
from typing import Any, NamedTuple

from .. import backend
from .._checks import check_real
from ..errors import InvalidTypeError
from .nmt import load_parallel_corpus, nmt_batches
from .tasks import TaskText, english_number, load_task, task_text
from .text import preprocess_nmt
from .vocab import UNK, Vocab

# The length of both sides of a corpus file when none is given (d2l's num_steps for fra.txt).
DEFAULT_FILE_STEPS = 10
FILE_HELD_OUT = 0.1
"""The fraction of a corpus file's pairs that ``npseq train --data`` holds out of training, to test on."""
TASK_EXAMPLE_BYTES = 2048
"""The memory one example of a built-in task takes once loaded, at most (its tokens as Python lists and its
rows of ids: 0.6 to 1.4 KiB, measured), to refuse a ``num_examples`` that would not fit before generating it."""


@dataclasses.dataclass
class TranslationData:
    """Training data of an encoder-decoder (returned by :func:`load_translation_data`).

    ``batches``: a :class:`~npseq.data.BatchIterator` over ``(X, X_valid_len, Y, Y_valid_len)``.
    ``num_steps``: ``(source steps, target steps)``. ``test_pairs``: the held-out
    ``(source tokens, target tokens)`` pairs of a built-in task or of a file loaded with ``held_out``
    (``None`` for a file trained on whole, as d2l does). ``text``: the task's tokenisers (``None`` for a
    file). ``task``: the task's name, or ``None``; ``path``: the corpus file, or ``None``.
    """
    batches: Any
    src_vocab: Vocab
    tgt_vocab: Vocab
    num_steps: tuple
    test_pairs: list | None = None
    text: TaskText | None = None
    task: str | None = None
    path: str | None = None


def load_translation_data(task: str | None = None, path: str | None = None, *, num_examples=None,
                          batch_size: int = 64, num_steps=None, seed: int = 0,
                          held_out: float = 0.0) -> TranslationData:
    """Load a built-in task (:func:`~npseq.data.load_task`) or a parallel corpus file
    (as :func:`~npseq.data.load_data_nmt` does, less the ``held_out`` pairs): exactly one of ``task`` and ``path``.

    ``num_steps``: ``None`` (the task's own; :data:`DEFAULT_FILE_STEPS` for a file), an int for
    both sides, or a ``(source, target)`` pair (a resumed run's; a file uses its first entry on both
    sides). ``num_examples``, ``batch_size`` and ``seed`` go to the loader. ``held_out``: for a file, the
    fraction of its pairs (chosen by a generator seeded with ``seed``, rounded to a whole number of pairs) kept
    out of training, vocabularies included, as ``test_pairs``; 0 trains on the whole file, as d2l does. A task
    has its own test split.
    """
    if (task is None) == (path is None):
        raise InvalidTypeError(f"task, path: expected exactly one of them, got task={task!r} and path={path!r}")
    if task is not None:
        loaded = load_task(task, batch_size=batch_size, num_steps=num_steps, num_examples=num_examples, seed=seed)
        return TranslationData(loaded.train, loaded.src_vocab, loaded.tgt_vocab, tuple(loaded.num_steps),
                               loaded.test_pairs, task_text(task), task=task)
    held_out = check_real("held_out", held_out, "in [0, 1)", lambda v: 0 <= v < 1)
    steps = (num_steps if isinstance(num_steps, int) else num_steps[0]) if num_steps else DEFAULT_FILE_STEPS
    source, target = load_parallel_corpus(path, num_examples)
    tested = set(backend.numpy.random.default_rng(seed).permutation(len(source))[:round(held_out * len(source))]
                 .tolist())
    kept = [i for i in range(len(source)) if i not in tested]
    batches, src_vocab, tgt_vocab = nmt_batches([source[i] for i in kept], [target[i] for i in kept], batch_size,
                                                steps, seed=seed)
    test_pairs = [(source[i], target[i]) for i in sorted(tested)]
    return TranslationData(batches, src_vocab, tgt_vocab, (steps, steps), test_pairs or None, path=path)


def source_tokens(sentence: str, task: str | None = None) -> list:
    """A raw sentence as source tokens: the task's tokeniser (on the stripped, lowercased sentence), or
    d2l's normalisation (:func:`~npseq.data.preprocess_nmt`) and word split for a corpus file."""
    if task is not None:
        return task_text(task).tokenize_source(sentence.strip().lower())
    return [word for word in preprocess_nmt(sentence).split(" ") if word]


def target_text(tokens, task: str | None = None) -> str:
    """Output tokens as text: the task's detokeniser, or the tokens joined by spaces for a corpus file."""
    return task_text(task).detokenize_target(tokens) if task is not None else " ".join(tokens)


class UnknownWord(NamedTuple):
    """A source word outside the vocabulary (see :func:`unknown_words`).

    ``nearest``: up to three known words spelled most alike (``difflib``'s ratio >= 0.6), best
    first, possibly none. ``hint``: a task-specific way to say it, or ``None`` (digits given to
    the ``numbers`` task: the same number in words, when it is in the task's range).
    """
    word: str
    nearest: tuple
    hint: str | None = None


def unknown_words(sentence: str, src_vocab: Vocab, task: str | None = None, limit: int | None = None) -> list:
    """The words of ``sentence`` that a model with ``src_vocab`` reads as ``<unk>``, each once, in order.

    The sentence is tokenised as :func:`source_tokens` does (so for a character task the "words"
    are characters). Returns a list of :class:`UnknownWord`, empty when every word is known; with
    ``limit``, only the first ``limit`` of them (the nearest known words are looked for, a search
    through the vocabulary, only for those).
    """
    known = None
    unknown = []
    for word in dict.fromkeys(source_tokens(sentence, task)):
        if word in src_vocab:
            continue
        if limit is not None and len(unknown) >= limit:
            break
        if known is None:
            known = [token for token in src_vocab.idx_to_token if token != UNK and not token.startswith("<")]
        hint = None
        if task == "numbers" and word.isascii() and word.isdigit() and len(word) <= 4:  # english_number's range
            hint = f"the numbers model reads number words: {english_number(int(word))!r}"
        unknown.append(UnknownWord(word, tuple(difflib.get_close_matches(word, known, n=3)), hint))
    return unknown
