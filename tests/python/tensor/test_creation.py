"""kiln.tensor and the factory functions against torch: shapes, strides, dtypes, values.

Every case runs the same call through kiln and torch and compares the results
(values through numpy, bit for bit) or, for bad input, the exception type and text.
"""

import math

import numpy as np
import pytest
import torch

import kiln
from torch_compare import (
    DTYPE_NAMES,
    FLOAT_DTYPE_NAMES,
    INT_DTYPE_NAMES,
    assert_same_error,
    assert_same_outcome,
    assert_same_tensor,
    kiln_dtype,
    torch_dtype,
)

# --- kiln.tensor(data) ---------------------------------------------------------------

# (id, builder): the builder gets the module (kiln or torch) so data may hold its tensors.
TENSOR_DATA = [
    ("floats_2d", lambda m: [[1.0, 2.5], [-3.0, 4.25]]),
    ("ints_2d", lambda m: [[1, 2, 3], [4, 5, 6]]),
    ("bools", lambda m: [True, False, True]),
    ("int_and_float_promote_to_float", lambda m: [1, 2.5, 3]),
    ("nested_int_and_float", lambda m: [[1, 2], [3, 4.5]]),
    ("bool_and_int", lambda m: [True, 2]),
    ("bool_and_float", lambda m: [False, 2.0]),
    ("zero_dim_int", lambda m: 7),
    ("zero_dim_float", lambda m: -2.5),
    ("zero_dim_bool", lambda m: True),
    ("empty_list", lambda m: []),
    ("nested_empty", lambda m: [[]]),
    ("two_nested_empty", lambda m: [[], []]),
    ("deep_empty", lambda m: [[[]]]),
    ("empty_then_int_promotes", lambda m: [[], [1]]),
    ("tuple", lambda m: (1, 2, 3)),
    ("tuples_in_list", lambda m: [(1.5, 2), (3, 4)]),
    ("range", lambda m: range(4)),
    ("large_ints", lambda m: [2**62, -(2**63)]),
    ("nonfinite", lambda m: [math.nan, math.inf, -math.inf, -0.0]),
    ("np_float32_scalar", lambda m: np.float32(2.5)),
    ("np_float64_scalar", lambda m: np.float64(2.5)),
    ("np_float16_scalar", lambda m: np.float16(1.5)),
    ("np_int32_scalar", lambda m: np.int32(7)),
    ("np_int16_scalar", lambda m: np.int16(-3)),
    ("np_uint8_scalar", lambda m: np.uint8(200)),
    ("np_bool_scalar", lambda m: np.bool_(True)),
    ("np_float32_and_int", lambda m: [np.float32(2.5), 1]),
    ("np_int16_and_int", lambda m: [np.int16(2), 1]),
    ("np_float64_in_list", lambda m: [np.float64(2.5), 1.0]),
    ("np_float16_and_float", lambda m: [np.float16(1), 2.5]),
    ("np_int8_and_bool", lambda m: [np.int8(1), True]),
    ("np_arrays_in_list", lambda m: [np.array([1, 2], np.int16), np.array([3, 4], np.int16)]),
    ("np_array", lambda m: np.arange(6, dtype=np.int32).reshape(2, 3)),
    ("np_array_noncontiguous", lambda m: np.arange(12.0).reshape(3, 4)[:, ::2]),
    ("zero_dim_tensors", lambda m: [m.tensor(1.5), m.tensor(2.0)]),
    ("one_element_tensors", lambda m: [m.tensor([1.5]), m.tensor([2.0])]),
    ("int32_tensor_and_int", lambda m: [m.tensor(1, dtype=m.int32), 2]),
    ("float64_tensor_and_int", lambda m: [m.tensor(1.0, dtype=m.float64), 1]),
    ("tensor", lambda m: m.tensor([[1, 2], [3, 4]], dtype=m.int16)),
]


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays")
@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")
@pytest.mark.parametrize("build", [b for _, b in TENSOR_DATA], ids=[i for i, _ in TENSOR_DATA])
def test_tensor_from_data(build):
    assert_same_tensor(kiln.tensor(build(kiln)), torch.tensor(build(torch)))


DATA_FOR_DTYPES = {
    "ints": [[0, 1, 2], [3, 100, 7]],
    "floats": [[0.5, 1.25, 2.0], [3.75, 100.5, 7.0]],
    "bools": [[True, False, True], [False, False, True]],
}


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("data", DATA_FOR_DTYPES.values(), ids=DATA_FOR_DTYPES.keys())
def test_tensor_with_dtype(data, dtype):
    k = kiln.tensor(data, dtype=kiln_dtype(dtype))
    assert k.dtype is kiln_dtype(dtype)
    assert_same_tensor(k, torch.tensor(data, dtype=torch_dtype(dtype)))


@pytest.mark.parametrize("dtype", [float, int, bool], ids=["float", "int", "bool"])
def test_tensor_with_python_type_as_dtype(dtype):
    assert_same_tensor(kiln.tensor([0, 1, 2], dtype=dtype), torch.tensor([0, 1, 2], dtype=dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPE_NAMES)
def test_tensor_requires_grad_on_float(dtype):
    k = kiln.tensor([1.0, 2.0], dtype=kiln_dtype(dtype), requires_grad=True)
    t = torch.tensor([1.0, 2.0], dtype=torch_dtype(dtype), requires_grad=True)
    assert k.requires_grad is True is t.requires_grad
    assert_same_tensor(k, t)


@pytest.mark.parametrize("dtype", INT_DTYPE_NAMES + ["bool", None])
def test_tensor_requires_grad_on_int_raises(dtype):
    assert_same_error(
        lambda: kiln.tensor([1, 0], dtype=dtype and kiln_dtype(dtype), requires_grad=True),
        lambda: torch.tensor([1, 0], dtype=dtype and torch_dtype(dtype), requires_grad=True),
    )


# Values that do not fit the requested integer dtype: PyTorch refuses them (negative
# Python ints may wrap into uint8).
@pytest.mark.parametrize(
    "data,dtype",
    [([300], "uint8"), ([-256], "uint8"), ([1.7, -2.7], "uint8"), ([200], "int8"), ([2**40], "int32"),
     ([math.nan], "int32"), ([math.inf], "int64"), ([1e20], "int64"), ([[1, 2**16]], "int16")],
)
def test_tensor_integer_overflow_raises(data, dtype):
    assert_same_error(lambda: kiln.tensor(data, dtype=kiln_dtype(dtype)), lambda: torch.tensor(data, dtype=torch_dtype(dtype)))


@pytest.mark.parametrize(
    "data,dtype", [([-1, -255], "uint8"), ([1.7, -2.7], "int32"), ([1e5], "float16"), ([1e300], "float32"), ([0.0, 0.5], "bool")]
)
def test_tensor_conversions_that_fit(data, dtype):
    assert_same_tensor(kiln.tensor(data, dtype=kiln_dtype(dtype)), torch.tensor(data, dtype=torch_dtype(dtype)))


def test_tensor_copies_its_data():
    source = kiln.tensor([1.0, 2.0])
    copy = kiln.tensor(source)
    assert copy.data_ptr() != source.data_ptr()
    array = np.zeros(3)
    from_array = kiln.tensor(array)
    array[0] = 5.0
    assert from_array.tolist() == [0.0, 0.0, 0.0]


# --- empty, zeros, ones: the size forms -----------------------------------------------

SIZE_FORMS = [
    ("varargs", (2, 3), {}),
    ("tuple", ((2, 3),), {}),
    ("list", ([2, 3],), {}),
    ("size_keyword", (), {"size": (2, 3)}),
    ("size_keyword_list", (), {"size": [4]}),
    ("zero_dim_tuple", ((),), {}),
    ("zero_size", (0, 3), {}),
    ("three_dims", (2, 1, 3), {}),
    ("numpy_ints", (np.int64(2), np.int32(3)), {}),
    ("one_int", (5,), {}),
]


@pytest.mark.parametrize("fn", ["empty", "zeros", "ones"])
@pytest.mark.parametrize("args,kwargs", [(a, k) for _, a, k in SIZE_FORMS], ids=[i for i, _, _ in SIZE_FORMS])
def test_factory_size_forms(fn, args, kwargs):
    k = getattr(kiln, fn)(*args, **kwargs)
    t = getattr(torch, fn)(*args, **kwargs)
    assert_same_tensor(k, t, check_values=fn != "empty")
    assert isinstance(k.shape, kiln.Size)


def test_factory_size_from_kiln_size():
    assert kiln.zeros(kiln.Size([2, 3])).shape == (2, 3)
    assert kiln.ones(kiln.zeros(4, 5).shape).shape == (4, 5)


@pytest.mark.parametrize("fn", ["empty", "zeros", "ones"])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_factory_dtypes(fn, dtype):
    k = getattr(kiln, fn)(2, 3, dtype=kiln_dtype(dtype))
    assert k.dtype is kiln_dtype(dtype)
    assert_same_tensor(k, getattr(torch, fn)(2, 3, dtype=torch_dtype(dtype)), check_values=fn != "empty")


@pytest.mark.parametrize("fn", ["empty", "zeros", "ones"])
def test_factory_requires_grad(fn):
    assert getattr(kiln, fn)(2, requires_grad=True).requires_grad
    assert not getattr(kiln, fn)(2).requires_grad


@pytest.mark.parametrize("fn", ["empty", "zeros", "ones"])
@pytest.mark.parametrize(
    "args,kwargs",
    [((), {}), ((2,), {"foo": 1}), ((2,), {"size": (2,)})],
    ids=["no_size", "unknown_keyword", "size_twice"],
)
def test_factory_bad_arguments_raise_type_error(fn, args, kwargs):
    with pytest.raises(TypeError) as torch_error:
        getattr(torch, fn)(*args, **kwargs)
    with pytest.raises(TypeError) as kiln_error:
        getattr(kiln, fn)(*args, **kwargs)
    if not kwargs:
        assert str(kiln_error.value) == str(torch_error.value)


def test_factory_unknown_keyword_message():
    with pytest.raises(TypeError, match="zeros\\(\\) got an unexpected keyword argument 'dtyp'"):
        kiln.zeros(2, dtyp=kiln.int32)


# --- full ----------------------------------------------------------------------------

FULL_CASES = [
    ("int_infers_int64", (2, 3), 7, None),
    ("float_infers_default", (2,), 1.5, None),
    ("bool_infers_bool", (2,), True, None),
    ("negative_int", (3,), -1, None),
    ("np_int32_infers_int64", (2,), np.int32(3), None),
    ("np_float32_infers_default", (2,), np.float32(2.5), None),
    ("np_bool_infers_bool", (2,), np.bool_(True), None),
    ("np_float64", (2,), np.float64(0.1), None),
    ("explicit_float64", (2, 3), 7, "float64"),
    ("float_into_int32_truncates", (2,), 1.5, "int32"),
    ("minus_one_wraps_into_uint8", (2,), -1, "uint8"),
    ("int_into_float16", (2,), 300, "float16"),
    ("int_into_bool", (2,), 300, "bool"),
    ("float_into_bfloat16", (2,), 0.1, "bfloat16"),
    ("inf_into_float16", (2,), math.inf, "float16"),
    ("zero_dim", (), 3, None),
    ("list_size", [2, 2], 0.5, None),
    ("empty_size", (0,), 1, None),
]


@pytest.mark.parametrize(
    "size,value,dtype", [c[1:] for c in FULL_CASES], ids=[c[0] for c in FULL_CASES]
)
def test_full(size, value, dtype):
    k = kiln.full(size, value, dtype=dtype and kiln_dtype(dtype))
    t = torch.full(size, value, dtype=dtype and torch_dtype(dtype))
    assert_same_tensor(k, t)


def test_full_fill_value_from_zero_dim_tensor():
    assert_same_tensor(kiln.full((2,), kiln.tensor(2.5)), torch.full((2,), torch.tensor(2.5)))


FULL_ERRORS = [
    ("int_size", 2, 3, None),
    ("str_value", (2,), "a", None),
    ("none_value", (2,), None, None),
    ("list_value", (2,), [1], None),
    ("uint8_overflow", (2,), 300, "uint8"),
    ("int8_overflow", (2,), 300, "int8"),
    ("int32_inf", (2,), math.inf, "int32"),
    ("int32_nan", (2,), math.nan, "int32"),
    ("int16_overflow", (2,), 2**40, "int16"),
    ("int64_overflow", (2,), 1e20, "int64"),
    ("float32_overflow", (2,), 1e300, "float32"),
    ("float16_overflow", (2,), 1e10, "float16"),
    ("negative_size", (-1, 2), 1.0, None),
    ("huge_int_value", (2,), 2**64, None),
]


@pytest.mark.parametrize(
    "size,value,dtype", [c[1:] for c in FULL_ERRORS], ids=[c[0] for c in FULL_ERRORS]
)
def test_full_errors(size, value, dtype):
    # Messages of argument TypeErrors differ ("(position 2)"); overflow messages must match,
    # with torch's C++ namespace c10 read as kiln.
    kiln_error = assert_same_error(
        lambda: kiln.full(size, value, dtype=dtype and kiln_dtype(dtype)),
        lambda: torch.full(size, value, dtype=dtype and torch_dtype(dtype)),
        message=False,
    )
    if "overflow" in str(kiln_error):
        torch_error = pytest.raises(Exception, torch.full, size, value, dtype=dtype and torch_dtype(dtype)).value
        assert str(kiln_error) == str(torch_error).replace("c10::", "kiln::")


# --- arange --------------------------------------------------------------------------

ARANGE_RANGES = [
    (5,),
    (2, 5),
    (0, 10, 3),
    (10, 0, -3),
    (0, -7, -2),
    (5.0,),
    (0, 1, 0.1),
    (1, 2.5, 0.5),
    (-1.5, 1.5, 0.25),
    (1, 4, 0.7),
    (0, 10, 0.3),
    (0.1, 7.3, 0.01),
    (-5, 5, 0.37),
    (3, -3, -0.11),
    (0, 100, 1 / 3),
    (0.5, 3, 1),
    (-0.5, 3.5, 1.5),
    (0, 5, 1.5),
    (2, 2, 1),
    (2.5, 2.5, 0.5),
    (1e20, 1e20 + 1),
    (0, 2000, 0.7),
    (-100, 100, 0.01),
    (0, 32768, 1.0),
    (True, 5),
    (np.int32(3),),
    (np.float32(3.0),),
]
# Beyond PyTorch's parallel grain (32768 elements) the element where its vector blocks
# restart depends on torch's thread count, and with it the rounding of float results.


ARANGE_DTYPES = [None, "float32", "float64", "float16", "bfloat16", "int32", "int64", "int16"]


def _arange_case_fits(args, dtype) -> bool:
    if dtype in ("int16", "float16") and max(abs(float(a)) for a in args) > 2000:
        return False  # the range exceeds the dtype
    # torch divides by zero computing this length (int64 output, float step below 1): not a case to run.
    return not (dtype == "int64" and len(args) == 3 and isinstance(args[2], float) and int(args[2]) == 0)


@pytest.mark.parametrize(
    "args,dtype", [(a, d) for a in ARANGE_RANGES for d in ARANGE_DTYPES if _arange_case_fits(a, d)]
)
def test_arange(args, dtype):
    assert_same_outcome(  # (1e20, 1e20 + 1) raises for integer dtypes, in both
        lambda: kiln.arange(*args, dtype=dtype and kiln_dtype(dtype)),
        lambda: torch.arange(*args, dtype=dtype and torch_dtype(dtype)),
    )


def test_arange_keywords():
    assert_same_tensor(kiln.arange(start=1, end=4), torch.arange(start=1, end=4))
    assert_same_tensor(kiln.arange(end=4), torch.arange(end=4))
    assert_same_tensor(kiln.arange(0, 3, step=1.5), torch.arange(0, 3, step=1.5))
    assert_same_tensor(kiln.arange(kiln.tensor(3)), torch.arange(torch.tensor(3)))


ARANGE_ERRORS = [
    ((0, 1, 0), None),
    ((0, 10, 0.0), None),
    ((0, 10, -1), None),
    ((0, -1, 0.3), None),
    ((math.inf,), None),
    ((0, math.nan), None),
    ((0, 1e19, 1), None),
    ((0, 5), "bool"),
]


@pytest.mark.parametrize("args,dtype", ARANGE_ERRORS, ids=[f"{a}-{d}" for a, d in ARANGE_ERRORS])
def test_arange_errors(args, dtype):
    assert_same_error(
        lambda: kiln.arange(*args, dtype=dtype and kiln_dtype(dtype)),
        lambda: torch.arange(*args, dtype=dtype and torch_dtype(dtype)),
    )


# --- linspace ------------------------------------------------------------------------

_rng = np.random.default_rng(1234)
LINSPACE_CASES = (
    [(0, 1, steps) for steps in range(0, 40)]
    + [(-3.7, 11.2, steps) for steps in (5, 33, 64, 100, 257, 1000, 4097, 32768)]
    + [(1, 0, 50), (5, 5, 40), (0, 1e-3, 77), (-1e6, 1e6, 999), (3, 10, 1), (2.7, 1, 1), (True, 5, 3)]
    + [(0, math.inf, 3), (math.nan, 1, 3)]
    + [
        (round(float(_rng.normal() * 10), 3), round(float(_rng.normal() * 100), 3), int(_rng.integers(2, 3000)))
        for _ in range(40)
    ]
)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("start,end,steps", LINSPACE_CASES)
def test_linspace_float_values_exactly_equal(start, end, steps, dtype):
    k = kiln.linspace(start, end, steps, dtype=kiln_dtype(dtype))
    t = torch.linspace(start, end, steps, dtype=torch_dtype(dtype))
    assert_same_tensor(k, t)  # bit for bit (NaN where torch has NaN)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64", "int32", "int8", "uint8", "int16"])
@pytest.mark.parametrize(
    "start,end,steps",
    [(0, 10, 5), (10, 0, 5), (-5, 5, 5), (0.5, 10.5, 4), (0, 1, 1), (2.7, 1, 1), (0, 100, 11), (0, 1, 11), (-3, 10, 7),
     (0, 120, 33), (0, 0, 0)],
)
def test_linspace_other_dtypes(start, end, steps, dtype):
    k = kiln.linspace(start, end, steps, dtype=kiln_dtype(dtype))
    t = torch.linspace(start, end, steps, dtype=torch_dtype(dtype))
    assert_same_tensor(k, t)


def test_linspace_default_dtype_and_scalar_forms():
    assert_same_tensor(kiln.linspace(0, 10, 7), torch.linspace(0, 10, 7))
    assert_same_tensor(kiln.linspace(0, 1, steps=3), torch.linspace(0, 1, steps=3))
    assert_same_tensor(kiln.linspace(0, 1, np.int64(3)), torch.linspace(0, 1, np.int64(3)))
    assert_same_tensor(
        kiln.linspace(kiln.tensor(0.0), kiln.tensor(1.0), 3), torch.linspace(torch.tensor(0.0), torch.tensor(1.0), 3)
    )


@pytest.mark.parametrize(
    "args,dtype,message",
    [((0, 1, -1), None, True), ((0, 1, 5), "bool", True), ((0, 1, 2.5), None, False), ((0, 1, True), None, False),
     ((0, 300, 3), "uint8", False)],
)
def test_linspace_errors(args, dtype, message):
    assert_same_error(
        lambda: kiln.linspace(*args, dtype=dtype and kiln_dtype(dtype)),
        lambda: torch.linspace(*args, dtype=dtype and torch_dtype(dtype)),
        message=message,
    )


# --- the *_like forms ----------------------------------------------------------------

LIKE_INPUTS = [
    ("contiguous", lambda m: m.ones(2, 3)),
    ("int32", lambda m: m.ones(2, 3, dtype=m.int32)),
    ("transposed", lambda m: m.ones(4, 3).transpose(0, 1)),
    ("permuted_3d", lambda m: m.ones(2, 3, 4).transpose(0, 2).transpose(1, 2)),
    ("column_slice", lambda m: m.ones(4, 6)[:, ::2]),
    ("row_slice", lambda m: m.ones(4, 6)[::2, :]),
    ("transposed_slice", lambda m: m.ones(4, 6).transpose(0, 1)[::2]),
    ("size_one_dims", lambda m: m.ones(3, 1, 4).transpose(0, 2)),
    ("zero_stride", lambda m: m.ones(4).as_strided((3, 4), (0, 1))),
    ("overlapping", lambda m: m.ones(2, 3).as_strided((2, 2), (1, 2))),
    ("empty_transposed", lambda m: m.zeros(0, 3).transpose(0, 1)),
    ("zero_dim", lambda m: m.tensor(2.5)),
]

LIKE_CALLS = [
    ("empty_like", lambda m, x: m.empty_like(x)),
    ("zeros_like", lambda m, x: m.zeros_like(x)),
    ("ones_like", lambda m, x: m.ones_like(x)),
    ("full_like_float", lambda m, x: m.full_like(x, 2.75)),
    ("full_like_int_value", lambda m, x: m.full_like(x, 7)),
    ("zeros_like_float64", lambda m, x: m.zeros_like(x, dtype=m.float64)),
    ("ones_like_int8", lambda m, x: m.ones_like(x, dtype=m.int8)),
    ("full_like_bool", lambda m, x: m.full_like(x, 2, dtype=m.bool)),
]


@pytest.mark.parametrize("name,call", LIKE_CALLS, ids=[i for i, _ in LIKE_CALLS])
@pytest.mark.parametrize("make", [m for _, m in LIKE_INPUTS], ids=[i for i, _ in LIKE_INPUTS])
def test_like_keeps_layout(make, name, call):
    k = call(kiln, make(kiln))
    t = call(torch, make(torch))
    assert_same_tensor(k, t, check_values=name != "empty_like")  # empty_like's values are undefined


@pytest.mark.parametrize("fn", ["empty_like", "zeros_like", "ones_like"])
def test_like_requires_grad_and_errors(fn):
    assert getattr(kiln, fn)(kiln.ones(2), requires_grad=True).requires_grad
    assert_same_error(
        lambda: getattr(kiln, fn)(kiln.ones(2, dtype=kiln.int32), requires_grad=True),
        lambda: getattr(torch, fn)(torch.ones(2, dtype=torch.int32), requires_grad=True),
    )
    assert_same_error(lambda: getattr(kiln, fn)([1.0, 2.0]), lambda: getattr(torch, fn)([1.0, 2.0]))


# fill_ on contiguous memory copies a filled prefix forward in blocks (Factories.cpp
# fill_contiguous): every length around the hand-filled head, the doubling and the 4 KiB blocks.
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
                                   "uint8", "bool"])
@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 33, 1023, 1024, 1025, 2048 + 3, 4096 * 3 + 5, 70001])
def test_fill_contiguous_lengths(dtype, n):
    value = True if dtype == "bool" else 3
    k = kiln.full((n,), value, dtype=getattr(kiln, dtype))
    t = torch.full((n,), value, dtype=getattr(torch, dtype))
    assert k.tolist() == t.tolist()
    base = kiln.zeros(n + 2, dtype=getattr(kiln, dtype))
    base[1:n + 1].fill_(value)  # an offset view: the prefix is not at an allocation's start
    zero = False if dtype == "bool" else 0
    assert base.tolist() == [zero] + [value] * n + [zero]
