"""Ternary and scalar-parameterised pointwise ops against torch: where, clamp
(scalar and tensor bounds), clip, clamp_min, clamp_max, lerp, addcmul, addcdiv,
masked_fill; the unary logical_not and bitwise_not; pow with a scalar exponent
or a scalar base. Every op runs over every dtype and a table of layouts, in its
function, method, in-place and out= forms, with torch's errors where torch
raises.
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Callable

import numpy as np
import pytest
import torch

import kiln
from pointwise_cases import FLOATS, make_pair
from test_pointwise_binary import (
    LARGE_LAYOUT_DTYPES,
    Operand,
    PythonNumber,
    _every_other_column,
    _transposed,
    build_operands,
)
from tolerant_compare import assert_matches, assert_same_failure, assert_same_outcome, outcome
from torch_compare import DTYPE_NAMES, kiln_dtype, raised


def _expand_rows(x):
    return x.as_strided((5, 37), (0, 1))


TERNARY_LAYOUTS = {
    "contiguous": (Operand((5, 37)), Operand((5, 37)), Operand((5, 37))),
    "broadcast": (Operand((5, 1)), Operand((1, 37)), Operand((37,))),
    "transposed": (Operand((37, 5), _transposed), Operand((37, 5), _transposed), Operand((37, 5), _transposed)),
    "strided": (Operand((5, 74), _every_other_column), Operand((5, 37)), Operand((5, 74), _every_other_column)),
    "expanded": (Operand((5, 37)), Operand((1, 37), _expand_rows), Operand((5, 37))),
    "zero_size": (Operand((0, 37)), Operand((1, 37)), Operand((0, 1))),
    "zero_dim": (Operand(()), Operand(()), Operand(())),
    "zero_dim_last": (Operand((5, 37)), Operand((5, 37)), Operand(())),
    "large": (Operand((40, 2049)), Operand((40, 2049)), Operand((40, 2049))),
}


def layouts_for(dtype: str, layouts=TERNARY_LAYOUTS) -> list[str]:
    return [name for name in layouts if name != "large" or dtype in LARGE_LAYOUT_DTYPES]


def builder(layout, dtypes, kinds, seed_parts):
    """A function building fresh (kiln args, torch args) each call, always the same values."""
    seed = zlib.crc32("/".join(map(str, seed_parts)).encode())

    def build():
        return build_operands(layout, dtypes, np.random.default_rng(seed), kinds)

    return build


def check_forms(build, *, function=None, method=None, inplace=None, out=None):
    """Runs each given form on fresh operands from build() and compares with torch.
    function(m, *args), method(*args), inplace(*args) -> result (mutating args[0]),
    out(m, out_tensor, *args)."""
    expected = None
    if function is not None:
        kargs, targs = build()
        expected = assert_same_outcome(lambda: function(kiln, *kargs), lambda: function(torch, *targs))
    if method is not None:
        kargs, targs = build()
        assert_same_outcome(lambda: method(*kargs), lambda: method(*targs))
    if inplace is not None:
        kargs, targs = build()
        kresult, kerror = outcome(lambda: inplace(*kargs))
        _, terror = outcome(lambda: inplace(*targs))
        if terror is not None:
            assert_same_failure(kerror, terror)
        else:
            assert kerror is None, f"kiln in-place raised {kerror!r}"
            assert kresult is kargs[0], "an in-place op returns self"
            assert_matches(kargs[0], targs[0])
    if out is not None and expected is not None:
        kargs, targs = build()
        dtype = str(expected.dtype).removeprefix("torch.")
        kout = kiln.empty(list(expected.shape), dtype=kiln_dtype(dtype))
        tout = torch.empty(expected.shape, dtype=expected.dtype)
        kresult, kerror = outcome(lambda: out(kiln, kout, *kargs))
        _, terror = outcome(lambda: out(torch, tout, *targs))
        if terror is not None:
            assert_same_failure(kerror, terror)
            return
        assert kerror is None, f"kiln out= raised {kerror!r}"
        assert kresult is kout
        assert_matches(kout, tout)


# --- where ---------------------------------------------------------------------------------

WHERE_LAYOUTS = {
    **TERNARY_LAYOUTS,
    "scalar_other": (Operand((5, 37)), Operand((5, 37)), PythonNumber("float")),
    "scalar_self": (Operand((5, 37)), PythonNumber("int"), Operand((5, 37))),
    "scalars": (Operand((5, 37)), PythonNumber("int"), PythonNumber("float")),
    "bool_scalars": (Operand((5, 37)), PythonNumber("bool"), PythonNumber("bool")),
}
WHERE_CASES = [(dtype, layout) for dtype in DTYPE_NAMES for layout in layouts_for(dtype, WHERE_LAYOUTS)]


@pytest.mark.parametrize("dtype, layout", WHERE_CASES, ids=[f"{d}-{l}" for d, l in WHERE_CASES])
def test_where(dtype, layout):
    build = builder(WHERE_LAYOUTS[layout], ("bool", dtype, dtype), ("any",) * 3, ("where", dtype, layout))
    check_forms(
        build,
        function=lambda m, c, a, b: m.where(c, a, b),
        method=(lambda c, a, b: a.where(c, b)) if not isinstance(WHERE_LAYOUTS[layout][1], PythonNumber) else None,
        out=(lambda m, o, c, a, b: m.where(c, a, b, out=o)) if "scalar" not in layout else None,
    )


@pytest.mark.parametrize("other", ["int32", "float64", "bool", "int8"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "uint8"])
def test_where_promotes_self_and_other(dtype, other):
    build = builder(TERNARY_LAYOUTS["broadcast"], ("bool", dtype, other), ("any",) * 3, ("where_mixed", dtype, other))
    check_forms(build, function=lambda m, c, a, b: m.where(c, a, b))


def test_where_errors_match_torch():
    cases = [
        lambda m: m.where(m.tensor([1, 0]), m.ones(2), m.zeros(2)),
        lambda m: m.where(m.tensor([1.0, 0.0]), m.ones(2), m.zeros(2)),
        lambda m: m.where(m.tensor([True]), m.ones(2), m.zeros(2, dtype=m.int32), out=m.empty(2, dtype=m.float64)),
        lambda m: m.where(m.tensor([True, False, True]), m.ones(2), m.zeros(2)),
    ]
    for case in cases:
        assert_same_failure(raised(lambda: case(kiln)), raised(lambda: case(torch)))


def test_where_accepts_a_uint8_condition_as_torch_does():
    for cond in ([1, 0, 2], [0, 0, 1]):
        kc, tc = make_pair(np.array(cond), "uint8")
        ka, ta = make_pair(np.array([1.5, 2.5, 3.5]), "float32")
        assert_same_outcome(lambda: kiln.where(kc, ka, ka * -1), lambda: torch.where(tc, ta, ta * -1))


# --- clamp, clip, clamp_min, clamp_max ----------------------------------------------------------

CLAMP_BOUNDS = {
    "int_bounds": (-1, 2),
    "float_bounds": (-1.5, 2.25),
    "min_only": (0.5, None),
    "max_only": (None, 1),
    "crossed": (2, -1),
    "bool_bounds": (False, True),
    "nan_min": (float("nan"), 1.0),
    "nan_max_only": (None, float("nan")),
    "none": (None, None),
}
CLAMP_LAYOUTS = ("contiguous", "transposed", "zero_size", "zero_dim", "large")
CLAMP_CASES = [(d, b, l) for d in DTYPE_NAMES for b in CLAMP_BOUNDS for l in CLAMP_LAYOUTS
               if l != "large" or d in LARGE_LAYOUT_DTYPES]


# clip is clamp under another name (CompositeImplicit): its forms run on one layout.
CLAMP_CASES = [("clamp", d, b, l) for d, b, l in CLAMP_CASES] + [
    ("clip", d, b, l) for d, b, l in CLAMP_CASES if l == "contiguous"]


@pytest.mark.parametrize("name, dtype, bounds, layout", CLAMP_CASES, ids=[f"{n}-{d}-{b}-{l}" for n, d, b, l in CLAMP_CASES])
def test_clamp_scalar_bounds(name, dtype, bounds, layout):
    lo, hi = CLAMP_BOUNDS[bounds]
    build = builder(TERNARY_LAYOUTS[layout][:1], (dtype,), ("any",), (name, dtype, bounds, layout))
    check_forms(
        build,
        function=lambda m, x: getattr(m, name)(x, lo, hi),
        method=lambda x: getattr(x, name)(min=lo, max=hi),
        inplace=lambda x: getattr(x, name + "_")(lo, hi),
        out=lambda m, o, x: getattr(m, name)(x, lo, hi, out=o),
    )


CLAMP_TENSOR_CASES = [(d, l) for d in DTYPE_NAMES for l in layouts_for(d)]


@pytest.mark.parametrize("sides", ["both", "min", "max"])
@pytest.mark.parametrize("dtype, layout", CLAMP_TENSOR_CASES, ids=[f"{d}-{l}" for d, l in CLAMP_TENSOR_CASES])
def test_clamp_tensor_bounds(dtype, layout, sides):
    build = builder(TERNARY_LAYOUTS[layout], (dtype,) * 3, ("any",) * 3, ("clamp_tensor", dtype, layout))

    def bounds(lo, hi):
        return {"both": (lo, hi), "min": (lo, None), "max": (None, hi)}[sides]

    check_forms(
        build,
        function=lambda m, x, lo, hi: m.clamp(x, *bounds(lo, hi)),
        method=lambda x, lo, hi: x.clamp(*bounds(lo, hi)),
        inplace=lambda x, lo, hi: x.clamp_(*bounds(lo, hi)),
        out=lambda m, o, x, lo, hi: m.clamp(x, *bounds(lo, hi), out=o),
    )


@pytest.mark.parametrize("bound", [2, -1.5, True, float("nan"), 300])
@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_clamp_min_max_scalar(name, dtype, bound):
    build = builder(TERNARY_LAYOUTS["contiguous"][:1], (dtype,), ("any",), (name, dtype, bound))
    check_forms(
        build,
        function=lambda m, x: getattr(m, name)(x, bound),
        method=lambda x: getattr(x, name)(bound),
        inplace=lambda x: getattr(x, name + "_")(bound),
        out=lambda m, o, x: getattr(m, name)(x, bound, out=o),
    )


def test_clamp_mixed_dtypes_promote_as_torch():
    ki, ti = make_pair(np.array([1, 5, -3]), "int32")
    kf, tf = make_pair(np.array(0.5), "float32")
    kd, td = make_pair(np.array([2.0, 2.0, 2.0]), "float64")
    assert_same_outcome(lambda: kiln.clamp(ki, kf), lambda: torch.clamp(ti, tf))
    assert_same_outcome(lambda: kiln.clamp(ki, kf, kd), lambda: torch.clamp(ti, tf, td))
    assert_same_outcome(lambda: kiln.clamp(ki, 0.5, 3), lambda: torch.clamp(ti, 0.5, 3))
    assert_same_outcome(lambda: kiln.clamp(ki, kf, out=kiln.empty(3, dtype=kiln.int32)),
                        lambda: torch.clamp(ti, tf, out=torch.empty(3, dtype=torch.int32)))
    assert_same_outcome(lambda: ki.clamp_(0.5), lambda: ti.clamp_(0.5))
    assert_same_outcome(lambda: kiln.clamp(ki, 0, 1, out=kiln.empty(3)), lambda: torch.clamp(ti, 0, 1, out=torch.empty(3)))
    ku, tu = make_pair(np.array([1, 200]), "uint8")
    assert_same_outcome(lambda: kiln.clamp(ku, -1, 300), lambda: torch.clamp(tu, -1, 300))


# --- lerp -------------------------------------------------------------------------------------

LERP_CASES = [(d, l) for d in DTYPE_NAMES for l in layouts_for(d)]


@pytest.mark.parametrize("dtype, layout", LERP_CASES, ids=[f"{d}-{l}" for d, l in LERP_CASES])
def test_lerp_tensor_weight(dtype, layout):
    build = builder(TERNARY_LAYOUTS[layout], (dtype,) * 3, ("any", "any", "weight"), ("lerp", dtype, layout))
    check_forms(
        build,
        function=lambda m, s, e, w: m.lerp(s, e, w),
        method=lambda s, e, w: s.lerp(e, w),
        inplace=lambda s, e, w: s.lerp_(e, w),
        out=lambda m, o, s, e, w: m.lerp(s, e, w, out=o),
    )


# Every weight (either side of 0.5, outside [0, 1], an int, a bool) on a few layouts; two on the rest.
LERP_WEIGHTS = (0.25, 0.75, -0.5, 1.5, 2, True)
LERP_SCALAR_CASES = [(d, l, w) for d, l in LERP_CASES for w in LERP_WEIGHTS
                     if l in ("contiguous", "zero_dim", "large") or w in (0.25, 0.75)]


@pytest.mark.parametrize("dtype, layout, weight", LERP_SCALAR_CASES, ids=[f"{d}-{l}-{w}" for d, l, w in LERP_SCALAR_CASES])
def test_lerp_scalar_weight(dtype, layout, weight):
    build = builder(TERNARY_LAYOUTS[layout][:2], (dtype,) * 2, ("any",) * 2, ("lerp_scalar", dtype, layout))
    check_forms(
        build,
        function=lambda m, s, e: m.lerp(s, e, weight),
        method=lambda s, e: s.lerp(e, weight),
        inplace=lambda s, e: s.lerp_(e, weight),
        out=lambda m, o, s, e: m.lerp(s, e, weight, out=o),
    )


LERP_DTYPE_CASES = [
    ("zero_dim_weight_float64", lambda m: m.lerp(m.ones(3), m.zeros(3), m.tensor(0.25, dtype=m.float64))),
    ("zero_dim_weight_int", lambda m: m.lerp(m.ones(3), m.zeros(3), m.tensor(1))),
    ("zero_dim_weight_out_float64", lambda m: m.lerp(m.ones(3), m.zeros(3), m.tensor(0.25, dtype=m.float64),
                                                      out=m.empty(3, dtype=m.float64))),
    ("end_float64", lambda m: m.lerp(m.ones(3), m.zeros(3, dtype=m.float64), 0.5)),
    ("weight_float64", lambda m: m.lerp(m.ones(3), m.zeros(3), m.ones(3, dtype=m.float64))),
    ("weight_half", lambda m: m.lerp(m.ones(3), m.zeros(3), m.ones(3, dtype=m.float16))),
    ("tensor_weight_out_float64", lambda m: m.lerp(m.ones(3), m.zeros(3), m.ones(3), out=m.empty(3, dtype=m.float64))),
    ("scalar_weight_out_half", lambda m: m.lerp(m.ones(3), m.zeros(3), 0.5, out=m.empty(3, dtype=m.float16))),
    ("int_self", lambda m: m.lerp(m.ones(3, dtype=m.int32), m.zeros(3, dtype=m.int32), 0.5)),
]


@pytest.mark.parametrize("name, fn", LERP_DTYPE_CASES, ids=[n for n, _ in LERP_DTYPE_CASES])
def test_lerp_dtype_rules_match_torch(name, fn):
    assert_same_outcome(lambda: fn(kiln), lambda: fn(torch))


# --- addcmul, addcdiv ------------------------------------------------------------------------------

# value=2 everywhere; the default 1 and a float value on the contiguous layout.
ADDC_CASES = [(op, d, l, v) for op in ("addcmul", "addcdiv") for d in DTYPE_NAMES for l in layouts_for(d)
              for v in (1, 2, 0.5) if v == 2 or l == "contiguous"]


@pytest.mark.parametrize("op, dtype, layout, value", ADDC_CASES, ids=[f"{o}-{d}-{l}-{v}" for o, d, l, v in ADDC_CASES])
def test_addcmul_addcdiv(op, dtype, layout, value):
    kinds = ("any", "any", "nonzero" if op == "addcdiv" else "any")
    build = builder(TERNARY_LAYOUTS[layout], (dtype,) * 3, kinds, (op, dtype, layout))
    check_forms(
        build,
        function=lambda m, s, a, b: getattr(m, op)(s, a, b, value=value),
        method=lambda s, a, b: getattr(s, op)(a, b, value=value),
        inplace=lambda s, a, b: getattr(s, op + "_")(a, b, value=value),
        out=lambda m, o, s, a, b: getattr(m, op)(s, a, b, value=value, out=o),
    )


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("dtypes", [("float32", "int32", "int32"), ("int32", "float32", "float64"),
                                    ("bool", "float32", "float32"), ("float16", "float32", "int8")])
def test_addcmul_addcdiv_promote_as_torch(op, dtypes):
    build = builder(TERNARY_LAYOUTS["broadcast"], dtypes, ("any", "any", "nonzero"), (op, *dtypes))
    check_forms(build, function=lambda m, s, a, b: getattr(m, op)(s, a, b, value=2))


# --- masked_fill ------------------------------------------------------------------------------------

MASKED_FILL_LAYOUTS = {
    "same_shape": (Operand((5, 37)), Operand((5, 37))),
    "mask_broadcast": (Operand((5, 37)), Operand((37,))),
    "self_broadcast": (Operand((1, 37)), Operand((5, 37))),
    "transposed": (Operand((37, 5), _transposed), Operand((37, 5), _transposed)),
    "zero_dim_mask": (Operand((5, 37)), Operand(())),
    "zero_size": (Operand((0, 37)), Operand((1, 37))),
    "large": (Operand((40, 2049)), Operand((40, 2049))),
}
MASKED_FILL_VALUES = {"int": 7, "float": -2.5, "bool": True, "tensor": "tensor", "big": 1e10}
MASKED_FILL_CASES = [(d, l) for d in DTYPE_NAMES for l in layouts_for(d, MASKED_FILL_LAYOUTS)]


@pytest.mark.parametrize("value", list(MASKED_FILL_VALUES))
@pytest.mark.parametrize("dtype, layout", MASKED_FILL_CASES, ids=[f"{d}-{l}" for d, l in MASKED_FILL_CASES])
def test_masked_fill(dtype, layout, value):
    build = builder(MASKED_FILL_LAYOUTS[layout], (dtype, "bool"), ("any", "any"), ("masked_fill", dtype, layout))

    def fill_value(m):
        return m.tensor(3.5) if MASKED_FILL_VALUES[value] == "tensor" else MASKED_FILL_VALUES[value]

    check_forms(
        build,
        function=lambda m, x, mask: m.masked_fill(x, mask, fill_value(m)),
        method=lambda x, mask: x.masked_fill(mask, fill_value(kiln if isinstance(x, kiln.Tensor) else torch)),
        inplace=lambda x, mask: x.masked_fill_(mask, fill_value(kiln if isinstance(x, kiln.Tensor) else torch)),
    )


MASKED_FILL_ERRORS = [
    ("float_mask", lambda m: m.masked_fill(m.ones(3), m.ones(3), 1.0)),
    ("uint8_mask", lambda m: m.masked_fill(m.ones(3), m.ones(3, dtype=m.uint8), 1.0)),
    ("int64_mask", lambda m: m.ones(3).masked_fill_(m.ones(3, dtype=m.int64), 1.0)),
    ("value_with_dims", lambda m: m.masked_fill(m.ones(3), m.ones(3, dtype=m.bool), m.ones(1))),
    ("inplace_mask_grows_self", lambda m: m.ones(3).masked_fill_(m.ones(2, 3, dtype=m.bool), 1.0)),
    ("overflow", lambda m: m.masked_fill(m.ones(3, dtype=m.int32), m.ones(3, dtype=m.bool), 1e10)),
]


@pytest.mark.parametrize("name, fn", MASKED_FILL_ERRORS, ids=[n for n, _ in MASKED_FILL_ERRORS])
def test_masked_fill_errors_match_torch(name, fn):
    assert_same_failure(raised(lambda: fn(kiln)), raised(lambda: fn(torch)))


# --- logical_not, bitwise_not -----------------------------------------------------------------------

UNARY_CASES = [(op, d, l) for op in ("logical_not", "bitwise_not") for d in DTYPE_NAMES for l in layouts_for(d)]


@pytest.mark.parametrize("op, dtype, layout", UNARY_CASES, ids=[f"{o}-{d}-{l}" for o, d, l in UNARY_CASES])
def test_logical_not_bitwise_not(op, dtype, layout):
    build = builder(TERNARY_LAYOUTS[layout][:1], (dtype,), ("any",), (op, dtype, layout))
    check_forms(
        build,
        function=lambda m, x: getattr(m, op)(x),
        method=lambda x: getattr(x, op)(),
        inplace=lambda x: getattr(x, op + "_")(),
        out=lambda m, o, x: getattr(m, op)(x, out=o),
    )


@pytest.mark.parametrize("out_dtype", ["float32", "int32", "float16", "uint8"])
@pytest.mark.parametrize("op", ["logical_not", "bitwise_not", "logical_and", "eq"])
def test_unary_and_logical_out_of_other_dtypes(op, out_dtype):
    build = builder(TERNARY_LAYOUTS["contiguous"][:2], ("int32", "float32"), ("any", "any"), (op, out_dtype))
    kargs, targs = build()
    arity = 1 if op.endswith("_not") else 2
    kout = kiln.empty([5, 37], dtype=kiln_dtype(out_dtype))
    tout = torch.empty(5, 37, dtype=getattr(torch, out_dtype))
    assert_same_outcome(lambda: getattr(kiln, op)(*kargs[:arity], out=kout),
                        lambda: getattr(torch, op)(*targs[:arity], out=tout))


# --- pow with a scalar exponent or base ------------------------------------------------------------

EXPONENTS = [0, 1, 0.5, -0.5, -1, 2, 3, -2, 2.5, -1.5, True, False, -3]
# The large layout only for the dtypes that have one (not generated for the others).
POW_SCALAR_CASES = [(d, e, l) for d in DTYPE_NAMES for e in EXPONENTS for l in ("contiguous", "transposed", "large")
                    if l != "large" or d in LARGE_LAYOUT_DTYPES]


@pytest.mark.parametrize("dtype, exponent, layout", POW_SCALAR_CASES,
                         ids=[f"{d}-{e}-{l}" for d, e, l in POW_SCALAR_CASES])
def test_pow_tensor_scalar(dtype, exponent, layout):
    build = builder(TERNARY_LAYOUTS[layout][:1], (dtype,), ("any",), ("pow_scalar", dtype, layout))
    check_forms(
        build,
        function=lambda m, x: m.pow(x, exponent),
        method=lambda x: x.pow(exponent),
        inplace=lambda x: x.pow_(exponent),
        out=lambda m, o, x: m.pow(x, exponent, out=o),
    )


BASES = [1, 2, 2.5, -2, 0, True, 1.0]
POW_BASE_CASES = [(d, b) for d in DTYPE_NAMES for b in BASES]


@pytest.mark.parametrize("dtype, base", POW_BASE_CASES, ids=[f"{d}-{b}" for d, b in POW_BASE_CASES])
def test_pow_scalar_base(dtype, base):
    build = builder(TERNARY_LAYOUTS["contiguous"][:1], (dtype,), ("exponent",), ("pow_base", dtype))
    check_forms(
        build,
        function=lambda m, x: m.pow(base, x),
        out=lambda m, o, x: m.pow(base, x, out=o),
    )


def test_ternary_case_count():
    """The op x dtype x layout tables this file runs (reported with the issue)."""
    counts = {
        "where": len(WHERE_CASES),
        "clamp/clip scalar": len(CLAMP_CASES),
        "clamp tensor": 3 * len(CLAMP_TENSOR_CASES),
        "clamp_min/max scalar": 2 * 5 * len(DTYPE_NAMES),
        "lerp": len(LERP_CASES) + len(LERP_SCALAR_CASES),
        "addcmul/addcdiv": len(ADDC_CASES),
        "masked_fill": len(MASKED_FILL_VALUES) * len(MASKED_FILL_CASES),
        "logical_not/bitwise_not": len(UNARY_CASES),
        "pow scalar": len(POW_SCALAR_CASES) + len(POW_BASE_CASES),
    }
    assert all(n > 0 for n in counts.values())
