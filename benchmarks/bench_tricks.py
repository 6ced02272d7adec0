"""What each of npseq's structural speed choices is worth, against its plain form.

    python benchmarks/bench_tricks.py --threads 2

The engine was built with these choices from the start, so no revision without them
exists to compare with (``bench_ab.py`` does that for later changes). Here each one is
timed against the plain way of writing the same operation, on the shapes of one training
batch of ``bench_seq2seq.py`` (d2l's Bahdanau translator: batch 64, 10 source and 10
target steps, 2 GRU layers in the encoder and in the decoder, embed = hidden), and both
forms are checked to give the same numbers. Printed per choice: milliseconds per batch
both ways (median of alternating repeats) and the ratio; for scale, a whole training
step of that model takes about 10 ms at hidden 32 and 70 ms at hidden 256 here.

1. Input projections for all steps in one product: ``X W_x`` as one ``(N T, D) x (D, 3H)``
   product per layer, against one ``(N, D) x (D, 3H)`` product per step.
2. Attention key projection once per batch: ``K W_k`` for the encoder outputs once,
   against once per decoder step.
3. Fused gate products: ``h W_h`` with the three gates' columns side by side, one
   ``(N, H) x (H, 3H)`` product per step, against three ``(N, H) x (H, H)`` products.
4. Weight gradients in one product: ``dW_h = H_{prev}^T dA`` over all steps at once,
   against a product per step summed.
5. Caches preallocated per sequence: each step writes its gates into a ``(T, N, 3H)``
   array, against appending ``(N, 3H)`` arrays to a list and stacking them for backward.
6. Adam updating in place: npseq's ``Adam.step``, against the textbook update that makes
   new arrays for every moment and parameter.
7. float32 end to end: a whole training step of the translator (synthetic ids of the
   same shapes) in float32, against the same model in float64.
"""
import argparse
import os
import statistics
import sys

from blas_threads import use_threads


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="BLAS threads (default 2)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--repeats", type=int, default=30, help="alternating repeats per choice (default 30)")
    return parser.parse_args(argv)


ARGS = parse_args()
use_threads(ARGS.threads)  # before NumPy loads

import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from npseq.models import build_seq2seq  # noqa: E402
from npseq.nn import MaskedSoftmaxCELoss, Parameter  # noqa: E402
from npseq.optim import Adam  # noqa: E402
from npseq.train import train_seq2seq_step  # noqa: E402

N, T, LAYERS = 64, 10, 2


def time_pair(plain, trick):
    """Median milliseconds of ``plain()`` and ``trick()``, run alternately; checks they agree."""
    expected, got = _as_array(plain()), _as_array(trick())
    # float32 sums in a different order: agree to rounding, measured against the largest entry
    assert np.abs(got - expected).max() <= 1e-5 * np.abs(expected).max(), "the two forms disagree"
    times = {plain: [], trick: []}
    for repeat in range(ARGS.repeats):
        for function in ((plain, trick) if repeat % 2 == 0 else (trick, plain)):
            start = time.perf_counter()
            function()
            times[function].append((time.perf_counter() - start) * 1e3)
    return statistics.median(times[plain]), statistics.median(times[trick])


def _as_array(result):
    return np.concatenate([np.ravel(r) for r in result]) if isinstance(result, (list, tuple)) else result


def choices(hidden, rng):
    """``{name: (plain, trick)}``: zero-argument functions computing one batch's worth of the operation."""
    def draw(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    h3 = 3 * hidden
    x, Wx, Wh = draw(T, N, hidden), draw(hidden, h3), draw(hidden, h3)
    Wh_gates = [np.ascontiguousarray(Wh[:, k * hidden:(k + 1) * hidden]) for k in range(3)]
    states, dA = draw(T, N, hidden), draw(T, N, h3)
    keys, W_k = draw(N, T, hidden), draw(hidden, hidden)
    layer_steps = 2 * LAYERS  # encoder and decoder layers, T steps each

    def projection_plain():
        return [np.stack([x[t] @ Wx for t in range(T)]) for _ in range(LAYERS)]

    def projection_trick():
        return [(x.reshape(T * N, hidden) @ Wx).reshape(T, N, h3) for _ in range(LAYERS)]

    def keys_plain():
        return [keys @ W_k for _ in range(T)][-1]

    def keys_trick():
        return keys @ W_k

    def gates_plain():
        return [np.concatenate([states[t] @ W for W in Wh_gates], axis=1)
                for _ in range(layer_steps) for t in range(T)][-1]

    def gates_trick():
        return [states[t] @ Wh for _ in range(layer_steps) for t in range(T)][-1]

    def weight_grad_plain():
        return [sum(states[t].T @ dA[t] for t in range(T)) for _ in range(layer_steps)][-1]

    def weight_grad_trick():
        return [states.reshape(T * N, hidden).T @ dA.reshape(T * N, h3) for _ in range(layer_steps)][-1]

    def cache_plain():
        for _ in range(layer_steps):
            kept = []
            for t in range(T):
                kept.append(np.tanh(dA[t]))
            cached = np.stack(kept)
        return cached

    def cache_trick():
        for _ in range(layer_steps):
            cached = np.empty((T, N, h3), dtype=np.float32)
            for t in range(T):
                np.tanh(dA[t], out=cached[t])
        return cached

    # Adam on the translator's parameters: embeddings, 2 + 2 GRU layers, attention, output layer.
    shapes = [(200, hidden), (200, hidden)] + [(hidden, h3), (hidden, h3), (h3,), (h3,)] * layer_steps \
        + [(hidden, hidden)] * 2 + [(hidden,), (hidden, 200), (200,)]
    grads = [draw(*shape) for shape in shapes]
    plain_params = [draw(*shape) for shape in shapes]
    plain_m, plain_v = [np.zeros_like(p) for p in plain_params], [np.zeros_like(p) for p in plain_params]
    ours = [Parameter(p.copy()) for p in plain_params]
    for param, grad in zip(ours, grads):
        param.grad[...] = grad
    optimizer = Adam(ours, lr=1e-3)
    step = [0]

    def adam_plain():  # the textbook update; every line makes new arrays
        step[0] += 1
        for k, grad in enumerate(grads):
            plain_m[k] = 0.9 * plain_m[k] + 0.1 * grad
            plain_v[k] = 0.999 * plain_v[k] + 0.001 * grad * grad
            m_hat = plain_m[k] / (1 - 0.9 ** step[0])
            v_hat = plain_v[k] / (1 - 0.999 ** step[0])
            plain_params[k] = plain_params[k] - 1e-3 * m_hat / (np.sqrt(v_hat) + 1e-8)
        return plain_params

    def adam_trick():
        optimizer.step()
        return [p.data for p in ours]

    vocab = 200
    batch = (rng.integers(3, vocab, size=(N, T)), np.full(N, T), rng.integers(3, vocab, size=(N, T)), np.full(N, T))

    def training_step(dtype):
        model = build_seq2seq(vocab, vocab, embed_size=hidden, num_hiddens=hidden, num_layers=LAYERS, dropout=0.0,
                              seed=0, dtype=dtype)
        optimizer, loss_fn = Adam(model.parameters(), lr=1e-3), MaskedSoftmaxCELoss("d2l")
        return lambda: np.array(train_seq2seq_step(model, loss_fn, optimizer, batch, 1, clip=1.0)[:2])

    return {
        "1. input projection, one product per layer": (projection_plain, projection_trick),
        "2. attention keys projected once per batch": (keys_plain, keys_trick),
        "3. three gates in one product per step": (gates_plain, gates_trick),
        "4. weight gradient, one product over steps": (weight_grad_plain, weight_grad_trick),
        "5. cache preallocated, not stacked": (cache_plain, cache_trick),
        "6. Adam in place": (adam_plain, adam_trick),
        "7. float32 training step (against float64)": (training_step("float64"), training_step("float32")),
    }


def main():
    print(f"npseq's structural choices against their plain forms; batch {N}, {T} + {T} steps, {LAYERS} + {LAYERS} "
          f"GRU layers, float32, {ARGS.threads} threads; median of {ARGS.repeats} alternating repeats")
    for hidden in ARGS.hidden:
        print(f"\nembed = hidden = {hidden}")
        print(f"  {'choice':<46} {'plain ms':>9} {'npseq ms':>9} {'speedup':>8}")
        for name, (plain, trick) in choices(hidden, np.random.default_rng(0)).items():
            plain_ms, trick_ms = time_pair(plain, trick)  # the Adams agree on their first, common step
            print(f"  {name:<46} {plain_ms:>9.3f} {trick_ms:>9.3f} {plain_ms / trick_ms:>8.2f}")


if __name__ == "__main__":
    main()
