"""``npseq lm``: a character (or word) language model trained on a text, then sampled from."""
from __future__ import annotations

from .._checks import check_memory
from ..data import SeqDataLoader, load_corpus, preprocess_lm, split_corpus, tokenize_lm
from ..models import CELLS, MAX_LAYERS, MAX_UNITS, RNNLM, estimate_rnnlm_memory
from ..optim import Adam
from ..train import predict, train_lm
from .arguments import UsageError, existing_file, number, positive, probability, say, seed, show_progress

# Each sampled token is one step of the model, and a sample is printed whole: a page of text is plenty.
MAX_NUM_PREDS = 10_000
MAX_SAMPLES = 100


def add_arguments(parser) -> None:
    """The options of ``npseq lm``."""
    parser.add_argument("--data", type=existing_file, help="a UTF-8 text file (default: built-in prose)")
    parser.add_argument("--level", choices=["char", "word"], default="char")
    parser.add_argument("--max-tokens", type=positive(int), default=100_000)
    parser.add_argument("--cell", choices=tuple(CELLS), default="gru")
    parser.add_argument("--num-hiddens", type=positive(int, MAX_UNITS), default=128)
    parser.add_argument("--num-layers", type=positive(int, MAX_LAYERS), default=1)
    parser.add_argument("--dropout", type=probability, default=0.0)
    parser.add_argument("--partition", choices=["random", "sequential"], default="sequential")
    parser.add_argument("--batch-size", type=positive(int), default=32)
    parser.add_argument("--num-steps", type=positive(int), default=35)
    parser.add_argument("--epochs", type=positive(int), default=None, help="default: train until --seconds")
    parser.add_argument("--seconds", type=positive(float), default=30.0)
    parser.add_argument("--lr", type=positive(float), default=0.005)
    parser.add_argument("--prefix", default="the ")
    parser.add_argument("--num-preds", type=positive(int, MAX_NUM_PREDS), default=80, help="tokens per sample")
    parser.add_argument("--temperature", type=positive(float), default=0.8)
    parser.add_argument("--samples", type=number(int, f"an int in [0, {MAX_SAMPLES}]", lambda v: 0 <= v <= MAX_SAMPLES),
                        default=2)
    parser.add_argument("--seed", type=seed, default=0)
    parser.add_argument("--no-progress", action="store_true")


def run(args) -> int:
    # The prompt is tokenised as the corpus is: characters, or words that predict() joins with spaces.
    prefix = args.prefix if args.level == "char" else tokenize_lm(preprocess_lm(args.prefix), "word")
    if not prefix:
        raise UsageError(f"--prefix: expected at least one word to start the samples from, got {args.prefix!r}")
    ids, vocab = load_corpus(path=args.data, level=args.level, max_tokens=args.max_tokens)
    train, valid = split_corpus(ids, 0.1)
    say(f"corpus: {args.data or 'the built-in Python documentation prose'}, {len(ids)} {args.level} tokens, "
         f"vocabulary {len(vocab)}")
    sizes = [f"{flag} {value}" for flag, value in (("--num-hiddens", args.num_hiddens), ("--num-layers",
                                                   args.num_layers), ("--batch-size", args.batch_size),
                                                   ("--num-steps", args.num_steps))]
    check_memory(", ".join(sizes) + f" (vocabulary {len(vocab)})", estimate_rnnlm_memory(
        len(vocab), args.num_hiddens, args.num_layers, args.cell, batch_size=args.batch_size, num_steps=args.num_steps))
    model = RNNLM(len(vocab), args.num_hiddens, args.num_layers, cell=args.cell, dropout=args.dropout, rng=args.seed)
    loader = SeqDataLoader(train, args.batch_size, args.num_steps, partition=args.partition, seed=args.seed)
    history = train_lm(model, loader, Adam(model.parameters(), lr=args.lr), args.epochs, clip=1.0, valid_ids=valid,
                       max_seconds=args.seconds, progress=show_progress(args))
    say(f"after {len(history.train_ppl)} epochs: train perplexity {history.train_ppl[-1]:.2f}, "
         f"validation perplexity {history.valid_ppl[-1]:.2f}")
    for i in range(args.samples):
        text = predict(model, prefix, args.num_preds, vocab, temperature=args.temperature, rng=args.seed + i)
        say(f"sample: {text!r}")
    return 0
