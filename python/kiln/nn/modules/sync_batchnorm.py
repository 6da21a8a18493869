"""SyncBatchNorm: BatchNorm over any N-D input (N >= 2) whose training statistics cover the
batches of every rank of a kiln.distributed process group (CPU tensors on Gloo included), as
torch's. In eval mode, without an initialized process group, or on a group of one rank it is
plain batch norm, as torch's. The synchronised forward and backward are
_sync_batch_norm_function.py (Note [SyncBatchNorm's collectives]). convert_sync_batchnorm swaps
BatchNorm*d layers (not InstanceNorm) for it, sharing their parameters and buffers, as torch."""

from __future__ import annotations

from kiln.distributed import GroupMember, get_world_size, is_available, is_initialized
from kiln.nn import functional as F
from kiln.nn.modules._sync_batch_norm_function import SyncBatchNormFunction
from kiln.nn.modules.module import Module, _no_grad
from kiln.nn.modules.normalization import _BatchNorm, _InstanceNorm

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input) -> None:
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked.item()) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        running_mean = self.running_mean if use_stats else None
        running_var = self.running_var if use_stats else None
        need_sync = bn_training and self.training and is_available() and is_initialized()
        if need_sync:
            process_group = self.process_group if self.process_group else GroupMember.WORLD
            world_size = get_world_size(process_group)
            need_sync = world_size > 1
        if not need_sync:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training, factor,
                                self.eps)
        return SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean, running_var, self.eps, factor,
                                           process_group, world_size)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """``module`` with every BatchNorm1d/2d/3d (recursively) replaced by a SyncBatchNorm that
        shares its weight, bias and running statistics; other modules are kept (and returned) as is."""
        module_output = module
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            module_output = cls(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group)
            if module.affine:
                with _no_grad():
                    module_output.weight = module.weight
                    module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output
