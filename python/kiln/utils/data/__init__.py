"""kiln.utils.data: datasets, samplers, DataLoader and collation, as torch.utils.data
(single process: num_workers=0; DistributedSampler splits a dataset across kiln.distributed ranks)."""

from kiln.utils.data.dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split,
)
from kiln.utils.data.sampler import (
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler,
)
from kiln.utils.data._collate import default_collate, default_convert
from kiln.utils.data.dataloader import DataLoader
from kiln.utils.data.distributed import DistributedSampler

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert", "random_split"]
