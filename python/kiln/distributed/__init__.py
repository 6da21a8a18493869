"""kiln.distributed: torch.distributed's API over Gloo (CPU collectives across
processes and machines), with torchrun's environment contract; launch workers
with ``python -m kiln.distributed.run``. See README.md here."""

from kiln.distributed._backend import (
    Backend, is_available, ReduceOp, is_backend_available, is_gloo_available, is_mpi_available, is_nccl_available,
    is_ucc_available, is_xccl_available,
)
from kiln.distributed._errors import DistBackendError, DistError, DistStoreError
from kiln.distributed._grad_bucket import GradBucket
from kiln.distributed._collectives import (
    all_gather, all_gather_into_tensor, all_reduce, all_to_all, all_to_all_single, barrier, broadcast, gather, irecv,
    isend, recv, reduce, reduce_scatter, reduce_scatter_tensor, scatter, send,
)
from kiln.distributed._object_collectives import (
    all_gather_object, broadcast_object_list, gather_object, scatter_object_list,
)
from kiln.distributed._process_group import (
    GroupMember, ProcessGroup, destroy_process_group, get_backend, get_global_rank, get_group_rank,
    get_process_group_ranks, get_rank, get_world_size, group, init_process_group, is_initialized,
    is_torchelastic_launched, new_group,
)
from kiln.distributed._store import FileStore, PrefixStore, Store, TCPStore
from kiln.distributed._work import Work
from kiln.distributed.constants import default_pg_timeout


__all__ = [
    "Backend", "DistBackendError", "DistError", "DistStoreError", "FileStore", "GradBucket", "GroupMember",
    "PrefixStore", "ProcessGroup", "ReduceOp", "Store", "TCPStore", "Work", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "all_reduce", "all_to_all", "all_to_all_single", "barrier", "broadcast",
    "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather", "gather_object", "get_backend",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
    "init_process_group", "irecv", "is_available", "is_backend_available", "is_gloo_available", "is_initialized",
    "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "is_ucc_available", "is_xccl_available",
    "isend", "new_group", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
    "scatter_object_list", "send",
]
