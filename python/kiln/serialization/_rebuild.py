"""The functions a checkpoint's pickle calls to rebuild tensors.

These are kiln's twins of ``torch._utils._rebuild_tensor_v2`` and its kin:
kiln.load maps each torch name to its twin here (so a torch checkpoint
unpickles into kiln tensors), and kiln.save writes these functions under the
torch names (so torch.load unpickles kiln's checkpoint into torch tensors); see
_torch_names.py. Every argument is checked before it reaches memory: a storage
must be one read from the file, and sizes, strides and offset must stay inside
it, so a hostile file gets an error, never an out-of-bounds view.
"""

from __future__ import annotations

from kiln import _C
from kiln._layout import strided
from kiln.nn.parameter import Parameter
from kiln.serialization._storage import LoadedStorage

_INT64_MAX = 2**63 - 1


def _int_list(values, what: str) -> list[int]:
    if not isinstance(values, (tuple, list)) or not all(type(v) is int for v in values):
        raise RuntimeError(f"kiln.load: corrupt checkpoint: a tensor's {what} is {values!r}, not a tuple of ints")
    return list(values)


def _view_of_storage(storage, storage_offset, size, stride, dtype=None):
    if not isinstance(storage, LoadedStorage):
        raise RuntimeError(f"kiln.load: corrupt checkpoint: a tensor is rebuilt on {type(storage).__name__}, "
                           "not on a storage of the file")
    size = _int_list(size, "size")
    stride = _int_list(stride, "stride")
    if type(storage_offset) is not int or storage_offset < 0 or len(size) != len(stride):
        raise RuntimeError(f"kiln.load: corrupt checkpoint: a tensor of size {size}, stride {stride} and storage "
                           f"offset {storage_offset!r} is not a valid view")
    flat = storage.flat
    if dtype is not None and dtype is not flat.dtype:
        itemsize = _C._functions.empty(0, dtype=dtype).element_size()
        if flat.numel() * flat.element_size() % itemsize:
            raise RuntimeError(f"kiln.load: corrupt checkpoint: a storage of {flat.numel() * flat.element_size()} "
                               f"bytes does not hold whole {dtype} elements")
        flat = flat.view(dtype)
    numel = 1
    extent = storage_offset
    for n, s in zip(size, stride):
        if n < 0 or s < 0:
            raise RuntimeError(f"kiln.load: corrupt checkpoint: negative size or stride in {size}, {stride}")
        numel *= n
        extent += (n - 1) * s
    if numel > _INT64_MAX or (numel > 0 and extent >= flat.numel()):
        raise RuntimeError(f"kiln.load: corrupt checkpoint: a tensor of size {size}, stride {stride} and storage "
                           f"offset {storage_offset} lies outside its storage of {flat.numel()} elements")
    if numel == 0:
        return _C._functions.empty(size, dtype=flat.dtype, device=flat.device)
    return flat.as_strided(size, stride, storage_offset)


def rebuild_tensor(storage, storage_offset, size, stride):
    """torch._utils._rebuild_tensor."""
    return _view_of_storage(storage, storage_offset, size, stride)


def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                      metadata=None):
    """torch._utils._rebuild_tensor_v2: a view of a storage (backward hooks are not restored, as in torch)."""
    t = _view_of_storage(storage, storage_offset, size, stride)
    if requires_grad:
        t.requires_grad_(True)
    return t


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    """torch._utils._rebuild_tensor_v3: a view of an untyped storage as ``dtype``."""
    if not isinstance(dtype, _C.dtype):
        raise RuntimeError(f"kiln.load: corrupt checkpoint: {dtype!r} is not a dtype")
    t = _view_of_storage(storage, storage_offset, size, stride, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _check_tensor(data, what: str):
    if not isinstance(data, _C.TensorBase):
        raise RuntimeError(f"kiln.load: corrupt checkpoint: {what} of {type(data).__name__}, not of a tensor")


def rebuild_parameter(data, requires_grad, backward_hooks):
    """torch._utils._rebuild_parameter."""
    _check_tensor(data, "a Parameter")
    return Parameter(data, bool(requires_grad))


def _set_state(obj, state) -> None:
    """torch._utils._set_obj_state: attributes from a dict, or a (dict, slots) pair."""
    if isinstance(state, tuple) and len(state) == 2:
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for mapping in (dict_state, slots_state):
        if not mapping:
            continue
        if not isinstance(mapping, dict):
            raise RuntimeError(f"kiln.load: corrupt checkpoint: object state {type(mapping).__name__} is not a dict")
        for key, value in mapping.items():
            setattr(obj, key, value)


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    """torch._utils._rebuild_parameter_with_state."""
    param = rebuild_parameter(data, requires_grad, backward_hooks)
    _set_state(param, state)
    return param


def rebuild_from_type_v2(func, new_type, args, state):
    """torch._tensor._rebuild_from_type_v2: a tensor of a Tensor subclass, or with attributes."""
    if not isinstance(args, tuple):
        raise RuntimeError("kiln.load: corrupt checkpoint: rebuild arguments are not a tuple")
    result = func(*args)
    _check_tensor(result, "a tensor subclass")
    if not (isinstance(new_type, type) and issubclass(new_type, _C.TensorBase)):
        raise RuntimeError(f"kiln.load: corrupt checkpoint: {new_type!r} is not a Tensor type")
    if type(result) is not new_type:
        result = _C._make_subclass(new_type, result.detach(), result.requires_grad)
    if state:
        _set_state(result, state)
    return result


def get_layout(name):
    """torch.serialization._get_layout: a layout from its name (``torch.strided``)."""
    if name != "torch.strided":
        raise RuntimeError(f"kiln.load: kiln has no layout {name!r} (only torch.strided)")
    return strided


__all__ = ["rebuild_tensor", "rebuild_tensor_v2", "rebuild_tensor_v3", "rebuild_parameter",
           "rebuild_parameter_with_state", "rebuild_from_type_v2", "get_layout"]
