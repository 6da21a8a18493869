"""frexp, ldexp (ldexp_), gcd / lcm (gcd_, lcm_), i0 (i0_) and kiln.special.i0 /
i0e / i1 / i1e, mvlgamma (mvlgamma_) and special.multigammaln against torch:
bit-exact values where torch's are exact (frexp, ldexp, gcd, lcm), torch.testing
tolerances otherwise, for every dtype the op takes; broadcasting,
non-contiguous operands, edge values (0, -0, subnormal, inf, nan, the most
negative integer) and gradients; torch's exception types and words."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_fails_alike as _same_error, assert_matches

FLOATS = ["float32", "float64"]
INTEGERS = ["uint8", "int8", "int16", "int32", "int64"]


def _pair(a, dtype, requires_grad=False):
    a = np.ascontiguousarray(np.asarray(a)).astype(dtype if dtype not in ("float16", "bfloat16") else "float64")
    t = torch.from_numpy(a.copy())
    k = kiln.from_numpy(a.copy())
    if dtype in ("float16", "bfloat16"):
        t, k = t.to(getattr(torch, dtype)), k.to(getattr(kiln, dtype))
    if requires_grad:
        k.requires_grad_(True)
        t.requires_grad_(True)
    return k, t


def _grad_matches(kfn, tfn, values, dtype="float64", **tol):
    k, t = _pair(values, dtype, requires_grad=True)
    g = np.random.default_rng(1).standard_normal(np.shape(values)).astype(dtype)
    (kfn(k) * kiln.from_numpy(g.copy())).sum().backward()
    (tfn(t) * torch.from_numpy(g.copy())).sum().backward()
    assert k.grad is not None, "kiln produced no gradient"
    torch.testing.assert_close(torch.from_numpy(np.array(k.grad.numpy())), t.grad, equal_nan=True, **tol)


EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -5.5, 1e-3, 123456.789, math.inf, -math.inf, math.nan]
SUBNORMALS = {"float32": [1e-45, -3e-39, 1.1754942e-38, 1.17549435e-38], "float64": [5e-324, -4e-320, 2.2e-308,
              2.2250738585072014e-308], "float16": [6e-8, -3e-5, 6.1e-5], "bfloat16": [-3e-39, 1e-38]}
LARGEST = {"float32": [3.4e38, -1e38], "float64": [1.7e308, -1e300], "float16": [65504.0, -6e4],
           "bfloat16": [3.3e38]}


# --- frexp ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_frexp_bit_exact_including_edges(dtype):
    rng = np.random.default_rng(2)
    values = EDGES + SUBNORMALS[dtype] + LARGEST[dtype] + list(rng.standard_normal(20) * 10.0 ** rng.integers(-30, 30, 20))
    if dtype == "float16":
        values = [v for v in values if not (math.isfinite(v) and abs(v) > 65504)]
    k, t = _pair(values, dtype)
    km, ke = kiln.frexp(k)
    tm, te = torch.frexp(t)
    assert_matches(km, tm, exact=True)
    assert_matches(ke, te, exact=True)
    assert np.array_equal(np.signbit(km.to(kiln.float64).numpy()), np.signbit(tm.double().numpy()))
    result = kiln.frexp(k)
    assert type(result).__name__ == "frexp" and result.mantissa is not None and result.exponent.dtype == kiln.int32
    km2, ke2 = k.frexp()
    assert_matches(km2, tm, exact=True)
    assert_matches(ke2, te, exact=True)


def test_frexp_non_contiguous_out_and_gradient():
    a = np.random.default_rng(3).standard_normal((4, 6)) * 1e5
    k, t = _pair(a, "float64")
    km, ke = kiln.frexp(k.mT[::2])
    tm, te = torch.frexp(t.mT[::2])
    assert_matches(km, tm, exact=True)
    assert_matches(ke, te, exact=True)
    mantissa, exponent = kiln.empty(3, 4, dtype=kiln.float64), kiln.empty(3, 4, dtype=kiln.int32)
    result = kiln.frexp(k.mT[::2], out=(mantissa, exponent))
    assert type(result).__name__ == "frexp_out"
    assert_matches(mantissa, tm, exact=True)
    assert_matches(exponent, te, exact=True)
    _grad_matches(lambda x: kiln.frexp(x).mantissa, lambda x: torch.frexp(x).mantissa, a, rtol=0, atol=0)
    _grad_matches(lambda x: kiln.frexp(x)[0], lambda x: torch.frexp(x)[0], np.float32(a), "float32", rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
def test_frexp_rejects_non_floats(dtype):
    _same_error(lambda: kiln.frexp(kiln.ones(2, dtype=getattr(kiln, dtype))),
                lambda: torch.frexp(torch.ones(2, dtype=getattr(torch, dtype))))
    _same_error(lambda: kiln.frexp([1.0]), lambda: torch.frexp([1.0]))


# --- ldexp ------------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")  # torch's own, broadcasting
@pytest.mark.parametrize("x_dtype, e_dtype", [("float32", "int64"), ("float64", "int32"), ("float32", "float64"),
                                              ("int64", "int64"), ("float16", "int64"), ("bfloat16", "int8"),
                                              ("int32", "float32"), ("float64", "float32")])
def test_ldexp_values_dtypes_and_broadcasting(x_dtype, e_dtype):
    rng = np.random.default_rng(4)
    x = rng.integers(-5, 6, (3, 1, 4)) if x_dtype.startswith(("int", "uint")) else rng.standard_normal((3, 1, 4))
    e = rng.integers(-20, 20, (2, 1))
    kx, tx = _pair(x, x_dtype)
    ke, te = _pair(e, e_dtype)
    assert_matches(kiln.ldexp(kx, ke), torch.ldexp(tx, te), exact=True)
    assert_matches(kx.ldexp(ke), tx.ldexp(te), exact=True)


def test_ldexp_edges_in_place_out_and_gradient():
    x = np.array([0.0, -0.0, 1.0, math.inf, math.nan, 1e-310, 3.0, -2.0])
    e = np.array([5, 3, 1100, -1, 2, 60, -1080, 1023])
    kx, tx = _pair(x, "float64")
    ke, te = _pair(e, "int64")
    assert_matches(kiln.ldexp(kx, ke), torch.ldexp(tx, te), exact=True)
    kv, tv = kx.clone(), tx.clone()
    assert kv.ldexp_(ke) is kv
    tv.ldexp_(te)
    assert_matches(kv, tv, exact=True)
    out = kiln.empty(8, dtype=kiln.float64)
    kiln.ldexp(kx, ke, out=out)
    assert_matches(out, torch.ldexp(tx, te), exact=True)
    k2, t2 = _pair(np.arange(12.0).reshape(3, 4), "float32")
    assert_matches(kiln.ldexp(k2.mT, kiln.tensor([1, 2, 3])), torch.ldexp(t2.mT, torch.tensor([1, 2, 3])), exact=True)
    a = np.random.default_rng(5).standard_normal((3, 4))
    kk, tt = _pair(a, "float64", requires_grad=True)
    kexp, texp = _pair(np.random.default_rng(6).standard_normal((3, 4)), "float64", requires_grad=True)
    g = np.random.default_rng(7).standard_normal((3, 4))
    (kiln.ldexp(kk, kexp) * kiln.from_numpy(g.copy())).sum().backward()
    (torch.ldexp(tt, texp) * torch.from_numpy(g.copy())).sum().backward()
    torch.testing.assert_close(torch.from_numpy(kk.grad.numpy().copy()), tt.grad)
    torch.testing.assert_close(torch.from_numpy(kexp.grad.numpy().copy()), texp.grad)


def test_ldexp_errors():
    _same_error(lambda: kiln.ldexp(kiln.ones(2), 3), lambda: torch.ldexp(torch.ones(2), 3))
    _same_error(lambda: kiln.ldexp(3, kiln.ones(2)), lambda: torch.ldexp(3, torch.ones(2)))
    _same_error(lambda: kiln.ones(2).ldexp_(3), lambda: torch.ones(2).ldexp_(3))
    _same_error(lambda: kiln.tensor([1, 2]).ldexp_(kiln.tensor([1, 2])),
                lambda: torch.tensor([1, 2]).ldexp_(torch.tensor([1, 2])))


# --- gcd and lcm ------------------------------------------------------------------------------------------


def _integers(dtype, shape, seed):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    values = rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, shape)
    values.flat[:4] = [0, 0, info.min, info.max][: values.size]
    return values


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("op", ["gcd", "lcm"])
def test_gcd_lcm_values_with_edges(dtype, op):
    a, b = _integers(dtype, (40,), 8), _integers(dtype, (40,), 9)
    b[0], b[2], b[3] = 0, 0, 1  # gcd(0, 0), gcd(min, 0), gcd(max, 1)
    ka, ta = _pair(a, dtype)
    kb, tb = _pair(b, dtype)
    assert_matches(getattr(kiln, op)(ka, kb), getattr(torch, op)(ta, tb), exact=True)
    assert_matches(getattr(ka, op)(kb), getattr(ta, op)(tb), exact=True)


@pytest.mark.parametrize("op", ["gcd", "lcm"])
def test_gcd_lcm_broadcasting_promotion_non_contiguous_in_place_out(op):
    a, b = _integers("int32", (4, 1, 3), 10), _integers("int64", (5, 1), 11)
    ka, ta = _pair(a, "int32")
    kb, tb = _pair(b, "int64")
    assert_matches(getattr(kiln, op)(ka, kb), getattr(torch, op)(ta, tb), exact=True)
    c = _integers("int64", (6, 5), 12)
    kc, tc = _pair(c, "int64")
    assert not kc.mT[:, ::2].is_contiguous()
    assert_matches(getattr(kiln, op)(kc.mT[:, ::2], kb), getattr(torch, op)(tc.mT[:, ::2], tb), exact=True)
    ki, ti = kc.to(kiln.int32), tc.to(torch.int32)
    assert getattr(ki, op + "_")(kb[:, :1].mT.expand(1, 5)) is ki
    getattr(ti, op + "_")(tb[:, :1].mT.expand(1, 5))
    assert_matches(ki, ti, exact=True)
    out = kiln.empty(6, 5, dtype=kiln.int64)
    getattr(kiln, op)(kc, kc.flip(0), out=out)
    assert_matches(out, getattr(torch, op)(tc, tc.flip(0)), exact=True)


def test_gcd_worst_case_fibonacci_and_known_values():
    fib = [0, 1]
    while fib[-1] < 2 ** 62:
        fib.append(fib[-1] + fib[-2])
    a, b = kiln.tensor(fib[-2:-1] * 3, dtype=kiln.int64), kiln.tensor([fib[-3], 2 ** 40, 6], dtype=kiln.int64)
    assert kiln.gcd(a, b).tolist() == [math.gcd(fib[-2], fib[-3]), math.gcd(fib[-2], 2 ** 40), math.gcd(fib[-2], 6)]
    assert kiln.lcm(kiln.tensor([4, -6, 0]), kiln.tensor([6, 4, 0])).tolist() == [12, 12, 0]


@pytest.mark.parametrize("op", ["gcd", "lcm"])
@pytest.mark.parametrize("case", ["float", "bool", "mixed float", "scalar other", "scalar input", "in-place shape"])
def test_gcd_lcm_errors(op, case):
    def make(lib):
        fn = getattr(lib, op)
        return {"float": lambda: fn(lib.ones(2), lib.ones(2)),
                "bool": lambda: fn(lib.ones(2, dtype=lib.bool), lib.ones(2, dtype=lib.bool)),
                "mixed float": lambda: fn(lib.ones(2, dtype=lib.int64), lib.ones(2)),
                "scalar other": lambda: fn(lib.ones(2, dtype=lib.int64), 3),
                "scalar input": lambda: fn(3, lib.ones(2, dtype=lib.int64)),
                "in-place shape": lambda: getattr(lib.ones(2, dtype=lib.int64), op + "_")(
                    lib.ones(3, 2, dtype=lib.int64))}[case]

    _same_error(make(kiln), make(torch))


# --- the modified Bessel functions ------------------------------------------------------------------------

BESSEL = ["i0", "i0e", "i1", "i1e"]
BESSEL_POINTS = [0.0, -0.0, 1e-300, 1e-8, 0.1, -0.5, 1.0, 2.5, -7.9, 8.0, 8.1, 15.0, 19.99, 20.0, 20.01, -25.0,
                 50.0, 85.0, -90.0, 300.0, 700.0, 720.0, -800.0, math.inf, -math.inf, math.nan]


def _torch_bessel(name):
    return getattr(torch.special, name)


@pytest.mark.parametrize("name", BESSEL)
@pytest.mark.parametrize("dtype", FLOATS)
def test_bessel_values_and_edges(name, dtype):
    rng = np.random.default_rng(13)
    values = BESSEL_POINTS + list(rng.uniform(-40, 40, 200))
    if name in ("i0", "i1"):  # torch's e^x overflows before I(x) does there (kiln's values are finite)
        window = (709.7, 713.0) if dtype == "float64" else (88.7, 91.5)
        values = [v for v in values if not window[0] < abs(v) < window[1]]
    k, t = _pair(values, dtype)
    result, expected = getattr(kiln.special, name)(k), _torch_bessel(name)(t)
    assert_matches(result, expected)
    number = ~np.isnan(expected.numpy())
    assert np.array_equal(np.signbit(result.numpy()[number]), np.signbit(expected.numpy()[number]))  # zeros' signs


def test_bessel_against_exact_values():
    import mpmath  # torch depends on it (through sympy)
    xs = [1e-5, 0.3, 3.7, 12.0, 19.5, 20.5, 33.0, 150.0, 600.0]
    k = kiln.tensor(xs, dtype=kiln.float64)
    for name, nu, scaled in (("i0", 0, False), ("i0e", 0, True), ("i1", 1, False), ("i1e", 1, True)):
        exact = [float(mpmath.besseli(nu, x) * (mpmath.exp(-x) if scaled else 1)) for x in xs]
        np.testing.assert_allclose(getattr(kiln.special, name)(k).numpy(), exact, rtol=4e-15, atol=0)


@pytest.mark.parametrize("name", BESSEL)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64", "int32", "bool", "uint8"])
def test_bessel_other_dtypes(name, dtype):
    values = [0, 1, 3, 7, 2] if dtype != "bool" else [True, False, True]
    if dtype in ("int64", "int32"):
        values += [-4, -12]
    if dtype in ("float16", "bfloat16"):
        values = [0.0, 0.25, -1.5, 3.0, 7.5, -9.0, 11.0]
    k, t = _pair(values, dtype)
    assert_matches(getattr(kiln.special, name)(k), _torch_bessel(name)(t))


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_non_contiguous_and_out(name):
    a = np.random.default_rng(14).uniform(-30, 30, (5, 6))
    k, t = _pair(a, "float64")
    assert_matches(getattr(kiln.special, name)(k.mT[1::2]), _torch_bessel(name)(t.mT[1::2]))
    out = kiln.empty(5, 6, dtype=kiln.float64)
    getattr(kiln.special, name)(k, out=out)
    assert_matches(out, _torch_bessel(name)(t))


@pytest.mark.parametrize("name", BESSEL)
@pytest.mark.parametrize("dtype", FLOATS)
def test_bessel_gradients(name, dtype):
    values = [0.0, -0.0, 1e-4, 0.3, -1.2, 5.0, -12.0, 19.9, 20.1, 33.0, -60.0]
    tol = {} if dtype == "float32" else {"rtol": 1e-13, "atol": 1e-300}
    _grad_matches(getattr(kiln.special, name), _torch_bessel(name), np.array(values), dtype, **tol)


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_second_derivatives(name):
    x = np.array([0.7, -3.0, 25.0])
    k, t = _pair(x, "float64", requires_grad=True)
    (kg,) = kiln.autograd.grad(getattr(kiln.special, name)(k).sum(), [k], create_graph=True)
    (tg,) = torch.autograd.grad(_torch_bessel(name)(t).sum(), [t], create_graph=True)
    torch.testing.assert_close(torch.from_numpy(kg.detach().numpy().copy()), tg.detach())
    (kgg,) = kiln.autograd.grad(kg.sum(), [k])
    (tgg,) = torch.autograd.grad(tg.sum(), [t])
    torch.testing.assert_close(torch.from_numpy(kgg.numpy().copy()), tgg)


def test_i0_aliases_and_in_place():
    a = np.random.default_rng(15).uniform(-10, 10, (3, 4)).astype("float32")
    k, t = _pair(a, "float32")
    assert_matches(kiln.i0(k), torch.i0(t))
    assert_matches(k.i0(), t.i0())
    kv, tv = k.clone(), t.clone()
    assert kv.i0_() is kv
    tv.i0_()
    assert_matches(kv, tv)
    _grad_matches(kiln.i0, torch.i0, a.astype("float64"))


@pytest.mark.parametrize("call", ["i0 list", "special_i0 list", "i0e list", "i1 list", "i1e list", "i0_ int"])
def test_bessel_errors(call):
    def make(lib):
        return {"i0 list": lambda: lib.i0([1.0]), "special_i0 list": lambda: lib.special.i0([1.0]),
                "i0e list": lambda: lib.special.i0e([1.0]), "i1 list": lambda: lib.special.i1([1.0]),
                "i1e list": lambda: lib.special.i1e([1.0]),
                "i0_ int": lambda: lib.ones(2, dtype=lib.int64).i0_()}[call]

    _same_error(make(kiln), make(torch))


# --- mvlgamma / multigammaln ------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [1, 2, 3, 5])
@pytest.mark.parametrize("dtype", FLOATS)
def test_mvlgamma_values_and_gradient(p, dtype):
    rng = np.random.default_rng(16)
    values = np.concatenate([rng.uniform((p - 1) / 2 + 0.01, 30, 30), [(p - 1) / 2 + 1e-3, 100.0, 1e5]])
    k, t = _pair(values.reshape(3, 11), dtype)
    assert_matches(kiln.mvlgamma(k, p), torch.mvlgamma(t, p))
    assert_matches(kiln.special.multigammaln(k.mT, p), torch.special.multigammaln(t.mT, p))
    assert_matches(k.mvlgamma(p), t.mvlgamma(p))
    kv, tv = k.clone(), t.clone()
    assert kv.mvlgamma_(p) is kv
    tv.mvlgamma_(p)
    assert_matches(kv, tv)
    _grad_matches(lambda x: kiln.mvlgamma(x, p), lambda x: torch.mvlgamma(x, p), values, dtype)


def test_mvlgamma_integers_and_domain_edges():
    k, t = _pair(np.array([1, 2, 5]), "int64")
    assert_matches(kiln.mvlgamma(k, 1), torch.mvlgamma(t, 1))
    k, t = _pair(np.array([1.0, 0.5, -1.0, math.inf, math.nan]), "float64")
    assert_matches(kiln.mvlgamma(k, 3), torch.mvlgamma(t, 3))
    out = kiln.empty(5, dtype=kiln.float64)
    kiln.mvlgamma(k, 2, out=out)
    assert_matches(out, torch.mvlgamma(t, 2))


@pytest.mark.parametrize("call", ["p=0", "p=-2", "p float", "list", "special list", "in-place int"])
def test_mvlgamma_errors(call):
    def make(lib):
        return {"p=0": lambda: lib.mvlgamma(lib.ones(2), 0), "p=-2": lambda: lib.special.multigammaln(lib.ones(2), -2),
                "p float": lambda: lib.mvlgamma(lib.ones(2), 1.0), "list": lambda: lib.mvlgamma([1.0], 1),
                "special list": lambda: lib.special.multigammaln([1.0], 1),
                "in-place int": lambda: lib.ones(2, dtype=lib.int64).mvlgamma_(1)}[call]

    _same_error(make(kiln), make(torch))
