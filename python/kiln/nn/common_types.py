"""kiln.nn.common_types: torch.nn.common_types' type aliases (for annotations),
over kiln.Tensor. A scalar or a tuple of them, for sizes, optional sizes, ratios
and tensors; nothing here is used at run time."""

from typing import TypeVar, Union

from kiln._tensor import Tensor

T = TypeVar("T")
# A value given as a scalar (broadcast to every dim) or as a tuple: of unknown length, or of 1 to 6 entries.
_scalar_or_tuple_any_t = Union[T, tuple[T, ...]]
_scalar_or_tuple_1_t = Union[T, tuple[T]]
_scalar_or_tuple_2_t = Union[T, tuple[T, T]]
_scalar_or_tuple_3_t = Union[T, tuple[T, T, T]]
_scalar_or_tuple_4_t = Union[T, tuple[T, T, T, T]]
_scalar_or_tuple_5_t = Union[T, tuple[T, T, T, T, T]]
_scalar_or_tuple_6_t = Union[T, tuple[T, T, T, T, T, T]]

# Sizes (kernel sizes, strides, padding ...).
_size_any_t = _scalar_or_tuple_any_t[int]
_size_1_t = _scalar_or_tuple_1_t[int]
_size_2_t = _scalar_or_tuple_2_t[int]
_size_3_t = _scalar_or_tuple_3_t[int]
_size_4_t = _scalar_or_tuple_4_t[int]
_size_5_t = _scalar_or_tuple_5_t[int]
_size_6_t = _scalar_or_tuple_6_t[int]

# Optional sizes (adaptive pooling's output sizes).
_size_any_opt_t = _scalar_or_tuple_any_t[Union[int, None]]
_size_2_opt_t = _scalar_or_tuple_2_t[Union[int, None]]
_size_3_opt_t = _scalar_or_tuple_3_t[Union[int, None]]

# Per-dim ratios (upsampling's scale factors).
_ratio_2_t = _scalar_or_tuple_2_t[float]
_ratio_3_t = _scalar_or_tuple_3_t[float]
_ratio_any_t = _scalar_or_tuple_any_t[float]

_tensor_list_t = _scalar_or_tuple_any_t[Tensor]

# Max pooling's result, with or without its indices.
_maybe_indices_t = _scalar_or_tuple_2_t[Tensor]
