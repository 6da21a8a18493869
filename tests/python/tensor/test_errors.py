"""Bad input raises a clear Python exception, never crashes: each case runs in kiln
and torch and must raise the same exception type, with torch's text (read "torch" as
"kiln") wherever the wording is part of the contract."""

import math

import numpy as np
import pytest
import torch

import kiln
from torch_compare import assert_same_error

# (id, fn(module), compare message). Messages of argument-parsing TypeErrors differ in
# detail (torch adds "(position 1)" or lists every overload), so those compare types only.
CASES = [
    # dtype= objects that are not dtypes
    ("dtype_str", lambda m: m.zeros(2, dtype="float32"), True),
    ("dtype_numpy_type", lambda m: m.zeros(2, dtype=np.float32), True),
    ("dtype_int", lambda m: m.ones(2, dtype=3), True),
    ("dtype_object_type", lambda m: m.empty(2, dtype=object), True),
    ("dtype_device", lambda m: m.tensor([1], dtype=m.device("cpu")), True),
    ("dtype_size_type", lambda m: m.full((2,), 1, dtype=m.Size), True),
    ("dtype_str_arange", lambda m: m.arange(3, dtype="int32"), False),
    ("dtype_str_linspace", lambda m: m.linspace(0, 1, 3, dtype="float64"), False),
    ("dtype_str_zeros_like", lambda m: m.zeros_like(m.ones(2), dtype="int32"), True),
    # negative sizes
    ("empty_negative", lambda m: m.empty(-1, 2), True),
    ("empty_negative_tuple", lambda m: m.empty((2, -5)), True),
    ("empty_negative_keyword", lambda m: m.empty(size=(-1,)), True),
    ("ones_negative", lambda m: m.ones(-1, 2), True),
    ("zeros_negative", lambda m: m.zeros(-1, 2), True),
    ("full_negative", lambda m: m.full((-1, 2), 1.0), True),
    ("overflowing_size", lambda m: m.empty(2**62, 2**62), True),
    ("overflowing_size_zeros", lambda m: m.zeros(2**62, 4), True),
    ("size_float", lambda m: m.zeros(2.5), False),
    ("size_str", lambda m: m.zeros("a"), False),
    ("size_float_in_tuple", lambda m: m.zeros((2, 2.5)), False),
    ("size_too_big_for_int64", lambda m: m.zeros(2**70), False),
    # ragged and malformed nested data
    ("ragged_dim1", lambda m: m.tensor([[1, 2], [3, 4, 5]]), True),
    ("ragged_dim1_short", lambda m: m.tensor([[1, 2], [3]]), True),
    ("ragged_dim1_empty", lambda m: m.tensor([[1, 2], []]), True),
    ("ragged_dim2", lambda m: m.tensor([[[1, 2]], [[3, 4, 5]]]), True),
    ("ragged_dim1_of_3", lambda m: m.tensor([[[1], [2]], [[3], [4], [5]]]), True),
    ("scalar_among_lists", lambda m: m.tensor([[1, 2], 3]), True),
    ("list_among_scalars", lambda m: m.tensor([1, [2, 3]]), True),
    ("list_among_floats", lambda m: m.tensor([1.5, [2.0]]), True),
    # strings and other non-numbers in data
    ("string", lambda m: m.tensor("abc"), True),
    ("bytes", lambda m: m.tensor(b"abc"), True),
    ("string_in_list", lambda m: m.tensor([1, "a"]), True),
    ("bytes_in_list", lambda m: m.tensor([b"a"]), True),
    ("strings_only", lambda m: m.tensor(["a", "b"]), True),
    ("string_in_nested", lambda m: m.tensor([[1], ["a"]]), True),
    ("none", lambda m: m.tensor(None), True),
    ("none_in_list", lambda m: m.tensor([1, None]), True),
    ("none_with_dtype", lambda m: m.tensor([None], dtype=m.float32), True),
    ("object_in_list", lambda m: m.tensor([object()]), False),
    ("dict", lambda m: m.tensor({1: 2}), True),
    ("set", lambda m: m.tensor({1, 2}), True),
    ("iterator", lambda m: m.tensor(iter([1, 2])), True),
    ("zero_dim_array_in_list", lambda m: m.tensor([np.array(1.5)]), True),
    ("two_element_tensors_in_list", lambda m: m.tensor([m.tensor([1.0, 2.0]), m.tensor([2.0, 3.0])]), True),
    ("int_overflow", lambda m: m.tensor([1, 2**63]), True),
    ("negative_int_overflow", lambda m: m.tensor(-(2**63) - 1), True),
    ("uint8_overflow", lambda m: m.tensor([300], dtype=m.uint8), True),
    # scalars from tensors of several elements
    ("item_of_two", lambda m: m.tensor([1, 2]).item(), True),
    ("item_of_none", lambda m: m.tensor([]).item(), True),
    ("item_of_four", lambda m: m.zeros(2, 2).item(), True),
    ("int_of_two", lambda m: int(m.tensor([1, 2])), True),
    ("float_of_two", lambda m: float(m.tensor([1.0, 2.0])), True),
    ("index_of_two", lambda m: m.tensor([1, 2]).__index__(), True),
    ("index_of_float", lambda m: [1, 2, 3][m.tensor(1.0)], True),
    ("len_of_zero_dim", lambda m: len(m.tensor(1)), True),
    ("iter_of_zero_dim", lambda m: iter(m.tensor(1)), True),
    ("bool_of_two", lambda m: bool(m.tensor([1, 2])), True),
    ("bool_of_empty", lambda m: bool(m.tensor([])), True),
    ("if_of_two", lambda m: 1 if m.ones(2, 2) else 0, True),
    # requires_grad on integer tensors
    ("requires_grad_int_tensor", lambda m: m.tensor([1], requires_grad=True), True),
    ("requires_grad_int_zeros", lambda m: m.zeros(2, dtype=m.int32, requires_grad=True), True),
    ("requires_grad_bool_full", lambda m: m.full((2,), True, requires_grad=True), True),
    ("requires_grad_method_int", lambda m: m.zeros(3, dtype=m.int32).requires_grad_(), True),
    ("requires_grad_setter_not_bool", lambda m: setattr(m.zeros(3), "requires_grad", 1), True),
    ("requires_grad_setter_int", lambda m: setattr(m.zeros(3, dtype=m.int64), "requires_grad", True), True),
    # dims and indices
    ("size_dim_out_of_range", lambda m: m.zeros(2, 3).size(2), True),
    ("size_negative_dim_out_of_range", lambda m: m.zeros(2, 3).size(-3), True),
    ("size_of_zero_dim", lambda m: m.tensor(1.0).size(0), True),
    ("stride_of_zero_dim", lambda m: m.tensor(1.0).stride(-1), True),
    ("transpose_out_of_range", lambda m: m.zeros(2, 3).transpose(0, 3), True),
    ("select_out_of_range", lambda m: m.zeros(2, 3).select(0, 2), True),
    ("view_incompatible", lambda m: m.zeros(2, 3).transpose(0, 1).view(6), True),
    ("view_bad_numel", lambda m: m.zeros(2, 3).view(7), True),
    ("getitem_out_of_range", lambda m: m.zeros(2, 3)[3], True),
    ("getitem_too_many", lambda m: m.zeros(2, 3)[0, 0, 0], True),
    ("getitem_float", lambda m: m.zeros(2, 3)[1.5], True),
    ("getitem_negative_step", lambda m: m.zeros(2, 3)[::-1], True),
    # ranges
    ("arange_zero_step", lambda m: m.arange(0, 10, 0), True),
    ("arange_wrong_sign", lambda m: m.arange(0, 10, -1), True),
    ("arange_nan", lambda m: m.arange(math.nan), True),
    ("arange_huge_int", lambda m: m.arange(2**64), True),
    ("linspace_negative_steps", lambda m: m.linspace(0, 1, -2), True),
    ("full_fill_list", lambda m: m.full((2,), [1]), False),
    ("full_huge_int", lambda m: m.full((2,), 2**64), True),
    # devices
    ("device_unknown", lambda m: m.zeros(2, device="tpu:0"), False),
    ("device_bad_string", lambda m: m.zeros(2, device="cuda:x"), True),
    ("device_float", lambda m: m.zeros(2, device=5.5), True),
    # interop
    ("from_numpy_list", lambda m: m.from_numpy([1, 2]), True),
    ("from_numpy_negative_stride", lambda m: m.from_numpy(np.arange(3.0)[::-1]), True),
    ("numpy_requires_grad", lambda m: m.ones(2, requires_grad=True).numpy(), True),
    ("numpy_bfloat16", lambda m: m.ones(2, dtype=m.bfloat16).numpy(), True),
]


@pytest.mark.parametrize("fn,message", [(f, msg) for _, f, msg in CASES], ids=[i for i, _, _ in CASES])
def test_bad_input_raises_like_torch(fn, message):
    assert_same_error(lambda: fn(kiln), lambda: fn(torch), message=message)


def test_exact_messages_named_in_the_contract():
    assert str(pytest.raises(RuntimeError, kiln.empty, -1, 2).value) == (
        "Trying to create tensor with negative dimension -1: [-1, 2]"
    )
    assert str(pytest.raises(ValueError, kiln.tensor, [[1, 2], [3, 4, 5]]).value) == (
        "expected sequence of length 2 at dim 1 (got 3)"
    )
    assert str(pytest.raises(RuntimeError, kiln.tensor([1, 2]).item).value) == (
        "a Tensor with 2 elements cannot be converted to Scalar"
    )
    assert str(pytest.raises(TypeError, kiln.zeros, 2, dtype="float32").value) == (
        "zeros(): argument 'dtype' must be kiln.dtype, not str"
    )


def test_errors_leave_no_allocations_behind():
    before = kiln.memory_stats()["allocated_bytes.all.current"]
    for fn in (lambda L: L.tensor([[1, 2], [3]]), lambda L: L.tensor([1, "a"]),
               lambda L: L.tensor([300], dtype=L.uint8), lambda L: L.full((1000,), 1e300),
               lambda L: L.linspace(0, 300, 1000, dtype=L.uint8)):
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))
    assert kiln.memory_stats()["allocated_bytes.all.current"] == before
