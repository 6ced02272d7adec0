"""``npseq translate``: sentences through a saved model, greedy or beam, with the words it cannot read named."""
from __future__ import annotations

import codecs
import itertools
import os
import queue
import sys
import threading

from ..errors import LimitError
from .arguments import UsageError, existing_file, new_file_path, positive, say

HELP = "translate sentences with a saved model"
# A beam of k decodes k hypotheses at every step (memory k x vocabulary); beyond a few dozen a wider
# beam no longer changes translations, so the command caps it where memory stays small.
MAX_BEAM_SIZE = 256
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
    from ..decode import MAX_DECODE_LEN
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
    from ..data import source_tokens, unknown_words
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


def stdin_lines(stream=None):
    """The lines of ``stream`` (default ``sys.stdin``), one at a time as they arrive, without their ends.

    A line longer than :data:`MAX_LINE_CHARS` is a :class:`~npseq.errors.LimitError` as soon as the cap is passed,
    whether or not it ever ends; at most :data:`READ_AHEAD_CHUNKS` chunks are read ahead of the caller."""
    chunks = queue.Queue(maxsize=READ_AHEAD_CHUNKS)
    threading.Thread(target=_read_ahead, args=(stream or sys.stdin, chunks), daemon=True,
                     name="npseq translate: stdin").start()
    pending, number = "", 0  # the start of the next line (read, no newline yet); the lines given out so far
    while True:
        chunk = chunks.get()
        if isinstance(chunk, BaseException):
            raise chunk
        if chunk is None:  # the end: what is pending is the last line
            lines, pending = ([pending] if pending else []), ""
        else:
            *lines, pending = (pending + chunk).split("\n")
        for line in lines:
            number += 1
            _check_line(line, number)
            yield line.rstrip("\r")
        _check_line(pending, number + 1)
        if chunk is None:
            return


def _check_line(line: str, number: int) -> None:
    if len(line) > MAX_LINE_CHARS:
        raise LimitError(f"line {number} of stdin: expected a sentence of at most {MAX_LINE_CHARS} characters (the "
                         f"cap of a line), got a longer one")


def _sentences(args):
    """The sentences to translate: the arguments, or the lines of stdin that have text, as they come."""
    if args.sentences:
        for number, sentence in enumerate(args.sentences, 1):
            if len(sentence) > MAX_LINE_CHARS:
                raise LimitError(f"sentence {number}: expected at most {MAX_LINE_CHARS} characters (the cap of a "
                                 f"sentence), got {len(sentence)}")
            if not sentence.strip():  # a blank line of stdin is passed over; an argument was typed to be translated
                raise UsageError(f"sentence {number}: expected words to translate, got {sentence!r}")
        yield from args.sentences
        return
    yield from (line for line in stdin_lines() if line.strip())


def _input_line(sentence: str, unknown: list, more: int, outside: str | None, refused: bool = False) -> str:
    """What is wrong with an input: its unknown words, else how it is outside the task's format."""
    if unknown:
        return _unknown_words_line(sentence, unknown, more, refused)
    return f"outside the task's inputs: {outside} (in {_quoted(sentence)})"


def run(args) -> int:
    from ..checkpoint import check_not_an_input, load_checkpoint, saved_training_run, seq2seq_from_checkpoint
    from ..data import outside_task_format
    from ..data.translation import DEFAULT_FILE_STEPS
    from ..decode import translate
    from ..viz import show_heatmaps
    checkpoint = load_checkpoint(args.checkpoint)
    saved = saved_training_run(checkpoint)
    if "src" not in checkpoint.vocabs or "tgt" not in checkpoint.vocabs:
        raise UsageError(f"checkpoint: {args.checkpoint} holds no source and target vocabularies")
    src_vocab, tgt_vocab = checkpoint.vocabs["src"], checkpoint.vocabs["tgt"]
    model = seq2seq_from_checkpoint(checkpoint)
    task = saved.get("task")
    src_max_len, max_len = saved.get("num_steps") or [DEFAULT_FILE_STEPS, DEFAULT_FILE_STEPS]
    max_len = args.max_len or max_len
    sentences = _sentences(args)
    # The arguments are all checked before any output (a script sees all or nothing); stdin is read as it comes,
    # one line ahead at most, and only with --attention-png, whose first picture's name says whether more follow.
    ahead = list(sentences) if args.sentences else list(itertools.islice(sentences, 2 if args.attention_png else 1))
    if not ahead:
        raise UsageError("no sentence to translate: pass sentences as arguments or one per line on stdin")
    several = len(args.sentences or ahead) > 1

    def checked(i, sentence):
        """``sentence``'s unknown words (shown, how many more) and picture path, or the refusal of either."""
        picture = _picture_path(args.attention_png, i, several)
        if picture:
            check_not_an_input("--attention-png", picture, {"checkpoint": args.checkpoint})
            _check_replaceable(picture, args.force)
        unknown, more = _unknown(sentence, src_vocab, task)
        # a sentence of known words may still be no input of the task (a date in a format it never saw)
        outside = not unknown and task and outside_task_format(task, sentence)
        if args.strict and (unknown or outside):
            raise UsageError(f"--strict: {_input_line(sentence, unknown, more, outside, refused=True)}")
        return sentence, unknown, more, outside, picture

    if args.sentences:
        work = [checked(i, sentence) for i, sentence in enumerate(ahead)]  # refused before any output
    else:
        work = (checked(i, sentence) for i, sentence in enumerate(itertools.chain(ahead, sentences)))
    model.eval()
    search = dict(method="beam", beam_size=args.beam, alpha=args.alpha) if args.beam > 1 else {}
    for sentence, unknown, more, outside, picture in work:
        if unknown or outside:
            say(f"npseq translate: {_input_line(sentence, unknown, more, outside)}", file=sys.stderr)
        translation = translate(model, sentence, src_vocab, tgt_vocab, max_len, task=task, src_max_len=src_max_len,
                                **search)
        say(f"{sentence} => {translation.text}")
        if picture and translation.result.attention is not None:
            show_heatmaps(translation.result.attention, translation.source_tokens, translation.attention_rows,
                          picture, title=sentence)
            say(f"  attention: {picture}")
    return 0
