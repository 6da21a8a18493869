"""SyncBatchNorm: BatchNorm over any N-D input (N >= 2) whose statistics torch
would all-reduce across a process group. kiln has no torch.distributed, so it
always takes the path torch takes when no process group is initialized: plain
batch norm (train and eval alike, CPU tensors included), with torch's checks.
convert_sync_batchnorm swaps BatchNorm*d layers (not InstanceNorm) for it,
sharing their parameters and buffers, as torch."""

from __future__ import annotations

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
        return super().forward(input)

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
