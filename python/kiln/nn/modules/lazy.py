"""LazyModuleMixin: modules whose parameter shapes are inferred from the first
input, as torch.nn.modules.lazy.

A lazy module holds UninitializedParameter / UninitializedBuffer placeholders.
A forward pre-hook calls ``initialize_parameters(*args, **kwargs)`` on the first
call, which materializes them and runs ``reset_parameters``; the hook is then
removed and the instance's class becomes ``cls_to_become`` (LazyLinear ->
Linear), as torch does. ``load_state_dict`` into a lazy module materializes the
placeholders with the checkpoint's shapes first (the module stays lazy until its
first forward, as in torch). dtype moves (``.double()``, ``.to(dtype)``) keep
placeholders uninitialized, in the new dtype.

kiln has no ``Module._register_load_state_dict_pre_hook``; the loading step is
an override of ``_load_from_state_dict`` instead (same effect)."""

from __future__ import annotations

import itertools

from kiln import _C
from kiln.nn.parameter import is_lazy
from kiln.nn.modules.module import _no_grad

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Put it first among the bases: ``class LazyMyLayer(LazyModuleMixin, MyLayer)``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Materializes the placeholders from the first forward's arguments."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether this module (not its children) still holds a placeholder."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars or is_lazy(param) else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars or is_lazy(buf) else buf.detach()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        still_lazy = []
        persistent = ((k, v) for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set)
        for name, tensor in itertools.chain(self._parameters.items(), persistent):
            key = prefix + name
            if key not in state_dict or tensor is None or not is_lazy(tensor):
                continue
            value = state_dict[key]
            if is_lazy(value):
                still_lazy.append(key)  # lazy into lazy: nothing to load
                continue
            with _no_grad():
                tensor.materialize(tuple(value.shape))
        if still_lazy:
            state_dict = {k: v for k, v in state_dict.items() if k not in still_lazy}
        before = len(missing_keys)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs, assign)
        missing_keys[before:] = [k for k in missing_keys[before:] if k not in still_lazy]

    def _apply(self, fn, recurse: bool = True):
        held = [(store, name, t) for store in (self._parameters, self._buffers) for name, t in store.items()
                if is_lazy(t)]
        for store, name, _ in held:
            store[name] = None
        try:
            super()._apply(fn, recurse)
        finally:
            for store, name, t in held:
                with _no_grad():
                    moved = fn(_C._functions.empty(0, dtype=t.dtype))
                store[name] = t if moved.dtype == t.dtype else t._same_kind(moved.dtype)
        return self

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")
