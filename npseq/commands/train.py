"""``npseq train``: an encoder-decoder on a built-in task or a corpus file, saved after every epoch, resumable
exactly (the run itself is :class:`npseq.runs.TranslationRun`)."""
from __future__ import annotations

import argparse
import sys

from ..data import TASKS
from ..data.datasets import DatasetMissing, resolve_data
from ..decode import MAX_DECODE_LEN
from ..models import CELLS, DECODER_KINDS, MAX_LAYERS, MAX_UNITS, MODEL_KINDS, LuongAttentionDecoder
from ..nn import SCORES
from ..nn.loss import TRAINING_REDUCTIONS
from ..optim import OPTIMIZERS
from ..runs import RUN_DEFAULTS, TranslationRun
from ..train import StopOnCtrlC
from .arguments import (
    EXIT_INTERRUPTED,
    Spelled,
    clip_norm,
    existing_file,
    new_file_path,
    number,
    positive,
    probability,
    say,
    seed,
    show_progress,
)


def data_file(text):
    """An argparse type: ``--data``, a file or a dataset name (:func:`npseq.data.datasets.resolve_data`)."""
    try:
        return resolve_data(text)
    except DatasetMissing as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser) -> None:
    """The options of ``npseq train``."""
    source = parser.add_argument_group("data")
    source.add_argument("--task", choices=TASKS, help="a built-in task")
    source.add_argument("--data", type=data_file,
                        help="a tab-separated parallel corpus (e.g. fra.txt), or a fetched dataset's name (fra-eng)")
    # The run-shaping flags default to None: with --resume, a flag left out is taken from the checkpoint,
    # and one given must agree with it; otherwise None means RUN_DEFAULTS' value.
    defaults = RUN_DEFAULTS
    source.add_argument("--num-examples", type=positive(int), default=None)
    source.add_argument("--num-steps", type=positive(int, MAX_DECODE_LEN), default=None,
                        help="default: 10 for --data, the task's own")
    source.add_argument("--batch-size", type=positive(int), help=f"default: {defaults['batch_size']}")
    model = parser.add_argument_group("model (with --resume: taken from the checkpoint)")
    model.add_argument("--model", choices=MODEL_KINDS,
                       help="rnn: a recurrent encoder-decoder (default); transformer: reads --num-hiddens, "
                            "--num-layers, --num-heads, --ffn-num-hiddens and --dropout")
    model.add_argument("--num-heads", type=positive(int, MAX_UNITS), action=Spelled,
                       help=f"the Transformer's attention heads, a divisor of --num-hiddens "
                            f"(default: {defaults['num_heads']})")
    # Short spellings as actions of their own, so that each flag's errors name the flag as it was typed.
    model.add_argument("--heads", dest="num_heads", type=positive(int, MAX_UNITS), action=Spelled,
                       help="same as --num-heads")
    model.add_argument("--ffn-num-hiddens", type=positive(int, MAX_UNITS),
                       help=f"the Transformer's feed-forward size (default: {defaults['ffn_num_hiddens']})")
    model.add_argument("--decoder", choices=DECODER_KINDS, help=f"default: {defaults['decoder']}")
    model.add_argument("--score", choices=tuple(SCORES), help="Luong's score (default: general)")
    model.add_argument("--no-input-feeding", action="store_const", const=True, help="Luong without input feeding")
    model.add_argument("--attention", choices=LuongAttentionDecoder.ATTENTIONS,
                       help="Luong's global attention (default) or local attention on a window: local-m centres it on "
                            "the step, local-p on a predicted position")
    model.add_argument("--window", type=number(int, "an int >= 0", lambda v: 0 <= v <= MAX_UNITS),
                       help="half-width D of the local window, 2D + 1 positions (default: 2)")
    model.add_argument("--cell", choices=tuple(CELLS), help=f"default: {defaults['cell']}")
    model.add_argument("--embed-size", type=positive(int, MAX_UNITS), help=f"default: {defaults['embed_size']}")
    model.add_argument("--num-hiddens", type=positive(int, MAX_UNITS), help=f"default: {defaults['num_hiddens']}")
    model.add_argument("--num-layers", type=positive(int, MAX_LAYERS), action=Spelled,
                       help=f"recurrent layers, or the Transformer's blocks per side "
                            f"(default: {defaults['num_layers']})")
    model.add_argument("--layers", dest="num_layers", type=positive(int, MAX_LAYERS), action=Spelled,
                       help="same as --num-layers")
    model.add_argument("--dropout", type=probability, help=f"default: {defaults['dropout']}")
    model.add_argument("--bidirectional", action="store_const", const=True, help="bidirectional encoder")
    optim = parser.add_argument_group("optimisation (with --resume: taken from the checkpoint)")
    optim.add_argument("--optimizer", choices=tuple(OPTIMIZERS), help=f"default: {defaults['optimizer']}")
    optim.add_argument("--lr", type=positive(float), help=f"default: {defaults['lr']}")
    optim.add_argument("--clip", type=clip_norm, help="global gradient-norm clip (0: none; default 1.0)")
    optim.add_argument("--loss", choices=TRAINING_REDUCTIONS,
                       help="reduction of the masked cross-entropy (default d2l's)")
    optim.add_argument("--epochs", type=positive(int), default=250,
                       help="the total, resumed epochs included (default 250, d2l's)")
    optim.add_argument("--seed", type=seed, help="default: 0")
    run = parser.add_argument_group("checkpoints")
    run.add_argument("--save", type=new_file_path,
                     help="checkpoint path (.npz), written after every epoch and on Ctrl-C")
    run.add_argument("--force", action="store_true",
                     help="let --save replace a file that is not a checkpoint or is an input of the run")
    run.add_argument("--resume", type=existing_file, help="continue the run saved in this checkpoint")
    run.add_argument("--no-progress", action="store_true")


def run(args) -> int:
    given = {key: getattr(args, key) for key in RUN_DEFAULTS}
    source = dict(task=args.task, data=args.data, save=args.save, force=args.force,
                  flags=getattr(args, "spelled", None))
    run = TranslationRun.resume(args.resume, **source, **given) if args.resume else TranslationRun.start(**source,
                                                                                                        **given)
    run.epochs_left(args.epochs)  # a resumed run that has them all is refused before anything is said about it
    if args.resume:
        where = f" and {run.position.batches_done} batches" if run.position.batches_done else ""
        say(f"resuming {args.resume} after epoch {run.epochs_done}{where}")
        if not args.save:  # the new epochs would go when the command ends, and nothing would have said so
            say(f"npseq train: no --save: the epochs trained now are not kept (--save {args.resume} updates the "
                "checkpoint, --save NEW.npz keeps both)", file=sys.stderr)
    with StopOnCtrlC() as ctrl_c:
        config = run.config
        what = (f"Transformer ({config['num_layers']} blocks, {config['num_heads']} heads)"
                if config.get("model") == "transformer" else
                f"{config['decoder']} {config['cell'].upper()} encoder-decoder")
        pairs = len(run.corpus.batches.arrays[0])
        test = run.corpus.test_pairs
        held = f" ({len(test)} more held out to test on)" if args.data and test else ""
        epochs = f"{args.epochs} epoch{'s' if args.epochs != 1 else ''}"
        kept = f"saved to {args.save} after each" if args.save else "not saved (--save CK.npz keeps the model)"
        say(f"training a {what} on {args.task or args.data}: {pairs} pairs{held}, "
            f"vocabularies {len(run.corpus.src_vocab)} -> {len(run.corpus.tgt_vocab)}; {epochs}, {kept}")
        if not run.train(args.epochs, progress=show_progress(args), stop=lambda: ctrl_c.pressed):
            if not args.save:
                say("\ninterrupted (no --save was given, so nothing was kept)", file=sys.stderr)
                return EXIT_INTERRUPTED
            batches = run.position.batches_done
            where = (f" plus {batches} of {len(run.corpus.batches)} batches of epoch {run.epochs_done + 1}"
                     if batches else "")
            say(f"\ninterrupted: the checkpoint of epoch {run.epochs_done}{where} is in {args.save}; "
                 f"continue with --resume {args.save}", file=sys.stderr)
            return EXIT_INTERRUPTED
    history, reduction = run.history, run.settings["loss"]
    d2l = (f"; d2l's printed loss {history.d2l_metric[-1]:.4f} (the objective summed over the epoch / target tokens)"
           if reduction == "d2l" else "")
    say(f"epoch {args.epochs}: per-token cross-entropy {history.token_ce[-1]:.4f} nats; training objective "
        f"{history.loss[-1]:.4f} (--loss {reduction}, mean over batches){d2l}")
    scores = run.evaluate()
    say(run.scores_line(scores) if scores is not None else f"test: nothing to test on ({run.held_out()})")
    if args.save:
        say(f"saved {args.save}")
    return 0
