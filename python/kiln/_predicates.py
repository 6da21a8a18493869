"""torch's top-level queries about a tensor or object: is_nonzero, is_same_size,
is_signed, is_inference, is_storage, is_distributed, typename and get_device.
is_nonzero, is_same_size, is_signed and get_device are also Tensor's methods of
those names (kiln/_tensor_bindings.py binds these functions, self as input;
is_same_size through tensor_is_same_size, whose error counts positions as a method's)."""

from __future__ import annotations

from kiln import _C
from kiln._arguments import _require_tensor, checked_signature


@checked_signature("is_nonzero(Tensor input)")
def is_nonzero(input):
    """torch.is_nonzero: the truth of a one-element tensor (torch's errors otherwise)."""
    _require_tensor(input, "is_nonzero")
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


@checked_signature("is_same_size(Tensor input, Tensor other)")
def is_same_size(input, other):
    """torch.is_same_size."""
    _require_tensor(input, "is_same_size")
    _require_tensor(other, "is_same_size", "other", 2)
    return tuple(input.shape) == tuple(other.shape)


def tensor_is_same_size(self, other):
    """Tensor.is_same_size: as torch.is_same_size, but ``other`` is the method's first argument."""
    _require_tensor(other, "is_same_size", "other", 1)
    return tuple(self.shape) == tuple(other.shape)


@checked_signature("is_signed(Tensor input)")
def is_signed(input):
    """torch.is_signed: whether ``input``'s dtype is signed."""
    _require_tensor(input, "is_signed")
    return input.dtype.is_signed


@checked_signature("is_inference(Tensor input)")
def is_inference(input):
    """torch.is_inference: kiln has no inference tensors (its inference_mode is
    no_grad), so this is always False."""
    _require_tensor(input, "is_inference")
    return False


def typename(obj):
    """torch.typename: 'kiln.FloatTensor' for tensors (Tensor.type()), else the dotted
    module and qualified name of ``obj`` (a class or function) or of its type."""
    if isinstance(obj, _C.TensorBase):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name is None:
        module, name = type(obj).__module__ or "", type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


@checked_signature("get_device(Tensor input)")
def get_device(input):
    """torch.get_device: -1 for a CPU tensor, else its CUDA index."""
    _require_tensor(input, "get_device")
    device = input.device
    return -1 if device.type == "cpu" else (device.index or 0)


def is_storage(obj):
    """torch.is_storage: False (kiln has no storage objects)."""
    return False


@checked_signature("is_distributed(Tensor input)")
def is_distributed(input):
    """torch.is_distributed: False (kiln has no distributed tensors)."""
    _require_tensor(input, "is_distributed")
    return False


def tensor_is_inference(self):
    """Tensor.is_inference: False (kiln has no inference tensors)."""
    return False


def is_tensor(obj) -> bool:
    """True when ``obj`` is a kiln tensor (like ``torch.is_tensor``)."""
    return isinstance(obj, _C.TensorBase)


@checked_signature("numel(Tensor input)")
def numel(input) -> int:
    """The number of elements of ``input``."""
    return input.numel()
