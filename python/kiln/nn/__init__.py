"""kiln.nn: Module, Parameter, the layers, functional, init and utils, as torch.nn."""

from kiln.nn.modules import *  # noqa: F401,F403
from kiln.nn.modules import __all__ as _modules_all
from kiln.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from kiln.nn.modules._factory_kwargs import factory_kwargs
from kiln.nn.modules.data_parallel import DataParallel  # torch.nn.parallel's, re-exported there by torch too
from kiln.nn import functional, init, utils

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "DataParallel", "factory_kwargs",
           "functional", "init", "utils", *_modules_all]

# torch.nn.attention, torch.nn.parallel, torch.nn.grad and torch.nn.common_types.
from kiln.nn import attention, common_types, grad, parallel  # noqa: E402
