"""Reproduce d2l's English-to-French Bahdanau translator with npseq's own backward passes.

Settings and objective are d2l's (chapter "Bahdanau Attention"): embed 32, hidden 32,
a 2-layer GRU, dropout 0.1, batch 64, num_steps 10, Adam with lr 0.005, gradient
clipping at global norm 1, 250 epochs, the first 600 pairs of fra.txt, and d2l's loss
(per sequence the mean over num_steps, summed over the batch). The printed "loss" is
d2l's metric: that objective summed over an epoch divided by the number of target tokens.
The four d2l examples are translated greedily, then by beam search (``--beam K``, 0 to skip;
score log P / L**0.75), and the mean BLEU of the two is compared.

``--model transformer`` trains d2l's Transformer instead (chapter "Transformer", the book's 2-block
version): hidden 32, 2 blocks, 4 heads, feed-forward 64, dropout 0.1, post-norm, batch 64, num_steps 10,
Adam with lr 0.005, clipping at 1, 200 epochs, the same data and loss. One difference: the embeddings
start from N(0, 1/D), not d2l's N(0, 1) (see ``npseq.models.transformer``; the multi-head attention also
has biases, as torch's and Vaswani et al.'s). The last line is one row of the
table that compares the models: model, epochs, loss, mean BLEU of greedy and beam search, wall time.

    npseq data fetch fra-eng      # once: d2l's fra-eng.zip, SHA-1 checked, into npseq's cache
    python examples/d2l_fra_eng.py --data fra-eng
    python examples/d2l_fra_eng.py --data path/to/fra.txt --decoder luong --cell lstm
    python examples/d2l_fra_eng.py --data fra-eng --model transformer
"""
import argparse
import time

from npseq.data import load_data_nmt
from npseq.data.datasets import DatasetMissing, resolve_data
from npseq.decode import translate
from npseq.metrics import bleu
from npseq.models import build_seq2seq
from npseq.nn import MaskedSoftmaxCELoss
from npseq.optim import Adam
from npseq.train import train_seq2seq

EXAMPLES = [("go .", "va !"), ("i lost .", "j'ai perdu ."), ("he's calm .", "il est calme ."),
            ("i'm home .", "je suis chez moi .")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True,
                        help="path to fra.txt (tab-separated English/French pairs), or fra-eng once fetched")
    parser.add_argument("--model", choices=["rnn", "transformer"], default="rnn",
                        help="rnn: the recurrent encoder-decoder of --decoder and --cell; transformer: d2l's")
    parser.add_argument("--decoder", choices=["bahdanau", "luong", "plain"], default="bahdanau")
    parser.add_argument("--cell", choices=["gru", "lstm", "rnn"], default="gru")
    parser.add_argument("--epochs", type=int, default=None, help="default: 250 (rnn) or 200 (transformer), d2l's")
    parser.add_argument("--num-examples", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--beam", type=int, default=3, metavar="K", help="beam size (0: greedy only)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    try:
        data = resolve_data(args.data)
    except DatasetMissing as exc:  # one line saying how to get the corpus, as npseq train --data says it
        parser.error(f"argument --data: {exc}")

    batch_size, num_steps = 64, 10
    batches, src_vocab, tgt_vocab = load_data_nmt(batch_size, num_steps, args.num_examples, path=data,
                                                  seed=args.seed)
    if args.model == "transformer":
        settings = dict(model="transformer", num_hiddens=32, num_layers=2, num_heads=4, ffn_num_hiddens=64)
        name, epochs = "Transformer (2 blocks, 4 heads, hidden 32)", args.epochs or 200
    else:
        settings = dict(decoder=args.decoder, cell=args.cell, embed_size=32, num_hiddens=32, num_layers=2)
        name, epochs = f"{args.decoder} {args.cell.upper()} (2 layers, hidden 32)", args.epochs or 250
    model = build_seq2seq(len(src_vocab), len(tgt_vocab), dropout=0.1, seed=args.seed, **settings)
    optimizer = Adam(model.parameters(), lr=0.005)
    start = time.perf_counter()
    history = train_seq2seq(model, batches, tgt_vocab, optimizer, epochs, loss_fn=MaskedSoftmaxCELoss("d2l"),
                            clip=1.0, seed=args.seed, progress=not args.no_progress)
    wall = time.perf_counter() - start
    print(f"loss (d2l metric) {history.d2l_metric[-1]:.4f}, per-token cross-entropy "
          f"{history.token_ce[-1]:.4f}, wall {wall:.1f} s")
    searches = [("greedy", {})] + ([("beam", dict(beam_size=args.beam))] if args.beam > 0 else [])
    means = {}
    for method, options in searches:
        if method == "beam":
            print(f"beam search (k={args.beam}):")
        scores = []
        for eng, fra in EXAMPLES:
            translation = translate(model, eng, src_vocab, tgt_vocab, num_steps, method=method, **options).text
            scores.append(bleu(translation, fra, k=2))
            print(f"{eng} => {translation}, bleu {scores[-1]:.3f}")
        means[method] = sum(scores) / len(scores)
    print("mean bleu: " + ", ".join(f"{method} {mean:.3f}" for method, mean in means.items()))
    print("| model | epochs | loss | mean BLEU greedy | mean BLEU beam | wall (s) |")
    beam = f"{means['beam']:.3f}" if "beam" in means else "-"
    print(f"| {name} | {epochs} | {history.d2l_metric[-1]:.4f} | {means['greedy']:.3f} | {beam} | {wall:.1f} |")

if __name__ == "__main__":
    main()
