"""``BatchIterator``: seeded, reproducible minibatches over row-aligned arrays."""
from __future__ import annotations

from .. import backend
from .._checks import check_count
from ..errors import InvalidTypeError, InvalidValueError

__all__ = ["BatchIterator"]


class BatchIterator:
    """Minibatches of aligned rows from several arrays, reshuffled each epoch from a seed.

    ``arrays``: a tuple/list of ``A`` arrays sharing their first axis of length
    ``N`` (e.g. ``(src, src_valid_len, tgt, tgt_valid_len)`` of shapes
    ``(N, T), (N,), (N, T), (N,)``). Each batch is a tuple of ``A`` arrays holding the
    same ``B`` rows of each array, in the same order.

    Epoch ``k`` visits the rows in the order :meth:`order` ``(k)``:

    * ``shuffle=True``: the permutation drawn by
      ``numpy.random.default_rng([seed, k]).permutation(N)``, so the order depends on
      ``(seed, k)`` only: the same seed replays the same epochs, and training can
      resume at epoch ``k`` with :meth:`set_epoch`;
    * ``shuffle=False``: ``0, 1, ..., N-1`` every epoch.

    Batch ``b`` of the epoch takes positions ``b*B .. min((b+1)*B, N) - 1`` of that
    order, so there are ``len(it) = ceil(N / B)`` batches and the last one may be
    smaller; with ``drop_last=True`` an incomplete last batch is left out and
    ``len(it) = floor(N / B)``.

    Each ``iter(it)`` (each ``for`` loop over it) runs the epoch ``it.epoch`` and
    advances ``it.epoch`` by one when it starts; :meth:`batches` runs any epoch
    without touching ``it.epoch``.

    >>> x = backend.numpy.arange(5)
    >>> it = BatchIterator((x, 10 * x), batch_size=2, shuffle=False)
    >>> len(it), [b[1].tolist() for b in it]
    (3, [[0, 10], [20, 30], [40]])
    """

    def __init__(self, arrays, batch_size: int, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False):
        if not isinstance(arrays, (list, tuple)) or not arrays:
            raise InvalidTypeError(f"arrays: expected a non-empty tuple or list of arrays, got {type(arrays).__name__}"
                            + (" of length 0" if isinstance(arrays, (list, tuple)) else ""))
        for i, array in enumerate(arrays):
            if not hasattr(array, "shape") or not hasattr(array, "dtype"):
                raise InvalidTypeError(f"arrays[{i}]: expected an array, got {type(array).__name__}")
            if array.ndim < 1:
                raise InvalidValueError(f"arrays[{i}]: expected an array with a first (example) axis, got a 0-d array")
        lengths = [int(array.shape[0]) for array in arrays]
        if len(set(lengths)) != 1:
            raise InvalidValueError(f"arrays: expected arrays with the same number of rows, got lengths {lengths}")
        self.arrays = tuple(arrays)
        self.num_examples = lengths[0]
        self.batch_size = check_count("batch_size", batch_size, 1)
        self.seed = check_count("seed", seed, 0)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.epoch = 0

    def __len__(self) -> int:
        full, rest = divmod(self.num_examples, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter(it)`` run epoch ``epoch`` (to resume training there)."""
        self.epoch = check_count("epoch", epoch, 0)

    def order(self, epoch: int):
        """The row order of epoch ``epoch``: an int64 NumPy array, a permutation of ``0..N-1``."""
        epoch = check_count("epoch", epoch, 0)
        np = backend.numpy
        if not self.shuffle:
            return np.arange(self.num_examples, dtype=np.int64)
        return np.random.default_rng([self.seed, epoch]).permutation(self.num_examples).astype(np.int64)

    def batches(self, epoch: int):
        """Generator over the batches of epoch ``epoch``: tuples of aligned row slices."""
        return self._slices(self.order(epoch))  # order() checks epoch now, not at the first next()

    def _slices(self, order):
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            rows = order[start:start + self.batch_size]
            yield tuple(array[backend.get_array_module(array).asarray(rows)] for array in self.arrays)

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        return self.batches(epoch)

    def __repr__(self) -> str:
        return (f"BatchIterator(num_examples={self.num_examples}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, seed={self.seed}, drop_last={self.drop_last}, epoch={self.epoch})")
