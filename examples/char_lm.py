"""Train a character-level GRU language model for a fixed wall time and compare it with n-gram baselines.

The corpus is the first 100 000 characters of the English prose of Python's own
documentation topics (``npseq.data.pydoc_text``, shipped with every CPython), or of
any UTF-8 file given with --data, normalised by ``npseq.data.preprocess_lm``
(lower case, letters, space and 11 punctuation marks). The last 10 % is the
validation set. The GRU (hidden 256, dropout 0.3 on the non-recurrent connections,
sequential partitioning with batch 32, truncated BPTT over 35 steps, Adam with lr
0.005 on a cosine schedule over the time budget, gradient clipping at global norm 1)
trains for --seconds of wall time; the unigram, bigram and trigram models use add-k
smoothing with k chosen on the last 10 % of the *training* part (fitted on the
rest), then refitted on all of it. Nothing is tuned on the validation set, and all
perplexities are on the same validation characters.

    python examples/char_lm.py                      # 2 minutes on the built-in text
    python examples/char_lm.py --data book.txt --seconds 300 --hidden 512

On a busy machine, OPENBLAS_NUM_THREADS=1 avoids BLAS threads competing for cores.
"""
import argparse
import math
import time

from npseq.data import SeqDataLoader, load_corpus, split_corpus
from npseq.models.lm import RNNLM
from npseq.models.ngram import NGramLM
from npseq.optim import Adam
from npseq.train import predict, train_lm

K_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)
PREFIXES = ("the ", "a function ")


def tuned_ngram(order, train, vocab_size):
    """The add-k n-gram whose k does best on the tail of the training ids, refitted on all of them."""
    fit_part, dev_part = split_corpus(train, 0.1)
    dev_ppl = {k: NGramLM(order, k, vocab_size).fit(fit_part).perplexity(dev_part) for k in K_GRID}
    best_k = min(dev_ppl, key=dev_ppl.get)
    return NGramLM(order, best_k, vocab_size).fit(train)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="a UTF-8 text file (default: the built-in pydoc prose)")
    parser.add_argument("--chars", type=int, default=100_000, help="characters of the corpus to use")
    parser.add_argument("--seconds", type=float, default=120.0, help="wall-time budget of the GRU's training")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-steps", type=int, default=35)
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    ids, vocab = load_corpus(path=args.data, level="char", max_tokens=args.chars)
    train, valid = split_corpus(ids, 0.1)
    print(f"corpus: {len(ids)} characters, vocabulary {len(vocab)}, train {len(train)}, valid {len(valid)}")

    rows = []
    for order, name in ((1, "unigram"), (2, "bigram"), (3, "trigram")):
        model = tuned_ngram(order, train, len(vocab))
        rows.append((name, f"add-k, k={model.k:g}", model.perplexity(valid)))

    model = RNNLM(len(vocab), args.hidden, args.layers, cell="gru", dropout=args.dropout, rng=args.seed)
    loader = SeqDataLoader(train, args.batch_size, args.num_steps, partition="sequential", seed=args.seed)
    optimizer = Adam(model.parameters(), lr=args.lr)
    start = time.perf_counter()

    def cosine_in_time(epoch, history):
        # The schedule follows the time budget, not the validation set, so the comparison stays fair.
        done = min(1.0, (time.perf_counter() - start) / args.seconds)
        optimizer.lr = args.lr * 0.5 * (1.0 + math.cos(math.pi * done))

    history = train_lm(model, loader, optimizer, None, clip=1.0, valid_ids=valid, max_seconds=args.seconds,
                       progress=not args.no_progress, on_epoch_end=cosine_in_time)
    wall = time.perf_counter() - start
    epochs = len(history.train_ppl)
    rows.append(("GRU", f"H={args.hidden}, L={args.layers}, {epochs} epochs, {wall:.0f} s", history.valid_ppl[-1]))

    print("GRU validation perplexity per epoch: " + ", ".join(f"{p:.2f}" for p in history.valid_ppl))
    print(f"GRU: {sum(history.num_batches)} batches of {args.batch_size}x{args.num_steps}, "
          f"{sum(history.num_batches) * args.batch_size * args.num_steps / sum(history.wall_s):.0f} tokens/s, "
          f"train perplexity {history.train_ppl[-1]:.3f}")
    print(f"{'model':<8} {'setting':<36} {'valid ppl':>9}")
    for name, setting, ppl in rows:
        print(f"{name:<8} {setting:<36} {ppl:>9.3f}")
    for i, prefix in enumerate(PREFIXES):
        text = predict(model, prefix, 80, vocab, temperature=0.8, rng=args.seed + i)
        print(f"sample (temperature 0.8): {text!r}")
    return rows, history


if __name__ == "__main__":
    main()
