"""Train d2l's Transformer translator with npseq and with an identical PyTorch twin, side by side.

    npseq data fetch fra-eng      # once: d2l's corpus into npseq's cache
    python benchmarks/bench_transformer.py --threads 2

The corpus is ``--data`` (a path to fra.txt, or the dataset name ``fra-eng``), else
``$NPSEQ_FRA``, else npseq's cache (``npseq data fetch fra-eng``).

Both implementations start from the same weights (copied from npseq into torch, checked by
comparing the first batch's logits in eval mode) and see the same batches: d2l's settings
(hidden 32, 2 blocks, 4 heads, feed-forward 64, dropout 0.1, the first 600 pairs of fra.txt,
batch 64, num_steps 10, d2l's objective, Adam lr 0.005, clipping at global norm 1, float32);
``--hidden`` adds sizes (feed-forward twice the hidden size). Runs of ``--batches`` batches
alternate between the two so that machine noise hits both alike. Printed: target tokens/s
(median of runs) and the npseq/torch ratio, with the CPU model and thread count.

The twin is written op for op from torch's pieces: ``nn.MultiheadAttention`` (with biases, as
npseq's), ``nn.Linear``, ``nn.LayerNorm`` and ``nn.Dropout`` in post-norm blocks, the same
sinusoidal positions and :math:`\\sqrt D`-scaled embeddings, key padding and causal masks.
"""
import argparse
import os
import sys

from blas_threads import use_threads


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="fra.txt or the dataset name fra-eng (default: $NPSEQ_FRA, else the cache)")
    parser.add_argument("--threads", type=int, default=2, help="BLAS and torch threads alike (default 2)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[32], help="model sizes to run (default: d2l's 32)")
    parser.add_argument("--batches", type=int, default=10, help="batches per timed run (default: one epoch)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per implementation")
    return parser.parse_args(argv)


ARGS = parse_args()
use_threads(ARGS.threads)  # before NumPy loads

import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from npseq.data import load_data_nmt  # noqa: E402
from npseq.data.datasets import DatasetMissing, corpus_file  # noqa: E402
from npseq.grad_mode import no_grad  # noqa: E402
from npseq.models import build_seq2seq  # noqa: E402
from npseq.nn import MaskedSoftmaxCELoss  # noqa: E402
from npseq.optim import Adam, clip_grad_norm  # noqa: E402
from npseq.train import teacher_forcing_inputs  # noqa: E402

HEADS, LAYERS, DROPOUT = 4, 2, 0.1


class NpseqRunner:
    def __init__(self, model, bos_id):
        self.model, self.bos_id = model, bos_id
        self.loss_fn = MaskedSoftmaxCELoss("d2l")
        self.optimizer = Adam(model.parameters(), lr=0.005)

    def step(self, batch):
        X, X_len, Y, Y_len = batch
        self.model.zero_grad()
        logits = self.model(X, teacher_forcing_inputs(Y, self.bos_id), X_len)
        self.loss_fn(logits, Y, Y_len)
        self.model.backward(self.loss_fn.backward())
        clip_grad_norm(self.optimizer.params, 1.0)
        self.optimizer.step()


def build_torch_twin(torch, model, hidden):
    """The same Transformer in torch, with npseq's initial weights copied in (transposed: torch maps x W^T)."""
    nn = torch.nn

    def attention(ours):
        mha = nn.MultiheadAttention(hidden, HEADS, dropout=DROPOUT, batch_first=True)
        with torch.no_grad():
            mha.in_proj_weight.copy_(tensor(np.concatenate([ours.W_q.data.T, ours.W_k.data.T, ours.W_v.data.T])))
            mha.in_proj_bias.copy_(tensor(np.concatenate([ours.b_q.data, ours.b_k.data, ours.b_v.data])))
            mha.out_proj.weight.copy_(tensor(ours.W_o.data.T))
            mha.out_proj.bias.copy_(tensor(ours.b_o.data))
        return mha

    def linear(W, b):
        layer = nn.Linear(*W.shape)
        with torch.no_grad():
            layer.weight.copy_(tensor(W.T))
            layer.bias.copy_(tensor(b))
        return layer

    def ffn(ours):
        return nn.Sequential(linear(ours.W1.data, ours.b1.data), nn.ReLU(), linear(ours.W2.data, ours.b2.data))

    class AddNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.dropout, self.norm = nn.Dropout(DROPOUT), nn.LayerNorm(hidden)

        def forward(self, x, f):
            return self.norm(x + self.dropout(f))

    class EncoderBlock(nn.Module):
        def __init__(self, ours):
            super().__init__()
            self.attention, self.norm1, self.ffn, self.norm2 = attention(ours.self_attention), AddNorm(), \
                ffn(ours.ffn), AddNorm()

        def forward(self, x, padding):
            y = self.norm1(x, self.attention(x, x, x, key_padding_mask=padding, need_weights=False)[0])
            return self.norm2(y, self.ffn(y))

    class DecoderBlock(nn.Module):
        def __init__(self, ours):
            super().__init__()
            self.self_attention, self.norm1 = attention(ours.self_attention), AddNorm()
            self.cross_attention, self.norm2 = attention(ours.cross_attention), AddNorm()
            self.ffn, self.norm3 = ffn(ours.ffn), AddNorm()

        def forward(self, x, memory, padding, causal):
            y = self.norm1(x, self.self_attention(x, x, x, attn_mask=causal, need_weights=False)[0])
            z = self.norm2(y, self.cross_attention(y, memory, memory, key_padding_mask=padding,
                                                   need_weights=False)[0])
            return self.norm3(z, self.ffn(z))

    class Twin(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_embedding = nn.Embedding.from_pretrained(tensor(model.encoder.embedding.W.data), freeze=False)
            self.tgt_embedding = nn.Embedding.from_pretrained(tensor(model.decoder.embedding.W.data), freeze=False)
            self.positions = tensor(model.encoder.embedder.positions)
            self.dropout = nn.Dropout(DROPOUT)
            self.encoder = nn.ModuleList(EncoderBlock(block) for block in model.encoder.blocks)
            self.decoder = nn.ModuleList(DecoderBlock(block) for block in model.decoder.blocks)
            self.dense = linear(model.decoder.dense.W.data, model.decoder.dense.b.data)

        def embed(self, embedding, tokens):
            return self.dropout(embedding(tokens) * math.sqrt(hidden) + self.positions[:tokens.shape[1]])

        def forward(self, X, X_len, dec_in):
            padding = torch.arange(X.shape[1])[None, :] >= X_len[:, None]
            causal = torch.triu(torch.ones(dec_in.shape[1], dec_in.shape[1], dtype=torch.bool), 1)
            memory = self.embed(self.src_embedding, X)
            for block in self.encoder:
                memory = block(memory, padding)
            y = self.embed(self.tgt_embedding, dec_in)
            for block in self.decoder:
                y = block(y, memory, padding, causal)
            return self.dense(y)

    def tensor(array):
        return torch.from_numpy(np.ascontiguousarray(array))

    return Twin()


class TorchRunner:
    def __init__(self, torch, twin, bos_id):
        self.torch, self.twin, self.bos_id = torch, twin, bos_id
        self.optimizer = torch.optim.Adam(twin.parameters(), lr=0.005)

    def inputs(self, batch):
        torch = self.torch
        X, X_len, Y, Y_len = (torch.from_numpy(a) for a in batch)
        return X, X_len, torch.cat([torch.full((Y.shape[0], 1), self.bos_id, dtype=Y.dtype), Y[:, :-1]], dim=1), \
            Y, Y_len

    def step(self, batch):
        torch = self.torch
        X, X_len, dec_in, Y, Y_len = self.inputs(batch)
        self.optimizer.zero_grad()
        logits = self.twin(X, X_len, dec_in)
        mask = (torch.arange(Y.shape[1])[None, :] < Y_len[:, None]).to(logits.dtype)
        token_nll = torch.nn.functional.cross_entropy(logits.permute(0, 2, 1), Y, reduction="none") * mask
        token_nll.mean(dim=1).sum().backward()  # d2l: per-sequence mean over num_steps, summed
        torch.nn.utils.clip_grad_norm_(self.twin.parameters(), 1.0)
        self.optimizer.step()


def timed_run(runner, batches, start, num_batches):
    tokens = 0
    began = time.perf_counter()
    for i in range(start, start + num_batches):
        batch = batches[i % len(batches)]
        runner.step(batch)
        tokens += int(batch[3].sum())
    return tokens / (time.perf_counter() - began)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as file:
            return next(line.split(":", 1)[1].strip() for line in file if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


def main():
    import torch
    torch.set_num_threads(ARGS.threads)
    try:
        path = corpus_file(ARGS.data)
    except DatasetMissing as exc:
        sys.exit(f"bench_transformer: {exc}")
    batches, src_vocab, tgt_vocab = load_data_nmt(64, 10, 600, path=path)
    batches = list(batches)
    bos = tgt_vocab["<bos>"]
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, {ARGS.threads} threads; numpy {np.__version__}, "
          f"torch {torch.__version__}; load average {os.getloadavg()[0]:.2f}")
    for hidden in ARGS.hidden:
        model = build_seq2seq(len(src_vocab), len(tgt_vocab), model="transformer", num_hiddens=hidden,
                              num_layers=LAYERS, num_heads=HEADS, ffn_num_hiddens=2 * hidden, dropout=DROPOUT)
        twin = build_torch_twin(torch, model, hidden)
        ours, theirs = NpseqRunner(model, bos), TorchRunner(torch, twin, bos)
        X, X_len, dec_in, _, _ = theirs.inputs(batches[0])
        model.eval()
        twin.eval()
        with no_grad(), torch.no_grad():
            gap = np.abs(model(batches[0][0], teacher_forcing_inputs(batches[0][2], bos), batches[0][1])
                         - twin(X, X_len, dec_in).numpy()).max()
        model.train()
        twin.train()
        speeds = {"npseq": [], "torch": []}
        for run in range(ARGS.runs + 1):  # the first round warms both up and is not counted
            for name, runner in (("npseq", ours), ("torch", theirs)):
                speed = timed_run(runner, batches, run * ARGS.batches, ARGS.batches)
                if run:
                    speeds[name].append(speed)
        npseq_speed, torch_speed = (statistics.median(speeds[name]) for name in ("npseq", "torch"))
        print(f"hidden {hidden}: first-batch logits agree within {gap:.1e} (float32, eval mode); "
              f"npseq {npseq_speed:,.0f} tokens/s, torch {torch_speed:,.0f} tokens/s, "
              f"ratio npseq/torch {npseq_speed / torch_speed:.2f} (median of {ARGS.runs} runs of {ARGS.batches} "
              f"batches)")


if __name__ == "__main__":
    main()
