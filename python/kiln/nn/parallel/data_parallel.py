"""kiln.nn.parallel.data_parallel (torch's functional DataParallel) and DataParallel.

torch's data_parallel first looks for an accelerator and raises RuntimeError
("device type could not be determined") when there is none, before it looks at
its arguments; kiln has no accelerator, so that is what it does. DataParallel
(kiln.nn.DataParallel) just calls the module it wraps, as torch's does without
GPUs.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from kiln.nn.modules.data_parallel import DataParallel

__all__ = ["DataParallel", "data_parallel"]


def data_parallel(module, inputs: Any, device_ids: Optional[Sequence] = None, output_device=None, dim: int = 0,
                  module_kwargs: Optional[Any] = None):
    """torch.nn.parallel.data_parallel: ``module(*inputs)`` scattered over GPUs; without any, RuntimeError."""
    raise RuntimeError("device type could not be determined")
