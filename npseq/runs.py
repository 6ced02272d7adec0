"""Training runs of a translator that save after every epoch, stop between two updates, and resume exactly.

A :class:`TranslationRun` holds what one run of ``npseq train`` or ``npseq demo`` needs: the
data, the model, the optimizer, the history so far and the position inside the current epoch.
:meth:`TranslationRun.start` builds a new run from settings (the names of ``npseq train``'s
flags, defaults in :data:`RUN_DEFAULTS`); :meth:`TranslationRun.resume` rebuilds one from the
checkpoint it saved. :meth:`TranslationRun.train` trains up to a total number of epochs,
saving a checkpoint after each one; told to stop, it returns between two updates, after
saving, so that a resumed run continues bit for bit::

    run = TranslationRun.start(task="numbers", save="numbers.npz", lr=0.01)
    run.train(10)
    run = TranslationRun.resume("numbers.npz", task="numbers", save="numbers.npz")
    run.train(20)            # the same model as 20 epochs in one go

The checkpoint also keeps the data's name and lengths, so that ``npseq translate`` can
tokenise a new sentence as the training data was: :func:`saved_training_run` reads those settings
back, checked, and :func:`saved_training_settings` every flag a resumed run must agree with. The file
format itself is :mod:`npseq.checkpoint`'s; what a run may write over is decided here
(:func:`check_save_path`).
"""
from __future__ import annotations

import dataclasses
import os
import re

from . import backend
from ._checks import MemoryEstimate, check_memory
from .checkpoint import CheckpointError, is_npseq_checkpoint, load_checkpoint, save_checkpoint, seq2seq_from_checkpoint
from .data import FILE_HELD_OUT, TASKS, TranslationData, load_translation_data, task_capacity
from .data.translation import TASK_EXAMPLE_BYTES
from .decode import MAX_DECODE_LEN, TranslationScores, evaluate_translations
from .errors import InvalidTypeError, InvalidValueError, LimitError
from .models import (
    DEMO_SETTINGS,
    MODEL_KINDS,
    TRANSFORMER_DEMO_SETTINGS,
    build_seq2seq,
    check_seq2seq_config,
    estimate_seq2seq_memory,
)
from .nn import SCORES, MaskedSoftmaxCELoss
from .nn.loss import TRAINING_REDUCTIONS
from .optim import OPTIMIZERS, make_optimizer
from .train import EpochProgress, History, train_seq2seq

# The settings that shape a run, by the names of npseq train's flags, and their defaults.
RUN_DEFAULTS = dict(num_examples=None, num_steps=None, batch_size=64, decoder="bahdanau", score="general",
                    no_input_feeding=False, attention="global", window=2, cell="gru", embed_size=32, num_hiddens=32,
                    num_layers=2, dropout=0.1, bidirectional=False, optimizer="adam", lr=0.005, clip=1.0, loss="d2l",
                    seed=0, model="rnn", num_heads=4, ffn_num_hiddens=64)
# Settings whose change alters the data a run sees, hence its vocabularies and batches.
DATA_SETTINGS = ("num_examples", "num_steps", "seed")
# The settings that shape one kind of model only: given for the other kind, one would be saved and never read.
# Luong's own settings need --decoder luong.
MODEL_SETTINGS = {
    "rnn": ("decoder", "score", "no_input_feeding", "attention", "window", "cell", "embed_size", "bidirectional"),
    "transformer": ("num_heads", "ffn_num_hiddens"),
}
LUONG_SETTINGS = ("score", "no_input_feeding", "attention", "window")
# The settings that size a run's memory (see estimate_seq2seq_memory), named when it exceeds the budget.
SIZE_SETTINGS = ("model", "cell", "decoder", "bidirectional", "embed_size", "num_hiddens", "num_layers", "num_heads",
                 "ffn_num_hiddens", "batch_size", "num_steps")


def _flag(key: str, flags: dict | None = None) -> str:
    """The flag of the setting ``key``: ``--`` and its name with dashes, or its spelling in ``flags``."""
    return (flags or {}).get(key) or "--" + key.replace("_", "-")


def _check_model_settings(config: dict, flags: dict | None) -> None:
    """:func:`~npseq.models.check_seq2seq_config` of ``config``, its error in the words of the command line: the
    settings it names (``num_heads``) as their flags (``--heads``), the offending value beside its flag."""
    try:
        check_seq2seq_config(**config)
    except (InvalidTypeError, InvalidValueError, LimitError) as exc:
        name, _, reason = str(exc).partition(": ")
        if name not in RUN_DEFAULTS:
            raise
        settings = re.compile(r"\b(" + "|".join(sorted(RUN_DEFAULTS, key=len, reverse=True)) + r")\b")
        reason = settings.sub(lambda match: _flag(match.group(1), flags), reason)
        raise type(exc)(f"{_flag(name, flags)} {config[name]}: {reason}") from None


def unused_settings(given: dict, saved: dict | None = None) -> list:
    """The settings of ``given`` (names of :data:`RUN_DEFAULTS`; ``None`` means not given) that the model of the
    run would not use, each with why: ``[(name, why), ...]``, empty when every one is used. The model is the one
    ``given`` chooses, over the ``saved`` settings of a resumed run, over :data:`RUN_DEFAULTS`.

    A Transformer reads none of the recurrent model's settings (:data:`MODEL_SETTINGS`), a recurrent model none of
    the Transformer's; Luong's score, input feeding and local attention (:data:`LUONG_SETTINGS`) need
    ``decoder="luong"``, and the window a local ``attention``.
    """
    given = {key: value for key, value in given.items() if value is not None}
    chosen = {**RUN_DEFAULTS, **(saved or {}), **given}

    def chosen_by(key: str) -> str:
        return f"--{key} {chosen[key]}" + ("" if key in given else " (the saved run's)" if saved else " (the default)")

    model, unused = chosen["model"], []
    for kind, names in MODEL_SETTINGS.items():
        if kind != model:
            unused += [(name, f"a setting of the {kind} model, which {chosen_by('model')} does not read")
                       for name in names if name in given]
    if model != "rnn":
        return unused
    if chosen["decoder"] != "luong":
        unused += [(name, f"Luong's decoder reads it, {chosen_by('decoder')} does not")
                   for name in LUONG_SETTINGS if name in given and (name, given[name]) != ("attention", "global")]
    elif "window" in given and chosen["attention"] == "global":
        unused.append(("window", "the half-width of a local window, read with --attention local-m or local-p only"))
    return unused


def _check_settings_used(given: dict, saved: dict | None, flags: dict | None) -> None:
    unused = unused_settings(given, saved)
    if unused:
        name, why = unused[0]
        value = "" if isinstance(given[name], bool) else f" {given[name]}"
        raise InvalidValueError(f"{_flag(name, flags)}{value}: {why}; leave it out")


def _check_dot_score(settings: dict, flags: dict | None) -> None:
    """A score that compares equal sizes (Luong's dot) compares the decoder's state (H) with each encoder output,
    2H when bidirectional."""
    score = settings["score"]
    if settings["model"] == "rnn" and settings["decoder"] == "luong" and settings["bidirectional"] \
            and score in SCORES and SCORES[score].equal_sizes:
        raise InvalidValueError(f"{_flag('bidirectional', flags)} with {_flag('score', flags)} {score}: the {score} "
                                f"score needs encoder outputs of the decoder's size {settings['num_hiddens']}, a "
                                f"bidirectional encoder gives {2 * settings['num_hiddens']}; use --score general or "
                                f"concat, or leave --bidirectional out")


def _check_source(task, data) -> None:
    if (task is None) == (data is None):
        raise InvalidTypeError("give exactly one of --task NAME or --data PATH")


def _filled(settings: dict) -> dict:
    """``settings`` over :data:`RUN_DEFAULTS`, a ``None`` value meaning "the default"; unknown names are errors."""
    unknown = sorted(set(settings) - set(RUN_DEFAULTS))
    if unknown:
        raise InvalidTypeError(f"settings: unknown {', '.join(unknown)}; expected names among {tuple(RUN_DEFAULTS)}")
    return {key: default if settings.get(key) is None else settings[key] for key, default in RUN_DEFAULTS.items()}


def _model_config(settings: dict, corpus: TranslationData) -> dict:
    names = ("decoder", "cell", "embed_size", "num_hiddens", "num_layers", "dropout", "bidirectional", "score",
             "attention", "window", "seed", "model", "num_heads", "ffn_num_hiddens")
    return dict(src_vocab_size=len(corpus.src_vocab), tgt_vocab_size=len(corpus.tgt_vocab),
                input_feeding=not settings["no_input_feeding"], **{key: settings[key] for key in names})


def _resumed_settings(path: str, saved: dict, given: dict, flags: dict | None = None) -> dict:
    """The saved settings; a setting given (not ``None``) with another value than the saved one is an error."""
    for key, value in given.items():
        if value is None:
            continue
        shown, value = (value, (value, value)) if key == "num_steps" and isinstance(value, int) else (value, value)
        if value != saved[key]:
            why = " (it changes the data and the vocabularies)" if key in DATA_SETTINGS else ""
            flag = _flag(key, flags)
            raise InvalidValueError(f"--resume: {flag} {shown} conflicts with {path}, which was trained with "
                                    f"{flag} {saved[key]}{why}; leave {flag} out to continue the saved run")
    return saved


@dataclasses.dataclass
class TranslationRun:
    """One training run of an encoder-decoder; build it with :meth:`start` or :meth:`resume`.

    ``settings``: every key of :data:`RUN_DEFAULTS`, filled in (``num_steps`` as ``(source, target)``).
    ``task`` / ``data``: the built-in task or the corpus file (absolute path) trained on, exactly
    one of them. ``config``: the :func:`~npseq.models.build_seq2seq` arguments of ``model``.
    ``epochs_done``: whole epochs trained so far; ``position``: how far into the next one (an
    interrupted run). ``save_path``: where :meth:`save` writes (``None``: nowhere).
    """
    settings: dict
    task: str | None
    data: str | None
    corpus: TranslationData
    model: object
    optimizer: object
    config: dict
    history: History
    position: EpochProgress
    epochs_done: int = 0
    save_path: str | None = None

    @classmethod
    def start(cls, task: str | None = None, data: str | None = None, *, save: str | None = None,
              force: bool = False, flags: dict | None = None, **settings) -> TranslationRun:
        """A new run on a built-in ``task`` or a corpus file ``data`` (exactly one).

        ``settings``: any of :data:`RUN_DEFAULTS` (``None`` or left out: the default); one the model would not
        read (:func:`unused_settings`) is refused. ``save``: the checkpoint path written after every epoch; an
        existing file that is not an npseq checkpoint, or the corpus itself, is refused unless ``force``. A
        corpus file's :data:`~npseq.data.FILE_HELD_OUT` of pairs are held out of training, to test on. A
        ``num_examples`` beyond the task's, or a run whose :func:`~npseq.models.estimate_seq2seq_memory` exceeds
        the memory budget (:func:`npseq._checks.check_memory`), is refused before it is loaded or built.
        ``flags``: how the caller's messages should spell a setting's flag where it is not ``--`` and its name
        with dashes (``{"num_heads": "--heads"}``).
        """
        _check_source(task, data)
        given = settings
        settings = _filled(settings)
        _check_settings_used(given, None, flags)
        _check_dot_score(settings, flags)
        if save:
            check_save_path(save, {"--data": data}, force)
        settings["held_out"] = FILE_HELD_OUT if data else 0.0
        _check_examples(task, settings["num_examples"])
        corpus = _load(task, data, settings)
        settings["num_steps"] = tuple(corpus.num_steps)  # as resume() reads them back: (source, target)
        config = _model_config(settings, corpus)
        _check_model_settings(config, flags)
        _check_run_memory(config, settings, corpus, given, flags)
        model = build_seq2seq(**config)
        optimizer = make_optimizer(settings["optimizer"], model.parameters(), settings["lr"])
        return cls(settings, task, data and os.path.abspath(data), corpus, model, optimizer, config, History(),
                   EpochProgress(), save_path=save)

    @classmethod
    def resume(cls, path: str, task: str | None = None, data: str | None = None, *, save: str | None = None,
               force: bool = False, flags: dict | None = None, **given) -> TranslationRun:
        """The run saved in the checkpoint ``path``, continued where it stopped (mid-epoch too).

        ``task`` / ``data`` must name what the run trained on. ``given``: settings (names of
        :data:`RUN_DEFAULTS`) that must agree with the saved ones, and that the saved model reads; ``None``
        means "as saved". The data is loaded again with the saved settings and must give the saved vocabularies;
        the run must fit in the memory budget, as in :meth:`start`. ``flags``: as in :meth:`start`.
        """
        _check_source(task, data)
        _filled(given)
        if save:
            check_save_path(save, {"--data": data}, force)
        checkpoint = load_checkpoint(path)
        run = saved_training_run(checkpoint)
        data = data and os.path.abspath(data)
        if run.get("task") != task or run.get("data") != data:
            raise InvalidValueError(f"--resume: {path} was trained on {run.get('task') or run.get('data')}, "
                                    f"not on {task or data}")
        saved = saved_training_settings(checkpoint, run)
        _check_settings_used(given, saved, flags)
        settings = _resumed_settings(path, saved, given, flags)
        corpus = _load(task, data, settings)
        if checkpoint.vocabs.get("src") != corpus.src_vocab or checkpoint.vocabs.get("tgt") != corpus.tgt_vocab:
            raise InvalidValueError(f"--resume: the vocabularies in {path} differ from this data's "
                                    f"(same --num-examples and --seed as the saved run?)")
        position = run.get("epoch_progress", EpochProgress())
        if position.batches_done >= len(corpus.batches):
            raise InvalidValueError(f"--resume: {path} stopped after batch {position.batches_done} of an epoch "
                                    f"of {len(corpus.batches)} batches")
        model = seq2seq_from_checkpoint(checkpoint)  # its config checked, and no larger than the saved parameters
        _check_run_memory(checkpoint.config, settings, corpus, given, flags)  # before a step's activations
        optimizer = make_optimizer(settings["optimizer"], model.parameters(), settings["lr"])
        checkpoint.restore(model, optimizer)
        return cls(settings, task, data, corpus, model, optimizer, checkpoint.config, run["history"], position,
                   checkpoint.epoch or 0, save_path=save)

    def save(self) -> None:
        """Write the checkpoint to ``save_path`` (nothing when it is ``None``): model, optimizer, generators,
        vocabularies, history, the run's settings and its position inside the current epoch."""
        if not self.save_path:
            return
        settings = {key: self.settings[key] for key in ("num_examples", "optimizer", "loss", "clip", "batch_size",
                                                        "seed", "held_out")}
        extra = dict(settings, task=self.task, data=self.data, num_steps=list(self.corpus.num_steps),
                     epoch_progress=self.position.to_dict())
        save_checkpoint(self.save_path, self.model, config=self.config,
                        vocabs={"src": self.corpus.src_vocab, "tgt": self.corpus.tgt_vocab},
                        optimizer=self.optimizer, epoch=self.epochs_done, history=self.history.to_dict(), extra=extra)

    def epochs_left(self, epochs: int) -> int:
        """How many epochs :meth:`train` would run to reach ``epochs`` in all; none left is an error naming
        ``--epochs``."""
        if epochs <= self.epochs_done:
            raise InvalidValueError(f"--epochs: the run already has {self.epochs_done} epochs; ask for more than that")
        return epochs - self.epochs_done

    def train(self, epochs: int, *, progress: bool = True, stop=None) -> bool:
        """Train until ``epochs`` epochs in all (those already done count), saving after each one.

        ``stop``: an optional ``callable() -> bool`` asked between two updates (e.g.
        ``lambda: ctrl_c.pressed`` with :class:`~npseq.train.StopOnCtrlC`). Returns ``True`` when
        the run reached ``epochs``; ``False`` when ``stop`` ended it early, after saving the
        checkpoint of that moment (from which :meth:`resume` continues exactly). A run that
        diverges raises :class:`~npseq.errors.TrainingDiverged`.
        """
        remaining = self.epochs_left(epochs)
        self.corpus.batches.set_epoch(self.epochs_done)
        first = self.epochs_done

        def on_epoch_end(epoch, epoch_history):
            for key, values in epoch_history.to_dict().items():
                getattr(self.history, key).append(values[-1])
            self.epochs_done = first + epoch + 1
            self.save()

        # A diverging run is reported as one TrainingDiverged error, not as NumPy's overflow warnings.
        with backend.numpy.errstate(over="ignore", invalid="ignore", divide="ignore"):
            train_seq2seq(self.model, self.corpus.batches, self.corpus.tgt_vocab, self.optimizer, remaining,
                          loss_fn=MaskedSoftmaxCELoss(self.settings["loss"]), clip=self.settings["clip"] or None,
                          seed=self.settings["seed"], progress=progress, on_epoch_end=on_epoch_end, stop=stop,
                          position=self.position)
        if self.epochs_done < epochs:
            self.save()  # the loop stopped between two updates: keep the model, optimizer and position of now
            return False
        return True

    def evaluate(self) -> TranslationScores | None:
        """Greedy BLEU and exact match on the held-out pairs (the task's test split, or the pairs held out of a
        corpus file); ``None`` when there are none (a file trained on whole, or too small to hold any out)."""
        if not self.corpus.test_pairs:
            return None
        src_len, max_len = self.corpus.num_steps
        return evaluate_translations(self.model, self.corpus.test_pairs, self.corpus.src_vocab, self.corpus.tgt_vocab,
                                     src_len=src_len, max_len=max_len)

    def held_out(self) -> str:
        """What the run tests on, in words: ``"1000 unseen examples"`` of a task's test split, or the pairs held
        out of a corpus file (how many, and which share)."""
        count, share = len(self.corpus.test_pairs or ()), self.settings["held_out"]
        if self.task:
            return f"{count} unseen examples"
        if not share:
            return "none held out: the run trains on the whole file, as runs started before npseq held pairs out did"
        return f"{count} pairs held out of training: a seeded {share:.0%} of the file"

    def scores_line(self, scores: TranslationScores) -> str:
        """One line of :meth:`evaluate`'s scores, as ``npseq demo`` and ``npseq train`` print them."""
        return f"test: BLEU {scores.bleu:.3f}, exact match {scores.exact_match:.1%} ({self.held_out()}, greedy)"


def _load(task, data, settings: dict) -> TranslationData:
    return load_translation_data(task, data, num_examples=settings["num_examples"],
                                 batch_size=settings["batch_size"], num_steps=settings["num_steps"],
                                 seed=settings["seed"], held_out=settings["held_out"])


def _check_examples(task: str | None, num_examples: int | None) -> None:
    """A task's ``num_examples``, before any is generated: at most the task's, and within the memory budget."""
    if task is None or num_examples is None:
        return
    most = task_capacity(task)
    if num_examples > most:
        raise LimitError(f"--num-examples: expected at most {most:,} for the task {task!r} (all its distinct "
                         f"examples), got {num_examples:,}")
    check_memory(f"--num-examples {num_examples}", MemoryEstimate(0, 0, 0, num_examples * TASK_EXAMPLE_BYTES))


def _check_run_memory(config: dict, settings: dict, corpus: TranslationData, given: dict, flags: dict | None) -> None:
    """The run's estimated memory (:func:`~npseq.models.estimate_seq2seq_memory` at its batch size and steps)
    within the budget; the error names the size flags given, or the data's vocabularies where none was."""
    batch_size = min(settings["batch_size"], len(corpus.batches.arrays[0]))
    estimate = estimate_seq2seq_memory(config, batch_size=batch_size, num_steps=corpus.num_steps)
    named = [_flag(key, flags) + ("" if given[key] is True else f" {given[key]}") for key in SIZE_SETTINGS
             if given.get(key) is not None]
    check_memory(", ".join(named) or f"the vocabularies of {corpus.task or corpus.path} "
                                     f"({config['src_vocab_size']} -> {config['tgt_vocab_size']} tokens)", estimate)


# npseq demo: a small Bahdanau-attention GRU (DEMO_SETTINGS) with per-task training that reaches exact match >= 0.99
# on each task's held-out pairs within seconds on two cores.
DEMO_EPOCHS = {"numbers": 6, "dates": 5, "reverse": 10}
DEMO_TRAINING = dict(batch_size=128, lr=0.01, clip=1.0, loss="mean")
DEMO_LEARNING_RATES = {"reverse": 0.003}  # at 0.01 the reverse task's loss stalls near 85% exact match
# npseq demo --model transformer: TRANSFORMER_DEMO_SETTINGS, its own epochs and training. Without a learning-rate
# schedule, a post-norm Transformer's exact match swings between epochs at lr 0.003-0.005 on reverse and dates
# (0.77 to 0.997 on reverse); the lower rates settle (reverse at 0.001: 1.000 from epoch 6 on).
TRANSFORMER_DEMO_EPOCHS = {"numbers": 4, "dates": 12, "reverse": 8}
TRANSFORMER_DEMO_TRAINING = dict(batch_size=128, lr=0.005, clip=1.0, loss="mean")
TRANSFORMER_DEMO_LEARNING_RATES = {"dates": 0.002, "reverse": 0.001}


def demo_epochs(task: str, model: str = "rnn") -> int:
    """The epochs of ``npseq demo --task task --model model``."""
    return (TRANSFORMER_DEMO_EPOCHS if model == "transformer" else DEMO_EPOCHS)[task]


def demo_settings(task: str, model: str = "rnn", **settings) -> dict:
    """The run settings of ``npseq demo --task task --model model``, overridden by ``settings`` (e.g. ``seed``)."""
    if model not in MODEL_KINDS:
        raise InvalidValueError(f"model: expected one of {MODEL_KINDS}, got {model!r}")
    if model == "transformer":
        chosen = dict(TRANSFORMER_DEMO_SETTINGS, **TRANSFORMER_DEMO_TRAINING)
        chosen["lr"] = TRANSFORMER_DEMO_LEARNING_RATES.get(task, chosen["lr"])
    else:
        chosen = dict(DEMO_SETTINGS, **DEMO_TRAINING)
        chosen["lr"] = DEMO_LEARNING_RATES.get(task, chosen["lr"])
    return {**chosen, **settings}


# ------------------------------------------------------- what a run saves, and where
def check_not_an_input(flag: str, path: str, inputs: dict, hint: str = "") -> None:
    """``path`` is none of the run's input files (``inputs`` maps their flags to their paths)."""
    for input_flag, input_path in inputs.items():
        if input_path and os.path.exists(path) and os.path.exists(input_path) and os.path.samefile(path, input_path):
            raise InvalidValueError(f"{flag}: {path!r} is the {input_flag} file of this run; refusing to "
                                    f"overwrite an input{hint}")


def check_save_path(path: str, inputs: dict, force: bool, flag: str = "--save") -> None:
    """Refuse a ``--save`` path where writing would destroy something the user did not mean to lose.

    Refused (unless ``force``): one of the run's ``inputs``, something other than a regular
    file (a folder, a device, a pipe, a link), or a regular file that is not an npseq
    checkpoint (:func:`is_npseq_checkpoint`: its ``meta.json`` says so, a zip alone is not enough); one that
    cannot be read raises its ``OSError`` (Permission denied). A folder that does not exist is an error even
    with ``force``.
    ``flag`` names the path in the errors (the option of ``npseq train`` by default).
    """
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InvalidValueError(f"{flag}: the folder {folder!r} does not exist")
    if not os.path.lexists(path) or force:
        return
    hint = "; pass --force to replace it anyway"
    check_not_an_input(flag, path, inputs, hint)
    if os.path.islink(path) or not os.path.isfile(path):
        raise InvalidValueError(f"{flag}: {path!r} exists and is not a regular file; refusing to replace it{hint}")
    with open(path, "rb"):  # a file that cannot be read fails with the machine's reason, not as no checkpoint
        pass
    if not is_npseq_checkpoint(path):
        raise InvalidValueError(f"{flag}: {path!r} exists and is not an npseq checkpoint; refusing to replace "
                                f"it{hint}")


def saved_training_run(checkpoint) -> dict:
    """The run settings ``npseq train`` keeps in a checkpoint's ``extra``, validated with their limits.

    Only the keys present are checked (a checkpoint written by the library may have none);
    ``train --resume`` then asks for the ones it needs. Raises :class:`CheckpointError`.
    """
    def positive(value, cap=None):
        return (not isinstance(value, bool) and isinstance(value, int) and value >= 1
                and (cap is None or value <= cap))

    def one_of(choices):
        # a JSON list or object is no choice, and unhashable: ``[1] in OPTIMIZERS`` would raise TypeError
        return lambda v: isinstance(v, str) and v in choices

    number = (int, float)
    rules = {
        "task": (lambda v: v is None or one_of(TASKS)(v), f"null or one of {TASKS}"),
        "data": (lambda v: v is None or isinstance(v, str), "null or a path"),
        "num_steps": (lambda v: isinstance(v, list) and len(v) == 2 and all(positive(s, MAX_DECODE_LEN) for s in v),
                      f"[source steps, target steps], each an int in [1, {MAX_DECODE_LEN}]"),
        "num_examples": (lambda v: v is None or positive(v), "null or a positive int"),
        "optimizer": (one_of(OPTIMIZERS), f"one of {tuple(OPTIMIZERS)}"),
        "loss": (one_of(TRAINING_REDUCTIONS), f"one of {TRAINING_REDUCTIONS}"),
        # Compared, not converted: float(10**400) overflows.
        "clip": (lambda v: isinstance(v, number) and not isinstance(v, bool) and 0 <= v <= 2.0 ** 63,
                 "a number in [0, 2**63]"),
        "batch_size": (positive, "a positive int"),
        "seed": (lambda v: not isinstance(v, bool) and isinstance(v, int) and 0 <= v < 2 ** 63, "an int >= 0"),
        "held_out": (lambda v: isinstance(v, number) and not isinstance(v, bool) and 0 <= v < 1, "a number in [0, 1)"),
    }
    run = dict(checkpoint.extra)
    for key, (ok, expected) in rules.items():
        if key in run and not ok(run[key]):
            raise CheckpointError(checkpoint.path, f"extra[{key!r}]: expected {expected}, got {run[key]!r:.60}")
    try:
        if "epoch_progress" in run:
            run["epoch_progress"] = EpochProgress.from_dict(run["epoch_progress"])
        run["history"] = History.from_dict(checkpoint.history) if checkpoint.history else History()
    except (TypeError, ValueError) as exc:
        raise CheckpointError(checkpoint.path, f"its training progress is malformed: {exc}") from None
    return run


def saved_training_settings(checkpoint, run: dict) -> dict:
    """The value of every run-shaping setting of ``npseq train`` (its flags, by their names) in the run that
    ``checkpoint`` saved, and ``held_out``, the share of a corpus file kept out of training; ``run`` is
    :func:`saved_training_run`'s. Raises :class:`CheckpointError`."""
    run_keys = ("num_steps", "num_examples", "optimizer", "loss", "clip", "batch_size", "seed")
    model_keys = ("decoder", "cell", "embed_size", "num_hiddens", "num_layers", "dropout", "bidirectional", "score",
                  "input_feeding")
    config = checkpoint.config
    lacking = [f"extra[{key!r}]" for key in run_keys if key not in run]
    lacking += [f"config[{key!r}]" for key in model_keys if key not in config]
    if "lr" not in (checkpoint.optimizer_state or {}):
        lacking.append("an optimizer state with lr")
    if lacking:
        raise CheckpointError(checkpoint.path, f"was not written by npseq train (it lacks {', '.join(lacking)}), "
                                               f"so it cannot be resumed")
    lr = checkpoint.optimizer_state["lr"]
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not 0 < lr < float("inf"):
        raise CheckpointError(checkpoint.path, f"its optimizer's lr: expected a positive number, got {lr!r:.40}")
    flags = {key: config[key] for key in model_keys if key != "input_feeding"}
    # Luong's local attention came later: a checkpoint without these keys used global attention.
    flags.update(attention=config.get("attention", "global"), window=config.get("window", 2))
    # So did the Transformer: a checkpoint without these keys holds a recurrent model.
    flags.update(model=config.get("model", "rnn"), num_heads=config.get("num_heads", 4),
                 ffn_num_hiddens=config.get("ffn_num_hiddens", 64))
    flags.update({key: run[key] for key in run_keys if key != "num_steps"})
    flags.update(no_input_feeding=not config["input_feeding"], lr=lr, num_steps=tuple(run["num_steps"]))
    # A corpus file's held-out share came later too: a checkpoint without it trained on the whole file.
    flags.update(held_out=run.get("held_out", 0.0))
    return flags
