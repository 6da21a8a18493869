"""kiln.func.functional_call, stack_module_state and replace_all_batch_norm_modules_,
as torch.func's.

``functional_call`` swaps the given tensors into the module's parameters and
buffers (``_parameters``/``_buffers`` entries; other names become plain
attributes), calls the module, and swaps the originals back even when the call
raises. Tied weights (one tensor under several names) follow ``tie_weights``;
``strict`` requires exactly the module's names. As torch, the values the module
holds after the call (e.g. a buffer it reassigned) are written back into a
single given dict.
"""

from __future__ import annotations

from collections.abc import Sequence

import kiln
from kiln import _C
from kiln.nn import Module
from kiln.nn.modules.normalization import _BatchNorm

__all__ = ["functional_call", "stack_module_state", "replace_all_batch_norm_modules_"]

_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Calls ``module(*args, **kwargs)`` with its parameters and buffers replaced
    by the tensors in ``parameter_and_buffer_dicts`` (a dict or a sequence of dicts)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        values = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    swapped = _untie(module, values) if tie_weights else values
    if strict:
        _check_keys(module, swapped)
    originals = _swap_all(module, swapped)
    try:
        return module(*args, **kwargs)
    finally:
        current = _swap_all(module, originals)
        values.update({k: current[k] for k in values if k in current})


def _named_tensors(module) -> dict:
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    return named


def _untie(module, values: dict) -> dict:
    """``values`` plus, for every given name of a tied tensor, its other names."""
    names_of: dict[int, set] = {}
    for name, tensor in _named_tensors(module).items():
        names_of.setdefault(id(tensor), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    given = [name for name in values if name in tied]
    for name in given:
        group = tied[name]
        given_in_group = [n for n in group if n in values]
        if len(given_in_group) > 1 and len({id(values[n]) for n in given_in_group}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(group)}, which are tied. "
                             "Consider using tie_weights=False")
    untied = dict(values)
    for name in given:
        for other in tied[name]:
            untied[other] = values[name]
    return untied


def _check_keys(module, values: dict) -> None:
    valid = set(_named_tensors(module))
    missing, unexpected = sorted(valid - set(values)), sorted(set(values) - valid)
    messages = []
    if unexpected:
        messages.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        messages.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if messages:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                              "\n\t".join(messages)))


def _submodule(module, path: str, cache: dict):
    if not path:
        return module
    if path in cache:
        return cache[path]
    prefix, _, attr = path.rpartition(".")
    parent = _submodule(module, prefix, cache)
    try:
        sub = getattr(parent, attr)
    except AttributeError as e:
        raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from e
    if not isinstance(sub, Module):
        raise TypeError(f"submodule `{path}`: {sub} is not an instance of kiln.nn.Module")
    cache[path] = sub
    return sub


def _swap_one(module, name: str, tensor):
    """Puts ``tensor`` (or removes the entry, for _MISSING) under ``name``; returns what was there."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, _C.TensorBase):
        raise TypeError(f"{tensor} is not an instance of kiln.Tensor")
    for table in (module._parameters, module._buffers):
        if name in table:
            original = table[name]
            if tensor is _MISSING:
                del table[name]
            else:
                table[name] = tensor
            return original
    original = getattr(module, name, _MISSING)
    if original is not _MISSING and original is not None and not isinstance(original, _C.TensorBase):
        raise TypeError(f"attribute `{name}`: {original} is not an instance of kiln.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return original


def _swap_all(module, values: dict) -> dict:
    """Swaps every entry of ``values`` in; returns the previous entries (undone on error)."""
    cache: dict = {}
    previous: dict = {}
    try:
        for name, tensor in values.items():
            prefix, _, attr = name.rpartition(".")
            previous[name] = _swap_one(_submodule(module, prefix, cache), attr, tensor)
    except Exception:
        for name, tensor in previous.items():
            prefix, _, attr = name.rpartition(".")
            _swap_one(_submodule(module, prefix, cache), attr, tensor)
        raise
    return previous


def stack_module_state(models):
    """``(params, buffers)``: each model's parameters (and buffers) stacked along a
    new first dimension, by name; stacked parameters are new leaves requiring grad."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    kind = type(models[0])
    if not all(type(m) is kind for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _stacked_leaf(tensors, name: str):
    every = all(t.requires_grad for t in tensors)
    none = all(not t.requires_grad for t in tensors)
    if not every and not none:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = kiln.stack(tensors)
    if every:
        result = result.detach().requires_grad_()
    return result


def replace_all_batch_norm_modules_(root):
    """Makes every batch norm in ``root`` stop tracking running statistics (in place); returns ``root``."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
