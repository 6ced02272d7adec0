"""``MaskedSoftmaxCELoss``: cross-entropy over the valid steps of padded target sequences."""
from __future__ import annotations

from .. import functional as F
from ..errors import InvalidValueError
from .module import Module

TRAINING_REDUCTIONS = tuple(reduction for reduction in F.REDUCTIONS if reduction != "none")
"""The reductions that give a scalar loss to train on (``"none"`` gives one loss per sequence)."""


class MaskedSoftmaxCELoss(Module):
    """Masked softmax cross-entropy with a choice of reduction (see
    :func:`npseq.functional.masked_softmax_ce_forward` for the equations and the
    gradient scale of each).

    ``loss = fn(logits, labels, valid_lens)`` with logits ``(N, T, V)``, labels
    ``(N, T)``, valid_lens ``(N,)``; ``dlogits = fn.backward()`` (upstream 1, or
    ``fn.backward(dloss)`` with ``dloss`` of shape ``(N,)`` for ``reduction="none"``).

    Whatever the reduction, the last call's summed token negative log-likelihood
    and token count are kept in ``nll_sum`` (a 0-d array, on the device with a GPU
    backend) and ``num_tokens`` (a Python int, read from the lengths when asked), so a
    training loop can always report the per-token cross-entropy ``nll_sum / num_tokens``.
    """

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if reduction not in F.REDUCTIONS:
            raise InvalidValueError(f"reduction: expected one of {F.REDUCTIONS}, got {reduction!r}")
        self.reduction = reduction
        self.nll_sum = None
        self._valid_lens = None

    @property
    def num_tokens(self) -> int:
        """The valid tokens of the last call (reading them waits for a GPU, so only when asked)."""
        return 0 if self._valid_lens is None else int(self._valid_lens.sum())

    def forward(self, logits, labels, valid_lens):
        loss, cache = F.masked_softmax_ce_forward(logits, labels, valid_lens, self.reduction)
        self._valid_lens = valid_lens
        self.nll_sum = cache.nll_sum
        self.save_for_backward(cache)
        return loss

    def backward(self, dloss=1.0):
        return F.masked_softmax_ce_backward(dloss, self.pop_cache())

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"
