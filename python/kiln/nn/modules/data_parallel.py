"""kiln.nn.DataParallel: torch.nn.DataParallel as it behaves where no GPU is
available (kiln has none): it holds the module as ``module`` (so state_dict
keys gain the ``module.`` prefix), keeps ``device_ids = []`` and its forward
just calls the module. ``output_device`` and ``dim`` are accepted and, as in
torch without devices, not stored."""

from __future__ import annotations

from kiln.nn.modules.module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
