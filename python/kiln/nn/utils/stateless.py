"""kiln.nn.utils.stateless.functional_call: a module called with some of its
parameters and buffers replaced by the given tensors, as torch's (deprecated
there in favour of torch.func.functional_call; it warns FutureWarning).

The replacement is by name (``"sub.weight"``), for the call only: the module's
own tensors are restored afterwards, even when the call raises. In-place buffer
updates during the call (BatchNorm's running statistics) go to the given
tensors. ``tie_weights`` gives tied names (one tensor under several names) the
value given for any of them; ``strict`` requires exactly the module's names."""

from __future__ import annotations

import warnings
from contextlib import contextmanager

from kiln import _C

__all__ = ["functional_call"]

_MISSING = object()


def _tied_groups(module) -> list:
    """Names of the parameters and buffers that share one tensor object, for each tensor shared."""
    by_id: dict = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        by_id.setdefault(id(t), []).append(name)
    return [names for names in by_id.values() if len(names) > 1]


def _untie(module, mapping: dict) -> dict:
    mapping = dict(mapping)
    for names in _tied_groups(module):
        given = [n for n in names if n in mapping]
        if not given:
            continue
        if len({id(mapping[n]) for n in given}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, which are tied. "
                             "Consider using tie_weights=False")
        for n in names:
            mapping.setdefault(n, mapping[given[0]])
    return mapping


def _check_strict(module, mapping: dict) -> None:
    names = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    names |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    missing = sorted(names - set(mapping))
    unexpected = sorted(set(mapping) - names)
    msgs = []
    if unexpected:
        msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if msgs:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(), "\n\t".join(msgs)))


def _swap(module, name: str, tensor):
    """Puts ``tensor`` at ``name``; returns how to put back what was there."""
    prefix, _, leaf = name.rpartition(".")
    sub = module.get_submodule(prefix)
    for store in (sub._parameters, sub._buffers):
        if leaf in store:
            old = store[leaf]
            store[leaf] = tensor
            return lambda: store.__setitem__(leaf, old)
    old = sub.__dict__.get(leaf, _MISSING)
    if old is not _MISSING and not isinstance(old, _C.TensorBase):
        raise TypeError(f"attribute `{leaf}`: {old} is not an instance of kiln.Tensor")
    sub.__dict__[leaf] = tensor
    return (lambda: sub.__dict__.pop(leaf, None)) if old is _MISSING else (lambda: sub.__dict__.__setitem__(leaf, old))


@contextmanager
def _reparametrize_module(module, parameters_and_buffers: dict, *, tie_weights: bool = False,
                          strict: bool = False):
    mapping = _untie(module, parameters_and_buffers) if tie_weights else dict(parameters_and_buffers)
    if strict:
        _check_strict(module, mapping)
    restores = []
    try:
        for name, tensor in mapping.items():
            restores.append(_swap(module, name, tensor))
        yield
    finally:
        for restore in reversed(restores):
            restore()


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights: bool = True,
                     strict: bool = False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers: dict, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` (name -> tensor) in place of its own."""
    warnings.warn("`kiln.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `kiln.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
