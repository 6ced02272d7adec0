"""The ``npseq`` command: demo, train, translate, lm, gradcheck, grade, exercises.

User errors (a missing file, a bad option value, a checkpoint that does not fit,
an empty input) end with exit code 2 and one line saying what to fix; a failed
gradient check ends with exit code 1.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

from . import __version__

# One layer draws the clearest alignment on these short inputs and trains in seconds.
DEMO_SETTINGS = dict(decoder="bahdanau", cell="gru", embed_size=32, num_hiddens=64, num_layers=1, dropout=0.0)
DEMO_TRAINING = dict(batch_size=128, lr=0.01, clip=1.0)
DEMO_EPOCHS = {"numbers": 6, "dates": 8, "reverse": 10}


class UsageError(Exception):
    """A mistake the user can fix; reported in one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is reported in one line (no usage block) with exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


# ------------------------------------------------------------------ helpers
def _say(*parts, file=None):
    print(*parts, file=file or sys.stdout, flush=True)


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}")
        return value
    return parse


def _probability(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1), got {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1), got {text!r}")
    return value


def _existing_file(text):
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    return text


def _output_dir(path: str) -> str:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out: cannot create the folder {path!r} ({exc.strerror})") from None
    return os.path.abspath(path)


def _make_optimizer(name: str, params, lr: float):
    from .optim import SGD, Adagrad, Adam
    return {"adam": Adam, "sgd": SGD, "adagrad": Adagrad}[name](params, lr=lr)


# ------------------------------------------------------------ translation data
class Corpus:
    """Training data for ``train``/``demo``: a built-in task or a parallel corpus file."""

    def __init__(self, task=None, data=None, num_examples=None, batch_size=64, num_steps=None, seed=0):
        from .data import load_data_nmt, load_task, task_text
        self.task, self.data = task, data
        if task is not None:
            loaded = load_task(task, batch_size=batch_size, num_steps=num_steps, num_examples=num_examples,
                               seed=seed)
            self.batches, self.src_vocab, self.tgt_vocab = loaded.train, loaded.src_vocab, loaded.tgt_vocab
            self.num_steps = tuple(loaded.num_steps)
            self.test_pairs = loaded.test_pairs
            self.text = task_text(task)
        else:
            steps = num_steps or 10
            self.batches, self.src_vocab, self.tgt_vocab = load_data_nmt(
                batch_size, steps, num_examples, path=data, seed=seed)
            self.num_steps = (steps, steps)
            self.test_pairs = None
            self.text = None


def tokenize_source(sentence: str, task=None):
    """A sentence as source tokens: the task's tokeniser, or d2l's normalisation and word split."""
    from .data import preprocess_nmt, task_text
    if task is not None:
        return task_text(task).tokenize_source(sentence.strip().lower())
    return [word for word in preprocess_nmt(sentence).split(" ") if word]


def detokenize_target(tokens, task=None) -> str:
    from .data import task_text
    return task_text(task).detokenize_target(tokens) if task is not None else " ".join(tokens)


def decode_sentence(model, sentence, src_vocab, tgt_vocab, max_len, task=None, beam=0, alpha=0.75,
                    src_max_len=None):
    """``(source tokens, output tokens, SearchResult)`` for one sentence, greedy or with a beam.

    The source (with ``<eos>``) is cut to ``src_max_len`` tokens (default ``max_len``), the
    length the model was trained on, as d2l's ``predict_seq2seq`` does.
    """
    from . import backend
    from .decode import beam_search, greedy_search
    words = tokenize_source(sentence, task)
    if not words:
        raise UsageError("sentence: expected at least one word, got an empty line")
    ids = (src_vocab[words] + [src_vocab["<eos>"]])[:max(src_max_len or max_len, 1)]
    src = backend.numpy.asarray(ids, dtype=backend.numpy.int64)
    options = dict(bos_id=tgt_vocab["<bos>"], eos_id=tgt_vocab["<eos>"], max_len=max_len)
    if beam and beam > 1:
        result = beam_search(model, src, beam_size=beam, alpha=alpha, **options)
    else:
        result = greedy_search(model, src, **options)
    return src_vocab.to_tokens(ids), tgt_vocab.to_tokens(result.tokens), result


def evaluate(model, corpus, max_len):
    """Test BLEU (corpus BLEU-4 on a 0-1 scale) and exact-match accuracy of greedy decoding."""
    from .data import build_array_nmt
    from .decode import greedy_search_batch
    from .metrics import corpus_bleu
    sources = [src for src, _ in corpus.test_pairs]
    X, X_len = build_array_nmt(sources, corpus.src_vocab, corpus.num_steps[0])
    outputs = greedy_search_batch(model, X, X_len, bos_id=corpus.tgt_vocab["<bos>"],
                                  eos_id=corpus.tgt_vocab["<eos>"], max_len=max_len)
    hyps = [" ".join(corpus.tgt_vocab.to_tokens(ids)) for ids in outputs]
    refs = [" ".join(tgt) for _, tgt in corpus.test_pairs]
    exact = sum(h == r for h, r in zip(hyps, refs)) / len(refs)
    return corpus_bleu(hyps, refs) / 100.0, exact


def attention_rows(out_tokens, attention):
    """Row labels of an attention map: the output tokens, then ``<eos>`` if the search produced it."""
    return list(out_tokens) + ["<eos>"] * (len(attention) - len(out_tokens))


# ---------------------------------------------------------------------- demo
def cmd_demo(args) -> int:
    from .models import build_seq2seq
    from .train import train_seq2seq
    from .viz import plot_history, show_heatmaps
    out = _output_dir(args.out)
    start = time.perf_counter()
    epochs = args.epochs or DEMO_EPOCHS[args.task]
    _say(f"npseq demo: a Bahdanau-attention GRU translator learns the built-in '{args.task}' task "
         f"({epochs} epoch{'' if epochs == 1 else 's'}, seed {args.seed})")
    corpus = Corpus(task=args.task, num_examples=args.num_examples, batch_size=DEMO_TRAINING["batch_size"],
                    seed=args.seed)
    _say(f"data: {len(corpus.batches.arrays[0])} training pairs, {len(corpus.test_pairs)} test pairs, "
         f"vocabularies {len(corpus.src_vocab)} -> {len(corpus.tgt_vocab)} tokens")
    model = build_seq2seq(len(corpus.src_vocab), len(corpus.tgt_vocab), seed=args.seed, **DEMO_SETTINGS)
    optimizer = _make_optimizer("adam", model.parameters(), DEMO_TRAINING["lr"])
    history = train_seq2seq(model, corpus.batches, corpus.tgt_vocab, optimizer, epochs,
                            clip=DEMO_TRAINING["clip"], seed=args.seed, progress=not args.no_progress)
    trained = time.perf_counter() - start
    max_len = corpus.num_steps[1]
    bleu, exact = evaluate(model, corpus, max_len)
    _say(f"trained in {trained:.1f} s: per-token cross-entropy {history.token_ce[-1]:.4f}, "
         f"{history.tokens_per_s[-1]:.0f} target tokens/s")
    _say(f"test: BLEU {bleu:.3f}, exact match {exact:.1%} ({len(corpus.test_pairs)} unseen examples, greedy)")
    _say("\nsample translations (greedy | beam 3):")
    heatmap = None
    for src, _ in corpus.test_pairs[:5]:
        sentence = corpus.text.detokenize_source(src)
        src_tokens, greedy_tokens, result = decode_sentence(model, sentence, corpus.src_vocab, corpus.tgt_vocab,
                                                            max_len, args.task, src_max_len=corpus.num_steps[0])
        _, beam_tokens, _ = decode_sentence(model, sentence, corpus.src_vocab, corpus.tgt_vocab, max_len,
                                            args.task, beam=3, src_max_len=corpus.num_steps[0])
        _say(f"  {sentence}  =>  {detokenize_target(greedy_tokens, args.task)}  |  "
             f"{detokenize_target(beam_tokens, args.task)}")
        if heatmap is None and result.attention is not None:
            heatmap = show_heatmaps(result.attention, src_tokens, attention_rows(greedy_tokens, result.attention),
                                    os.path.join(out, "attention.png"), title=f"attention: {sentence}")
    curve = plot_history(history, os.path.join(out, "loss.png"), keys=("token_ce",),
                         title=f"training on '{args.task}'")
    _say(f"\nwrote {heatmap} (where the decoder looked) and {curve} (the loss curve)")
    _say(f"total wall time {time.perf_counter() - start:.1f} s")
    return 0


# --------------------------------------------------------------------- train
def _model_config(args, corpus) -> dict:
    return dict(src_vocab_size=len(corpus.src_vocab), tgt_vocab_size=len(corpus.tgt_vocab), decoder=args.decoder,
                cell=args.cell, embed_size=args.embed_size, num_hiddens=args.num_hiddens,
                num_layers=args.num_layers, dropout=args.dropout, bidirectional=args.bidirectional,
                score=args.score, input_feeding=not args.no_input_feeding, seed=args.seed)


def cmd_train(args) -> int:
    from .checkpoint import load_seq2seq, save_checkpoint
    from .models import build_seq2seq
    from .nn import MaskedSoftmaxCELoss
    from .train import History, train_seq2seq
    if (args.task is None) == (args.data is None):
        raise UsageError("give exactly one of --task NAME or --data PATH")
    corpus = Corpus(args.task, args.data, args.num_examples, args.batch_size, args.num_steps, args.seed)
    history = History()
    done_epochs = 0
    completed = [0]  # epochs finished so far, updated as training goes
    if args.resume:
        model, checkpoint = load_seq2seq(args.resume)
        saved = checkpoint.extra or {}
        if saved.get("task") != args.task or saved.get("data") != (args.data and os.path.abspath(args.data)):
            raise UsageError(f"--resume: {args.resume} was trained on "
                             f"{saved.get('task') or saved.get('data')}, not on {args.task or args.data}")
        if checkpoint.vocabs["src"] != corpus.src_vocab or checkpoint.vocabs["tgt"] != corpus.tgt_vocab:
            raise UsageError(f"--resume: the vocabularies in {args.resume} differ from this data's "
                             f"(same --num-examples and --seed as the saved run?)")
        config = checkpoint.config
        optimizer = _make_optimizer(saved.get("optimizer", args.optimizer), model.parameters(), args.lr)
        checkpoint.restore(model, optimizer)
        done_epochs = checkpoint.epoch or 0
        history = History(**checkpoint.history) if checkpoint.history else history
        args.loss = saved.get("loss", args.loss)
        args.clip = saved.get("clip", args.clip)
        _say(f"resuming {args.resume} after epoch {done_epochs}")
    else:
        config = _model_config(args, corpus)
        model = build_seq2seq(**config)
        optimizer = _make_optimizer(args.optimizer, model.parameters(), args.lr)
    remaining = args.epochs - done_epochs
    if remaining <= 0:
        raise UsageError(f"--epochs: the run already has {done_epochs} epochs; ask for more than that")
    corpus.batches.set_epoch(done_epochs)
    completed[0] = done_epochs
    extra = dict(task=args.task, data=args.data and os.path.abspath(args.data), num_steps=list(corpus.num_steps),
                 num_examples=args.num_examples, optimizer=args.optimizer, loss=args.loss, clip=args.clip,
                 batch_size=args.batch_size, seed=args.seed)

    def save(epoch):
        if args.save:
            save_checkpoint(args.save, model, config=config, vocabs={"src": corpus.src_vocab, "tgt": corpus.tgt_vocab},
                            optimizer=optimizer, epoch=epoch, history=history.to_dict(), extra=extra)

    def on_epoch_end(epoch, epoch_history):
        for key, values in epoch_history.to_dict().items():
            getattr(history, key).append(values[-1])
        completed[0] = done_epochs + epoch + 1
        save(completed[0])

    _say(f"training a {config['decoder']} {config['cell'].upper()} encoder-decoder on "
         f"{args.task or args.data}: {len(corpus.batches.arrays[0])} pairs, "
         f"vocabularies {len(corpus.src_vocab)} -> {len(corpus.tgt_vocab)}")
    try:
        train_seq2seq(model, corpus.batches, corpus.tgt_vocab, optimizer, remaining,
                      loss_fn=MaskedSoftmaxCELoss(args.loss), clip=args.clip or None, seed=args.seed,
                      progress=not args.no_progress, on_epoch_end=on_epoch_end)
    except KeyboardInterrupt:
        # Every finished epoch is already saved; the interrupted one is dropped, so a resumed
        # run repeats it from its start and continues exactly as an uninterrupted run would.
        if args.save:
            if completed[0] == done_epochs and not args.resume:
                model.clear_caches()
                save(0)
            _say(f"\ninterrupted: the checkpoint of epoch {completed[0]} is in {args.save}; "
                 f"continue with --resume {args.save}", file=sys.stderr)
        else:
            _say("\ninterrupted (no --save was given, so nothing was kept)", file=sys.stderr)
        return 130
    _say(f"epoch {args.epochs}: loss {history.loss[-1]:.4f}, per-token cross-entropy {history.token_ce[-1]:.4f}"
         + (f", d2l metric {history.d2l_metric[-1]:.4f}" if args.loss == "d2l" else ""))
    if corpus.test_pairs:
        bleu, exact = evaluate(model, corpus, corpus.num_steps[1])
        _say(f"test: BLEU {bleu:.3f}, exact match {exact:.1%}")
    if args.save:
        _say(f"saved {args.save}")
    return 0


# ----------------------------------------------------------------- translate
def cmd_translate(args) -> int:
    from .checkpoint import load_seq2seq
    from .viz import show_heatmaps
    model, checkpoint = load_seq2seq(args.checkpoint)
    if not checkpoint.vocabs or "src" not in checkpoint.vocabs or "tgt" not in checkpoint.vocabs:
        raise UsageError(f"checkpoint: {args.checkpoint} holds no source and target vocabularies")
    saved = checkpoint.extra or {}
    task = saved.get("task")
    src_max_len, max_len = saved.get("num_steps") or [10, 10]
    max_len = args.max_len or max_len
    sentences = args.sentences or [line for line in sys.stdin.read().splitlines() if line.strip()]
    if not sentences:
        raise UsageError("no sentence to translate: pass sentences as arguments or one per line on stdin")
    model.eval()
    for i, sentence in enumerate(sentences):
        src_tokens, out_tokens, result = decode_sentence(model, sentence, checkpoint.vocabs["src"],
                                                         checkpoint.vocabs["tgt"], max_len, task, args.beam,
                                                         args.alpha, src_max_len)
        _say(f"{sentence} => {detokenize_target(out_tokens, task)}")
        if args.attention_png and result.attention is not None:
            root, ext = os.path.splitext(args.attention_png)
            path = args.attention_png if len(sentences) == 1 else f"{root}-{i + 1}{ext or '.png'}"
            show_heatmaps(result.attention, src_tokens, attention_rows(out_tokens, result.attention), path,
                          title=sentence)
            _say(f"  attention: {path}")
    return 0


# ------------------------------------------------------------------------ lm
def cmd_lm(args) -> int:
    from .data import SeqDataLoader, load_corpus, split_corpus
    from .models import RNNLM
    from .optim import Adam
    from .train import predict, train_lm
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
        text = predict(model, args.prefix, args.num_preds, vocab, temperature=args.temperature,
                       rng=args.seed + i)
        _say(f"sample: {text!r}")
    return 0


# ----------------------------------------------------------------- gradcheck
def cmd_gradcheck(args) -> int:
    from .checks import REGISTRY, run_checks
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
    from .data import TASKS
    parser = _Parser(
        prog="npseq",
        description="Sequence models written by hand in NumPy: RNN, GRU, LSTM, attention, seq2seq.")
    parser.add_argument("--version", action="version", version=f"npseq {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    demo = commands.add_parser("demo", help="train a small attention translator on built-in data and show it",
                               description="Train a Bahdanau-attention GRU on a built-in task, report test BLEU "
                                           "and exact match, print sample translations and draw the attention.")
    demo.add_argument("--task", choices=TASKS, default="numbers")
    demo.add_argument("--epochs", type=_positive(int), default=None, help="default: 6 for numbers")
    demo.add_argument("--num-examples", type=_positive(int), default=None, help="default: the whole task (10,000)")
    demo.add_argument("--out", default="npseq-demo", help="folder for the PNG files (default: ./npseq-demo)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--no-progress", action="store_true", help="no progress bar")
    demo.set_defaults(run=cmd_demo)

    train = commands.add_parser("train", help="train an encoder-decoder on a task or a corpus file")
    source = train.add_argument_group("data")
    source.add_argument("--task", choices=TASKS, help="a built-in task")
    source.add_argument("--data", type=_existing_file, help="a tab-separated parallel corpus (e.g. fra.txt)")
    source.add_argument("--num-examples", type=_positive(int), default=None)
    source.add_argument("--num-steps", type=_positive(int), default=None, help="default: 10 for --data, the task's own")
    source.add_argument("--batch-size", type=_positive(int), default=64)
    model = train.add_argument_group("model")
    model.add_argument("--decoder", choices=["plain", "bahdanau", "luong"], default="bahdanau")
    model.add_argument("--score", choices=["dot", "general", "concat"], default="general", help="Luong's score")
    model.add_argument("--no-input-feeding", action="store_true", help="Luong without input feeding")
    model.add_argument("--cell", choices=["rnn", "gru", "lstm"], default="gru")
    model.add_argument("--embed-size", type=_positive(int), default=32)
    model.add_argument("--num-hiddens", type=_positive(int), default=32)
    model.add_argument("--num-layers", type=_positive(int), default=2)
    model.add_argument("--dropout", type=_probability, default=0.1)
    model.add_argument("--bidirectional", action="store_true", help="bidirectional encoder")
    optim = train.add_argument_group("optimisation")
    optim.add_argument("--optimizer", choices=["adam", "sgd", "adagrad"], default="adam")
    optim.add_argument("--lr", type=_positive(float), default=0.005)
    optim.add_argument("--clip", type=float, default=1.0, help="global gradient-norm clip (0: none)")
    optim.add_argument("--loss", choices=["mean", "sum", "d2l"], default="d2l",
                       help="reduction of the masked cross-entropy (default d2l's)")
    optim.add_argument("--epochs", type=_positive(int), default=250)
    optim.add_argument("--seed", type=int, default=0)
    run = train.add_argument_group("checkpoints")
    run.add_argument("--save", help="checkpoint path (.npz), written after every epoch and on Ctrl-C")
    run.add_argument("--resume", type=_existing_file, help="continue the run saved in this checkpoint")
    run.add_argument("--no-progress", action="store_true")
    train.set_defaults(run=cmd_train)

    translate = commands.add_parser("translate", help="translate sentences with a saved model")
    translate.add_argument("checkpoint", type=_existing_file)
    translate.add_argument("sentences", nargs="*", help="sentences (default: one per line on stdin)")
    translate.add_argument("--beam", type=_positive(int), default=1, help="beam size (1: greedy)")
    translate.add_argument("--alpha", type=float, default=0.75, help="length penalty exponent of beam search")
    translate.add_argument("--max-len", type=_positive(int), default=None)
    translate.add_argument("--attention-png", help="draw the attention of each sentence to this PNG")
    translate.set_defaults(run=cmd_translate)

    lm = commands.add_parser("lm", help="train a character language model, then sample from it")
    lm.add_argument("--data", type=_existing_file, help="a UTF-8 text file (default: built-in prose)")
    lm.add_argument("--level", choices=["char", "word"], default="char")
    lm.add_argument("--max-tokens", type=_positive(int), default=100_000)
    lm.add_argument("--cell", choices=["rnn", "gru", "lstm"], default="gru")
    lm.add_argument("--num-hiddens", type=_positive(int), default=128)
    lm.add_argument("--num-layers", type=_positive(int), default=1)
    lm.add_argument("--dropout", type=_probability, default=0.0)
    lm.add_argument("--partition", choices=["random", "sequential"], default="sequential")
    lm.add_argument("--batch-size", type=_positive(int), default=32)
    lm.add_argument("--num-steps", type=_positive(int), default=35)
    lm.add_argument("--epochs", type=_positive(int), default=None, help="default: train until --seconds")
    lm.add_argument("--seconds", type=_positive(float), default=30.0)
    lm.add_argument("--lr", type=_positive(float), default=0.005)
    lm.add_argument("--prefix", default="the ")
    lm.add_argument("--num-preds", type=_positive(int), default=80)
    lm.add_argument("--temperature", type=_positive(float), default=0.8)
    lm.add_argument("--samples", type=int, default=2)
    lm.add_argument("--seed", type=int, default=0)
    lm.add_argument("--no-progress", action="store_true")
    lm.set_defaults(run=cmd_lm)

    gradcheck = commands.add_parser("gradcheck", help="check every backward against finite differences")
    gradcheck.add_argument("--only", nargs="+", metavar="NAME", help="run only these registered checks")
    gradcheck.add_argument("--seed", type=int, default=0)
    gradcheck.set_defaults(run=cmd_gradcheck)
    # "grade" is listed here for --help; main() hands its arguments to npseq.grade, which parses its own.
    commands.add_parser("grade", add_help=False, help="grade a learner's backward exercises: npseq grade FILE "
                                                      "[--only NAME] (see npseq grade --help)")
    commands.add_parser("exercises", add_help=False, help="write a hand-out of the exercises: npseq exercises "
                                                          "--out DIR (see npseq exercises --help)")
    return parser


def _user_errors():
    """Exceptions that mean the input was wrong, not npseq."""
    from .backend import BackendError
    from .checkpoint import CheckpointError
    return (UsageError, BackendError, CheckpointError, FileNotFoundError, IsADirectoryError, PermissionError,
            UnicodeDecodeError, ValueError)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["grade"]:
        from .grade import main as grade_main
        return grade_main(argv[1:])
    if argv[:1] == ["exercises"]:
        from .exercises import main as exercises_main
        return exercises_main(argv[1:])
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command == "translate" and not any(word.startswith("-") for word in extra):
        args.sentences += extra  # sentences after the options: argparse leaves them over
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return 0
    try:
        from .backend import backend_name
        backend_name()  # applies NPSEQ_BACKEND now, so a missing GPU is reported before any work
        return args.run(args)
    except _user_errors() as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _say(f"npseq {args.command}: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
