"""ZeroRedundancyOptimizer: optimizer state sharded across ranks (ZeRO stage 1), as torch's.

Every rank holds all parameters but builds the wrapped optimizer over its own
share only, so each parameter's optimizer state (momentum, Adam's moments) lives
on one rank. ``step()`` updates the local share, then every parameter is
broadcast from the rank that owns it. Parameters are dealt out largest first,
each to the rank with the fewest elements so far (torch's greedy partition).
"""

from __future__ import annotations

from kiln.distributed._collectives import broadcast
from kiln.distributed._process_group import resolve_group
from kiln.optim.optimizer import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer(Optimizer):
    """torch.distributed.optim.ZeroRedundancyOptimizer(params, optimizer_class, process_group=None, **defaults)."""

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view: bool = False,
                 overlap_with_ddp: bool = False, **defaults) -> None:
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer: overlap_with_ddp is not supported by kiln")
        super().__init__(params, defaults)
        self.process_group = resolve_group(process_group)
        if self.process_group is None:
            raise ValueError("ZeroRedundancyOptimizer: this process is not a member of process_group")
        self.world_size = self.process_group.size()
        self.rank = self.process_group.rank()
        self.global_rank = self.process_group._ranks[self.rank]
        self._optimizer_class = optimizer_class
        self._owner: dict[int, int] = {}
        local_groups = self._partition()
        self.optim = optimizer_class(local_groups, **defaults) if local_groups else None

    def _partition(self) -> list[dict]:
        """This rank's share of each param group (groups with no local parameter left out)."""
        sizes = [0] * self.world_size
        local_groups = []
        for group in self.param_groups:
            mine = []
            for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                owner = min(range(self.world_size), key=lambda r: sizes[r])
                sizes[owner] += p.numel()
                self._owner[id(p)] = owner
                if owner == self.rank:
                    mine.append(p)
            if mine:
                local_groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": mine})
        return local_groups

    def step(self, closure=None):
        loss = None
        if self.optim is not None:
            # Options changed on the shared groups (a learning-rate scheduler) reach the local optimizer.
            for local in self.optim.param_groups:
                shared = next(g for g in self.param_groups if any(p is local["params"][0] for p in g["params"]))
                for key, value in shared.items():
                    if key != "params":
                        local[key] = value
            loss = self.optim.step(closure)
        elif closure is not None:
            loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                owner = self._owner[id(p)]
                broadcast(p.detach(), src=self.process_group._ranks[owner], group=self.process_group)
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach().zero_()

    def local_state_dict(self) -> dict:
        """The wrapped optimizer's state for this rank's share."""
        return {} if self.optim is None else self.optim.state_dict()

    def state_dict(self):
        raise NotImplementedError("ZeroRedundancyOptimizer.state_dict: kiln keeps each rank's shard; save "
                                  "local_state_dict() on every rank (consolidate_state_dict is not supported yet)")
