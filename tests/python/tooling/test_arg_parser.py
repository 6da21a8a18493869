"""PythonArgParser, the argument parser of the generated op bindings, against PyTorch.

Three tables. MATCHES: calls that parse, with the signature that must win and the
values the accessors must read back (through ``kiln._C._test_parse_args``, which
returns ``(index, values)``). TORCH_ERRORS: bad calls made both to a torch function
and to a kiln parser built from that function's own python signatures; the
exception type and message must be torch's, with ``torch.`` read as ``kiln.``.
KILN_ERRORS: bad calls torch has no twin for, with the message spelled out.
Text signatures and the fast-call builtin (``inspect.signature``) close the file.
"""

import inspect
import math

import numpy as np
import pytest
import torch

import kiln
from kiln._C import _test_arg_parser_builtin, _test_parse_args, _test_text_signature


class Arg:
    """A value built in either library: Arg(lambda L: L.ones(2)) is kiln.ones(2) or torch.ones(2)."""

    def __init__(self, name, make):
        self.name, self.make = name, make

    def __repr__(self):
        return self.name


T = Arg("T", lambda L: L.ones(2))
U = Arg("U", lambda L: L.zeros(2))
T12 = Arg("T12", lambda L: L.ones(1, 2))
I0 = Arg("I0", lambda L: L.tensor(3))  # 0-dim integer tensor
F0 = Arg("F0", lambda L: L.tensor(2.5))  # 0-dim float tensor
B0 = Arg("B0", lambda L: L.tensor(True))
V1 = Arg("V1", lambda L: L.tensor([2]))  # one element, one dim
V2 = Arg("V2", lambda L: L.tensor([3, 2]))
G0 = Arg("G0", lambda L: L.tensor(2.5).requires_grad_())  # 0-dim, requires grad
F64 = Arg("F64", lambda L: L.float64)
I32 = Arg("I32", lambda L: L.int32)


def build(lib, value, made):
    """`value` with every Arg made in `lib`; one object per Arg per call (kept in `made`)."""
    if isinstance(value, Arg):
        if value not in made:
            made[value] = value.make(lib)
        return made[value]
    if isinstance(value, list):
        return [build(lib, v, made) for v in value]
    if isinstance(value, tuple):
        return tuple(build(lib, v, made) for v in value)
    if isinstance(value, dict):
        return {k: build(lib, v, made) for k, v in value.items()}
    return value


# Signatures. Those named after a torch function are torch 2.13's own python
# signatures for it, so the parser's errors can be compared word for word.
ADD = ["add(Tensor input, Tensor other, *, Scalar alpha=1)", "add(Tensor input, Scalar other, Scalar alpha=1)"]
TORCH_ADD = [
    "add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)",
    "add(Tensor input, Scalar alpha, Tensor other, *, Tensor out=None)|deprecated",
]
SUM = [
    "sum(Tensor input, *, ScalarType? dtype=None)",
    "sum(Tensor input, IntArrayRef[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor out=None)",
]
METHOD_SUM = ["sum(*, ScalarType? dtype=None)", "sum(IntArrayRef[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)"]
ZEROS = [
    "zeros(IntArrayRef size, *, Tensor out=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=False, bool? requires_grad=False)"
]
SIMPLE_ZEROS = ["zeros(IntArrayRef size, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False)"]
FULL = [
    "full(IntArrayRef size, Scalar fill_value, *, Tensor out=None, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=False, bool? requires_grad=False)"
]
RAND = [
    "rand(SymIntArrayRef size, *, Generator? generator, Tensor out=None, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=False, bool? requires_grad=False)",
    "rand(SymIntArrayRef size, *, Tensor out=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=False, bool? requires_grad=False)",
]
EMPTY_LIKE = [
    "empty_like(Tensor input, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=False, bool? requires_grad=False, MemoryFormat? memory_format=None)"
]
VIEW = ["view(ScalarType dtype)", "view(SymIntArrayRef size)"]
PERMUTE = ["permute(IntArrayRef dims)"]
CLAMP = [
    "clamp(Tensor input, Tensor? min=None, Tensor? max=None, *, Tensor out=None)",
    "clamp(Tensor input, Scalar? min=None, Scalar? max=None, *, Tensor out=None)",
]
CAT = ["cat(TensorList tensors, int64_t dim=0, *, Tensor out=None)"]
DIV = [
    "div(Tensor input, Tensor other, *, Tensor out=None)",
    "div(Tensor input, Tensor other, *, c10::string_view? rounding_mode, Tensor out=None)",
    "div(Tensor input, Scalar other, *, c10::string_view? rounding_mode)",
]
FLATTEN = ["flatten(Tensor input, int64_t start_dim=0, int64_t end_dim=-1)"]
TRANSPOSE = ["transpose(Tensor input, int64_t dim0, int64_t dim1)"]
ISCLOSE = ["isclose(Tensor input, Tensor other, double rtol=1e-05, double atol=1e-08, bool equal_nan=False)"]
MAX_POOL1D = [
    "max_pool1d(Tensor input, IntArrayRef[1] kernel_size, IntArrayRef[1] stride=[], IntArrayRef[1] padding=0, "
    "IntArrayRef[1] dilation=1, bool ceil_mode=False)"
]
MAX_POOL2D = [
    "max_pool2d(Tensor input, IntArrayRef[2] kernel_size, IntArrayRef[2] stride=[], IntArrayRef[2] padding=0, "
    "IntArrayRef[2] dilation=1, bool ceil_mode=False)"
]
INDEX_PUT = ["index_put(Tensor input, c10::List<::std::optional<Tensor>> indices, Tensor values, bool accumulate=False)"]
SELECT_SCATTER = ["select_scatter(Tensor input, Tensor src, int64_t dim, SymInt index)"]
BMM = [
    "bmm(Tensor input, Tensor mat2, *, Tensor out=None)",
    "bmm(Tensor input, Tensor mat2, ScalarType out_dtype, *, Tensor out=None)",
]
STD = [
    "std(Tensor input, IntArrayRef[1]? dim, bool unbiased=True, bool keepdim=False, *, Tensor out=None)",
    "std(Tensor input, IntArrayRef[1]? dim=None, *, Scalar? correction=None, bool keepdim=False, Tensor out=None)",
    "std(Tensor input, bool unbiased=True)",
]
NARROW = [
    "narrow(Tensor input, int64_t dim, Tensor start, SymInt length)",
    "narrow(Tensor input, int64_t dim, SymInt start, SymInt length)",
]
SQUEEZE = ["squeeze(Tensor input)", "squeeze(Tensor input, int64_t dim)", "squeeze(Tensor input, IntArrayRef dim)"]
WHERE = [
    "where(Tensor condition)",
    "where(Tensor condition, Tensor input, Tensor other, *, Tensor out=None)",
    "where(Tensor condition, Scalar self, Tensor other)",
    "where(Tensor condition, Tensor input, Scalar other)",
    "where(Tensor condition, Scalar self, Scalar other)",
]
TO = [
    "to(Device? device=None, ScalarType? dtype=None, bool non_blocking=False, bool copy=False, *, "
    "MemoryFormat? memory_format=None)",
    "to(ScalarType dtype, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
    "to(Tensor tensor, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
]
ARANGE = [
    "arange(Scalar end, *, Tensor out=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=False, bool? requires_grad=False)",
    "arange(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=False, bool? requires_grad=False)",
    "arange(Scalar start, Scalar end, Scalar step=1, *, Tensor out=None, ScalarType? dtype=None, "
    "Layout? layout=None, Device? device=None, bool? pin_memory=False, bool? requires_grad=False)",
]
PAD = ['pad(Tensor input, SymIntArrayRef pad, c10::string_view mode="constant", double? value=None)']
MISC = [
    "misc(int? a=None, bool? b=None, double? c=None, Scalar? d=None, ScalarType dtype=torch.int64, Device device=cpu, "
    "str? s=None, Tensor?[] ts=None, int[] dims=[0,1], int[3] three=7, Scalar e=2.5, Scalar f=True)"
]

CPU = kiln.device("cpu")
CUDA0 = kiln.device("cuda", 0)
_ = None  # reads as "default" in the value lists

# (id, signatures, args, kwargs, matched index, values read back)
MATCHES = [
    # positional, keyword, defaults
    ("add_positional", ADD, (T, U), {}, 0, [T, U, 1]),
    ("add_keyword", ADD, (T,), {"other": U}, 0, [T, U, 1]),
    ("add_all_keywords", ADD, (), {"input": T, "other": U, "alpha": 3}, 0, [T, U, 3]),
    ("add_alpha_float", ADD, (T, U), {"alpha": 2.5}, 0, [T, U, 2.5]),
    ("add_alpha_bool", ADD, (T, U), {"alpha": True}, 0, [T, U, True]),
    ("add_alpha_0dim_int", ADD, (T, U), {"alpha": I0}, 0, [T, U, 3]),
    ("add_alpha_0dim_float", ADD, (T, U), {"alpha": F0}, 0, [T, U, 2.5]),
    ("add_alpha_numpy_int", ADD, (T, U), {"alpha": np.int64(4)}, 0, [T, U, 4]),
    ("add_numpy_aliases", ADD, (), {"x1": T, "x2": U}, 0, [T, U, 1]),
    # overloads are tried in order: Tensor first, then the Scalar one for numbers
    ("add_scalar_other", ADD, (T, 2), {}, 1, [T, 2, 1]),
    ("add_scalar_positional_alpha", ADD, (T, 2.5, 3), {}, 1, [T, 2.5, 3]),
    ("add_scalar_keyword", ADD, (T,), {"other": 2}, 1, [T, 2, 1]),
    ("add_0dim_tensor_is_tensor", ADD, (T, I0), {}, 0, [T, I0, 1]),
    ("add_numpy_float_other", ADD, (T, np.float32(0.5)), {}, 1, [T, 0.5, 1]),
    ("to_device_str", TO, ("cpu",), {}, 0, [CPU, _, False, False, _]),
    ("to_device_index", TO, (0,), {}, 0, [CUDA0, _, False, False, _]),
    ("to_device_object", TO, (CPU,), {"copy": True}, 0, [CPU, _, False, True, _]),
    ("to_dtype_keyword", TO, (), {"dtype": I32}, 0, [_, I32, False, False, _]),
    ("to_dtype", TO, (F64, True), {}, 1, [F64, True, False, _]),
    ("to_tensor", TO, (T,), {}, 2, [T, False, False, _]),
    ("arange_end", ARANGE, (10,), {}, 0, [10, _, _, _, _, False, False]),
    ("arange_start_end", ARANGE, (1, 2.5), {}, 1, [1, 2.5, _, _, _, False, False]),
    ("arange_step", ARANGE, (1, 10, 2), {}, 2, [1, 10, 2, _, _, _, _, False, False]),
    ("where_scalar_self", WHERE, (T, 1, U), {}, 2, [T, 1, U]),
    ("where_scalars", WHERE, (T, 1, 2.0), {}, 4, [T, 1, 2.0]),
    ("rand_without_generator", RAND, (2, 3), {}, 1, [[2, 3], _, _, _, _, False, False]),
    ("rand_generator_none", RAND, (2,), {"generator": None}, 0, [[2], _, _, _, _, _, False, False]),
    # optionals and None
    ("clamp_nothing", CLAMP, (T,), {}, 0, [T, _, _, _]),
    ("clamp_nones", CLAMP, (T, None, None), {}, 0, [T, _, _, _]),
    ("clamp_tensor", CLAMP, (T, U), {}, 0, [T, U, _, _]),
    ("clamp_scalar_max", CLAMP, (T, None, 2), {}, 1, [T, _, 2, _]),
    ("clamp_scalar_min_keyword", CLAMP, (T,), {"min": 0.5}, 1, [T, 0.5, _, _]),
    ("div_plain", DIV, (T, U), {}, 0, [T, U, _]),
    ("div_rounding", DIV, (T, U), {"rounding_mode": "floor"}, 1, [T, U, "floor", _]),
    ("div_rounding_none", DIV, (T, U), {"rounding_mode": None}, 1, [T, U, _, _]),
    ("div_rounding_bytes", DIV, (T, U), {"rounding_mode": b"trunc"}, 1, [T, U, "trunc", _]),
    ("div_scalar_rounding", DIV, (T, 2), {"rounding_mode": "trunc"}, 2, [T, 2, "trunc"]),
    ("misc_defaults", MISC, (), {}, 0, [_, _, _, _, kiln.int64, CPU, _, _, [0, 1], [7, 7, 7], 2.5, True]),
    ("misc_values", MISC, (1, True, 2, 3.5), {"s": "x", "ts": [T, None], "three": [1, 2, 3], "dtype": F64},
     0, [1, True, 2.0, 3.5, F64, CPU, "x", [T, None], [0, 1], [1, 2, 3], 2.5, True]),
    ("misc_nones", MISC, (None, None, None, None), {"s": None, "ts": None}, 0,
     [_, _, _, _, kiln.int64, CPU, _, _, [0, 1], [7, 7, 7], 2.5, True]),
    # keyword-only parameters by keyword
    ("sum_dtype", SUM, (T,), {"dtype": F64}, 0, [T, F64]),
    ("sum_dim", SUM, (T, 0), {}, 1, [T, [0], False, _, _]),
    ("sum_dims_keepdim", SUM, (T, (0, 1), True), {}, 1, [T, [0, 1], True, _, _]),
    ("sum_all_keywords", SUM, (T,), {"dim": [0], "keepdim": True, "dtype": F64}, 1, [T, [0], True, F64, _]),
    ("sum_dim_none", SUM, (T, None), {}, 1, [T, _, False, _, _]),
    ("sum_numpy_aliases", SUM, (), {"a": T, "axis": 0, "keepdims": True}, 1, [T, [0], True, _, _]),
    ("method_sum", METHOD_SUM, (), {}, 0, [_]),
    ("method_sum_dim", METHOD_SUM, (1,), {}, 1, [[1], False, _]),
    # int lists: varargs, sequences, int[N] broadcast
    ("zeros_varargs", SIMPLE_ZEROS, (2, 3), {}, 0, [[2, 3], _, _, False]),
    ("zeros_one_int", SIMPLE_ZEROS, (2,), {}, 0, [[2], _, _, False]),
    ("zeros_tuple", SIMPLE_ZEROS, ((2, 3),), {}, 0, [[2, 3], _, _, False]),
    ("zeros_list", SIMPLE_ZEROS, ([2, 3],), {}, 0, [[2, 3], _, _, False]),
    ("zeros_size_object", SIMPLE_ZEROS, (kiln.Size([4, 5]),), {}, 0, [[4, 5], _, _, False]),
    ("zeros_empty", SIMPLE_ZEROS, ((),), {}, 0, [[], _, _, False]),
    ("zeros_no_args", SIMPLE_ZEROS, (), {"size": []}, 0, [[], _, _, False]),
    ("zeros_keyword_size", SIMPLE_ZEROS, (), {"size": (4,)}, 0, [[4], _, _, False]),
    ("zeros_varargs_then_keywords", SIMPLE_ZEROS, (2, 3), {"dtype": F64, "requires_grad": True}, 0,
     [[2, 3], F64, _, True]),
    ("zeros_0dim_tensor_sizes", SIMPLE_ZEROS, (I0, 2), {}, 0, [[3, 2], _, _, False]),
    ("zeros_one_element_tensor_in_list", SIMPLE_ZEROS, (2, V1), {}, 0, [[2, 2], _, _, False]),
    ("zeros_numpy_ints", SIMPLE_ZEROS, (np.int64(2), np.int32(3)), {}, 0, [[2, 3], _, _, False]),
    ("zeros_bool_after_first_as_torch", SIMPLE_ZEROS, (2, True), {}, 0, [[2, 1], _, _, False]),
    ("zeros_dtype_python_float", SIMPLE_ZEROS, (2,), {"dtype": float}, 0, [[2], kiln.float64, _, False]),
    ("zeros_dtype_python_int", SIMPLE_ZEROS, (2,), {"dtype": int}, 0, [[2], kiln.int64, _, False]),
    ("zeros_dtype_python_bool", SIMPLE_ZEROS, (2,), {"dtype": bool}, 0, [[2], kiln.bool, _, False]),
    ("zeros_device_str", SIMPLE_ZEROS, (2,), {"device": "cpu"}, 0, [[2], _, CPU, False]),
    ("zeros_device_cuda_str", SIMPLE_ZEROS, (2,), {"device": "cuda:1"}, 0, [[2], _, kiln.device("cuda:1"), False]),
    ("zeros_device_object", SIMPLE_ZEROS, (2,), {"device": CPU}, 0, [[2], _, CPU, False]),
    ("zeros_device_int", SIMPLE_ZEROS, (2,), {"device": 0}, 0, [[2], _, CUDA0, False]),
    ("zeros_torch_signature_nones", ZEROS, (2,),
     {"dtype": None, "layout": None, "device": None, "pin_memory": None, "requires_grad": None},
     0, [[2], _, _, _, _, False, False]),
    ("view_dtype", VIEW, (F64,), {}, 0, [F64]),
    ("view_varargs", VIEW, (2, 3), {}, 1, [[2, 3]]),
    ("view_tuple", VIEW, ((2, 3),), {}, 1, [[2, 3]]),
    ("view_minus_one", VIEW, (-1,), {}, 1, [[-1]]),
    ("view_keyword", VIEW, (), {"size": (2,)}, 1, [[2]]),
    ("permute_varargs", PERMUTE, (1, 0), {}, 0, [[1, 0]]),
    ("max_pool1d_broadcast", MAX_POOL1D, (T12, 3), {}, 0, [T12, [3], [], [0], [1], False]),
    ("max_pool2d_broadcast", MAX_POOL2D, (T12, 3), {}, 0, [T12, [3, 3], [], [0, 0], [1, 1], False]),
    ("max_pool2d_pair", MAX_POOL2D, (T12, (2, 3)), {"stride": 2}, 0, [T12, [2, 3], [2, 2], [0, 0], [1, 1], False]),
    ("max_pool2d_0dim_tensor", MAX_POOL2D, (T12, I0), {}, 0, [T12, [3, 3], [], [0, 0], [1, 1], False]),
    ("max_pool2d_numpy", MAX_POOL2D, (T12, np.int64(2)), {"ceil_mode": True}, 0,
     [T12, [2, 2], [], [0, 0], [1, 1], True]),
    # ints and floats
    ("flatten_defaults", FLATTEN, (T,), {}, 0, [T, 0, -1]),
    ("flatten_ints", FLATTEN, (T, 1), {"end_dim": 0}, 0, [T, 1, 0]),
    ("flatten_0dim_tensor", FLATTEN, (T, I0), {}, 0, [T, 3, -1]),
    ("flatten_numpy_int", FLATTEN, (T, np.int64(1)), {}, 0, [T, 1, -1]),
    ("isclose_defaults", ISCLOSE, (T, U), {}, 0, [T, U, 1e-05, 1e-08, False]),
    ("isclose_int_and_bool_as_float", ISCLOSE, (T, U, 1, True), {}, 0, [T, U, 1.0, 1.0, False]),
    ("isclose_0dim_tensor", ISCLOSE, (T, U, F0, I0, True), {}, 0, [T, U, 2.5, 3.0, True]),
    ("isclose_numpy", ISCLOSE, (T, U, np.float32(0.5)), {}, 0, [T, U, 0.5, 1e-08, False]),
    ("pad_string_default", PAD, (T, [1, 1]), {}, 0, [T, [1, 1], "constant", _]),
    ("pad_int_as_double", PAD, (T, [1], "reflect", 0), {}, 0, [T, [1], "reflect", 0.0]),
    # Scalars
    ("full_bool", FULL, ((2,), True), {}, 0, [[2], True, _, _, _, _, False, False]),
    ("full_int", FULL, ((2,), 3), {}, 0, [[2], 3, _, _, _, _, False, False]),
    ("full_float", FULL, ((2,), 2.5), {}, 0, [[2], 2.5, _, _, _, _, False, False]),
    ("full_0dim_int", FULL, ((2,), I0), {}, 0, [[2], 3, _, _, _, _, False, False]),
    ("full_0dim_bool", FULL, ((2,), B0), {}, 0, [[2], True, _, _, _, _, False, False]),
    ("full_numpy_int", FULL, ((2,), np.int64(3)), {}, 0, [[2], 3, _, _, _, _, False, False]),
    ("full_numpy_bool_is_float", FULL, ((2,), np.bool_(True)), {}, 0, [[2], 1.0, _, _, _, _, False, False]),
    # tensor lists
    ("cat_list", CAT, ([T, U],), {}, 0, [[T, U], 0, _]),
    ("cat_tuple_dim", CAT, ((T,), 1), {}, 0, [[T], 1, _]),
    ("cat_empty", CAT, ([],), {}, 0, [[], 0, _]),
    ("cat_keywords", CAT, (), {"tensors": [T], "dim": I0, "out": U}, 0, [[T], 3, U]),
    ("index_put_optional_tensors", INDEX_PUT, (T, [None, U], T), {}, 0, [T, [None, U], T, False]),
    ("index_put_tuple", INDEX_PUT, (T, (U,), T, True), {}, 0, [T, [U], T, True]),
]


def same(actual, expected, made):
    if isinstance(expected, Arg):
        return actual is made[expected]
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(
            same(a, e, made) for a, e in zip(actual, expected))
    if expected is None:
        return actual is None
    if isinstance(expected, kiln.Tensor):  # == on tensors compares elements
        return actual is expected
    return type(actual) is type(expected) and actual == expected


@pytest.mark.parametrize("sigs,args,kwargs,index,values", [c[1:] for c in MATCHES], ids=[c[0] for c in MATCHES])
def test_matches(sigs, args, kwargs, index, values):
    made = {}
    got_index, got_values = _test_parse_args(sigs, *build(kiln, args, made), **build(kiln, kwargs, made))
    assert got_index == index
    assert same(got_values, build(kiln, values, made), made), (got_values, values)


def test_keyword_names_built_at_run_time():
    # Names that are not interned take the string-compare path.
    made = {}
    x, y = build(kiln, (T, U), made)
    key = "".join(["al", "pha"])
    assert _test_parse_args(ADD, x, y, **{key: 5}) == (0, [x, y, 5])


def torch_message(e):
    """torch's message with its C++ backtrace and a stray ", " before ")" (torch bugs) removed."""
    msg = str(e)
    if "\nException raised from" in msg:
        msg = msg.partition("\nException raised from")[0] + ('"' if msg.endswith('"') else "")
    return msg.replace(", )", ")").replace("torch.", "kiln.")


def method(name):
    return lambda L: getattr(L.ones(2), name)


def function(name):
    return lambda L: getattr(L, name)


# (id, kiln signatures, torch callable, args, kwargs)
TORCH_ERRORS = [
    ("add_str_other", TORCH_ADD, function("add"), (T, "a"), {}),
    ("add_too_few", TORCH_ADD, function("add"), (T,), {}),
    ("add_nothing", TORCH_ADD, function("add"), (), {}),
    ("add_unexpected_keyword", TORCH_ADD, function("add"), (T, T), {"beta": 2}),
    ("add_keyword_only_positionally", TORCH_ADD, function("add"), (T, T, 2), {}),
    ("add_four_positionals", TORCH_ADD, function("add"), (T, T, 2, 3), {}),
    ("add_str_input", TORCH_ADD, function("add"), ("a", T), {}),
    ("add_keyword_type", TORCH_ADD, function("add"), (T,), {"other": "a"}),
    ("add_list_other", TORCH_ADD, function("add"), (T, [1]), {}),
    ("add_none_other", TORCH_ADD, function("add"), (T, None), {}),
    ("add_alpha_str", TORCH_ADD, function("add"), (T, T), {"alpha": "s"}),
    ("add_alpha_none", TORCH_ADD, function("add"), (T, T), {"alpha": None}),
    ("add_alpha_1d_tensor", TORCH_ADD, function("add"), (T, T), {"alpha": V1}),
    ("add_alpha_requires_grad", TORCH_ADD, function("add"), (T, T), {"alpha": G0}),
    ("add_missing_other", TORCH_ADD, function("add"), (T,), {"alpha": 2}),
    ("add_unknown_keyword_only", TORCH_ADD, function("add"), (), {"x": T}),
    ("add_five_tensors", TORCH_ADD, function("add"), (T, T, T, T, T), {}),
    ("add_alpha_overflow", TORCH_ADD, function("add"), (T, T), {"alpha": 2**70}),
    ("cat_bad_element", CAT, function("cat"), ([T, 1],), {}),
    ("cat_none_element", CAT, function("cat"), ([T, None],), {}),
    ("cat_tensor_not_list", CAT, function("cat"), (T, 1), {}),
    ("cat_float_dim", CAT, function("cat"), ((T,),), {"dim": 1.5}),
    ("cat_none_dim", CAT, function("cat"), ([T],), {"dim": None}),
    ("cat_tensor_dim", CAT, function("cat"), ((T,), T), {}),
    ("cat_three_positionals", CAT, function("cat"), ((T,), 0, 1), {}),
    ("cat_missing", CAT, function("cat"), (), {}),
    ("cat_unknown_keyword", CAT, function("cat"), ((T,),), {"dimm": 1}),
    ("cat_multiple_values", CAT, function("cat"), ((T,), 0), {"dim": 1}),
    ("cat_keyword_not_list", CAT, function("cat"), (), {"tensors": 3}),
    ("cat_dim_overflow", CAT, function("cat"), ([T],), {"dim": 2**70}),
    ("zeros_int_dtype", ZEROS, function("zeros"), (2,), {"dtype": 3}),
    ("zeros_str_dtype", ZEROS, function("zeros"), (3,), {"dtype": "float32"}),
    ("zeros_float_in_varargs", ZEROS, function("zeros"), (2, 3.5), {}),
    ("zeros_float_in_tuple", ZEROS, function("zeros"), ((2, 3.5),), {}),
    ("zeros_str_in_list", ZEROS, function("zeros"), ([2, "a"],), {}),
    ("zeros_str_third", ZEROS, function("zeros"), (2, 3, "a"), {}),
    ("zeros_float_tensor_in_list", ZEROS, function("zeros"), ((2, F0),), {}),
    ("zeros_float_device", ZEROS, function("zeros"), (2,), {"device": 3.5}),
    ("zeros_bool_device", ZEROS, function("zeros"), (2,), {"device": True}),
    ("zeros_negative_device", ZEROS, function("zeros"), (2,), {"device": -1}),
    ("zeros_device_overflow", ZEROS, function("zeros"), (2,), {"device": 2**70}),
    ("zeros_bool_size", ZEROS, function("zeros"), (True,), {}),
    ("zeros_int_keyword_size", ZEROS, function("zeros"), (), {"size": 2}),
    ("zeros_bool_first_element", ZEROS, function("zeros"), ([True],), {}),
    ("zeros_str_varargs", ZEROS, function("zeros"), ("a", "b"), {}),
    ("zeros_multiple_values_size", ZEROS, function("zeros"), (2, 3), {"size": (2,)}),
    ("zeros_unexpected_keyword", ZEROS, function("zeros"), (1, 2), {"dtype": F64, "foo": 3}),
    ("zeros_int_requires_grad", ZEROS, function("zeros"), (2,), {"requires_grad": 1}),
    ("zeros_1d_tensor_size", ZEROS, function("zeros"), (V2,), {}),
    ("zeros_size_overflow", ZEROS, function("zeros"), (2**70,), {}),
    ("zeros_size_element_overflow", ZEROS, function("zeros"), ((2, 2**70),), {}),
    ("zeros_keyword_bad_element", ZEROS, function("zeros"), (), {"size": (2, "a")}),
    ("zeros_numpy_array", ZEROS, function("zeros"), (np.array([2, 3]),), {}),
    ("zeros_layout_hook", ZEROS, function("zeros"), (2,), {"layout": 3}),
    ("empty_like_memory_format_hook", EMPTY_LIKE, function("empty_like"), (T,), {"memory_format": 3}),
    ("rand_generator_hook", RAND, function("rand"), (2,), {"generator": 3}),
    ("full_str_fill", FULL, function("full"), ((2,), "a"), {}),
    ("full_none_fill", FULL, function("full"), ((2,), None), {}),
    ("full_1d_tensor_fill", FULL, function("full"), ((2,), V1), {}),
    ("full_requires_grad_fill", FULL, function("full"), ((2,), G0), {}),
    ("full_str_size", FULL, function("full"), ("a", "b"), {}),
    ("full_overflow", FULL, function("full"), ((2,), 2**70), {}),
    ("clamp_str_min", CLAMP, function("clamp"), (T, "a"), {}),
    ("clamp_all_str", CLAMP, function("clamp"), ("a", "b", "c"), {}),
    ("clamp_with_out", CLAMP, function("clamp"), (T, "a", "b"), {"out": None}),
    ("div_int_rounding", DIV, function("div"), (T, T), {"rounding_mode": 3}),
    ("div_str_input", DIV, function("div"), ("a", "b"), {}),
    ("sum_float_dim", SUM, function("sum"), (T, 1.5), {}),
    ("sum_float_dim_keyword", SUM, function("sum"), (T,), {"dim": 1.5}),
    ("sum_too_many", SUM, function("sum"), (T, 0, True, F64), {}),
    ("sum_str_dim", SUM, function("sum"), (T, "a", True), {}),
    ("sum_nothing", SUM, function("sum"), (), {}),
    ("method_sum_float", METHOD_SUM, method("sum"), (1.5,), {}),
    ("method_sum_float_keyword", METHOD_SUM, method("sum"), (), {"dim": 1.5}),
    ("view_float_in_varargs", VIEW, method("view"), (2, 3.5), {}),
    ("view_str_in_varargs", VIEW, method("view"), (2, "a"), {}),
    ("view_str_in_tuple", VIEW, method("view"), ((2, "a"),), {}),
    ("view_nothing", VIEW, method("view"), (), {}),
    ("view_str", VIEW, method("view"), ("a",), {}),
    ("view_varargs_and_keyword", VIEW, method("view"), (2,), {"size": (2,)}),
    ("view_dtype_and_int", VIEW, method("view"), (F64, 2), {}),
    ("view_int_dtype_keyword", VIEW, method("view"), (), {"dtype": 3}),
    ("permute_str_in_varargs", PERMUTE, method("permute"), (0, "a"), {}),
    ("permute_str", PERMUTE, method("permute"), ("a",), {}),
    ("flatten_bool", FLATTEN, function("flatten"), (T, True), {}),
    ("flatten_float", FLATTEN, function("flatten"), (T, 0.5), {}),
    ("flatten_0dim_float_tensor", FLATTEN, function("flatten"), (T, F0), {}),
    ("flatten_1d_tensor", FLATTEN, function("flatten"), (T, V1), {}),
    ("flatten_tensor", FLATTEN, function("flatten"), (T, T), {}),
    ("flatten_bool_keyword", FLATTEN, function("flatten"), (T,), {"start_dim": True}),
    ("flatten_numpy_bool", FLATTEN, function("flatten"), (T, np.bool_(False)), {}),
    ("flatten_overflow", FLATTEN, function("flatten"), (T, 2**70), {}),
    ("flatten_str_input", FLATTEN, function("flatten"), ("a", "b"), {}),
    ("transpose_missing", TRANSPOSE, function("transpose"), (T, 0), {}),
    ("transpose_bool", TRANSPOSE, function("transpose"), (T, 0, True), {}),
    ("transpose_float", TRANSPOSE, function("transpose"), (T, 0, 1.5), {}),
    ("isclose_int_bool", ISCLOSE, function("isclose"), (T, T), {"equal_nan": 1}),
    ("isclose_1d_tensor", ISCLOSE, function("isclose"), (T, T, V1), {}),
    ("isclose_numpy_bool", ISCLOSE, function("isclose"), (T, T, 1, 1, np.bool_(True)), {}),
    ("isclose_float_overflow", ISCLOSE, function("isclose"), (T, T, 2**2000), {}),
    ("max_pool1d_float_kernel", MAX_POOL1D, function("max_pool1d"), (T12, 2.0), {}),
    ("max_pool1d_float_stride", MAX_POOL1D, function("max_pool1d"), (T12, 2), {"stride": 2.5}),
    ("index_put_int_element", INDEX_PUT, function("index_put"), (T, [1], T), {}),
    ("select_scatter_missing_three", SELECT_SCATTER, function("select_scatter"), (T,), {}),
    ("bmm_missing", BMM, function("bmm"), (T,), {}),
    ("std_strs", STD, function("std"), ("a", "b"), {}),
    ("narrow_str_start", NARROW, function("narrow"), (T, 0, "a", 1), {}),
    ("squeeze_str_dim", SQUEEZE, function("squeeze"), (T, "a"), {}),
    ("where_strs", WHERE, function("where"), (T, "a", "b"), {}),
    ("arange_str", ARANGE, function("arange"), ("a",), {}),
]


@pytest.mark.parametrize("sigs,torch_fn,args,kwargs", [c[1:] for c in TORCH_ERRORS], ids=[c[0] for c in TORCH_ERRORS])
def test_errors_match_torch(sigs, torch_fn, args, kwargs):
    with pytest.raises(Exception) as expected:
        torch_fn(torch)(*build(torch, args, {}), **build(torch, kwargs, {}))
    with pytest.raises(Exception) as got:
        _test_parse_args(sigs, *build(kiln, args, {}), **build(kiln, kwargs, {}))
    assert got.type is expected.type
    assert str(got.value) == torch_message(expected.value)


# (id, signatures, args, kwargs, exception, message)
KILN_ERRORS = [
    # torch's add turns numbers into tensors; kiln lists a Scalar overload instead.
    ("number_is_not_a_tensor", ADD[:1], (T, 2), {}, TypeError,
     "add(): argument 'other' (position 2) must be Tensor, not int"),
    ("add_overloads", ADD, ("a", T), {}, TypeError,
     "add() received an invalid combination of arguments - got (str, Tensor), but expected one of:\n"
     " * (Tensor input, Tensor other, *, Number alpha = 1)\n * (Tensor input, Number other, Number alpha = 1)\n"),
    ("add_overloads_explained", ADD, ("a", T, 2), {}, TypeError,
     "add() received an invalid combination of arguments - got (str, Tensor, int), but expected one of:\n"
     " * (Tensor input, Tensor other, *, Number alpha = 1)\n"
     " * (Tensor input, Number other, Number alpha = 1)\n"
     "      didn't match because some of the arguments have invalid types: (!str!, !Tensor!, int)\n"),
    ("overloads_wrong_keyword", ADD, (T, T, 2), {"beta": 1}, TypeError,
     "add() received an invalid combination of arguments - got (Tensor, Tensor, int, beta=int), but expected one of:\n"
     " * (Tensor input, Tensor other, *, Number alpha = 1)\n"
     "      didn't match because some of the keywords were incorrect: beta\n"
     " * (Tensor input, Number other, Number alpha = 1)\n"),
    ("optional_tensor_list_element", INDEX_PUT, (T, [U, 1], T), {}, TypeError,
     "expected Tensor as element 1 in argument 1, but got int"),
    ("generator_hook_tensor", RAND[:1], (2,), {"generator": T}, TypeError,
     "rand(): argument 'generator' must be kiln.Generator, not Tensor"),
    ("single_view_multiple_values", VIEW[1:], (2,), {"size": (2,)}, TypeError,
     "view() got multiple values for argument 'size'"),
    ("missing_two", ["f(int a, int b, int c=0)"], (), {}, TypeError,
     'f() missing 2 required positional argument: "a", "b"'),
    ("missing_keyword_only", ["f(int a, *, int b)"], (1,), {}, TypeError,
     'f() missing 1 required positional arguments: "b"'),
    ("takes_one_was", ["f(int a)"], (1, 2), {}, TypeError, "f() takes 1 positional argument but 2 were given"),
    ("takes_none", ["f(*, int a=0)"], (1,), {}, TypeError, "f() takes 0 positional arguments but 1 was given"),
    ("tuple_of_tensors_described", ["f(int a)", "f(bool a)"], ((T, 1),), {}, TypeError,
     "f() received an invalid combination of arguments - got (tuple), but expected one of:\n"
     " * (int a)\n      didn't match because some of the arguments have invalid types: (!tuple of (Tensor, int)!)\n"
     " * (bool a)\n      didn't match because some of the arguments have invalid types: (!tuple of (Tensor, int)!)\n"),
    # torch marks every argument bound to a defaulted parameter as invalid ("!str!"),
    # whatever its type; kiln marks only the arguments that do not fit.
    ("explained_with_defaults", TO, ("a", "b", "c", "d", "e", "f"), {}, TypeError,
     "to() received an invalid combination of arguments - got (str, str, str, str, str, str), but expected one of:\n"
     " * (kiln.device device = None, kiln.dtype dtype = None, bool non_blocking = False, bool copy = False, *, "
     "kiln.memory_format memory_format = None)\n"
     "      didn't match because some of the arguments have invalid types: (str, !str!, !str!, !str!, !str!, !str!)\n"
     " * (kiln.dtype dtype, bool non_blocking = False, bool copy = False, *, kiln.memory_format memory_format = None)\n"
     " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, kiln.memory_format memory_format = None)\n"),
    ("bad_device_string", SIMPLE_ZEROS, (2,), {"device": "tpu"}, RuntimeError, None),
    ("unknown_type", ["f(Foo a)"], (), {}, RuntimeError, "PythonArgParser: unknown type 'Foo' in 'Foo a'"),
    ("tensor_default", ["f(Tensor a=1)"], (), {}, RuntimeError,
     "PythonArgParser: a Tensor default must be None: 'Tensor a=1'"),
    ("intlist_int_default_needs_size", ["f(int[] a=1)"], (), {}, RuntimeError,
     "PythonArgParser: an int default for an int list needs a size, int[N]: int[] a=1"),
    ("malformed", ["f(int a"], (), {}, RuntimeError, "PythonArgParser: malformed signature: f(int a"),
    ("names_differ", ["f(int a)", "g(int a)"], (), {}, RuntimeError,
     "PythonArgParser: signatures of one parser must share a name: f and g"),
]


@pytest.mark.parametrize("sigs,args,kwargs,exc,message", [c[1:] for c in KILN_ERRORS], ids=[c[0] for c in KILN_ERRORS])
def test_kiln_errors(sigs, args, kwargs, exc, message):
    with pytest.raises(exc) as got:
        _test_parse_args(sigs, *build(kiln, args, {}), **build(kiln, kwargs, {}))
    if message is not None:
        assert str(got.value) == message


# (signatures, index, is_method, expected __text_signature__)
TEXT_SIGNATURES = [
    (ADD, 0, False, "($module, input, other, *, alpha=1)"),
    (ADD, 0, True, "($self, other, *, alpha=1)"),
    (ADD, 1, False, "($module, input, other, alpha=1)"),
    (SIMPLE_ZEROS, 0, False, "($module, size, *, dtype=None, device=None, requires_grad=False)"),
    (VIEW, 1, True, "($self, size)"),
    (METHOD_SUM, 0, True, "($self, *, dtype=None)"),
    (MAX_POOL2D, 0, False, "($module, input, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)"),
    (PAD, 0, False, '($module, input, pad, mode="constant", value=None)'),
    (["f(Tensor self, int[] dims={0,1}, float x=inf, Device d=cpu, bool b=true)"], 0, True,
     "($self, dims=[0,1], x=1e309, d='cpu', b=True)"),
    (["f(Tensor input, *, ScalarType? a=None, ScalarType b=torch.int64)"], 0, False, ""),  # no literal for kiln.int64
    (["f(Tensor other)"], 0, True, "($self, other)"),
]


@pytest.mark.parametrize("sigs,index,is_method,expected", TEXT_SIGNATURES)
def test_text_signature(sigs, index, is_method, expected):
    assert _test_text_signature(sigs, index, is_method) == expected


def test_inspect_signature_of_builtin():
    fn = _test_arg_parser_builtin(ADD)
    sig = inspect.signature(fn)
    assert str(sig) == "(input, other, *, alpha=1)"
    assert sig.parameters["alpha"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sig.parameters["other"].default is inspect.Parameter.empty

    fn = _test_arg_parser_builtin(
        ["f(Tensor input, ScalarType? dtype=None, int[] dims={0,1}, float x=-inf, str mode='a, b', Device d=cpu)"])
    params = inspect.signature(fn).parameters
    assert params["dtype"].default is None
    assert params["dims"].default == [0, 1]
    assert params["d"].default == "cpu"
    assert params["x"].default == -math.inf
    assert params["mode"].default == "a, b"


def test_builtin_parses_like_a_generated_binding():
    fn = _test_arg_parser_builtin(ADD)
    x, y = kiln.ones(2), kiln.zeros(2)
    assert fn(x, y, alpha=2) == (0, [x, y, 2])
    assert fn(x, 3) == (1, [x, 3, 1])
    with pytest.raises(TypeError, match=r"add\(\) received an invalid combination of arguments"):
        fn(x, "a")
    only_index = _test_arg_parser_builtin(ADD, True)
    assert only_index(x, y) == 0 and only_index(x, 1.5) == 1


def test_parsers_are_cached_by_signatures():
    x = kiln.ones(2)
    sigs = ["cached(Tensor input, int n=4)"]
    assert _test_parse_args(sigs, x) == (0, [x, 4])
    assert _test_parse_args(tuple(sigs), x, n=5) == (0, [x, 5])
