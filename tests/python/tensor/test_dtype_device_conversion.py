"""dtype and device conversions against torch: Tensor.to in its argument forms
(dtype, device, device and dtype, another tensor, keywords), the shorthands
(.float() ... .bool(), .cpu()), type_as and Tensor.type; values for every pair
of dtypes and layouts; `to` returns self when nothing changes and copy=False;
memory_format; and the gradient, which converts back."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import DTYPE_NAMES, kiln_dtype, raised, torch_dtype
from unary_cases import fresh_input, grad_input

CONVERSION_LAYOUTS = ("contiguous", "transposed", "strided", "expanded", "zero_size", "zero_dim")

CONVERSION_CASES = [
    pytest.param(src, dst, layout, id=f"{src}-to-{dst}-{layout}")
    for src in DTYPE_NAMES for dst in DTYPE_NAMES for layout in CONVERSION_LAYOUTS
]


@pytest.mark.parametrize("src, dst, layout", CONVERSION_CASES)
def test_to_dtype_matches_torch(src, dst, layout):
    k, t = fresh_input("to", src, layout, "any")
    if dst not in ("float32", "float64", "float16", "bfloat16") and src in ("float32", "float64", "float16", "bfloat16"):
        # float -> integer of nan/inf/out-of-range values is undefined behaviour in C++ (and torch)
        k, t = fresh_input("to-finite", src, layout, "unit")
        k, t = k.nan_to_num(0.0, 0.0, 0.0), t.nan_to_num(0.0, 0.0, 0.0)
    kr, tr = k.to(kiln_dtype(dst)), t.to(torch_dtype(dst))
    assert_matches(kr, tr, exact=True)
    if layout != "zero_size":  # torch gives a (0, 37) result strides (0, 0) here; kiln keeps (37, 1)
        assert kr.stride() == tr.stride()


SHORTHANDS = ["float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool"]


@pytest.mark.parametrize("name", SHORTHANDS)
def test_shorthands_match_torch(name):
    k, t = fresh_input("shorthand", "int32", "transposed", "any")
    kr, tr = getattr(k, name)(), getattr(t, name)()
    assert_matches(kr, tr, exact=True)
    assert kr.stride() == tr.stride()
    assert (getattr(kr, name)() is kr) == (getattr(tr, name)() is tr)


TO_FORMS = [
    ("dtype", lambda m, x: x.to(m.float64)),
    ("dtype_keyword", lambda m, x: x.to(dtype=m.float64)),
    ("device", lambda m, x: x.to("cpu")),
    ("device_object", lambda m, x: x.to(m.device("cpu"))),
    ("device_keyword", lambda m, x: x.to(device="cpu")),
    ("device_and_dtype", lambda m, x: x.to("cpu", m.int16)),
    ("device_and_dtype_keywords", lambda m, x: x.to(device="cpu", dtype=m.int16)),
    ("device_dtype_positional_flags", lambda m, x: x.to("cpu", m.float16, False, True)),
    ("none_device", lambda m, x: x.to(None, m.float64)),
    ("other", lambda m, x: x.to(m.zeros(2, dtype=m.int64))),
    ("other_same", lambda m, x: x.to(m.zeros(2))),
    ("same_dtype", lambda m, x: x.to(m.float32)),
    ("same_dtype_copy", lambda m, x: x.to(m.float32, copy=True)),
    ("no_arguments", lambda m, x: x.to()),
    ("contiguous_format", lambda m, x: x.t().to(m.float32, memory_format=m.contiguous_format)),
    ("preserve_format_transposed", lambda m, x: x.t().to(m.float64)),
    ("non_blocking", lambda m, x: x.to(m.float64, non_blocking=True)),
    ("type_as", lambda m, x: x.type_as(m.zeros(1, dtype=m.int8))),
    ("type_as_same", lambda m, x: x.type_as(m.zeros(1))),
    ("cpu", lambda m, x: x.cpu()),
    ("type_dtype", lambda m, x: x.type(m.float64)),
    ("type_name", lambda m, x: x.type("torch.IntTensor" if m is torch else "kiln.IntTensor")),
]


def _base(m):
    return m.tensor([[1.5, -2.0, 3.25], [0.0, 7.0, -8.5]])


@pytest.mark.parametrize("name, fn", TO_FORMS, ids=[n for n, _ in TO_FORMS])
def test_to_forms_match_torch(name, fn):
    kx, tx = _base(kiln), _base(torch)
    kr, tr = fn(kiln, kx), fn(torch, tx)
    assert_matches(kr, tr, exact=True)
    assert kr.stride() == tr.stride()
    assert (kr is kx) == (tr is tx), "to returns self exactly when torch does"


def test_to_returns_self_or_a_copy_as_torch_does_for_channels_last():
    kx = kiln.ones(2, 3, 4, 5)
    tx = torch.ones(2, 3, 4, 5)
    kr, tr = kx.to(kiln.float32, memory_format=kiln.channels_last), tx.to(torch.float32, memory_format=torch.channels_last)
    assert kr.stride() == tr.stride() and kr is not kx
    assert kr.to(kiln.float32, memory_format=kiln.channels_last) is kr


def test_type_without_arguments_names_the_type():
    for name in DTYPE_NAMES:
        k, t = kiln.zeros(1, dtype=kiln_dtype(name)), torch.zeros(1, dtype=torch_dtype(name))
        assert k.type() == t.type().replace("torch", "kiln")


ERROR_CASES = [
    ("to_bad_argument", lambda m, x: x.to([1])),
    ("to_dtype_twice", lambda m, x: x.to(m.float64, dtype=m.float32)),
    ("type_bad_name", lambda m, x: x.type("torch.NoSuchTensor" if m is torch else "kiln.NoSuchTensor")),
]


@pytest.mark.parametrize("name, fn", ERROR_CASES, ids=[n for n, _ in ERROR_CASES])
def test_conversion_errors_match_torch_in_type(name, fn):
    assert_same_failure(raised(lambda: fn(kiln, _base(kiln))), raised(lambda: fn(torch, _base(torch))), message=False)


def test_to_an_unavailable_device_is_a_clear_error():
    error = raised(lambda: kiln.ones(2).to("cuda"))
    assert isinstance(error, RuntimeError) and "cuda" in str(error)


# --- gradients --------------------------------------------------------------------------------


@pytest.mark.parametrize("dst", ["float32", "float16", "bfloat16"])
def test_gradient_converts_back(dst):
    k, t = grad_input("to-grad", "any")
    g = np.random.default_rng(1).uniform(-1, 1, size=tuple(t.shape))
    kout, tout = k.to(kiln_dtype(dst)), t.to(torch_dtype(dst))
    kg_out = kiln.from_numpy(g.copy()).to(kiln_dtype(dst))
    tg_out = torch.from_numpy(g.copy()).to(torch_dtype(dst))
    (kg,) = kiln.autograd.grad(kout, [k], grad_outputs=[kg_out])
    (tg,) = torch.autograd.grad(tout, [t], grad_outputs=[tg_out])
    assert_matches(kg, tg, exact=True)
    assert kout.grad_fn.name() == "ToCopyBackward0"


def test_gradcheck_through_conversions():
    k, _ = grad_input("to-gradcheck", "any", shape=(2, 3))
    assert kiln.autograd.gradcheck(lambda x: x.to(kiln.float64, copy=True) * x, (k,))
    assert kiln.autograd.gradcheck(lambda x: x.to(kiln.float32).sigmoid(), (k,), eps=1e-3, atol=1e-3, rtol=1e-2)


def test_integer_results_do_not_require_grad():
    k, t = grad_input("to-int", "any")
    assert k.long().requires_grad == t.long().requires_grad is False
    assert k.bool().requires_grad == t.bool().requires_grad is False
    assert k.float().requires_grad == t.float().requires_grad is True


def test_to_self_keeps_the_autograd_identity():
    k, _ = grad_input("to-self", "any")
    assert k.to(kiln.float64) is k and k.double() is k


def test_conversion_case_count():
    """The src dtype x dst dtype x layout table this file runs (reported with the issue)."""
    assert len(CONVERSION_CASES) == len(DTYPE_NAMES) ** 2 * len(CONVERSION_LAYOUTS)
