"""TripletMarginWithDistanceLoss and the deprecated NLLLoss2d, as torch.nn."""

from __future__ import annotations

import warnings

from kiln.nn import functional as F
from kiln.nn.modules.loss import NLLLoss, _Loss
from kiln.nn.modules.reshaping import PairwiseDistance

__all__ = ["TripletMarginWithDistanceLoss", "NLLLoss2d"]


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any ``distance_function`` (default a PairwiseDistance() module,
    as torch); a Module distance function is registered as a child (it shows in the repr)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """NLLLoss under its old name; warns FutureWarning on construction, as torch."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and see "
                      "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.", FutureWarning,
                      stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)
