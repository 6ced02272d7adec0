"""``npseq translate``: sentences through a saved model, greedy or beam, with the words it cannot read named."""
from __future__ import annotations

import os
import sys

from .arguments import UsageError, existing_file, new_file_path, positive, say

HELP = "translate sentences with a saved model"
# A beam of k decodes k hypotheses at every step (memory k x vocabulary); beyond a few dozen a wider
# beam no longer changes translations, so the command caps it where memory stays small.
MAX_BEAM_SIZE = 256


def add_arguments(parser) -> None:
    """The options of ``npseq translate``."""
    from ..decode import MAX_DECODE_LEN
    parser.add_argument("checkpoint", type=existing_file)
    parser.add_argument("sentences", nargs="*", help="sentences (default: one per line on stdin)")
    parser.add_argument("--beam", type=positive(int, MAX_BEAM_SIZE), default=1, help="beam size (1: greedy)")
    parser.add_argument("--alpha", type=float, default=0.75, help="length penalty exponent of beam search")
    parser.add_argument("--max-len", type=positive(int, MAX_DECODE_LEN), default=None,
                        help="most output tokens (default: the trained length)")
    parser.add_argument("--attention-png", type=new_file_path, help="draw the attention of each sentence to this PNG")
    parser.add_argument("--force", action="store_true",
                        help="let --attention-png replace a file that is not a PNG (or a link)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse sentences with words outside the vocabulary (exit 2) instead of warning")


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _picture_paths(path, count: int) -> list:
    """Where ``--attention-png PATH`` draws each of ``count`` sentences: PATH itself for one, ``ROOT-1.png``, ... for
    several; none without the option."""
    if not path:
        return []
    root, ext = os.path.splitext(path)
    return [path] if count == 1 else [f"{root}-{i + 1}{ext or '.png'}" for i in range(count)]


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


def _unknown_words_line(sentence: str, unknown: list) -> str:
    def described(entry):
        notes = ([entry.hint] if entry.hint else []) + (
            [f"nearest known: {', '.join(map(repr, entry.nearest))}"] if entry.nearest else [])
        return repr(entry.word) + (f" ({'; '.join(notes)})" if notes else "")
    return f"not in the vocabulary, read as <unk>: {', '.join(map(described, unknown))} (in {sentence!r})"


def _input_line(sentence: str, unknown: list, outside: str | None) -> str:
    """What is wrong with an input: its unknown words, else how it is outside the task's format."""
    if unknown:
        return _unknown_words_line(sentence, unknown)
    return f"outside the task's inputs: {outside} (in {sentence!r})"


def run(args) -> int:
    from ..checkpoint import check_not_an_input, load_checkpoint, saved_training_run, seq2seq_from_checkpoint
    from ..data import outside_task_format, unknown_words
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
    sentences = args.sentences or [line for line in sys.stdin.read().splitlines() if line.strip()]
    if not sentences:
        raise UsageError("no sentence to translate: pass sentences as arguments or one per line on stdin")
    pictures = _picture_paths(args.attention_png, len(sentences))
    for path in pictures:  # refused before any output, so that a refusal writes nothing
        check_not_an_input("--attention-png", path, {"checkpoint": args.checkpoint})
        _check_replaceable(path, args.force)
    unknown = {sentence: unknown_words(sentence, src_vocab, task) for sentence in sentences}
    # a sentence of known words may still be no input of the task (a date in a format it never saw)
    outside = {sentence: not words and task and outside_task_format(task, sentence) for sentence, words in
               unknown.items()}
    if args.strict:
        for sentence, words in unknown.items():
            if words or outside[sentence]:  # refused before any output, so a script sees all or nothing
                raise UsageError(f"--strict: {_input_line(sentence, words, outside[sentence])}")
    model.eval()
    for i, sentence in enumerate(sentences):
        if unknown[sentence] or outside[sentence]:
            say(f"npseq translate: {_input_line(sentence, unknown[sentence], outside[sentence])}", file=sys.stderr)
        search = dict(method="beam", beam_size=args.beam, alpha=args.alpha) if args.beam > 1 else {}
        translation = translate(model, sentence, src_vocab, tgt_vocab, max_len, task=task, src_max_len=src_max_len,
                                **search)
        say(f"{sentence} => {translation.text}")
        if pictures and translation.result.attention is not None:
            show_heatmaps(translation.result.attention, translation.source_tokens, translation.attention_rows,
                          pictures[i], title=sentence)
            say(f"  attention: {pictures[i]}")
    return 0
