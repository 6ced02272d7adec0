"""Fixed-seed float64 training runs whose loss curves pin the attention and decoder code.

Each run builds one model from :data:`RUNS` in float64, trains it for :data:`NUM_STEPS` updates
(Adam, clipping at 1, teacher forcing, dropout on so that the dropout streams count too) on the
first batches of the built-in ``numbers`` task, and records the loss of every step.
``tests/data/loss_curves.json`` holds the curves these runs gave before the attention and
decoder code was split into a readable reference and a fast twin; ``test_loss_curves.py``
asks that today's code give the same curves within 1e-10. ``python tests/loss_curve_runs.py``
rewrites the file (only on purpose: the file is the reference).
"""
from __future__ import annotations

import json
import pathlib

from npseq.data import load_task
from npseq.models import build_seq2seq
from npseq.nn import MaskedSoftmaxCELoss
from npseq.optim import Adam
from npseq.train import train_seq2seq_step

NUM_STEPS = 50
SAVED = pathlib.Path(__file__).resolve().parent / "data" / "loss_curves.json"
COMMON = dict(embed_size=8, num_hiddens=16, num_layers=2, dropout=0.1, dtype="float64", seed=3)
RUNS = {
    "plain-lstm": dict(decoder="plain", cell="lstm"),
    "bahdanau-gru": dict(decoder="bahdanau", cell="gru"),
    "luong-dot-global": dict(decoder="luong", score="dot", cell="gru"),
    "luong-general-local-m": dict(decoder="luong", score="general", attention="local-m", window=2, cell="lstm"),
    "luong-concat-local-p": dict(decoder="luong", score="concat", attention="local-p", window=2, cell="rnn",
                                 bidirectional=True),
    "luong-general-no-feeding": dict(decoder="luong", score="general", input_feeding=False, cell="gru"),
    "transformer": dict(model="transformer", num_hiddens=16, ffn_num_hiddens=32, num_heads=4, num_layers=2,
                        dropout=0.1, dtype="float64", seed=3),
}


def loss_curve(name: str) -> list:
    """The :data:`NUM_STEPS` losses of run ``name``, as Python floats."""
    settings = RUNS[name] if RUNS[name].get("model") == "transformer" else dict(COMMON, **RUNS[name])
    data = load_task("numbers", batch_size=16, num_examples=400, seed=0)
    model = build_seq2seq(len(data.src_vocab), len(data.tgt_vocab), **settings)
    optimizer = Adam(model.parameters(), lr=0.01)
    loss_fn = MaskedSoftmaxCELoss("mean")
    bos_id = data.tgt_vocab["<bos>"]
    losses = []
    while len(losses) < NUM_STEPS:
        for batch in data.train:
            loss, _, _, _ = train_seq2seq_step(model, loss_fn, optimizer, batch, bos_id, clip=1.0)
            losses.append(float(loss))
            if len(losses) == NUM_STEPS:
                break
    return losses


if __name__ == "__main__":
    SAVED.parent.mkdir(exist_ok=True)
    curves = {name: loss_curve(name) for name in RUNS}
    SAVED.write_text(json.dumps(curves, indent=1) + "\n", encoding="utf-8")
    for name, curve in curves.items():
        print(f"{name:28s} first {curve[0]:.6f} last {curve[-1]:.6f}")
