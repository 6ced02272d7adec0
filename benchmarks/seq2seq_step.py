"""The training step the benchmarks time: ``npseq train``'s own, with its phases read off as it runs; and the
search ``npseq translate`` runs over the lines waiting on its stdin.

A benchmark that builds its own step can drift from the one training runs: after the decoder
gained a packed fast twin, the benchmarks went on timing ``model.decoder(...)``, the readable
reference loop, while ``train_seq2seq`` ran the twin through ``EncoderDecoder.forward``, and
the published numbers were another code path's. So :class:`TrainingStep` calls
:func:`npseq.train.train_seq2seq_step` itself, the very function every epoch of ``npseq
train`` calls, and times its phases by timing, for the duration of one call, the functions
that step calls:

* ``encoder``: ``model.encode``;
* ``decoder``: ``npseq.models.encoder_decoder.packed_forward``, the decoder's packed twin (or the
  decoder's ``forward``, the reference loop, when the model runs that: ``model.fast_decoder = False``);
* ``loss``: the loss's ``forward``;
* ``backward``: ``model.backward`` (the decoder's backward, then the encoder's);
* ``optimizer``: the rest of the step (clipping, Adam).

A phase that the step did not enter is an error, not a zero: a benchmark whose step stops
reaching the decoder it claims to time says so (``tests/test_benchmarks.py`` holds it to
training: the same loss and gradients as ``train_seq2seq_step`` on one batch, through it).

:func:`translate_waiting` is ``npseq translate``'s greedy search over the sentences waiting on
stdin, as ``decode.translate_batch`` calls it (the same test holds the two together).

Nothing here imports NumPy at load: the scripts that import it set their BLAS threads first.
"""
import contextlib
import importlib
import resource
import time

PHASES = ("encoder", "decoder", "loss", "backward", "optimizer")


def minor_faults() -> int:
    """This process's minor page faults so far: pages the kernel had to map (and zero) on first touch."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


class PhaseMissed(RuntimeError):
    """The training step ran without entering a phase the benchmark times: it times another path."""


class TrainingStep:
    """``npseq.train.train_seq2seq_step`` on one model, its loss (d2l's by default) and Adam, phases timed.

    Args:
        npseq: the npseq package to train with (``bench_ab`` passes another revision's copy).
        model: an ``EncoderDecoder`` of that package.
        bos_id: the target vocabulary's ``<bos>``.
    """

    def __init__(self, npseq, model, bos_id: int, loss: str = "d2l", lr: float = 0.005, clip: float = 1.0):
        self.npseq, self.model, self.bos_id, self.clip = npseq, model, bos_id, clip
        self.train = importlib.import_module(f"{npseq.__name__}.train")
        self.loss_fn = importlib.import_module(f"{npseq.__name__}.nn").MaskedSoftmaxCELoss(loss)
        self.optimizer = importlib.import_module(f"{npseq.__name__}.optim").Adam(model.parameters(), lr=lr)
        self.module = importlib.import_module(f"{npseq.__name__}.models.encoder_decoder")

    def __call__(self, batch, phases: dict | None = None) -> float:
        """One update on ``batch``; adds each phase's seconds into ``phases``. Returns the per-token loss."""
        seconds = dict.fromkeys(PHASES, 0.0)
        with self._timed(seconds):
            start = time.perf_counter()
            _, nll_sum, num_tokens, _ = self.train.train_seq2seq_step(self.model, self.loss_fn, self.optimizer, batch,
                                                                    self.bos_id, self.clip)
            total = time.perf_counter() - start
        missed = [name for name in PHASES[:-1] if seconds[name] == 0.0]
        if missed:
            raise PhaseMissed(f"the training step never entered {missed}: this benchmark times another path than "
                              "npseq.train.train_seq2seq_step runs")
        seconds["optimizer"] = total - sum(seconds[name] for name in PHASES[:-1])
        if phases is not None:
            for name in PHASES:
                phases[name] += seconds[name]
        return nll_sum / num_tokens

    @contextlib.contextmanager
    def _timed(self, seconds: dict):
        """For one call of the step: the functions it calls, each behind a timer of its phase (put back after)."""
        model, decoder = self.model, self.model.decoder
        fast = getattr(model, "fast_decoder", False)
        patches = [(model, "encode", "encoder"), (self.loss_fn, "forward", "loss"), (model, "backward", "backward")]
        patches.append((self.module, "packed_forward", "decoder") if fast else (decoder, "forward", "decoder"))
        saved = []
        for owner, name, phase in patches:
            original = getattr(owner, name)
            saved.append((owner, name, name in vars(owner)))
            setattr(owner, name, _timer(original, seconds, phase))
        try:
            yield
        finally:
            for owner, name, had_own in saved:
                if had_own:  # a module's function, or an attribute of the instance's own
                    setattr(owner, name, getattr(owner, name).original)
                else:  # a method of the class: the instance's timer goes
                    delattr(owner, name)


def _timer(function, seconds: dict, phase: str):
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[phase] += time.perf_counter() - start
    timed.original = function
    return timed


SYNTHETIC_VOCAB = 200  # about the vocabularies of fra.txt's first 600 pairs (188 and 201 tokens)
BOS = 2  # <bos> in the synthetic vocabulary (<unk> 0, <pad> 1, <bos> 2, <eos> 3, then the tokens)


def synthetic_batches(num_steps, count=10, batch_size=64, seed=0):
    """``count`` batches ``(X, X_len, Y, Y_len)`` of random tokens, lengths between ``T/2`` and ``T``."""
    import numpy as np  # here, not above: a benchmark sets its BLAS threads before NumPy first loads
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        X = rng.integers(4, SYNTHETIC_VOCAB, (batch_size, num_steps))
        Y = rng.integers(4, SYNTHETIC_VOCAB, (batch_size, num_steps))
        X_len = rng.integers(max(num_steps // 2, 1), num_steps + 1, batch_size)
        Y_len = rng.integers(max(num_steps // 2, 1), num_steps + 1, batch_size)
        batches.append((X, X_len, Y, Y_len))
    return batches


def translate_waiting(decode, model, src, src_valid_lens, *, bos_id: int, eos_id: int, max_len: int) -> list:
    """Greedy translations of the padded sources ``src`` ``(N, S)``, as ``npseq translate`` searches lines waiting
    on its stdin: one batched search (``decode.beam_search_batch``, a beam of one without length penalty), or,
    in a revision older than the batched search, ``decode.greedy_search`` one sentence at a time, as it did."""
    search = dict(bos_id=bos_id, eos_id=eos_id, max_len=max_len)
    if hasattr(decode, "beam_search_batch"):
        return decode.beam_search_batch(model, src, src_valid_lens, beam_size=1, alpha=0.0, **search)
    return [decode.greedy_search(model, sentence[:length], **search) for sentence, length in zip(src, src_valid_lens)]
