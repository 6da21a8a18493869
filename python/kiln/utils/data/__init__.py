"""kiln.utils.data: datasets, samplers, DataLoader (with worker processes) and
collation, as torch.utils.data; DistributedSampler splits a dataset across kiln.distributed ranks."""

from kiln.utils.data.dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset, random_split,
)
from kiln.utils.data.sampler import (
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler,
)
from kiln.utils.data._collate import default_collate, default_convert
from kiln.utils.data.dataloader import DataLoader
from kiln.utils.data._worker import WorkerInfo, get_worker_info
from kiln.utils.data.distributed import DistributedSampler

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "default_collate",
           "default_convert", "get_worker_info", "random_split"]
