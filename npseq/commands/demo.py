"""``npseq demo``: a small translator (an attention GRU or a Transformer) or a captioner trains on built-in data,
then shows what it learned, where it looked, and the command to try next."""
from __future__ import annotations

import os
import shlex
import time

from .._checks import check_memory
from ..captions_demo import CAPTIONS_DEMO_SETTINGS, captions_demo_memory, run_captions_demo
from ..data import TASKS
from ..decode import head_attention, translate
from ..models import MODEL_KINDS
from ..runs import TranslationRun, demo_epochs, demo_settings
from ..viz import plot_history, show_heatmaps
from .arguments import UsageError, folder_path, output_dir, positive, say, seed, show_progress

DESCRIPTION = ("Train a Bahdanau-attention GRU (or a Transformer) on a built-in task, report test BLEU and exact "
               "match, print sample translations and draw the attention (a Transformer's: also per head and "
               "block); with --task captions, train a GRU captioner on synthetic scenes and draw them with their "
               "captions.")


def add_arguments(parser) -> None:
    """The options of ``npseq demo``."""
    parser.add_argument("--task", choices=(*TASKS, "captions"), default="numbers",
                        help="a translation task, or 'captions': describe synthetic scenes")
    parser.add_argument("--model", choices=MODEL_KINDS, default="rnn",
                        help="rnn: a Bahdanau-attention GRU (default); transformer: a 2-block, 4-head Transformer "
                             "(translation tasks)")
    parser.add_argument("--epochs", type=positive(int), default=None,
                        help="default: " + "; ".join(f"{model}: " + ", ".join(f"{demo_epochs(task, model)} for {task}"
                                                                             for task in TASKS)
                                                     for model in MODEL_KINDS) + "; 5 for captions")
    parser.add_argument("--num-examples", type=positive(int), default=None,
                        help="default: the whole task (10,000); for captions, 8,000 training scenes")
    parser.add_argument("--out", type=folder_path, default="npseq-demo",
                        help="folder for the model and its PNG files, one subfolder per task (default: ./npseq-demo)")
    parser.add_argument("--seed", type=seed, default=0)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args) -> int:
    if args.task == "captions":
        if args.model != "rnn":
            raise UsageError(f"--model {args.model}: the captions demo trains a GRU captioner, not a "
                             f"{args.model}; leave --model out with --task captions")
        return _captions(args)
    # as the user wrote it, so that the paths printed read as they typed them; a Transformer keeps its files apart
    # from the GRU's of the same task, so that trying one model never overwrites the other's
    out = os.path.join(args.out, args.task if args.model == "rnn" else f"{args.task}-{args.model}")
    output_dir(out)
    start = time.perf_counter()
    epochs = args.epochs or demo_epochs(args.task, args.model)
    settings = demo_settings(args.task, args.model, num_examples=args.num_examples, seed=args.seed)
    what = (f"a Transformer ({settings['num_layers']} blocks, {settings['num_heads']} heads)"
            if args.model == "transformer" else "a Bahdanau-attention GRU")
    say(f"npseq demo: {what} translator learns the built-in '{args.task}' task "
         f"({epochs} epoch{'' if epochs == 1 else 's'}, seed {args.seed})")
    run = TranslationRun.start(task=args.task, save=os.path.join(out, "model.npz"), **settings)
    corpus = run.corpus
    if not corpus.test_pairs:
        raise UsageError(f"--num-examples: {args.num_examples} examples leave no test pair to show the model "
                         f"on (a tenth is held out); give more")
    say(f"data: {len(corpus.batches.arrays[0])} training pairs, {len(corpus.test_pairs)} test pairs, "
         f"vocabularies {len(corpus.src_vocab)} -> {len(corpus.tgt_vocab)} tokens")
    run.train(epochs, progress=show_progress(args))
    trained = time.perf_counter() - start
    scores = run.evaluate()
    say(f"trained in {trained:.1f} s: per-token cross-entropy {run.history.token_ce[-1]:.4f}, "
         f"{run.history.tokens_per_s[-1]:.0f} target tokens/s")
    say(run.scores_line(scores))
    say("\nsample translations (greedy | beam 3):")
    src_len, max_len = corpus.num_steps
    options = dict(task=args.task, src_max_len=src_len)
    heatmaps = []
    for src, _ in corpus.test_pairs[:5]:
        sentence = corpus.text.detokenize_source(src)
        greedy = translate(run.model, sentence, corpus.src_vocab, corpus.tgt_vocab, max_len, **options)
        beam = translate(run.model, sentence, corpus.src_vocab, corpus.tgt_vocab, max_len, "beam", beam_size=3,
                         **options)
        say(f"  {sentence}  =>  {greedy.text}  |  {beam.text}")
        if not heatmaps and greedy.result.attention is not None:
            heatmaps.append(show_heatmaps(greedy.result.attention, greedy.source_tokens, greedy.attention_rows,
                                          os.path.join(out, "attention.png"), title=f"attention: {sentence}"))
            if args.model == "transformer":
                heatmaps.append(_head_heatmaps(run.model, greedy, corpus, os.path.join(out, "attention_heads.png")))
    curve = plot_history(run.history, os.path.join(out, "loss.png"), keys=("token_ce",), log_scale=True,
                         title=f"training on '{args.task}'")
    looked = " and ".join(heatmaps) + (" (where each head of each block looked)" if len(heatmaps) > 1
                                       else " (where the decoder looked)")
    say(f"\nwrote {looked}, {curve} (the loss curve) and the model")
    say(f"total wall time {time.perf_counter() - start:.1f} s")
    unseen = corpus.text.detokenize_source(corpus.test_pairs[min(5, len(corpus.test_pairs) - 1)][0])
    say(f"\ntranslate a sentence it has not seen:\n  npseq translate "
         f"{shlex.quote(os.path.join(out, 'model.npz'))} {shlex.quote(unseen)}")
    return 0


def _captions(args) -> int:
    if args.num_examples is not None:  # refused before a scene is drawn
        check_memory(f"--num-examples {args.num_examples}", captions_demo_memory(args.num_examples))
    out = os.path.join(args.out, args.task)  # as the user wrote it, like the translation demo's paths
    output_dir(out)
    settings = CAPTIONS_DEMO_SETTINGS
    epochs = args.epochs or settings["epochs"]
    say(f"npseq demo: a {settings['cell'].upper()} captioner conditioned on each scene's pixels through its first "
         f"state (h0 = v W + b, CS231n) learns to describe synthetic 16x16 scenes ({epochs} epoch"
         f"{'' if epochs == 1 else 's'}, seed {args.seed})")
    record = run_captions_demo(out, epochs=args.epochs, num_train=args.num_examples, seed=args.seed,
                               on_epoch=None if args.no_progress else
                               lambda epoch, loss: say(f"  epoch {epoch + 1}: cross-entropy {loss:.4f}"))
    scores = record.scores
    say(f"trained in {record.train_s:.1f} s on {record.num_train} scenes")
    say(f"test: BLEU {scores.bleu:.3f} (corpus BLEU-4 / 100), exact match {scores.exact_match:.1%} "
         f"({record.num_test} unseen scenes, greedy)")
    say("\nsample captions (generated | reference):")
    for hyp, ref in list(zip(scores.captions, record.references))[:6]:
        say(f"  {hyp}  |  {ref}")
    say(f"\nwrote {record.png} (test scenes with their captions) and {record.text}")
    return 0


def _head_heatmaps(model, translation, corpus, path: str) -> str:
    """The cross-attention of every head of every decoder block for one greedy translation: one row of
    panels per block (the first map of the demo averages the last block's heads)."""
    maps = head_attention(model, translation, corpus.src_vocab, corpus.tgt_vocab).cross
    layers, heads = maps.shape[:2]
    titles = [f"block {layer + 1}, head {head + 1}" for layer in range(layers) for head in range(heads)]
    return show_heatmaps(maps.reshape((layers * heads,) + maps.shape[2:]), translation.source_tokens,
                         translation.attention_rows, path, title=titles)
