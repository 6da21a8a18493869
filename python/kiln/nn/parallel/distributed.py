"""kiln.nn.parallel.DistributedDataParallel: the class, for isinstance checks and
``model.module`` unwrapping code paths; constructing one raises the ValueError
torch raises when no default process group was initialised, since kiln has no
torch.distributed to initialise one."""

from __future__ import annotations

from kiln.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """torch.nn.parallel.DistributedDataParallel: kiln cannot create one (no process groups)."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers=None,
                 init_sync: bool = True, process_group=None, bucket_cap_mb=None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None, mixed_precision=None,
                 device_mesh=None, skip_all_reduce_unused_params: bool = False, bucket_cap_mb_list=None,
                 batched_grad_copy: bool = False, forward_sync_buffers=None) -> None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
