"""OptimizedModule: what kiln.compile returns for an nn.Module (torch's
OptimizedModule): the original module is its ``_orig_mod`` submodule, so
parameters are the same objects, state_dict keys carry the ``_orig_mod.``
prefix exactly as torch's do, train()/eval() reach the original, and other
attributes are forwarded to it."""

from __future__ import annotations

from kiln.nn.modules.module import Module


class OptimizedModule(Module):
    def __init__(self, mod: Module, compiled_call):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_call", compiled_call)

    def forward(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        # The original module's __call__ (hooks included) is what was captured.
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"
