"""``npseq translate``: sentences through a saved model, greedy or beam, with the words it cannot read named."""
from __future__ import annotations

import codecs
import collections
import dataclasses
import itertools
import os
import queue
import sys
import threading

from ..checkpoint import load_checkpoint, seq2seq_from_checkpoint
from ..data import outside_task_format, source_tokens, unknown_words
from ..data.translation import DEFAULT_FILE_STEPS
from ..decode import MAX_DECODE_LEN, translate_batch
from ..errors import LimitError, UserError
from ..runs import check_not_an_input, saved_training_run
from ..viz import show_heatmaps
from .arguments import UsageError, existing_file, new_file_path, positive, say

# A beam of k decodes k hypotheses at every step (memory k x vocabulary); beyond a few dozen a wider
# beam no longer changes translations, so the command caps it where memory stays small.
MAX_BEAM_SIZE = 256
BATCH_ROWS = 256
"""The most rows one decoder call of translate takes (sentences times the beam size): the lines of stdin already
waiting are translated together, at most ``BATCH_ROWS // beam`` of them, which shares each step's work across
sentences while the first lines of a long input still come out at once."""
MAX_LINE_CHARS = 2 ** 16
"""The longest sentence translate takes, in characters (a line of stdin or an argument). A model reads at most its
trained number of steps (``--num-steps`` <= 1024 tokens) anyway; the cap keeps an endless line (``yes`` without a
newline, a binary file) from being read until memory runs out."""
READ_AHEAD_CHUNKS = 256
"""Stdin is read ahead of the translations in chunks of ``CHUNK_CHARS``, at most this many (16 MiB), so that a
writer that sends all its input before it reads any output does not wait on a full pipe while translate waits on
its output; past that, translate reads on only as it translates."""
CHUNK_CHARS = 2 ** 16
MAX_UNKNOWN_SHOWN = 10
"""The unknown words of one sentence that the warning names (with the nearest known ones); the rest are counted."""
MAX_QUOTED_CHARS = 120
"""The most characters of a sentence (or of one word) that the unknown-word warning quotes."""


def add_arguments(parser) -> None:
    """The options of ``npseq translate``."""
    parser.add_argument("checkpoint", type=existing_file)
    parser.add_argument("sentences", nargs="*",
                        help="sentences (default: one per line on stdin, each translated and printed as it comes; "
                             f"at most {MAX_LINE_CHARS} characters each)")
    parser.add_argument("--beam", type=positive(int, MAX_BEAM_SIZE), default=1, help="beam size (1: greedy)")
    parser.add_argument("--alpha", type=float, default=0.75, help="length penalty exponent of beam search")
    parser.add_argument("--max-len", type=positive(int, MAX_DECODE_LEN), default=None,
                        help="most output tokens (default: the trained length)")
    parser.add_argument("--attention-png", type=new_file_path, help="draw the attention of each sentence to this PNG")
    parser.add_argument("--force", action="store_true",
                        help="let --attention-png replace a file that is not a PNG (or a link)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse sentences with words outside the vocabulary (exit 2) instead of warning: "
                             "arguments before any is translated, lines of stdin when their turn comes")


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _picture_path(path, index: int, several: bool):
    """Where ``--attention-png PATH`` draws sentence ``index`` (from 0): PATH itself when there is one sentence,
    ``ROOT-1.png``, ``ROOT-2.png``, ... when there are ``several``; none without the option."""
    if not path:
        return None
    root, ext = os.path.splitext(path)
    return f"{root}-{index + 1}{ext or '.png'}" if several else path


def _check_replaceable(path: str, force: bool) -> None:
    """A picture goes into a folder that exists, and may replace a PNG (one drawn before), never another file or a
    link, unless ``force``."""
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise UsageError(f"--attention-png: the folder {folder!r} does not exist")
    if force or not os.path.lexists(path):
        return
    if os.path.islink(path) or not os.path.isfile(path):
        raise UsageError(f"--attention-png: {path} exists and is not a regular file; refusing to replace it "
                         "(--force replaces it)")
    try:
        with open(path, "rb") as file:
            png = file.read(len(PNG_MAGIC)) == PNG_MAGIC
    except OSError as exc:
        raise UsageError(f"--attention-png: cannot read {path} ({exc.strerror})") from None
    if not png:
        raise UsageError(f"--attention-png: {path} exists and is not a PNG; refusing to replace it (--force "
                         "replaces it)")


def _quoted(text: str) -> str:
    """``repr(text)``, cut to :data:`MAX_QUOTED_CHARS` characters (with ``...``) when longer."""
    return repr(text) if len(text) <= MAX_QUOTED_CHARS else repr(text[:MAX_QUOTED_CHARS]) + "..."


def _unknown_words_line(sentence: str, unknown: list, more: int = 0, refused: bool = False) -> str:
    """The unknown words of ``sentence``, each with its hint or nearest known words; ``refused`` (``--strict``):
    the sentence is not translated, so nothing is read as ``<unk>``."""
    def described(entry):
        notes = ([entry.hint] if entry.hint else []) + (
            [f"nearest known: {', '.join(map(repr, entry.nearest))}"] if entry.nearest else [])
        return _quoted(entry.word) + (f" ({'; '.join(notes)})" if notes else "")
    others = f" and {more} more" if more else ""
    words = ", ".join(map(described, unknown))
    what = "not in the vocabulary" if refused else "not in the vocabulary, read as <unk>"
    return f"{what}: {words}{others} (in {_quoted(sentence)})"


def _unknown(sentence: str, src_vocab, task):
    """The first :data:`MAX_UNKNOWN_SHOWN` unknown words of ``sentence`` and how many more there are."""
    shown = unknown_words(sentence, src_vocab, task, limit=MAX_UNKNOWN_SHOWN)
    if len(shown) < MAX_UNKNOWN_SHOWN:
        return shown, 0
    return shown, sum(word not in src_vocab for word in dict.fromkeys(source_tokens(sentence, task))) - len(shown)


def _read_ahead(stream, chunks: queue.Queue) -> None:
    """Put the text of ``stream`` into ``chunks`` as it arrives, then ``None``; an error goes in as itself.

    Runs in a daemon thread. With a file descriptor it reads that with ``os.read`` (no lock of ``sys.stdin``'s
    is held, so the interpreter can end while this thread waits) and decodes as ``sys.stdin`` would."""
    try:
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):  # a stream in memory (io.UnsupportedOperation)
            fd = None
        if fd is None:
            while chunk := stream.read(CHUNK_CHARS):
                chunks.put(chunk)
        else:
            decoder = codecs.getincrementaldecoder(getattr(stream, "encoding", None) or "utf-8")(
                errors=getattr(stream, "errors", None) or "strict")
            while data := os.read(fd, CHUNK_CHARS):
                if text := decoder.decode(data):
                    chunks.put(text)
            if text := decoder.decode(b"", final=True):
                chunks.put(text)
        chunks.put(None)
    except BaseException as exc:  # noqa: BLE001 - handed to the command, which reports it
        chunks.put(exc)


def stdin_batches(stream=None, most: int = 1):
    """The lines of ``stream`` (default ``sys.stdin``), without their ends, in lists of the lines already waiting.

    Each list holds the lines read and not yet given out, at most ``most``; it waits for input only when no
    line is waiting, so a line typed alone comes alone, at once, and a file comes ``most`` lines at a time.
    A line longer than :data:`MAX_LINE_CHARS` is a :class:`~npseq.errors.LimitError` as soon as the cap is passed,
    whether or not it ever ends (the lines before it are given out first); at most :data:`READ_AHEAD_CHUNKS`
    chunks are read ahead of the caller."""
    chunks = queue.Queue(maxsize=READ_AHEAD_CHUNKS)
    threading.Thread(target=_read_ahead, args=(stream or sys.stdin, chunks), daemon=True,
                     name="npseq translate: stdin").start()
    waiting = collections.deque()  # lines read, not given out yet
    pending, number, ended, failure = "", 0, False, None  # the start of the next line (no newline yet), ...
    while True:
        while not ended and len(waiting) < most and (not waiting or not chunks.empty()):
            chunk = chunks.get()
            if isinstance(chunk, BaseException):
                ended, failure = True, chunk
                break
            if chunk is None:  # the end: what is pending is the last line
                lines, pending, ended = ([pending] if pending else []), "", True
            else:
                *lines, pending = (pending + chunk).split("\n")
            try:
                for line in lines:
                    number += 1
                    _check_line(line, number)
                    waiting.append(line.rstrip("\r"))
                _check_line(pending, number + 1)
            except LimitError as error:
                ended, failure = True, error
        if waiting:
            yield [waiting.popleft() for _ in range(min(most, len(waiting)))]
        elif failure is not None:
            raise failure
        elif ended:
            return


def _check_line(line: str, number: int) -> None:
    if len(line) > MAX_LINE_CHARS:
        raise LimitError(f"line {number} of stdin: expected a sentence of at most {MAX_LINE_CHARS} characters (the "
                         f"cap of a line), got a longer one")


def _sentence_batches(args, most: int):
    """The sentences to translate, in lists of at most ``most``: the arguments (all checked before the first list),
    or the lines of stdin that have text, as many as are waiting."""
    if not args.sentences:
        return (lines for batch in stdin_batches(most=most) if (lines := [line for line in batch if line.strip()]))
    for number, sentence in enumerate(args.sentences, 1):
        if len(sentence) > MAX_LINE_CHARS:
            raise LimitError(f"sentence {number}: expected at most {MAX_LINE_CHARS} characters (the cap of a "
                             f"sentence), got {len(sentence)}")
        if not sentence.strip():  # a blank line of stdin is passed over; an argument was typed to be translated
            raise UsageError(f"sentence {number}: expected words to translate, got {sentence!r}")
    return (args.sentences[i:i + most] for i in range(0, len(args.sentences), most))


def _input_line(sentence: str, unknown: list, more: int, outside: str | None, refused: bool = False) -> str:
    """What is wrong with an input: its unknown words, else how it is outside the task's format."""
    if unknown:
        return _unknown_words_line(sentence, unknown, more, refused)
    return f"outside the task's inputs: {outside} (in {_quoted(sentence)})"


@dataclasses.dataclass
class _Sentence:
    """A sentence to translate, checked: its unknown words (the first shown, how many more), how it lies outside
    the task's inputs (or ``None``), and where its attention is drawn (or ``None``)."""
    text: str
    unknown: list
    more: int
    outside: str | None
    picture: str | None


def run(args) -> int:
    checkpoint = load_checkpoint(args.checkpoint)
    saved = saved_training_run(checkpoint)
    if "src" not in checkpoint.vocabs or "tgt" not in checkpoint.vocabs:
        raise UsageError(f"checkpoint: {args.checkpoint} holds no source and target vocabularies")
    src_vocab, tgt_vocab = checkpoint.vocabs["src"], checkpoint.vocabs["tgt"]
    model = seq2seq_from_checkpoint(checkpoint)
    task = saved.get("task")
    src_max_len, max_len = saved.get("num_steps") or [DEFAULT_FILE_STEPS, DEFAULT_FILE_STEPS]
    max_len = args.max_len or max_len
    most = max(1, BATCH_ROWS // args.beam)
    batches = _sentence_batches(args, most)
    # The arguments are all checked before any output (a script sees all or nothing); stdin is read as it comes,
    # and with --attention-png one line ahead, since the first picture's name says whether more follow.
    ahead = []
    while sum(map(len, ahead)) < (2 if args.attention_png else 1) and (batch := next(batches, None)):
        ahead.append(batch)
    if not ahead:
        raise UsageError("no sentence to translate: pass sentences as arguments or one per line on stdin")
    several = len(args.sentences) > 1 if args.sentences else sum(map(len, ahead)) > 1
    numbers = itertools.count()

    def checked(sentence: str) -> _Sentence:
        """``sentence`` with its unknown words and picture path, or the refusal of either."""
        i = next(numbers)
        picture = _picture_path(args.attention_png, i, several)
        if picture:
            check_not_an_input("--attention-png", picture, {"checkpoint": args.checkpoint})
            _check_replaceable(picture, args.force)
        if not source_tokens(sentence, task):
            raise UsageError(f"sentence {i + 1}: expected words to translate, got {sentence!r}")
        unknown, more = _unknown(sentence, src_vocab, task)
        # a sentence of known words may still be no input of the task (a date in a format it never saw)
        outside = not unknown and task and outside_task_format(task, sentence) or None
        if args.strict and (unknown or outside):
            raise UsageError(f"--strict: {_input_line(sentence, unknown, more, outside, refused=True)}")
        return _Sentence(sentence, unknown, more, outside, picture)

    search = dict(method="beam", beam_size=args.beam, alpha=args.alpha) if args.beam > 1 else {}

    def translated(batch: list) -> None:
        """Translate the checked sentences of ``batch`` together, then print each in turn."""
        translations = translate_batch(model, [sentence.text for sentence in batch], src_vocab, tgt_vocab, max_len,
                                       task=task, src_max_len=src_max_len, **search)
        for sentence, translation in zip(batch, translations):
            if sentence.unknown or sentence.outside:
                say(f"npseq translate: {_input_line(sentence.text, sentence.unknown, sentence.more, sentence.outside)}",
                    file=sys.stderr)
            say(f"{sentence.text} => {translation.text}")
            if sentence.picture and translation.result.attention is not None:
                show_heatmaps(translation.result.attention, translation.source_tokens, translation.attention_rows,
                              sentence.picture, title=sentence.text)
                say(f"  attention: {sentence.picture}")

    if args.sentences:  # every argument is refused before any output
        checked_all = [checked(sentence) for sentence in args.sentences]
        for i in range(0, len(checked_all), most):
            translated(checked_all[i:i + most])
        return 0
    for lines in itertools.chain(ahead, batches):  # a line of stdin is refused when its turn comes
        batch, refusal = [], None
        for line in lines:
            try:
                batch.append(checked(line))
            except UserError as error:  # a refused sentence or picture: what comes before it is still printed
                refusal = error
                break
        translated(batch)
        if refusal is not None:
            raise refusal
    return 0
