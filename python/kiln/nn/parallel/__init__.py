"""kiln.nn.parallel: torch.nn.parallel as it behaves on a machine without GPUs
(kiln has none). DataParallel is kiln.nn.DataParallel (it wraps the module and
calls it); data_parallel raises torch's "device type could not be determined";
DistributedDataParallel trains data-parallel over kiln.distributed (Gloo) and
raises torch's error when no process group was initialised. replicate, scatter, gather,
parallel_apply and comm, which move tensors between GPUs, are left out.
"""

import warnings

from kiln.nn.modules.data_parallel import DataParallel
from kiln.nn.parallel.data_parallel import data_parallel
from kiln.nn.parallel.distributed import DistributedDataParallel

__all__ = ["data_parallel", "DataParallel", "DistributedDataParallel"]


class DistributedDataParallelCPU(DistributedDataParallel):
    """torch's deprecated spelling of DistributedDataParallel (FutureWarning)."""

    def __init__(self, *args, **kwargs) -> None:
        warnings.warn("`kiln.nn.parallel.DistributedDataParallelCPU` is deprecated, please use "
                      "`kiln.nn.parallel.DistributedDataParallel` instead.", FutureWarning, stacklevel=2)
        super().__init__(*args, **kwargs)
