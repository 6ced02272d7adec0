"""Train d2l's Bahdanau translator (GRU, or LSTM) with npseq and with an identical PyTorch twin, side by side.

    npseq data fetch fra-eng      # once: d2l's corpus into npseq's cache
    python benchmarks/bench_seq2seq.py --threads 2

The corpus is ``--data`` (a path to fra.txt, or the dataset name ``fra-eng``), else
``$NPSEQ_FRA``, else npseq's cache (``npseq data fetch fra-eng``).

For each size (embed = hidden = 32 and 256 by default) both implementations start from
the same weights (copied from npseq into torch) and see the same batches (the first
600 pairs of fra.txt, batch 64, num_steps 10, d2l's objective, Adam lr 0.005, clipping
at global norm 1, float32). Runs of ``--batches`` batches alternate between the two so
machine noise hits both alike. Printed per implementation: target tokens/s (median of
runs), the npseq/torch ratio, the time per batch split into encoder / decoder / loss /
backward / optimizer, and peak memory (resident set growth, measured in a fresh
subprocess per implementation). ``--curves N`` also trains both for N batches from the
same start and compares their per-token cross-entropy curves (and writes a PNG).

The roofline lines count the batch's floating-point work from the shapes (products, and
elementwise work separately; see ``roofline.py``), time those products alone on this
machine in the same run, and print which fraction of that products-only bound each
implementation reaches, in all and per phase. The bound counts only the products that each
batch's valid positions need (its sentences' lengths), so no implementation can pass 1.0
of it; the padded bound, which counted every row (and which a packed implementation could
pass), is printed beside it.

``--cell gru lstm`` runs both cells, each against torch's own module (``nn.GRU``, ``nn.LSTM``). Their
CPU kernels differ: torch 2.13.0's profiler shows the twin's LSTM decoder steps (unpacked calls) in
oneDNN (``aten::mkldnn_rnn_layer``), its packed LSTM encoder and every GRU call on the generic
path (``aten::lstm``, ``aten::gru``). And the SGEMM peak (a 2048 x 2048 x 2048 float32 product at
the run's threads, measured at the start) gives each implementation's fraction of this machine's
product rate: the FLOPs of the valid positions' products over its time per step, over the peak.

``--num-steps`` takes several lengths and ``--synthetic`` replaces the corpus by random token
batches of those lengths (source and target vocabularies of 200, lengths drawn between T/2 and
T), so that ``--hidden 32 256 512 1024 --num-steps 10 50 200 --synthetic`` prints a scale table:
tokens/s of both, their ratio and peak memory for every size and length, without the corpus.

The torch twin is written here, op for op: a packed-sequence GRU encoder (npseq's
encoder masks padding the same way), additive attention with the key projection done
once per batch, and a GRU decoder fed [context; embedding] at every step. One difference
is npseq's own and deliberate: its decoder is given the target lengths, as npseq's training
step gives them, and runs packed (step t only for the sentences longer than t), where the
twin, like d2l, runs every sentence at every step and masks the loss. npseq's side is its
training step itself (``seq2seq_step.TrainingStep``: ``npseq.train.train_seq2seq_step``, which
runs the decoder's packed twin); the readable reference loop is timed once more beside it,
labelled as such. The loss and the
gradients are the same either way; the roofline's products-only bound counts the valid positions only.
"""
import argparse
import os
import sys

from blas_threads import use_threads


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="fra.txt or the dataset name fra-eng (default: $NPSEQ_FRA, else the cache)")
    parser.add_argument("--threads", type=int, default=2, help="BLAS and torch threads alike (default 2)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[32, 256], help="embed = hidden sizes to run")
    parser.add_argument("--cell", nargs="+", choices=["gru", "lstm"], default=["gru"],
                        help="recurrent cells to run, each against torch's own (default: gru)")
    parser.add_argument("--num-steps", type=int, nargs="+", default=[10], help="source = target lengths to run")
    parser.add_argument("--synthetic", action="store_true",
                        help="random token batches of each --num-steps instead of the corpus (no fra.txt needed)")
    parser.add_argument("--batches", type=int, default=10, help="batches per timed run (default: one epoch)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per implementation")
    parser.add_argument("--curves", type=int, default=0, help="also compare loss curves over this many batches")
    parser.add_argument("--curves-png", default=None, help="where to draw the loss curves (PNG, one panel per size)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    parser.add_argument("--memory-batches", type=int, default=20,
                        help="training batches each peak-memory subprocess runs (default 20)")
    parser.add_argument("--probe-memory", choices=["npseq", "torch"], help=argparse.SUPPRESS)
    return parser.parse_args(argv)


ARGS = parse_args()
use_threads(ARGS.threads)  # before NumPy loads

import copy  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import npseq  # noqa: E402
from npseq.data import load_data_nmt  # noqa: E402
from npseq.data.datasets import DatasetMissing, corpus_file  # noqa: E402
from npseq.models import build_seq2seq  # noqa: E402
from npseq.nn import to_torch_state_dict  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from roofline import bahdanau_products, elementwise_flops, sgemm_peak, time_products  # noqa: E402
from seq2seq_step import BOS, PHASES, SYNTHETIC_VOCAB, TrainingStep, minor_faults, synthetic_batches  # noqa: E402


# ------------------------------------------------------------------ npseq
class NpseqRunner:
    """npseq's training step as ``npseq train`` runs it (:class:`seq2seq_step.TrainingStep`: through
    ``train_seq2seq_step``, the decoder's packed twin, phases read off as it runs)."""

    def __init__(self, model, bos_id):
        self.model = model
        self.step = TrainingStep(npseq, model, bos_id)


# ------------------------------------------------------------------ torch
def build_torch_twin(torch, model, src_vocab_size, tgt_vocab_size, hidden, cell="gru"):
    """The same architecture in torch (``nn.GRU`` or ``nn.LSTM``), with npseq's initial weights copied in."""
    nn = torch.nn
    recurrent = nn.LSTM if cell == "lstm" else nn.GRU

    class Twin(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_embedding = nn.Embedding(src_vocab_size, hidden)
            self.encoder = recurrent(hidden, hidden, 2, dropout=0.1, batch_first=True)
            self.tgt_embedding = nn.Embedding(tgt_vocab_size, hidden)
            self.W_k = nn.Linear(hidden, hidden, bias=False)
            self.W_q = nn.Linear(hidden, hidden, bias=False)
            self.w_v = nn.Linear(hidden, 1, bias=False)
            self.attention_dropout = nn.Dropout(0.1)
            self.decoder = recurrent(2 * hidden, hidden, 2, dropout=0.1, batch_first=True)
            self.dense = nn.Linear(hidden, tgt_vocab_size)

        def encode(self, X, X_len):
            packed = nn.utils.rnn.pack_padded_sequence(self.src_embedding(X), X_len, batch_first=True,
                                                       enforce_sorted=False)
            outputs, state = self.encoder(packed)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True, total_length=X.shape[1])
            return outputs, state

        def decode(self, dec_in, enc_outputs, state, X_len):
            keys = self.W_k(enc_outputs)
            mask = torch.arange(enc_outputs.shape[1])[None, :] < X_len[:, None]
            embedded = self.tgt_embedding(dec_in)
            logits = []
            for t in range(dec_in.shape[1]):
                top = state[0][-1] if cell == "lstm" else state[-1]  # the top layer's h (an LSTM's is (h, c))
                query = self.W_q(top)[:, None, :]
                scores = self.w_v(torch.tanh(query + keys)).squeeze(-1).masked_fill(~mask, -1e6)
                weights = torch.softmax(scores, dim=-1)
                context = torch.bmm(self.attention_dropout(weights)[:, None, :], enc_outputs)
                out, state = self.decoder(torch.cat([context, embedded[:, t:t + 1]], dim=-1), state)
                logits.append(self.dense(out))
            return torch.cat(logits, dim=1)

    twin = Twin()
    tensor = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    p = dict(model.named_parameters())
    with torch.no_grad():
        twin.src_embedding.weight.copy_(tensor(p["encoder.embedding.W"].data))
        twin.tgt_embedding.weight.copy_(tensor(p["decoder.embedding.W"].data))
        for mine, theirs in ((model.encoder.rnn, twin.encoder), (model.decoder.rnn, twin.decoder)):
            theirs.load_state_dict({k: tensor(v) for k, v in to_torch_state_dict(mine).items()})
        twin.W_k.weight.copy_(tensor(p["decoder.attention.W_k.W"].data.T))
        twin.W_q.weight.copy_(tensor(p["decoder.attention.W_q.W"].data.T))
        twin.w_v.weight.copy_(tensor(p["decoder.attention.w_v"].data[None, :]))
        twin.dense.weight.copy_(tensor(p["decoder.dense.W"].data.T))
        twin.dense.bias.copy_(tensor(p["decoder.dense.b"].data))
    return twin


class TorchRunner:
    def __init__(self, torch, twin, bos_id):
        self.torch, self.twin, self.bos_id = torch, twin, bos_id
        self.optimizer = torch.optim.Adam(twin.parameters(), lr=0.005)

    def step(self, batch, phases):
        torch = self.torch
        X, X_len, Y, Y_len = (torch.from_numpy(a) for a in batch)
        t0 = time.perf_counter()
        self.optimizer.zero_grad()
        enc_outputs, state = self.twin.encode(X, X_len)
        t1 = time.perf_counter()
        dec_in = torch.cat([torch.full((Y.shape[0], 1), self.bos_id, dtype=Y.dtype), Y[:, :-1]], dim=1)
        logits = self.twin.decode(dec_in, enc_outputs, state, X_len)
        t2 = time.perf_counter()
        mask = (torch.arange(Y.shape[1])[None, :] < Y_len[:, None]).to(logits.dtype)
        token_nll = torch.nn.functional.cross_entropy(logits.permute(0, 2, 1), Y, reduction="none") * mask
        objective = token_nll.mean(dim=1).sum()  # d2l: per-sequence mean over num_steps, summed
        t3 = time.perf_counter()
        objective.backward()
        t4 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(self.twin.parameters(), 1.0)
        self.optimizer.step()
        t5 = time.perf_counter()
        for name, seconds in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            phases[name] += seconds
        return float(token_nll.detach().sum()) / float(Y_len.sum())


# ---------------------------------------------------------------- harness
def batch_stream(batches):
    while True:
        yield from batches


def timed_run(runner, stream, num_batches):
    """Tokens per second, each phase's seconds per batch and the minor page faults per batch of ``num_batches``."""
    phases = dict.fromkeys(PHASES, 0.0)
    tokens = 0
    faults = minor_faults()
    start = time.perf_counter()
    for _ in range(num_batches):
        batch = next(stream)
        runner.step(batch, phases)
        tokens += int(batch[3].sum())
    seconds = time.perf_counter() - start
    return tokens / seconds, {k: v / num_batches for k, v in phases.items()}, (minor_faults() - faults) / num_batches


def make_runners(hidden, torch, num_steps=10, cell="gru"):
    if ARGS.synthetic:
        batches, src_size, tgt_size, bos = synthetic_batches(num_steps), SYNTHETIC_VOCAB, SYNTHETIC_VOCAB, BOS
    else:
        batches, src_vocab, tgt_vocab = load_data_nmt(64, num_steps, 600, path=ARGS.data, seed=0)
        src_size, tgt_size, bos = len(src_vocab), len(tgt_vocab), tgt_vocab["<bos>"]
    model = build_seq2seq(src_size, tgt_size, embed_size=hidden, num_hiddens=hidden, num_layers=2, dropout=0.1, seed=0,
                          cell=cell)
    ours = NpseqRunner(model, bos)
    theirs = None
    if torch is not None:
        theirs = TorchRunner(torch, build_torch_twin(torch, model, src_size, tgt_size, hidden, cell), bos)
    return batches, ours, theirs


def _status_kib(field):
    """A ``VmRSS``/``VmHWM``-style field of ``/proc/self/status``, in KiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def probe_memory(which, hidden, num_steps, cell):
    """Run in a fresh process: peak resident-set growth over ``--memory-batches`` training batches, in MiB.

    The baseline is taken after the model, data and optimizer exist and before the
    first batch. Writing 5 to ``/proc/self/clear_refs`` (Linux) resets the high-water
    mark ``VmHWM`` to the current resident set there, so ``VmHWM`` afterwards minus
    that baseline is the most that training itself held at once. (``ru_maxrss`` cannot
    do this: it never goes down and carries over the parent's mark.)
    """
    torch = import_torch() if which == "torch" else None
    batches, ours, theirs = make_runners(hidden, torch, num_steps, cell)
    runner = ours if which == "npseq" else theirs
    stream = batch_stream(batches)
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        print(json.dumps({"peak_growth_mib": None}))
        return
    before = _status_kib("VmRSS")
    for _ in range(ARGS.memory_batches):
        runner.step(next(stream), dict.fromkeys(PHASES, 0.0))
    peak = _status_kib("VmHWM")
    print(json.dumps({"peak_growth_mib": (peak - before) / 1024, "peak_mib": peak / 1024}))


def memory_of(which, hidden, num_steps, cell):
    command = [sys.executable, __file__, "--probe-memory", which, "--hidden", str(hidden), "--threads",
               str(ARGS.threads), "--num-steps", str(num_steps), "--memory-batches", str(ARGS.memory_batches),
               "--cell", cell]
    command += ["--synthetic"] if ARGS.synthetic else ["--data", ARGS.data]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def import_torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(ARGS.threads)
    return torch


def compare_curves(hidden, torch, num_batches, num_steps=10, cell="gru"):
    batches, ours, theirs = make_runners(hidden, torch, num_steps, cell)
    ours_stream, theirs_stream = batch_stream(batches), batch_stream(batches)
    phases = dict.fromkeys(PHASES, 0.0)
    curves = {"npseq": [], "torch": []}
    for _ in range(num_batches):
        curves["npseq"].append(ours.step(next(ours_stream), phases))
        curves["torch"].append(theirs.step(next(theirs_stream), phases))
    a, b = np.array(curves["npseq"]), np.array(curves["torch"])
    window = 20
    smooth = lambda c: np.convolve(c, np.ones(window) / window, mode="valid")  # noqa: E731
    print(f"  loss curves over {num_batches} batches (per-token cross-entropy, {window}-batch means):")
    for at in (0, num_batches // 4, num_batches // 2, num_batches - window):
        print(f"    batches {at:>4}-{at + window - 1:<4} npseq {a[at:at + window].mean():.4f}   "
              f"torch {b[at:at + window].mean():.4f}")
    print(f"    largest gap between the smoothed curves: {np.abs(smooth(a) - smooth(b)).max():.4f} nats")
    return a, b


def print_reference_loop(ours, batches, packed_seconds):
    """What the decoder's readable reference loop (``Decoder.forward``, what the tutorials print) costs against the
    packed twin training runs: the same step on a copy of the model with ``fast_decoder = False``."""
    model = copy.deepcopy(ours.model)
    model.fast_decoder = False
    step, stream = TrainingStep(npseq, model, ours.step.bos_id), batch_stream(batches)
    step(next(stream))  # warm-up
    runs = []
    for _ in range(max(3, ARGS.runs // 2)):
        start = time.perf_counter()
        for _ in range(ARGS.batches):
            step(next(stream))
        runs.append((time.perf_counter() - start) / ARGS.batches)
    loop = statistics.median(runs)
    print(f"  npseq's readable reference loop (fast_decoder = False, not what training runs): {loop * 1e3:.2f} "
          f"ms/batch, {loop / packed_seconds:.2f} times the packed twin's")


def print_roofline(model, hidden, num_steps, phase_seconds, batches, cell, peak) -> dict:
    """The products-only bound of these batches on this machine, and the fraction each implementation reaches.

    The bound counts only the products that the valid positions of each batch need (its sentences' lengths; what a
    packed implementation runs), averaged over ``batches`` as the measured times are; the padded bound, which
    counts every row of the padded batch, is printed beside it for comparison with earlier runs. Returns, per
    implementation, the fraction of the bound and of the SGEMM ``peak`` (FLOP/s) that the valid products reach."""
    vocab = model.decoder.vocab_size
    padded = bahdanau_products(64, num_steps, num_steps, hidden, hidden, vocab, layers=2, cell=cell)
    num_params = sum(p.data.size for p in model.parameters())
    elementwise = elementwise_flops(64, num_steps, num_steps, hidden, hidden, vocab, 2, num_params)
    padded_bound = sum(time_products(padded).values())
    bound, product_flops = dict.fromkeys(PHASES, 0.0), 0
    for batch in batches:
        _, X_len, _, Y_len = batch
        products = bahdanau_products(len(X_len), num_steps, num_steps, hidden, hidden, vocab, layers=2,
                                     src_lens=np.asarray(X_len), tgt_lens=np.asarray(Y_len), cell=cell)
        product_flops += sum(p.flops for p in products) / len(batches)
        for phase, seconds in time_products(products).items():
            bound[phase] += seconds / len(batches)
    total_bound = sum(bound.values())
    print(f"  work per batch: products of the valid positions {product_flops / 1e9:.3f} GFLOP (padded: "
          f"{sum(p.flops for p in padded) / 1e9:.3f}), elementwise about {sum(elementwise.values()) / 1e9:.3f} "
          f"GFLOP (padded); the valid products alone take {total_bound * 1e3:.2f} ms here "
          f"({product_flops / total_bound / 1e9:.0f} GFLOP/s), the padded ones {padded_bound * 1e3:.2f} ms")
    fractions = {}
    for name, seconds in phase_seconds.items():
        measured = sum(seconds.values())
        per_phase = ", ".join(f"{phase} {bound.get(phase, 0.0) * 1e3:.1f}/{seconds[phase] * 1e3:.1f}"
                              for phase in PHASES)
        fractions[name] = dict(bound=total_bound / measured, peak=product_flops / measured / peak)
        print(f"  {name:6} reaches {total_bound / measured:.2f} of the products-only bound of the valid positions "
              f"and {fractions[name]['peak']:.2f} of the SGEMM peak ({padded_bound / measured:.2f} of the padded "
              f"bound; bound/measured ms: {per_phase})")
    return fractions


def draw_curves(curves_by_hidden, path):
    """One panel per size: both per-token cross-entropy curves, batch by batch."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5 * len(curves_by_hidden), 3.5))
    axes = fig.subplots(1, len(curves_by_hidden), squeeze=False)[0]
    for ax, (hidden, (ours, theirs)) in zip(axes, curves_by_hidden.items()):
        ax.plot(ours, label="npseq", alpha=0.8)
        ax.plot(theirs, label="torch", alpha=0.8)
        ax.set_xlabel("batch")
        ax.set_ylabel("per-token cross-entropy (nats)")
        ax.set_title(f"embed = hidden = {hidden}")
        ax.legend()
    fig.suptitle("Bahdanau GRU translator: same start, same batches")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"\nloss curves drawn in {path}")


def corpus_path() -> str:
    """``--data`` (a file, or a dataset name resolved to its cached file), else ``$NPSEQ_FRA``, else the cache;
    when none of them has the corpus, exit saying how to get it."""
    try:
        return corpus_file(ARGS.data)
    except DatasetMissing as exc:
        sys.exit(f"bench_seq2seq: {exc}")


def print_scale_table(rows, peak):
    """One line per (cell, hidden, num_steps): both implementations' tokens/s, their ratio, time per training step,
    the fraction of the SGEMM peak their valid products reach, and peak memory."""
    print(f"\nscale table (tokens/s: target tokens per second; ms/step: milliseconds per training step, one batch; "
          f"of peak: the valid positions' product FLOP/s over this machine's SGEMM peak, {peak / 1e9:.0f} GFLOP/s; "
          f"of bound: over the time those products alone take; peak MiB: resident-set growth while training)")
    print(f"  {'cell':>4} {'hidden':>6} {'T':>4}  {'npseq tok/s':>11} {'torch tok/s':>11} {'ratio':>6}  "
          f"{'npseq ms/step':>13} {'torch ms/step':>13}  {'npseq of peak':>13} {'torch of peak':>13} "
          f"{'npseq of bound':>14}  {'npseq MiB':>9} {'torch MiB':>9}")
    missing = float("nan")  # torch not installed
    for row in rows:
        print(f"  {row['cell']:>4} {row['hidden']:>6} {row['num_steps']:>4}  {row['npseq_tps']:>11.0f} "
              f"{row.get('torch_tps', missing):>11.0f} {row.get('ratio', missing):>6.2f}  {row['npseq_ms']:>13.1f} "
              f"{row.get('torch_ms', missing):>13.1f}  {row['npseq_peak']:>13.2f} "
              f"{row.get('torch_peak', missing):>13.2f} {row['npseq_bound']:>14.2f}  {row['npseq_mib']:>9} "
              f"{row.get('torch_mib', '-'):>9}")


def main():
    if not ARGS.synthetic:
        ARGS.data = corpus_path()  # resolved once, here: the memory probes get the path itself
    if ARGS.probe_memory:
        probe_memory(ARGS.probe_memory, ARGS.hidden[0], ARGS.num_steps[0], ARGS.cell[0])
        return
    torch = import_torch()
    data = "random tokens" if ARGS.synthetic else "600 pairs"
    peak = sgemm_peak()
    print(f"d2l Bahdanau translator ({' and '.join(cell.upper() for cell in ARGS.cell)}), 2 layers, batch 64, {data}, "
          f"float32, {ARGS.threads} threads; median of {ARGS.runs} alternating runs of {ARGS.batches} batches "
          f"(faults: minor page faults per batch, pages the kernel maps and zeroes at their first touch)")
    print(f"SGEMM peak here: {peak / 1e9:.0f} GFLOP/s (float32 2048 x 2048 x 2048, {ARGS.threads} threads); "
          + (f"torch {torch.__version__}, oneDNN (mkldnn) {'on' if torch.backends.mkldnn.is_available() else 'off'}"
             if torch is not None else "no torch"))
    if torch is None:
        print("torch is not installed: npseq alone (pip install -e \".[torch]\" to compare)")
    curves_by_hidden = {}
    table = []
    for cell, hidden, num_steps in [(c, h, t) for c in ARGS.cell for h in ARGS.hidden for t in ARGS.num_steps]:
        batches, ours, theirs = make_runners(hidden, torch, num_steps, cell)
        streams = {"npseq": batch_stream(batches), "torch": batch_stream(batches)}
        runners = {"npseq": ours, "torch": theirs}
        names = [name for name in runners if runners[name] is not None]
        for name in names:  # warm-up
            timed_run(runners[name], streams[name], 2)
        speeds = {name: [] for name in names}
        phases = {name: [] for name in names}
        faults = {name: [] for name in names}
        for _ in range(ARGS.runs):
            for name in names:
                speed, split, step_faults = timed_run(runners[name], streams[name], ARGS.batches)
                speeds[name].append(speed)
                phases[name].append(split)
                faults[name].append(step_faults)
        print(f"\n{cell.upper()}, embed = hidden = {hidden}, num_steps = {num_steps}")
        row = dict(cell=cell, hidden=hidden, num_steps=num_steps)
        print(f"  {'':6} {'tokens/s':>9} {'ms/batch':>9}  " + "  ".join(f"{p:>9}" for p in PHASES)
              + f"  {'peak MiB':>9}  {'faults':>7}")
        for name in names:
            median_split = {p: statistics.median(s[p] for s in phases[name]) for p in PHASES}
            memory = "-" if ARGS.no_memory else memory_of(name, hidden, num_steps, cell)["peak_growth_mib"]
            memory = "-" if memory in ("-", None) else f"{memory:.1f}"
            row.update({f"{name}_tps": statistics.median(speeds[name]), f"{name}_mib": memory,
                        f"{name}_ms": sum(median_split.values()) * 1e3})
            print(f"  {name:6} {statistics.median(speeds[name]):>9.0f} {sum(median_split.values()) * 1e3:>9.2f}  "
                  + "  ".join(f"{median_split[p] * 1e3:>9.2f}" for p in PHASES) + f"  {memory:>9}"
                  + f"  {statistics.median(faults[name]):>7.0f}")
        medians = {name: {p: statistics.median(s[p] for s in phases[name]) for p in PHASES} for name in names}
        print_reference_loop(ours, batches, sum(medians["npseq"].values()))
        for name, fraction in print_roofline(ours.model, hidden, num_steps, medians, batches, cell, peak).items():
            row.update({f"{name}_peak": fraction["peak"], f"{name}_bound": fraction["bound"]})
        if torch is not None:
            ratio = statistics.median(speeds["npseq"]) / statistics.median(speeds["torch"])
            print(f"  npseq/torch tokens/s ratio: {ratio:.2f}")
            row["ratio"] = ratio
            if ARGS.curves:
                curves_by_hidden[hidden] = compare_curves(hidden, torch, ARGS.curves, num_steps, cell)
        table.append(row)
    if len(table) > 1:
        print_scale_table(table, peak)
    if curves_by_hidden and ARGS.curves_png:
        draw_curves(curves_by_hidden, ARGS.curves_png)


if __name__ == "__main__":
    main()
