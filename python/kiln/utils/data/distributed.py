"""kiln.utils.data.DistributedSampler: each rank's share of a dataset's indices,
as torch.utils.data.distributed.DistributedSampler (the same padding and
striding; the shuffled order comes from kiln's randperm, seeded with seed + epoch)."""

from __future__ import annotations

import math
from typing import Iterator

from kiln import _C
from kiln import distributed
from kiln.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Rank ``rank`` of ``num_replicas`` gets every num_replicas-th index of a (seeded, per-epoch) order,
    padded by repeating indices (or cut, with drop_last) so every rank gets the same number."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            if not distributed.is_initialized():
                raise ValueError("Default process group has not been initialized, please make sure to call "
                                 "init_process_group.")
            num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
            rank = distributed.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            generator = _C.Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = _C._functions.randperm(len(self.dataset), generator=generator).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Seeds the next epoch's shuffle with ``seed + epoch`` (call it before each epoch, as with torch)."""
        self.epoch = epoch
