"""The ``npseq`` command: demo, train, translate, lm, gradcheck, grade, exercises, data fetch, tutorials.

User errors (a missing file, a bad option value, a checkpoint that does not fit,
an empty input, a request beyond a cap, a diverged run, a full disk) end with exit
code 2 and one line saying what to fix; a failed gradient check ends with exit
code 1; Ctrl-C ends with exit code 130 and one line (``train`` first saves a
checkpoint from which ``--resume`` continues exactly); a reader that goes away
(``npseq translate ... | head -1``) ends the command quietly with exit code 141,
as 128 + SIGPIPE, like other Unix tools.
"""
from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import threading
import time

from . import __version__
from ._arguments import (
    Parser,
    UsageError,
    clip_norm,
    existing_file,
    new_file_path,
    number,
    output_dir,
    positive,
    probability,
)
from .errors import UserError

# A beam of k decodes k hypotheses at every step (memory k x vocabulary); beyond a few dozen a wider
# beam no longer changes translations, so the command caps it where memory stays small.
MAX_BEAM_SIZE = 256
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away


# ------------------------------------------------------------------ helpers
def _say(*parts, file=None):
    print(*parts, file=file or sys.stdout, flush=True)


# ---------------------------------------------------------------------- demo
def cmd_demo(args) -> int:
    if args.task == "captions":
        return cmd_captions_demo(args)
    from .decode import translate
    from .runs import TranslationRun, demo_epochs, demo_settings
    from .viz import plot_history, show_heatmaps
    out = os.path.join(args.out, args.task)  # as the user wrote it: the paths printed read as they typed them
    output_dir(out)
    start = time.perf_counter()
    epochs = args.epochs or demo_epochs(args.task, args.model)
    settings = demo_settings(args.task, args.model, num_examples=args.num_examples, seed=args.seed)
    what = (f"a Transformer ({settings['num_layers']} blocks, {settings['num_heads']} heads)"
            if args.model == "transformer" else "a Bahdanau-attention GRU")
    _say(f"npseq demo: {what} translator learns the built-in '{args.task}' task "
         f"({epochs} epoch{'' if epochs == 1 else 's'}, seed {args.seed})")
    run = TranslationRun.start(task=args.task, save=os.path.join(out, "model.npz"), **settings)
    corpus = run.corpus
    if not corpus.test_pairs:
        raise UsageError(f"--num-examples: {args.num_examples} examples leave no test pair to show the model "
                         f"on (a tenth is held out); give more")
    _say(f"data: {len(corpus.batches.arrays[0])} training pairs, {len(corpus.test_pairs)} test pairs, "
         f"vocabularies {len(corpus.src_vocab)} -> {len(corpus.tgt_vocab)} tokens")
    run.train(epochs, progress=not args.no_progress)
    trained = time.perf_counter() - start
    scores = run.evaluate()
    _say(f"trained in {trained:.1f} s: per-token cross-entropy {run.history.token_ce[-1]:.4f}, "
         f"{run.history.tokens_per_s[-1]:.0f} target tokens/s")
    _say(f"test: BLEU {scores.bleu:.3f}, exact match {scores.exact_match:.1%} ({len(corpus.test_pairs)} unseen "
         f"examples, greedy)")
    _say("\nsample translations (greedy | beam 3):")
    src_len, max_len = corpus.num_steps
    options = dict(task=args.task, src_max_len=src_len)
    heatmaps = []
    for src, _ in corpus.test_pairs[:5]:
        sentence = corpus.text.detokenize_source(src)
        greedy = translate(run.model, sentence, corpus.src_vocab, corpus.tgt_vocab, max_len, **options)
        beam = translate(run.model, sentence, corpus.src_vocab, corpus.tgt_vocab, max_len, "beam", beam_size=3,
                         **options)
        _say(f"  {sentence}  =>  {greedy.text}  |  {beam.text}")
        if not heatmaps and greedy.result.attention is not None:
            heatmaps.append(show_heatmaps(greedy.result.attention, greedy.source_tokens, greedy.attention_rows,
                                          os.path.join(out, "attention.png"), title=f"attention: {sentence}"))
            if args.model == "transformer":
                heatmaps.append(_head_heatmaps(run.model, greedy, corpus, os.path.join(out, "attention_heads.png")))
    curve = plot_history(run.history, os.path.join(out, "loss.png"), keys=("token_ce",), log_scale=True,
                         title=f"training on '{args.task}'")
    looked = " and ".join(heatmaps) + (" (where each head of each block looked)" if len(heatmaps) > 1
                                       else " (where the decoder looked)")
    _say(f"\nwrote {looked}, {curve} (the loss curve) and the model")
    _say(f"total wall time {time.perf_counter() - start:.1f} s")
    unseen = corpus.text.detokenize_source(corpus.test_pairs[min(5, len(corpus.test_pairs) - 1)][0])
    _say(f"\ntranslate a sentence it has not seen:\n  npseq translate "
         f"{shlex.quote(os.path.join(out, 'model.npz'))} {shlex.quote(unseen)}")
    return 0


def cmd_captions_demo(args) -> int:
    from .captions_demo import CAPTIONS_DEMO_SETTINGS, run_captions_demo
    out = os.path.join(args.out, args.task)  # as the user wrote it, like the translation demo's paths
    output_dir(out)
    settings = CAPTIONS_DEMO_SETTINGS
    epochs = args.epochs or settings["epochs"]
    _say(f"npseq demo: a {settings['cell'].upper()} captioner conditioned on each scene's pixels through its first "
         f"state (h0 = v W + b, CS231n) learns to describe synthetic 16x16 scenes ({epochs} epoch"
         f"{'' if epochs == 1 else 's'}, seed {args.seed})")
    record = run_captions_demo(out, epochs=args.epochs, num_train=args.num_examples, seed=args.seed,
                               on_epoch=None if args.no_progress else
                               lambda epoch, loss: _say(f"  epoch {epoch + 1}: cross-entropy {loss:.4f}"))
    scores = record.scores
    _say(f"trained in {record.train_s:.1f} s on {record.num_train} scenes")
    _say(f"test: BLEU {scores.bleu:.3f} (corpus BLEU-4 / 100), exact match {scores.exact_match:.1%} "
         f"({record.num_test} unseen scenes, greedy)")
    _say("\nsample captions (generated | reference):")
    for hyp, ref in list(zip(scores.captions, record.references))[:6]:
        _say(f"  {hyp}  |  {ref}")
    _say(f"\nwrote {record.png} (test scenes with their captions) and {record.text}")
    return 0


def _head_heatmaps(model, translation, corpus, path: str) -> str:
    """The cross-attention of every head of every decoder block for one greedy translation: one row of
    panels per block (the first map of the demo averages the last block's heads)."""
    from .decode import head_attention
    from .viz import show_heatmaps
    maps = head_attention(model, translation, corpus.src_vocab, corpus.tgt_vocab).cross
    layers, heads = maps.shape[:2]
    titles = [f"block {layer + 1}, head {head + 1}" for layer in range(layers) for head in range(heads)]
    return show_heatmaps(maps.reshape((layers * heads,) + maps.shape[2:]), translation.source_tokens,
                         translation.attention_rows, path, title=titles)


# --------------------------------------------------------------------- train
def cmd_train(args) -> int:
    from .runs import RUN_DEFAULTS, TranslationRun
    from .train import StopOnCtrlC
    given = {key: getattr(args, key) for key in RUN_DEFAULTS}
    source = dict(task=args.task, data=args.data, save=args.save, force=args.force)
    run = TranslationRun.resume(args.resume, **source, **given) if args.resume else TranslationRun.start(**source,
                                                                                                        **given)
    if args.resume:
        where = f" and {run.position.batches_done} batches" if run.position.batches_done else ""
        _say(f"resuming {args.resume} after epoch {run.epochs_done}{where}")
    with StopOnCtrlC() as ctrl_c:
        config = run.config
        what = (f"Transformer ({config['num_layers']} blocks, {config['num_heads']} heads)"
                if config.get("model") == "transformer" else
                f"{config['decoder']} {config['cell'].upper()} encoder-decoder")
        _say(f"training a {what} on "
             f"{args.task or args.data}: {len(run.corpus.batches.arrays[0])} pairs, "
             f"vocabularies {len(run.corpus.src_vocab)} -> {len(run.corpus.tgt_vocab)}")
        if not run.train(args.epochs, progress=not args.no_progress, stop=lambda: ctrl_c.pressed):
            if not args.save:
                _say("\ninterrupted (no --save was given, so nothing was kept)", file=sys.stderr)
                return EXIT_INTERRUPTED
            batches = run.position.batches_done
            where = (f" plus {batches} of {len(run.corpus.batches)} batches of epoch {run.epochs_done + 1}"
                     if batches else "")
            _say(f"\ninterrupted: the checkpoint of epoch {run.epochs_done}{where} is in {args.save}; "
                 f"continue with --resume {args.save}", file=sys.stderr)
            return EXIT_INTERRUPTED
    history = run.history
    _say(f"epoch {args.epochs}: loss {history.loss[-1]:.4f}, per-token cross-entropy {history.token_ce[-1]:.4f}"
         + (f", d2l metric {history.d2l_metric[-1]:.4f}" if run.settings["loss"] == "d2l" else ""))
    scores = run.evaluate()
    if scores is not None:
        _say(f"test: BLEU {scores.bleu:.3f}, exact match {scores.exact_match:.1%}")
    if args.save:
        _say(f"saved {args.save}")
    return 0


# ----------------------------------------------------------------- translate
def _unknown_words_line(sentence: str, unknown: list) -> str:
    def described(entry):
        notes = ([entry.hint] if entry.hint else []) + (
            [f"nearest known: {', '.join(map(repr, entry.nearest))}"] if entry.nearest else [])
        return repr(entry.word) + (f" ({'; '.join(notes)})" if notes else "")
    return f"not in the vocabulary, read as <unk>: {', '.join(map(described, unknown))} (in {sentence!r})"


def cmd_translate(args) -> int:
    from .checkpoint import check_not_an_input, load_checkpoint, saved_training_run, seq2seq_from_checkpoint
    from .data import unknown_words
    from .data.translation import DEFAULT_FILE_STEPS
    from .decode import translate
    from .viz import show_heatmaps
    if args.attention_png:
        check_not_an_input("--attention-png", args.attention_png, {"checkpoint": args.checkpoint})
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
    unknown = {sentence: unknown_words(sentence, src_vocab, task) for sentence in sentences}
    if args.strict:
        for sentence, words in unknown.items():
            if words:  # refused before any output, so a script sees all or nothing
                raise UsageError(f"--strict: {_unknown_words_line(sentence, words)}")
    model.eval()
    for i, sentence in enumerate(sentences):
        if unknown[sentence]:
            _say(f"npseq translate: {_unknown_words_line(sentence, unknown[sentence])}", file=sys.stderr)
        search = dict(method="beam", beam_size=args.beam, alpha=args.alpha) if args.beam > 1 else {}
        translation = translate(model, sentence, src_vocab, tgt_vocab, max_len, task=task, src_max_len=src_max_len,
                                **search)
        _say(f"{sentence} => {translation.text}")
        if args.attention_png and translation.result.attention is not None:
            root, ext = os.path.splitext(args.attention_png)
            path = args.attention_png if len(sentences) == 1 else f"{root}-{i + 1}{ext or '.png'}"
            show_heatmaps(translation.result.attention, translation.source_tokens, translation.attention_rows,
                          path, title=sentence)
            _say(f"  attention: {path}")
    return 0


# ------------------------------------------------------------------------ lm
def cmd_lm(args) -> int:
    from .data import SeqDataLoader, load_corpus, preprocess_lm, split_corpus, tokenize_lm
    from .models import RNNLM
    from .optim import Adam
    from .train import predict, train_lm
    # The prompt is tokenised as the corpus is: characters, or words that predict() joins with spaces.
    prefix = args.prefix if args.level == "char" else tokenize_lm(preprocess_lm(args.prefix), "word")
    if not prefix:
        raise UsageError(f"--prefix: expected at least one word to start the samples from, got {args.prefix!r}")
    ids, vocab = load_corpus(path=args.data, level=args.level, max_tokens=args.max_tokens)
    train, valid = split_corpus(ids, 0.1)
    _say(f"corpus: {args.data or 'the built-in Python documentation prose'}, {len(ids)} {args.level} tokens, "
         f"vocabulary {len(vocab)}")
    model = RNNLM(len(vocab), args.num_hiddens, args.num_layers, cell=args.cell, dropout=args.dropout, rng=args.seed)
    loader = SeqDataLoader(train, args.batch_size, args.num_steps, partition=args.partition, seed=args.seed)
    history = train_lm(model, loader, Adam(model.parameters(), lr=args.lr), args.epochs, clip=1.0, valid_ids=valid,
                       max_seconds=args.seconds, progress=not args.no_progress)
    _say(f"after {len(history.train_ppl)} epochs: train perplexity {history.train_ppl[-1]:.2f}, "
         f"validation perplexity {history.valid_ppl[-1]:.2f}")
    for i in range(args.samples):
        text = predict(model, prefix, args.num_preds, vocab, temperature=args.temperature, rng=args.seed + i)
        _say(f"sample: {text!r}")
    return 0


# ----------------------------------------------------------------- gradcheck
def cmd_gradcheck(args) -> int:
    from .gradient_checks import REGISTRY, run_checks
    failed = []
    names = args.only or list(REGISTRY)
    for name, report in run_checks(names, seed=args.seed):
        _say(f"== {name}\n{report}\n")
        if not report.ok:
            failed.append(name)
    if failed:
        _say(f"{len(failed)} of {len(names)} gradient checks FAILED: {', '.join(failed)}")
        return 1
    _say(f"all {len(names)} gradient checks passed")
    return 0


# ------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    from .data import TASKS, datasets
    from .decode import MAX_DECODE_LEN
    from .models import CELLS, DECODER_KINDS, MAX_LAYERS, MAX_UNITS, MODEL_KINDS, LuongAttentionDecoder
    from .nn.loss import TRAINING_REDUCTIONS
    from .optim import OPTIMIZERS
    from .runs import RUN_DEFAULTS, demo_epochs
    parser = Parser(
        prog="npseq",
        description="Sequence models written by hand in NumPy: RNN, GRU, LSTM, attention, seq2seq.")
    parser.add_argument("--version", action="version", version=f"npseq {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    demo = commands.add_parser("demo", help="train a small attention translator (or a captioner) on built-in data "
                                            "and show it",
                               description="Train a Bahdanau-attention GRU (or a Transformer) on a built-in task, "
                                           "report test BLEU and exact match, print sample translations and draw "
                                           "the attention (a Transformer's: also per head and block); with --task "
                                           "captions, train a GRU captioner on synthetic scenes and draw them with "
                                           "their captions.")
    demo.add_argument("--task", choices=(*TASKS, "captions"), default="numbers",
                      help="a translation task, or 'captions': describe synthetic scenes")
    demo.add_argument("--model", choices=MODEL_KINDS, default="rnn",
                      help="rnn: a Bahdanau-attention GRU (default); transformer: a 2-block, 4-head Transformer "
                           "(translation tasks)")
    demo.add_argument("--epochs", type=positive(int), default=None,
                      help="default: " + "; ".join(f"{model}: " + ", ".join(f"{demo_epochs(task, model)} for {task}"
                                                                           for task in TASKS)
                                                   for model in MODEL_KINDS) + "; 5 for captions")
    demo.add_argument("--num-examples", type=positive(int), default=None,
                      help="default: the whole task (10,000); for captions, 8,000 training scenes")
    demo.add_argument("--out", default="npseq-demo",
                      help="folder for the model and its PNG files, one subfolder per task (default: ./npseq-demo)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--no-progress", action="store_true", help="no progress bar")
    demo.set_defaults(run=cmd_demo)

    train = commands.add_parser("train", help="train an encoder-decoder on a task or a corpus file")
    source = train.add_argument_group("data")
    source.add_argument("--task", choices=TASKS, help="a built-in task")
    source.add_argument("--data", type=datasets.data_file,
                        help="a tab-separated parallel corpus (e.g. fra.txt), or a fetched dataset's name (fra-eng)")
    # The run-shaping flags default to None: with --resume, a flag left out is taken from the checkpoint,
    # and one given must agree with it; otherwise None means RUN_DEFAULTS' value.
    defaults = RUN_DEFAULTS
    source.add_argument("--num-examples", type=positive(int), default=None)
    source.add_argument("--num-steps", type=positive(int, MAX_DECODE_LEN), default=None,
                        help="default: 10 for --data, the task's own")
    source.add_argument("--batch-size", type=positive(int), help=f"default: {defaults['batch_size']}")
    model = train.add_argument_group("model (with --resume: taken from the checkpoint)")
    model.add_argument("--model", choices=MODEL_KINDS,
                       help="rnn: a recurrent encoder-decoder (default); transformer: reads --num-hiddens, "
                            "--num-layers, --num-heads, --ffn-num-hiddens and --dropout")
    model.add_argument("--num-heads", type=positive(int, MAX_UNITS),
                       help=f"the Transformer's attention heads, a divisor of --num-hiddens "
                            f"(default: {defaults['num_heads']})")
    # Short spellings as actions of their own, so that each flag's errors name the flag as it was typed.
    model.add_argument("--heads", dest="num_heads", type=positive(int, MAX_UNITS), help="same as --num-heads")
    model.add_argument("--ffn-num-hiddens", type=positive(int, MAX_UNITS),
                       help=f"the Transformer's feed-forward size (default: {defaults['ffn_num_hiddens']})")
    model.add_argument("--decoder", choices=DECODER_KINDS, help=f"default: {defaults['decoder']}")
    model.add_argument("--score", choices=["dot", "general", "concat"], help="Luong's score (default: general)")
    model.add_argument("--no-input-feeding", action="store_const", const=True, help="Luong without input feeding")
    model.add_argument("--attention", choices=LuongAttentionDecoder.ATTENTIONS,
                       help="Luong's global attention (default) or local attention on a window: local-m centres it on "
                            "the step, local-p on a predicted position")
    model.add_argument("--window", type=number(int, "an int >= 0", lambda v: 0 <= v <= MAX_UNITS),
                       help="half-width D of the local window, 2D + 1 positions (default: 2)")
    model.add_argument("--cell", choices=CELLS, help=f"default: {defaults['cell']}")
    model.add_argument("--embed-size", type=positive(int, MAX_UNITS), help=f"default: {defaults['embed_size']}")
    model.add_argument("--num-hiddens", type=positive(int, MAX_UNITS), help=f"default: {defaults['num_hiddens']}")
    model.add_argument("--num-layers", type=positive(int, MAX_LAYERS),
                       help=f"recurrent layers, or the Transformer's blocks per side "
                            f"(default: {defaults['num_layers']})")
    model.add_argument("--layers", dest="num_layers", type=positive(int, MAX_LAYERS), help="same as --num-layers")
    model.add_argument("--dropout", type=probability, help=f"default: {defaults['dropout']}")
    model.add_argument("--bidirectional", action="store_const", const=True, help="bidirectional encoder")
    optim = train.add_argument_group("optimisation (with --resume: taken from the checkpoint)")
    optim.add_argument("--optimizer", choices=tuple(OPTIMIZERS), help=f"default: {defaults['optimizer']}")
    optim.add_argument("--lr", type=positive(float), help=f"default: {defaults['lr']}")
    optim.add_argument("--clip", type=clip_norm, help="global gradient-norm clip (0: none; default 1.0)")
    optim.add_argument("--loss", choices=TRAINING_REDUCTIONS,
                       help="reduction of the masked cross-entropy (default d2l's)")
    optim.add_argument("--epochs", type=positive(int), default=250, help="the total, resumed epochs included")
    optim.add_argument("--seed", type=int, help="default: 0")
    run = train.add_argument_group("checkpoints")
    run.add_argument("--save", type=new_file_path,
                     help="checkpoint path (.npz), written after every epoch and on Ctrl-C")
    run.add_argument("--force", action="store_true",
                     help="let --save replace a file that is not a checkpoint or is an input of the run")
    run.add_argument("--resume", type=existing_file, help="continue the run saved in this checkpoint")
    run.add_argument("--no-progress", action="store_true")
    train.set_defaults(run=cmd_train)

    translate = commands.add_parser("translate", help="translate sentences with a saved model")
    translate.add_argument("checkpoint", type=existing_file)
    translate.add_argument("sentences", nargs="*", help="sentences (default: one per line on stdin)")
    translate.add_argument("--beam", type=positive(int, MAX_BEAM_SIZE), default=1, help="beam size (1: greedy)")
    translate.add_argument("--alpha", type=float, default=0.75, help="length penalty exponent of beam search")
    translate.add_argument("--max-len", type=positive(int, MAX_DECODE_LEN), default=None,
                           help="most output tokens (default: the trained length)")
    translate.add_argument("--attention-png", help="draw the attention of each sentence to this PNG")
    translate.add_argument("--strict", action="store_true",
                           help="refuse sentences with words outside the vocabulary (exit 2) instead of warning")
    translate.set_defaults(run=cmd_translate)

    lm = commands.add_parser("lm", help="train a character language model, then sample from it")
    lm.add_argument("--data", type=existing_file, help="a UTF-8 text file (default: built-in prose)")
    lm.add_argument("--level", choices=["char", "word"], default="char")
    lm.add_argument("--max-tokens", type=positive(int), default=100_000)
    lm.add_argument("--cell", choices=["rnn", "gru", "lstm"], default="gru")
    lm.add_argument("--num-hiddens", type=positive(int), default=128)
    lm.add_argument("--num-layers", type=positive(int), default=1)
    lm.add_argument("--dropout", type=probability, default=0.0)
    lm.add_argument("--partition", choices=["random", "sequential"], default="sequential")
    lm.add_argument("--batch-size", type=positive(int), default=32)
    lm.add_argument("--num-steps", type=positive(int), default=35)
    lm.add_argument("--epochs", type=positive(int), default=None, help="default: train until --seconds")
    lm.add_argument("--seconds", type=positive(float), default=30.0)
    lm.add_argument("--lr", type=positive(float), default=0.005)
    lm.add_argument("--prefix", default="the ")
    lm.add_argument("--num-preds", type=positive(int), default=80)
    lm.add_argument("--temperature", type=positive(float), default=0.8)
    lm.add_argument("--samples", type=int, default=2)
    lm.add_argument("--seed", type=int, default=0)
    lm.add_argument("--no-progress", action="store_true")
    lm.set_defaults(run=cmd_lm)

    gradcheck = commands.add_parser("gradcheck", help="check every backward against finite differences")
    gradcheck.add_argument("--only", nargs="+", metavar="NAME", help="run only these registered checks")
    gradcheck.add_argument("--seed", type=int, default=0)
    gradcheck.set_defaults(run=cmd_gradcheck)
    from . import exercises, grade, tutorials
    grading = commands.add_parser("grade", help="grade a learner's backward exercises against finite differences",
                                  description=grade.DESCRIPTION)
    grade.add_arguments(grading)
    grading.set_defaults(run=grade.run)
    handout = commands.add_parser("exercises", help="write a hand-out of the backward exercises",
                                  description=exercises.DESCRIPTION)
    exercises.add_arguments(handout)
    handout.set_defaults(run=exercises.run)
    data = commands.add_parser("data", help="get a dataset by name (d2l's fra-eng) into npseq's cache")
    data_commands = data.add_subparsers(dest="data_command", metavar="ACTION", required=True, parser_class=Parser)
    fetch = data_commands.add_parser("fetch", help="download a dataset, check its SHA-1, unpack it into the cache",
                                     description=datasets.DESCRIPTION)
    datasets.add_arguments(fetch)
    fetch.set_defaults(run=datasets.run)
    notebooks = commands.add_parser("tutorials", help="write the tutorials as Jupyter notebooks (and run them)",
                                    description=tutorials.DESCRIPTION)
    tutorials.add_arguments(notebooks)
    notebooks.set_defaults(run=tutorials.run)
    for subparser in commands.choices.values():
        subparser.set_defaults(command_parser=subparser)
    return parser


class _Interrupts:
    """Ctrl-C for a whole command: raise KeyboardInterrupt, and again every quarter second until it ends.

    One KeyboardInterrupt is not always enough: C code that calls back into Python and then
    clears the error it sees (it happens inside NumPy during gradient checks, about one Ctrl-C
    in ten) swallows it, and the command would run on. Repeating the interrupt from a helper
    thread makes Ctrl-C stop the command within a second all the same.
    """
    REPEAT_S = 0.25

    def __init__(self):
        self.pressed = threading.Event()
        self.finished = threading.Event()  # main() is reporting: no more interrupts

    def handler(self, signum, frame):
        if self.finished.is_set():
            return
        if not self.pressed.is_set():
            self.pressed.set()
            threading.Thread(target=self._repeat, args=(threading.main_thread().ident,), daemon=True).start()
        raise KeyboardInterrupt

    def _repeat(self, main_thread: int):
        while not self.finished.wait(self.REPEAT_S):
            signal.pthread_kill(main_thread, signal.SIGINT)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's final flush does not fail again on a closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command == "translate" and not any(word.startswith("-") for word in extra):
        args.sentences += extra  # sentences after the options: argparse leaves them over
    elif extra:
        getattr(args, "command_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return 0
    interrupts = _Interrupts()
    previous_handler = signal.signal(signal.SIGINT, interrupts.handler)
    try:
        from .backend import backend_name
        backend_name()  # applies NPSEQ_BACKEND now, so a missing GPU is reported before any work
        code = args.run(args)
        if not interrupts.pressed.is_set():
            return code
        raise KeyboardInterrupt  # every interrupt was swallowed on the way: report it all the same
    except UserError as exc:  # a mistake in the input; anything else is a bug in npseq and shows its traceback
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _say(f"npseq {args.command}: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        interrupts.finished.set()
        _say(f"\nnpseq {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    finally:
        interrupts.finished.set()
        signal.signal(signal.SIGINT, previous_handler)


if __name__ == "__main__":
    sys.exit(main())
