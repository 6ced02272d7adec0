"""A training step reuses the memory the step before it freed, instead of faulting fresh pages in.

Each case runs in its own interpreter: the setting is the process's, for good.
"""
import platform
import subprocess
import sys

import pytest

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

STEADY_STATE_FAULTS = r"""
import resource
import sys

import numpy as np

import npseq.heap
from npseq.models import build_seq2seq
from npseq.nn import MaskedSoftmaxCELoss
from npseq.optim import Adam
from npseq.train import train_seq2seq_step

if sys.argv[1] == "not kept":
    npseq.heap.keep_freed_memory = lambda: False
rng = np.random.default_rng(0)
vocab, batch, steps = 40, 64, 10
model = build_seq2seq(vocab, vocab, embed_size=128, num_hiddens=128, num_layers=2, seed=0)
loss_fn, optimizer = MaskedSoftmaxCELoss(), Adam(model.parameters(), lr=0.001)
lengths = rng.integers(3, steps + 1, size=(2, batch))
X, Y = rng.integers(4, vocab, size=(2, batch, steps))
data = (X, lengths[0], Y, lengths[1])


def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


for _ in range(5):  # the heap grows to a step's size once
    train_seq2seq_step(model, loss_fn, optimizer, data, bos_id=1, clip=1.0)
before = faults()
for _ in range(5):
    train_seq2seq_step(model, loss_fn, optimizer, data, bos_id=1, clip=1.0)
print((faults() - before) / 5)
"""


def steady_state_faults(mode: str) -> float:
    """Minor page faults per training step of a hidden-128 translator, after five warm-up steps."""
    run = subprocess.run([sys.executable, "-c", STEADY_STATE_FAULTS, mode], capture_output=True, text=True,
                         timeout=300, check=True)
    return float(run.stdout.split()[-1])


@pytest.mark.skipif(not GLIBC, reason="the setting is glibc's malloc's")
def test_a_training_step_maps_no_fresh_pages_once_the_heap_has_grown():
    kept, not_kept = steady_state_faults("kept"), steady_state_faults("not kept")
    # Without the setting every step's caches (megabytes here) land on fresh pages again: 700 to 900 faults a
    # step. With it, 2 on a quiet machine, and 37 in one run on a machine busy with other tests.
    assert not_kept > 300, f"{not_kept:.0f} faults a step without the setting: the case no longer shows the cost"
    assert kept < not_kept / 8, f"{kept:.0f} minor page faults a step (without the setting: {not_kept:.0f})"


def test_without_glibc_nothing_is_set():
    probe = ("import platform\nplatform.system = lambda: 'Darwin'\nimport npseq.heap\n"
             "print(npseq.heap.keep_freed_memory(), npseq.heap.keep_freed_memory())")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert run.stdout.split() == ["False", "False"]


@pytest.mark.skipif(not GLIBC, reason="the setting is glibc's malloc's")
def test_on_glibc_both_thresholds_are_taken():
    probe = "import npseq.heap\nprint(npseq.heap.keep_freed_memory(), npseq.heap.keep_freed_memory())"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert run.stdout.split() == ["True", "True"]
