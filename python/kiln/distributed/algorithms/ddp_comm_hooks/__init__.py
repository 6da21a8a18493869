"""DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks): default_hooks holds
allreduce_hook, fp16_compress_hook and bf16_compress_hook; register one with
``DistributedDataParallel.register_comm_hook(state, hook)``."""

from kiln.distributed.algorithms.ddp_comm_hooks import default_hooks

__all__ = ["default_hooks"]
