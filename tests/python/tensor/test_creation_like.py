"""The creation ops of eager/ops/creation.yaml against torch==2.13.0: the *_like
forms (every memory_format, dtype, device and requires_grad), eye and logspace
(values bit for bit), their out= forms and their errors."""

from __future__ import annotations

import inspect
import math
import pickle
import warnings

import numpy as np
import pytest
import torch

import kiln
from torch_compare import DTYPE_NAMES, assert_same_error, assert_same_outcome, assert_same_tensor, kiln_dtype, \
    torch_dtype

torch.set_num_threads(1)


def strided(m, shape, strides):
    """A zeros tensor viewed with `strides` (the same view in kiln and torch)."""
    return m.zeros(max(1, sum((s - 1) * st for s, st in zip(shape, strides)) + 1)).as_strided(shape, strides)


# (id, input builder): layouts that exercise Note [preserve_format strides].
INPUTS = [
    ("contiguous", lambda m: m.ones(2, 3)),
    ("int32", lambda m: m.ones(2, 3, dtype=m.int32)),
    ("bool", lambda m: m.ones(2, 3, dtype=m.bool)),
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
    ("nchw", lambda m: m.ones(2, 3, 4, 5)),
    ("nhwc_strides", lambda m: strided(m, (2, 3, 4, 5), (60, 1, 15, 3))),
    ("nhwc_sliced", lambda m: strided(m, (2, 3, 4, 5), (60, 1, 15, 3))[:, :, ::2]),
    ("ncdhw", lambda m: m.ones(2, 3, 2, 2, 2)),
    ("ndhwc_strides", lambda m: strided(m, (2, 3, 2, 2, 2), (24, 1, 12, 6, 3))),
]

FORMATS = ["none", "preserve_format", "contiguous_format", "channels_last", "channels_last_3d"]


def memory_format_kwargs(m, name):
    return {} if name == "none" else {"memory_format": getattr(m, name)}


def format_applies(fmt, x) -> bool:
    """channels_last needs rank 4 and channels_last_3d rank 5 (other ranks are errors, tested below)."""
    return {"channels_last": 4, "channels_last_3d": 5}.get(fmt, x.dim()) == x.dim()


CALLS = [
    ("empty_like", lambda m, x, kw: m.empty_like(x, **kw), False),
    ("zeros_like", lambda m, x, kw: m.zeros_like(x, **kw), True),
    ("ones_like", lambda m, x, kw: m.ones_like(x, **kw), True),
    ("full_like_float", lambda m, x, kw: m.full_like(x, 2.75, **kw), True),
    ("full_like_int", lambda m, x, kw: m.full_like(x, 7, **kw), True),
    ("full_like_bool_dtype", lambda m, x, kw: m.full_like(x, 2, dtype=m.bool, **kw), True),
    ("zeros_like_float64", lambda m, x, kw: m.zeros_like(x, dtype=m.float64, **kw), True),
    ("ones_like_int8", lambda m, x, kw: m.ones_like(x, dtype=m.int8, **kw), True),
    ("empty_like_device", lambda m, x, kw: m.empty_like(x, device="cpu", **kw), False),
    ("rand_like_float64", lambda m, x, kw: m.rand_like(x, dtype=m.float64, **kw), False),
    ("randn_like_float16", lambda m, x, kw: m.randn_like(x, dtype=m.float16, **kw), False),
    ("randint_like", lambda m, x, kw: m.randint_like(x, 3, 9, **kw), False),
]

CASES = [(i, x, c, f) for i, x in INPUTS for c in CALLS for f in FORMATS
         if format_applies(f, x(torch))]


@pytest.mark.parametrize("make, call, fmt", [(x, c, f) for _, x, c, f in CASES],
                         ids=[f"{i}-{c[0]}-{f}" for i, _, c, f in CASES])
def test_like_layout_dtype_and_values(make, call, fmt):
    _, fn, compare_values = call
    kx, tx = make(kiln), make(torch)
    # (randint_like(3, 9) of a bool input is an error in both: the outcome is compared)
    assert_same_outcome(lambda: fn(kiln, kx, memory_format_kwargs(kiln, fmt)),
                        lambda: fn(torch, tx, memory_format_kwargs(torch, fmt)), check_values=compare_values)


@pytest.mark.parametrize("fn", ["empty_like", "zeros_like", "ones_like", "rand_like", "randn_like"])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_like_dtype_keyword(fn, dtype):
    floating = dtype in ("float32", "float64", "float16", "bfloat16")
    if fn in ("rand_like", "randn_like") and not floating:
        assert_same_error(lambda: getattr(kiln, fn)(kiln.ones(2), dtype=kiln_dtype(dtype)),
                          lambda: getattr(torch, fn)(torch.ones(2), dtype=torch_dtype(dtype)))
        return
    k = getattr(kiln, fn)(kiln.ones(2, 3), dtype=kiln_dtype(dtype))
    t = getattr(torch, fn)(torch.ones(2, 3), dtype=torch_dtype(dtype))
    assert_same_tensor(k, t, check_values=fn in ("zeros_like", "ones_like"))


@pytest.mark.parametrize("fn, args", [("empty_like", ()), ("zeros_like", ()), ("ones_like", ()),
                                      ("full_like", (1.5,)), ("rand_like", ()), ("randn_like", ()),
                                      ("randint_like", (5,))])
def test_like_requires_grad_and_device(fn, args):
    k = getattr(kiln, fn)(kiln.ones(2), *args, requires_grad=fn != "randint_like", device=kiln.device("cpu"))
    assert k.requires_grad == (fn != "randint_like")
    assert k.device.type == "cpu"
    assert not kiln.zeros_like(kiln.ones(2, requires_grad=True)).requires_grad  # like torch: no gradient flows
    assert_same_error(lambda: getattr(kiln, fn)(kiln.ones(2, dtype=kiln.int32), *args, requires_grad=True),
                      lambda: getattr(torch, fn)(torch.ones(2, dtype=torch.int32), *args, requires_grad=True))


LIKE_ERRORS = [
    ("dtype_str", lambda m: m.zeros_like(m.ones(2), dtype="int32")),
    ("memory_format_int", lambda m: m.zeros_like(m.ones(2), memory_format=3)),
    ("channels_last_rank3", lambda m: m.empty_like(m.ones(2, 3, 4), memory_format=m.channels_last)),
    ("channels_last_3d_rank4", lambda m: m.ones_like(m.ones(2, 3, 4, 5), memory_format=m.channels_last_3d)),
    ("full_like_overflow", lambda m: m.full_like(m.zeros(2, dtype=m.int8), 300)),
    ("full_like_str", lambda m: m.full_like(m.zeros(2), "a")),
    ("list_input", lambda m: m.zeros_like([1.0, 2.0])),
    ("missing_input", lambda m: m.ones_like()),
    ("unknown_keyword", lambda m: m.empty_like(m.ones(2), shape=3)),
]


@pytest.mark.parametrize("call", [c for _, c in LIKE_ERRORS], ids=[i for i, _ in LIKE_ERRORS])
def test_like_errors(call):
    error = assert_same_error(lambda: call(kiln), lambda: call(torch), message=False)
    if not isinstance(error, TypeError) or "argument" in str(error):
        assert_same_error(lambda: call(kiln), lambda: call(torch))


def test_like_forms_are_generated_ops():
    for name in ("empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like"):
        assert getattr(kiln, name) is getattr(kiln._C._functions, name)
    assert str(inspect.signature(kiln.zeros_like)) == (
        "(input, *, dtype=None, layout=None, device=None, pin_memory=False, memory_format=None, requires_grad=False)")
    assert str(inspect.signature(kiln.full_like)).startswith("(input, fill_value, *, dtype=None")
    assert not hasattr(kiln._C, "_empty_like") and not hasattr(kiln._C, "_full_like")


def test_like_ops_run_through_the_dispatcher():
    out = kiln.ops.kiln.zeros_like(kiln.ones(2, 3), dtype=kiln.int16)
    assert out.dtype is kiln.int16 and out.tolist() == [[0, 0, 0], [0, 0, 0]]


def test_memory_format_objects():
    for name in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        f = getattr(kiln, name)
        assert isinstance(f, kiln.memory_format)
        assert repr(f) == repr(getattr(torch, name)).replace("torch", "kiln")
        assert pickle.loads(pickle.dumps(f)) is f  # pickles by name


# --- eye ------------------------------------------------------------------------------------

EYE_CALLS = [
    ("n", lambda m: m.eye(3)),
    ("n_m_wide", lambda m: m.eye(2, 5)),
    ("n_m_tall", lambda m: m.eye(4, 1)),
    ("zero", lambda m: m.eye(0)),
    ("zero_m", lambda m: m.eye(3, 0)),
    ("keywords", lambda m: m.eye(n=2, m=3, dtype=m.float64)),
    ("out", lambda m: m.eye(2, 3, out=m.empty(6))),
    ("out_square", lambda m: m.eye(3, out=m.empty(3, 3, dtype=m.int32))),
    ("out_strided", lambda m: m.eye(2, 3, out=m.empty(3, 2).transpose(0, 1))),
    ("requires_grad", lambda m: m.eye(2, requires_grad=True)),
    ("device", lambda m: m.eye(2, device="cpu")),
] + [(f"dtype_{d}", (lambda d: lambda m: m.eye(3, 4, dtype=getattr(m, d)))(d)) for d in DTYPE_NAMES]


@pytest.mark.parametrize("call", [c for _, c in EYE_CALLS], ids=[i for i, _ in EYE_CALLS])
def test_eye_like_torch(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # eye's out= resizes without a warning, as torch's resize_
        k = call(kiln)
    t = call(torch)
    assert_same_tensor(k, t)
    assert k.requires_grad == t.requires_grad


@pytest.mark.parametrize("args", [(-1,), (2, -1), (-2, 3)])
def test_eye_errors(args):
    assert_same_error(lambda: kiln.eye(*args), lambda: torch.eye(*args))


def test_eye_requires_grad_on_integers_fails_like_torch():
    assert_same_error(lambda: kiln.eye(2, dtype=kiln.int64, requires_grad=True),
                      lambda: torch.eye(2, dtype=torch.int64, requires_grad=True))


# --- logspace --------------------------------------------------------------------------------

LOGSPACE = [
    ((0, 2, 3), {}),
    ((0, 2, 5), {"base": 2}),
    ((-3, 3, 13), {"base": 2.5}),
    ((1.5, -2.25, 10), {}),
    ((0, 1, 1), {}),
    ((0, 1, 0), {}),
    ((0, 10, 11), {"base": -2.0}),
    ((0, 2, 7), {"base": 0.5}),
    ((2, 2, 4), {}),
    ((0, 300, 4), {}),
    ((0, 1, 1000), {"base": 3}),
]
LOGSPACE_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8"]


@pytest.mark.parametrize("dtype", LOGSPACE_DTYPES + [None])
@pytest.mark.parametrize("args, kwargs", LOGSPACE)
def test_logspace_values_bit_for_bit(args, kwargs, dtype):
    def call(m):
        return m.logspace(*args, **kwargs, **({"dtype": getattr(m, dtype)} if dtype else {}))

    assert_same_outcome(lambda: call(kiln), lambda: call(torch))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_logspace_integer_overflow_wraps_like_torch(dtype):
    assert_same_outcome(lambda: kiln.logspace(0, 12, 5, dtype=kiln_dtype(dtype)),
                        lambda: torch.logspace(0, 12, 5, dtype=torch_dtype(dtype)))


LOGSPACE_FORMS = [
    ("out", lambda m: m.logspace(0, 2, 3, out=m.empty(3))),
    ("out_resized", lambda m: m.logspace(0, 2, 3, out=m.empty(5))),
    ("out_strided", lambda m: m.logspace(0, 2, 3, out=m.empty(6)[::2])),
    ("out_int", lambda m: m.logspace(0, 2, 3, out=m.empty(3, dtype=m.int64))),
    ("bool_one_step", lambda m: m.logspace(0, 2, 1, dtype=m.bool)),
    ("bool_no_steps", lambda m: m.logspace(0, 2, 0, dtype=m.bool)),
    ("scalar_tensor_start", lambda m: m.logspace(m.tensor(0.0), 2, 3)),
    ("keywords", lambda m: m.logspace(start=1, end=2, steps=3, base=4.0)),
    ("requires_grad", lambda m: m.logspace(0, 1, 3, requires_grad=True)),
]


@pytest.mark.parametrize("call", [c for _, c in LOGSPACE_FORMS], ids=[i for i, _ in LOGSPACE_FORMS])
def test_logspace_forms(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k = call(kiln)
    t = call(torch)
    assert_same_tensor(k, t)
    assert k.requires_grad == t.requires_grad


@pytest.mark.parametrize("call", [
    lambda m: m.logspace(0, 2, -1),
    lambda m: m.logspace(0, 2, 3, dtype=m.bool),
    lambda m: m.logspace(0, 300, 3, dtype=m.int8),
    lambda m: m.logspace(0, 2, 3, dtype=m.int64, requires_grad=True),
    lambda m: m.logspace(0, 2, 2.5),
    lambda m: m.logspace(0, 2),
], ids=["negative_steps", "bool", "start_end_overflow", "requires_grad_int", "float_steps", "missing_steps"])
def test_logspace_errors(call):
    error = assert_same_error(lambda: call(kiln), lambda: call(torch), message=False)
    if not isinstance(error, TypeError):
        assert_same_error(lambda: call(kiln), lambda: call(torch))


def test_logspace_and_eye_signatures():
    # The text signature is the first overload's: logspace.Tensor_Tensor (0-dim tensor bounds), which has no out=
    # form; out= is still taken (the Scalar overload's).
    assert str(inspect.signature(kiln.logspace)) == (
        "(start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, pin_memory=False, "
        "requires_grad=False)")
    out = kiln.empty(3)
    assert kiln.logspace(0, 2, 3, out=out) is out and out.tolist() == [1.0, 10.0, 100.0]
    assert str(inspect.signature(kiln.eye)).startswith("(n, *, dtype=None")
    assert math.isclose(kiln.logspace(0, 1, 2, base=math.e).tolist()[1], math.e, rel_tol=1e-6)
    assert np.array_equal(kiln.eye(3).numpy(), np.eye(3, dtype=np.float32))
