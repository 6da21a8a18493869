"""kiln.nn: Module, Parameter, the layers, functional, init and utils, as torch.nn."""

from kiln.nn.parameter import Parameter
from kiln.nn.modules import *  # noqa: F401,F403
from kiln.nn.modules import __all__ as _modules_all
from kiln.nn import functional, init, utils

__all__ = ["Parameter", "functional", "init", "utils", *_modules_all]
