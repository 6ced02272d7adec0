"""``MaskedSoftmaxCELoss``: cross-entropy over the valid steps of padded target sequences."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class MaskedSoftmaxCELoss(Module):
    """Masked softmax cross-entropy with a choice of reduction (see
    :func:`npseq.functional.masked_softmax_ce_forward` for the equations and the
    gradient scale of each).

    ``loss = fn(logits, labels, valid_lens)`` with logits ``(N, T, V)``, labels
    ``(N, T)``, valid_lens ``(N,)``; ``dlogits = fn.backward()`` (upstream 1, or
    ``fn.backward(dloss)`` with ``dloss`` of shape ``(N,)`` for ``reduction="none"``).

    Whatever the reduction, the last call's summed token negative log-likelihood
    and token count are kept in ``nll_sum`` and ``num_tokens``, so a training loop
    can always report the per-token cross-entropy ``nll_sum / num_tokens``.
    """

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if reduction not in F.REDUCTIONS:
            raise ValueError(f"reduction: expected one of {F.REDUCTIONS}, got {reduction!r}")
        self.reduction = reduction
        self.nll_sum = None
        self.num_tokens = 0

    def forward(self, logits, labels, valid_lens):
        loss, cache = F.masked_softmax_ce_forward(logits, labels, valid_lens, self.reduction)
        self.num_tokens = int(valid_lens.sum())
        scale = {"mean": max(self.num_tokens, 1), "sum": 1, "d2l": logits.shape[1]}
        self.nll_sum = loss.sum() if self.reduction == "none" else loss * scale[self.reduction]
        self.save_for_backward(cache)
        return loss

    def backward(self, dloss=1.0):
        return F.masked_softmax_ce_backward(dloss, self.pop_cache())

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"
