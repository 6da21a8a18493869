"""Python's operators on kiln tensors against torch.Tensor's: + - * / // % ** &
| ^ << >> and the comparisons, with tensors and Python numbers on either side
(reflected forms: 2 - t, 2 ** t, 1 / int_tensor), augmented assignment
(in place, same object), unary - + abs ~, and the NotImplemented protocol
(t + "a" is Python's TypeError, t == None is False).
"""

from __future__ import annotations

import operator
import zlib

import numpy as np
import pytest
import torch

import kiln
from test_pointwise_binary import Operand, PythonNumber, build_operands
from tolerant_compare import assert_matches, assert_same_failure, assert_same_outcome, outcome
from torch_compare import DTYPE_NAMES, raised

# (name, operator, in-place operator, value kind of the right operand)
OPERATORS = [
    ("add", operator.add, operator.iadd, "any"),
    ("sub", operator.sub, operator.isub, "any"),
    ("mul", operator.mul, operator.imul, "any"),
    ("truediv", operator.truediv, operator.itruediv, "any"),
    ("floordiv", operator.floordiv, operator.ifloordiv, "nonzero"),
    ("mod", operator.mod, operator.imod, "nonzero"),
    ("pow", operator.pow, operator.ipow, "exponent"),
    ("and", operator.and_, operator.iand, "any"),
    ("or", operator.or_, operator.ior, "any"),
    ("xor", operator.xor, operator.ixor, "any"),
    ("lshift", operator.lshift, operator.ilshift, "shift"),
    ("rshift", operator.rshift, operator.irshift, "shift"),
    ("eq", operator.eq, None, "any"),
    ("ne", operator.ne, None, "any"),
    ("lt", operator.lt, None, "any"),
    ("le", operator.le, None, "any"),
    ("gt", operator.gt, None, "any"),
    ("ge", operator.ge, None, "any"),
]

# Which side is what: a tensor, a 0-dim tensor or a Python number (int, float, bool).
SIDES = {
    "tensor_tensor": (Operand((5, 37)), Operand((5, 37))),
    "broadcast": (Operand((5, 1)), Operand((37,))),
    "tensor_zero_dim": (Operand((5, 37)), Operand(())),
    "zero_dim_tensor": (Operand(()), Operand((5, 37))),
    "tensor_int": (Operand((5, 37)), PythonNumber("int")),
    "tensor_float": (Operand((5, 37)), PythonNumber("float")),
    "tensor_bool": (Operand((5, 37)), PythonNumber("bool")),
    "int_tensor": (PythonNumber("int"), Operand((5, 37))),
    "float_tensor": (PythonNumber("float"), Operand((5, 37))),
    "bool_tensor": (PythonNumber("bool"), Operand((5, 37))),
}

OPERATOR_CASES = [(name, dtype, sides) for name, *_ in OPERATORS for dtype in DTYPE_NAMES for sides in SIDES]
_BY_NAME = {name: (fn, ifn, kind) for name, fn, ifn, kind in OPERATORS}


def _operands(name, dtype, sides):
    _, _, kind = _BY_NAME[name]
    rng = np.random.default_rng(zlib.crc32(f"{name}/{dtype}/{sides}".encode()))
    layout = SIDES[sides]
    # The divisor-like operand is the right one; with a number on the left, the tensor is it.
    kinds = ("any", kind) if not isinstance(layout[0], PythonNumber) else (kind if kind != "exponent" else "any", kind)
    return build_operands(layout, (dtype, dtype), rng, kinds)


@pytest.mark.parametrize("name, dtype, sides", OPERATOR_CASES, ids=[f"{n}-{d}-{s}" for n, d, s in OPERATOR_CASES])
def test_operator_matches_torch(name, dtype, sides):
    fn, ifn, _ = _BY_NAME[name]
    (ka, kb), (ta, tb) = _operands(name, dtype, sides)
    assert_same_outcome(lambda: fn(ka, kb), lambda: fn(ta, tb))
    if ifn is None or not isinstance(ka, kiln.Tensor):
        return
    (ka, kb), (ta, tb) = _operands(name, dtype, sides)
    target = ka
    kresult, kerror = outcome(lambda: ifn(ka, kb))
    tresult, terror = outcome(lambda: ifn(ta, tb))
    if terror is not None:
        assert_same_failure(kerror, terror)
        return
    assert kerror is None, f"kiln raised {kerror!r}"
    assert kresult is target, "augmented assignment works in place"
    assert_matches(kresult, tresult)


def test_operator_case_count():
    assert len(OPERATOR_CASES) == len(OPERATORS) * len(DTYPE_NAMES) * len(SIDES)


# --- unary operators -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_invert_and_positive(dtype):
    rng = np.random.default_rng(1)
    (k,), (t,) = build_operands((Operand((5, 37)),), (dtype,), rng, ("any",))
    assert_same_outcome(lambda: ~k, lambda: ~t)
    if dtype == "bool":
        assert_same_failure(raised(lambda: +k), raised(lambda: +t))
    else:
        assert +k is k  # as torch: positive() returns the tensor itself


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_negative_and_abs(dtype):
    rng = np.random.default_rng(2)
    (k,), (t,) = build_operands((Operand((5, 37)),), (dtype,), rng, ("any",))
    assert_same_outcome(lambda: -k, lambda: -t)
    assert_same_outcome(lambda: abs(k), lambda: abs(t))


# --- the NotImplemented protocol ------------------------------------------------------------

ODD_OPERANDS = ["a", None, [1.0, 2.0], object()]


@pytest.mark.parametrize("other", ODD_OPERANDS, ids=["str", "None", "list", "object"])
@pytest.mark.parametrize("name", [n for n, *_ in OPERATORS])
def test_operator_with_a_non_number_raises_like_torch(name, other):
    fn, _, _ = _BY_NAME[name]
    k, t = kiln.ones(3), torch.ones(3)
    for kiln_call, torch_call in ((lambda: fn(k, other), lambda: fn(t, other)),
                                  (lambda: fn(other, k), lambda: fn(other, t))):
        kresult, kerror = outcome(kiln_call)
        tresult, terror = outcome(torch_call)
        if terror is not None:
            assert_same_failure(kerror, terror, message=False)
            # Python's own message names the operand types: Tensor on both sides.
            assert str(kerror) == str(terror)
        else:
            assert kerror is None and kresult == tresult  # == / != with None: identity, False / True


def test_tensors_stay_hashable():
    k = kiln.ones(2)
    assert hash(k) == hash(k)
    assert k in {k: 1}
    assert len({kiln.ones(1), kiln.ones(1)}) == 2


# --- numpy numbers -------------------------------------------------------------------------

@pytest.mark.parametrize("number", [np.float32(2.5), np.float64(-1.5), np.int64(3), np.int8(-2), np.bool_(True)],
                         ids=["float32", "float64", "int64", "int8", "bool"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float16", "bool"])
def test_numpy_numbers_on_either_side(dtype, number):
    rng = np.random.default_rng(3)
    (k,), (t,) = build_operands((Operand((2, 3)),), (dtype,), rng, ("any",))
    for fn in (operator.add, operator.mul):
        assert_same_outcome(lambda: fn(k, number), lambda: fn(t, number))
        assert_same_outcome(lambda: fn(number, k), lambda: fn(number, t))


# --- reflected operators: the result dtype of a number on the left -----------------------------

REFLECTED = [
    ("1 / int", lambda m: 1 / m.tensor([1, 2, 4], dtype=m.int32)),
    ("2.5 / half", lambda m: 2.5 / m.tensor([1.0, 2.0], dtype=m.float16)),
    ("1e300 / double", lambda m: 1e300 / m.tensor([1.0, 10.0], dtype=m.float64)),
    ("300 // uint8", lambda m: 300 // m.tensor([1, 7], dtype=m.uint8)),
    ("7 // int8", lambda m: 7 // m.tensor([2, -3], dtype=m.int8)),
    ("-7 % int", lambda m: -7 % m.tensor([2, 3], dtype=m.int32)),
    ("2 ** int", lambda m: 2 ** m.tensor([0, 3, -1])),
    ("2.0 ** int", lambda m: 2.0 ** m.tensor([0, 3, -1])),
    ("True ** int", lambda m: True ** m.tensor([0, 3, -1])),
    ("2 - bool", lambda m: 2 - m.tensor([True, False])),
    ("1 << int8", lambda m: 1 << m.tensor([1, 9], dtype=m.int8)),
    ("True & bool", lambda m: True & m.tensor([True, False])),
    ("0.5 < int", lambda m: 0.5 < m.tensor([0, 1])),
    ("0-dim on both sides", lambda m: m.tensor(3, dtype=m.int8) * m.tensor(2.5, dtype=m.float64)),
]


@pytest.mark.parametrize("name, fn", REFLECTED, ids=[n for n, _ in REFLECTED])
def test_reflected_operator_dtypes(name, fn):
    assert_same_outcome(lambda: fn(kiln), lambda: fn(torch))
