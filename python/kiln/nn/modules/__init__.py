"""kiln.nn.modules: Module and the layers."""

from kiln.nn.modules.module import Module, register_module_forward_hook, register_module_forward_pre_hook

__all__ = ["Module", "register_module_forward_hook", "register_module_forward_pre_hook"]
