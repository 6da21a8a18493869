"""kiln.nn.Module: the base class of every layer, with PyTorch's machinery:
registration of parameters, buffers and submodules through attribute
assignment, traversal, train/eval, state_dict, hooks, and dtype moves."""

from __future__ import annotations

import functools
import itertools
import weakref
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

from kiln import _C
from kiln._tensor import Tensor
from kiln.autograd.function import Function
from kiln.nn.modules import _compile_hook
from kiln.nn.parameter import Parameter

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook"]

_global_forward_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_forward_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_forward_hooks_always_called: dict[int, bool] = {}
_hook_ids = itertools.count()


class RemovableHandle:
    """Removes a hook from the dicts it was added to (like torch.utils.hooks.RemovableHandle)."""

    def __init__(self, *hooks_dicts: dict, extra_dict: dict | None = None) -> None:
        self.id = next(_hook_ids)
        self._dicts = [weakref.ref(d) if not isinstance(d, dict) else d for d in hooks_dicts]
        self._extra = extra_dict

    def remove(self) -> None:
        for d in self._dicts:
            d.pop(self.id, None)
        if self._extra is not None:
            self._extra.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """A pre-hook run before every module's forward: hook(module, args)."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False, always_call: bool = False):
    """A hook run after every module's forward: hook(module, args, output)."""
    handle = RemovableHandle(_global_forward_hooks, extra_dict=_global_forward_hooks_always_called)
    _global_forward_hooks[handle.id] = hook
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * num_spaces + line for line in lines)


class Module:
    """Base class for all neural network modules."""

    training: bool
    _version: int = 1
    call_super_init: bool = False

    def __init__(self, *args, **kwargs) -> None:
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} "
                            "were given")
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_modules", {})
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", {})
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", {})
        setattr_("_forward_hooks_always_called", {})
        setattr_("_backward_hooks", OrderedDict())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_state_dict_hooks", OrderedDict())
        setattr_("_load_state_dict_pre_hooks", OrderedDict())

    forward: Callable[..., Any]

    def _forward_unimplemented(self, *input: Any) -> None:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    forward = _forward_unimplemented

    # --- registration -----------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, _C.TensorBase):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (torch Tensor or None required)"
                            .replace("torch", "kiln"))
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__module__}.{type(param).__name__}' object to parameter "
                            f"'{name}' (kiln.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             "explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                             "the forward() method.")
        else:
            self._parameters[name] = param

    def add_module(self, name: str, module: "Module | None") -> None:
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name: str, module: "Module | None") -> None:
        self.add_module(name, module)

    def get_submodule(self, target: str) -> "Module":
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return mod._buffers[name]

    # --- attributes ---------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__module__}.{type(value).__name__}' as parameter "
                                f"'{name}' (kiln.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__module__}.{type(value).__name__}' as child "
                                    f"module '{name}' (kiln.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if getattr(value, "_is_buffer", False) is True and isinstance(value, _C.TensorBase):
                    self.register_buffer(name, value, value.persistent)  # a kiln.nn.Buffer, as torch
                elif buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, _C.TensorBase):
                        raise TypeError(f"cannot assign '{type(value).__module__}.{type(value).__name__}' as buffer "
                                        f"'{name}' (kiln.Tensor or None expected)")
                    buffers[name] = value
                else:
                    super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # --- traversal ------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self) -> Iterator["Module"]:
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self) -> Iterator["Module"]:
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            submodule_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # --- modes ------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g.detach_()
                g.zero_()

    # --- moving -------------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> "Module":
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with _no_grad():
                new = fn(param)
            if new is param:
                continue
            new_param = Parameter(new, param.requires_grad)
            if param.grad is not None:
                with _no_grad():
                    new_param.grad = fn(param.grad)
            self._parameters[key] = new_param
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs) -> "Module":
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, (str, _C.device)):
                device = a
            elif isinstance(a, _C.TensorBase):
                dtype, device = a.dtype, a.device
        device_type = None
        if device is not None:
            device_type = str(_C.device(device) if isinstance(device, str) else device).split(":")[0]
            if device_type not in ("cpu", "meta"):
                raise NotImplementedError(
                    f"Module.to: device '{device}' is not supported yet (kiln.cuda.is_available() is False)")
        if dtype is not None and not (dtype.is_floating_point):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}")
        if dtype is None and device_type is None:
            return self

        def convert(t: Tensor) -> Tensor:
            # To or from the meta device: sizes, strides and dtype only (moving off meta raises, as torch).
            if device_type is not None and str(t.device).split(":")[0] != device_type:
                t = t.to(device_type)
            return _cast(t, dtype) if dtype is not None and t.dtype.is_floating_point else t

        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Moves the parameters and buffers to ``device`` without copying their values (as torch's
        ``Module.to_empty``): uninitialised tensors of the same shapes, e.g. after building on ``"meta"``."""
        return self._apply(lambda t: _C._functions.empty_like(t, device=device), recurse=recurse)

    def cpu(self) -> "Module":
        return self

    def cuda(self, device=None) -> "Module":
        raise NotImplementedError("Module.cuda(): kiln has no CUDA device yet (kiln.cuda.is_available() is False)")

    def float(self) -> "Module":
        return self.to(_C.float32)

    def double(self) -> "Module":
        return self.to(_C.float64)

    def half(self) -> "Module":
        return self.to(_C.float16)

    def bfloat16(self) -> "Module":
        return self.to(_C.bfloat16)

    def type(self, dst_type) -> "Module":
        return self.to(dst_type)

    # --- state ----------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        if args:
            destination = args[0] if len(args) > 0 and destination is None else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, {})
            if result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent_buffers.items())
                       if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, _C.TensorBase):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(input_param)}"
                                  .replace("torch.", "kiln."))
                continue
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}."
                                  .replace("kiln.Size", "torch.Size"))
                continue
            if assign:
                if isinstance(param, Parameter):
                    new = input_param if isinstance(input_param, Parameter) else Parameter(input_param,
                                                                                           param.requires_grad)
                    self._parameters[name] = new
                else:
                    self._buffers[name] = input_param
            else:
                with _no_grad():
                    param.copy_(input_param)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []

        def load(module: Module, local_state_dict, prefix=""):
            module._load_from_state_dict(local_state_dict, prefix, {}, True, missing_keys, unexpected_keys,
                                         error_msgs, assign)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)

        load(self, dict(state_dict))
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # --- hooks ---------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        handle = RemovableHandle(self._forward_hooks, extra_dict=self._forward_hooks_with_kwargs)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend: bool = False):
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_hook(self, hook):
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    # --- calling -----------------------------------------------------------------------------
    def _call_impl(self, *args, **kwargs):
        forward_call = self.forward
        if not (self._forward_hooks or self._forward_pre_hooks or _global_forward_hooks
                or _global_forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks):
            return forward_call(*args, **kwargs)
        called_always = set()
        result = None
        try:
            for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(), self._forward_pre_hooks.items()):
                if self._forward_pre_hooks_with_kwargs.get(hook_id):
                    out = hook(self, args, kwargs)
                    if out is not None:
                        if not (isinstance(out, tuple) and len(out) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                               f"but got {out}.")
                        args, kwargs = out
                else:
                    out = hook(self, args)
                    if out is not None:
                        args = out if isinstance(out, tuple) else (out,)
            if self._backward_hooks or self._backward_pre_hooks:
                args = _BackwardHooks.wrap_inputs(self, args)
            result = forward_call(*args, **kwargs)
            for hook_id, hook in itertools.chain(_global_forward_hooks.items(), self._forward_hooks.items()):
                if hook_id in _global_forward_hooks_always_called or hook_id in self._forward_hooks_always_called:
                    called_always.add(hook_id)
                if self._forward_hooks_with_kwargs.get(hook_id):
                    out = hook(self, args, kwargs, result)
                else:
                    out = hook(self, args, result)
                if out is not None:
                    result = out
            if self._backward_hooks or self._backward_pre_hooks:
                result = _BackwardHooks.wrap_outputs(self, args, result)
            return result
        except Exception:
            for hook_id, hook in itertools.chain(_global_forward_hooks.items(), self._forward_hooks.items()):
                always = hook_id in _global_forward_hooks_always_called or hook_id in self._forward_hooks_always_called
                if always and hook_id not in called_always:
                    try:
                        if self._forward_hooks_with_kwargs.get(hook_id):
                            hook(self, args, kwargs, result)
                        else:
                            hook(self, args, result)
                    except Exception:  # noqa: BLE001 - the original error wins
                        pass
            raise

    # Set by compile(): the compiled _call_impl later calls run (torch's attribute of the same name).
    _compiled_call_impl: Callable[..., Any] | None = None

    def _wrapped_call_impl(self, *args, **kwargs):
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def compile(self, *args, **kwargs) -> None:
        """Compiles this module's call in place with ``kiln.compile(self._call_impl, *args, **kwargs)``:
        later ``m(x)`` calls run compiled (as torch's Module.compile). Note [Module.compile's hook]:
        kiln.compiler sits above kiln.nn, so it installs kiln.compile into _compile_hook at import."""
        object.__setattr__(self, "_compiled_call_impl", _compile_hook.compile(self._call_impl, *args, **kwargs))

    __call__: Callable[..., Any] = _wrapped_call_impl

    # --- printing ------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return self.__class__.__name__

    def __repr__(self) -> str:
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)


class _BackwardHooks:
    """Full backward hooks: grad_input / grad_output of a module, via a
    kiln.autograd.Function identity wrapped around the inputs and outputs."""

    @staticmethod
    def wrap_inputs(module: Module, args):
        tensors = [a for a in args if isinstance(a, _C.TensorBase) and a.requires_grad]
        if not tensors:
            return args
        state = module.__dict__.setdefault("_bw_state", {})

        class _InputIdentity(Function):
            @staticmethod
            def forward(ctx, *xs):
                return tuple(x.detach() for x in xs) if len(xs) > 1 else xs[0].detach()

            @staticmethod
            def backward(ctx, *grads):
                grad_output = state.get("grad_output", ())
                grads = tuple(grads)
                for hook in module._backward_hooks.values():
                    out = hook(module, grads, grad_output)
                    if out is not None:
                        grads = tuple(out)
                return grads if len(grads) > 1 else grads[0]

        wrapped = _InputIdentity.apply(*tensors)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        it = iter(wrapped)
        return tuple(next(it) if (isinstance(a, _C.TensorBase) and a.requires_grad) else a for a in args)

    @staticmethod
    def wrap_outputs(module: Module, args, result):
        single = isinstance(result, _C.TensorBase)
        outs = (result,) if single else result
        if not isinstance(outs, tuple) or not any(isinstance(o, _C.TensorBase) and o.requires_grad for o in outs):
            return result
        state = module.__dict__.setdefault("_bw_state", {})

        class _OutputIdentity(Function):
            @staticmethod
            def forward(ctx, *ys):
                return tuple(y.detach() for y in ys) if len(ys) > 1 else ys[0].detach()

            @staticmethod
            def backward(ctx, *grads):
                grads = tuple(grads)
                for hook in module._backward_pre_hooks.values():
                    out = hook(module, grads)
                    if out is not None:
                        grads = tuple(out)
                state["grad_output"] = grads
                return grads if len(grads) > 1 else grads[0]

        wrapped = _OutputIdentity.apply(*outs)
        return wrapped if not single else wrapped


class _no_grad:
    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)


def _cast(t: Tensor, dtype) -> Tensor:
    out = _C._functions.empty(tuple(t.shape), dtype=dtype, device=t.device)
    out.copy_(t.detach())
    return out
