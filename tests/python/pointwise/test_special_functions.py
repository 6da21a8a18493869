"""kiln.special's erfcx, log_ndtr, ndtri, entr (fixed at extreme arguments) and
the torch.special functions added with them (gammainc/gammaincc and
kiln.igamma/igammac with their Tensor methods, zeta, the Bessel and Airy
functions, the orthogonal polynomials, Tensor.polygamma) against torch: dense
grids over each domain in float32 and float64, integer promotion, edge values
(0, -0, subnormal, huge, +-inf, nan), gradients (and their absence) and
torch's exception types and words.

Where torch's own values are inaccurate (its float64 Bessel J/Y are good to
about 1e-6 below x ~ 20, its Airy Ai to 5e-6 on [-10, -2], its incomplete gamma
far off for tiny a, its float32 results to float32 rounding of large
arguments) the comparison with torch uses torch's accuracy, and kiln's own
accuracy is checked against mpmath (a torch dependency) at high precision."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import kiln
from torch_compare import assert_same_error, float64_values as _values

mpmath = pytest.importorskip("mpmath", reason="optional package mpmath is not installed "
                             "(installed with torch; the high-precision reference)")
mpmath.mp.dps = 40
kiln.special.install(vars(kiln), kiln.Tensor)

FLOATS = ["float32", "float64"]
INF, NAN = math.inf, math.nan


def _pair(values, dtype):
    with np.errstate(over="ignore"):  # huge float64 values become +-inf in float32, as intended
        a = np.asarray(values, dtype=dtype)
    return kiln.from_numpy(a.copy()), torch.from_numpy(a.copy())


def _close(k, t, rtol, atol=0.0, envelope=None):
    assert str(k.dtype) == str(t.dtype).replace("torch", "kiln")
    assert tuple(k.shape) == tuple(t.shape)
    kv, tv = _values(k), _values(t)
    assert np.array_equal(np.isnan(kv), np.isnan(tv)), (kv[np.isnan(kv) != np.isnan(tv)], tv[np.isnan(kv) != np.isnan(tv)])
    limit = 0.9 * (np.finfo(np.float32).max if str(t.dtype) == "torch.float32" else np.finfo(np.float64).max)
    overflow = (np.abs(tv) > limit) & (np.abs(kv) > limit) & (np.sign(kv) == np.sign(tv))  # either may round to inf
    infinite = np.isinf(tv) & ~overflow
    assert np.array_equal(kv[infinite], tv[infinite])
    finite = np.isfinite(tv) & ~overflow
    scale = np.abs(tv) if envelope is None else np.maximum(np.abs(tv), envelope)
    error = np.abs(kv[finite] - tv[finite])
    bound = rtol * scale[finite] + atol
    assert np.all(error <= bound), f"worst {np.max(error - bound)} at torch value {tv[finite][np.argmax(error - bound)]}"


def _mp_check(fn, points, ref, rtol, envelope=None):
    k = fn(kiln.tensor(list(points), dtype=kiln.float64)).numpy()
    r = np.array([float(ref(mpmath.mpf(p))) for p in points])
    scale = np.abs(r) if envelope is None else np.maximum(np.abs(r), envelope(np.asarray(points)))
    assert np.all(np.abs(k - r) <= rtol * scale), (np.asarray(points)[np.argmax(np.abs(k - r) / scale)])


def _wide_line(n=3000):
    rng = np.random.default_rng(1)
    return np.concatenate([rng.uniform(-40, 40, n), np.sign(rng.standard_normal(400)) * 10.0 ** rng.uniform(-300, 300, 400),
                           [0.0, -0.0, INF, -INF, NAN, 5e-324, -5e-324, 26.6, -26.6, 26.7, -26.7, 1e308]])


# --- erfcx, log_ndtr, ndtri, entr ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_erfcx_log_ndtr_entr_over_the_line(dtype):
    v = _wide_line()
    k, t = _pair(v, dtype)
    f64 = dtype == "float64"
    tiny = 1e-320 if f64 else 1e-43  # subnormal results may differ in their last bits
    _close(kiln.special.erfcx(k), torch.special.erfcx(t), rtol=2e-13 if f64 else 5e-6, atol=tiny)
    _close(kiln.special.log_ndtr(k), torch.special.log_ndtr(t), rtol=3e-13 if f64 else 1e-4, atol=tiny if f64 else 1e-38)
    _close(kiln.special.entr(k), torch.special.entr(t), rtol=1e-15 if f64 else 3e-7, atol=tiny)


@pytest.mark.parametrize("dtype", FLOATS)
def test_ndtri_over_the_unit_interval_and_outside(dtype):
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.uniform(0, 1, 3000), 10.0 ** rng.uniform(-320, 0, 800), 1 - 10.0 ** rng.uniform(-16, 0, 800),
                        [0.0, -0.0, 1.0, 0.5, 0.25, 0.75, 0.5 + 1e-12, -1.0, 2.0, 1e-20, NAN, INF, -INF, 5e-324]])
    k, t = _pair(p, dtype)
    _close(kiln.special.ndtri(k), torch.special.ndtri(t), rtol=1e-14 if dtype == "float64" else 1e-6)


def test_task_regressions_at_extreme_arguments():
    x = kiln.tensor([30.0, 1e10, -40.0, 1e-20], dtype=kiln.float64)
    erfcx = kiln.special.erfcx(x[:2]).tolist()
    assert erfcx[0] == pytest.approx(0.018795888861416751, rel=1e-14) and erfcx[1] == pytest.approx(5.641895835477563e-11)
    assert kiln.special.erfcx(kiln.tensor([10.0])).item() == pytest.approx(0.05614099274382259, rel=1e-6)
    assert kiln.special.log_ndtr(x[2:3]).item() == pytest.approx(-804.6084420137538, rel=1e-14)
    assert kiln.special.ndtri(x[3:]).item() == pytest.approx(-9.262340089798408, rel=1e-14)
    zero = kiln.special.entr(kiln.tensor([0.0, -0.0]))
    assert zero.tolist() == [0.0, 0.0] and not np.signbit(zero.numpy()).any()
    assert kiln.special.entr(kiln.tensor([-1.0, INF, NAN])).tolist()[:2] == [-INF, -INF]


def test_normal_functions_against_mpmath_in_the_tails():
    mpmath.mp.dps = 40  # this file's precision, whatever ran before
    _mp_check(kiln.special.erfcx, [-26.0, -10.0, -1.0, 0.3, 5.0, 24.9, 25.1, 100.0, 1e5, 1e100],
              lambda x: mpmath.exp(x * x) * mpmath.erfc(x), 1e-15)
    _mp_check(kiln.special.log_ndtr, [-1e5, -300.0, -38.0, -5.0, -1.0, 0.0, 3.0, 20.0, 30.0, 37.0],
              lambda x: mpmath.log(mpmath.ncdf(x)) if x < 0 else mpmath.log1p(-mpmath.ncdf(-x)), 1e-15)
    mpmath.mp.dps = 60
    try:
        _mp_check(lambda p: -kiln.special.ndtri(p), [1e-300, 1e-100, 1e-20, 1e-5, 0.1, 0.3, 0.49],
                  lambda p: mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * p), 1e-15)
    finally:
        mpmath.mp.dps = 40


def test_normal_functions_promote_integers_and_refuse_half():
    k, t = kiln.tensor([0, 1, 3]), torch.tensor([0, 1, 3])
    for name in ("erfcx", "log_ndtr", "ndtri", "entr"):
        _close(getattr(kiln.special, name)(k), getattr(torch.special, name)(t), rtol=1e-6)
        _close(getattr(kiln.special, name)(k.bool()), getattr(torch.special, name)(t.bool()), rtol=1e-6)
    for name in ("erfcx", "log_ndtr", "ndtri"):
        assert_same_error(lambda: getattr(kiln.special, name)(kiln.ones(2, dtype=kiln.float16)),
                          lambda: getattr(torch.special, name)(torch.ones(2, dtype=torch.float16)))
    _close(kiln.special.entr(kiln.tensor([0.5, 2.0], dtype=kiln.float16)),
           torch.special.entr(torch.tensor([0.5, 2.0], dtype=torch.float16)), rtol=1e-3)
    assert_same_error(lambda: kiln.special.erfcx(2.0), lambda: torch.special.erfcx(2.0))


def _grad_pair(fn_k, fn_t, values, order=1):
    k = kiln.tensor(values, dtype=kiln.float64, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (gk,) = kiln.autograd.grad(fn_k(k).sum(), k, create_graph=order > 1)
    (gt,) = torch.autograd.grad(fn_t(t).sum(), t, create_graph=order > 1)
    if order > 1:
        (gk,) = kiln.autograd.grad(gk.sum(), k)
        (gt,) = torch.autograd.grad(gt.sum(), t)
    return gk, gt


@pytest.mark.parametrize("name, values", [
    ("erfcx", [-30.0, -3.0, 0.0, 0.5, 3.0, 30.0, INF]),
    ("log_ndtr", [-40.0, -3.0, 0.0, 0.5, 3.0, 30.0, INF]),
    ("ndtri", [0.0, 1e-20, 0.3, 0.5, 0.99, 1.0, 2.0]),
    ("entr", [-1.0, 0.0, 0.5, 3.0, INF]),
])
def test_normal_function_gradients(name, values):
    gk, gt = _grad_pair(getattr(kiln.special, name), getattr(torch.special, name), values)
    _close(gk, gt, rtol=1e-12, atol=1e-15)
    finite = [v for v in values if 0 < v < 1] if name == "ndtri" else [v for v in values if 0 < abs(v) < 10]
    gk, gt = _grad_pair(getattr(kiln.special, name), getattr(torch.special, name), finite, order=2)
    _close(gk, gt, rtol=1e-12, atol=1e-15)


def test_normal_functions_out_and_non_contiguous():
    base = np.linspace(-6, 6, 24).reshape(4, 6)
    k, t = kiln.from_numpy(base.copy()).t(), torch.from_numpy(base.copy()).t()
    for name in ("erfcx", "log_ndtr", "entr"):
        _close(getattr(kiln.special, name)(k), getattr(torch.special, name)(t), rtol=1e-13)
        out = kiln.empty((6, 4), dtype=kiln.float64)
        assert getattr(kiln.special, name)(k, out=out) is out
        _close(out, getattr(torch.special, name)(t), rtol=1e-13)
    _close(kiln.special.ndtri(kiln.empty(0)), torch.special.ndtri(torch.empty(0)), rtol=0)


# --- Bessel and Airy functions ----------------------------------------------------------------------------

UNARY = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
         "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
         "spherical_bessel_j0", "airy_ai"]
# (torch's J, Y at +-1e300 take cos(x - pi/4) with x - pi/4 rounded to x, so they are not compared there)
EDGES = [-INF, -30.0, -2.0, -1e-300, -0.0, 0.0, 1e-300, 1e-5, 2.0, 5.0, 8.0, 25.0, 30.0, 700.0, 1e10, INF, NAN]


# torch's float64 error (relative to the envelope of the oscillation) where it is worst
TORCH_ACCURACY = {"bessel_j0": 3e-6, "bessel_j1": 3e-6, "bessel_y0": 3e-6, "bessel_y1": 5e-6, "airy_ai": 1e-5}


def _oscillating_envelope(name, x):
    with np.errstate(divide="ignore"):
        return _envelope(name, x)


def _envelope(name, x):
    if name.startswith("bessel_"):
        return np.minimum(1.0, np.sqrt(2 / (np.pi * np.maximum(np.abs(x), 1e-300))))
    if name == "airy_ai":
        return np.where(x < 0, np.abs(x) ** -0.25 / np.sqrt(np.pi), 0.0)
    if name == "spherical_bessel_j0":
        return 1 / np.maximum(np.abs(x), 1.0)
    return None


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", FLOATS)
def test_bessel_family_matches_torch(name, dtype):
    rng = np.random.default_rng(3)
    grid = np.concatenate([np.linspace(-40, 40, 2001), 10.0 ** rng.uniform(-8, 2.5, 300)])
    if "modified_bessel_i" in name:
        grid = np.concatenate([grid, rng.uniform(-700, 700, 100)])
    k, t = _pair(grid, dtype)
    envelope = _oscillating_envelope(name, grid)
    rtol = TORCH_ACCURACY.get(name, 1e-13) if dtype == "float64" else 2e-5
    if dtype == "float32" and name in TORCH_ACCURACY:
        rtol = 5e-5
    atol = 1e-300 if dtype == "float64" else 1e-37
    _close(getattr(kiln.special, name)(k), getattr(torch.special, name)(t), rtol=rtol, atol=atol, envelope=envelope)


@pytest.mark.parametrize("name", UNARY)
def test_bessel_family_edges_and_promotion(name):
    edges = EDGES + ([] if name.startswith("bessel_") else [-1e300, 1e300])
    k, t = _pair(edges, "float64")
    _close(getattr(kiln.special, name)(k), getattr(torch.special, name)(t), rtol=TORCH_ACCURACY.get(name, 1e-13),
           atol=1e-300, envelope=_oscillating_envelope(name, np.asarray(edges)))
    ki, ti = kiln.tensor([0, 1, 3, -2]), torch.tensor([0, 1, 3, -2])
    _close(getattr(kiln.special, name)(ki), getattr(torch.special, name)(ti), rtol=1e-5, atol=1e-7)
    assert_same_error(lambda: getattr(kiln.special, name)(kiln.ones(2, dtype=kiln.bfloat16)),
                      lambda: getattr(torch.special, name)(torch.ones(2, dtype=torch.bfloat16)))


def test_bessel_family_accuracy_against_mpmath():
    points = [1e-7, 0.3, 1.0, 1.999, 2.0, 2.405, 3.8317, 4.9, 5.1, 7.0, 10.0, 17.3, 24.9, 25.1, 40.0, 1000.5]
    env = lambda x: np.minimum(1.0, np.sqrt(2 / (np.pi * x)))  # noqa: E731
    for name, ref in (("bessel_j0", lambda x: mpmath.besselj(0, x)), ("bessel_j1", lambda x: mpmath.besselj(1, x)),
                      ("bessel_y0", lambda x: mpmath.bessely(0, x)), ("bessel_y1", lambda x: mpmath.bessely(1, x))):
        _mp_check(getattr(kiln.special, name), points, ref, 5e-15, envelope=env)
    for nu in (0, 1):
        _mp_check(getattr(kiln.special, f"modified_bessel_k{nu}"), points[:-1] + [600.0], lambda x: mpmath.besselk(nu, x), 3e-15)
        _mp_check(getattr(kiln.special, f"scaled_modified_bessel_k{nu}"), points + [1e8],
                  lambda x: mpmath.besselk(nu, x) * mpmath.exp(x), 3e-15)
    airy_points = [-200.0, -10.3, -10.0, -7.77, -5.0, -2.3381, -0.1, 0.0, 0.7, 1.0, 1.3, 4.0, 9.0, 100.0]
    # Ai(100) = 2.6e-291 carries the rounding of zeta = 2/3 x^1.5 = 666.7 in exp(-zeta): 1.5e-13
    _mp_check(kiln.special.airy_ai, airy_points, mpmath.airyai, 3e-13,
              envelope=lambda x: _oscillating_envelope("airy_ai", x))


def test_bessel_family_records_no_gradient_like_torch():
    k = kiln.tensor([0.5, 2.0], requires_grad=True)
    t = torch.tensor([0.5, 2.0], requires_grad=True)
    for name in UNARY:
        assert getattr(kiln.special, name)(k).requires_grad == getattr(torch.special, name)(t).requires_grad
        assert_same_error(lambda: getattr(kiln.special, name)(k).sum().backward(),
                          lambda: getattr(torch.special, name)(t).sum().backward())


def test_bessel_family_out_and_non_contiguous():
    base = np.linspace(0.1, 30, 30).reshape(5, 6)
    k, t = kiln.from_numpy(base.copy())[:, ::2], torch.from_numpy(base.copy())[:, ::2]
    out = kiln.empty((5, 3), dtype=kiln.float64)
    assert kiln.special.modified_bessel_k1(k, out=out) is out
    _close(out, torch.special.modified_bessel_k1(t), rtol=1e-13)
    _close(kiln.special.bessel_j0(kiln.empty((0, 3))), torch.special.bessel_j0(torch.empty((0, 3))), rtol=0)


# --- orthogonal polynomials -------------------------------------------------------------------------------

POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
               "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]
DEGREES = [-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 20, 50, 129, 200, 513, 700, NAN, INF, -INF, 2.7, -0.5, 1e30]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch_float64(name):
    rng = np.random.default_rng(4)
    xs = np.concatenate([rng.uniform(-1.2, 1.2, 120), rng.uniform(-10, 10, 40),
                         [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.0, INF, -INF, 1e-20, 1 - 1e-16]])
    x, n = np.meshgrid(xs, np.asarray(DEGREES, dtype=np.float64))
    kx, tx = _pair(x, "float64")
    kn, tn = _pair(n, "float64")
    _close(getattr(kiln.special, name)(kx, kn), getattr(torch.special, name)(tx, tn), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch_float32_and_promotion(name):
    rng = np.random.default_rng(5)
    xs = np.concatenate([rng.uniform(-1.1, 1.1, 60), [0.0, 1.0, -1.0, 0.5, 2.0, INF]])
    x, n = np.meshgrid(xs, np.arange(-1, 11, dtype=np.float64))
    kx, tx = _pair(x, "float32")
    kn, tn = _pair(n, "float32")
    _close(getattr(kiln.special, name)(kx, kn), getattr(torch.special, name)(tx, tn), rtol=1e-4, atol=1e-4)
    ki, ti = kiln.tensor([0, 1, 2, 3]), torch.tensor([0, 1, 2, 3])
    _close(getattr(kiln.special, name)(ki, ki), getattr(torch.special, name)(ti, ti), rtol=1e-6)
    _close(getattr(kiln.special, name)(ki, 3), getattr(torch.special, name)(ti, 3), rtol=1e-6)
    _close(getattr(kiln.special, name)(0.3, ki), getattr(torch.special, name)(0.3, ti), rtol=1e-6)
    kd = kiln.tensor([0.25, 0.75], dtype=kiln.float64)
    td = torch.tensor([0.25, 0.75], dtype=torch.float64)
    _close(getattr(kiln.special, name)(kx[:2, :2], kd[:1].reshape(1, 1)),
           getattr(torch.special, name)(tx[:2, :2], td[:1].reshape(1, 1)), rtol=1e-6)
    _close(getattr(kiln.special, name)(kd, kiln.tensor(4)), getattr(torch.special, name)(td, torch.tensor(4)), rtol=1e-12)


RECURRENCE_ONLY = ["hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", RECURRENCE_ONLY)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_polynomial_recurrences_are_torchs_bit_for_bit(name, dtype):
    # kiln._C._polynomial_recurrence rounds each step as torch's kernels (an fma): Note [Polynomial recurrences
    # run per element]
    xs = np.random.default_rng(6).uniform(-3, 3, 300)
    for n in (2, 5, 60, 3000):
        kx, tx = _pair(xs, dtype)
        got = getattr(kiln.special, name)(kx, n).numpy()
        expected = getattr(torch.special, name)(tx, n).numpy()
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", ["laguerre_polynomial_l", "legendre_polynomial_p"])
def test_polynomial_of_a_huge_degree_runs_per_element(name):
    # at x = -0.01 the Laguerre value stays finite for ~10^7 steps, so the recurrence runs them all; as
    # whole-tensor steps that took minutes (found by fuzz/python/fuzz_python_functions.py: the call hung)
    n = 10**6
    kx, tx = _pair([-0.01, -1.5, 0.5], "float64")
    np.testing.assert_array_equal(getattr(kiln.special, name)(kx, n).numpy(),
                                  getattr(torch.special, name)(tx, n).numpy())


def test_polynomials_at_nan_and_shapes():
    # torch leaves some kinds uninitialised at x = nan for n >= 2; degrees 0 and 1 are defined everywhere
    for name in POLYNOMIALS:
        kx, tx = _pair([NAN, NAN, NAN], "float64")
        kn, tn = _pair([0.0, 1.0, -2.0], "float64")
        _close(getattr(kiln.special, name)(kx, kn), getattr(torch.special, name)(tx, tn), rtol=0)
    kx = kiln.from_numpy(np.linspace(-1, 1, 12).reshape(3, 4)).t()
    tx = torch.from_numpy(np.linspace(-1, 1, 12).reshape(3, 4)).t()
    kn, tn = kiln.tensor([[2.0], [5.0], [9.0], [13.0]], dtype=kiln.float64), torch.tensor([[2.0], [5.0], [9.0], [13.0]], dtype=torch.float64)
    out = kiln.empty((4, 3), dtype=kiln.float64)
    assert kiln.special.chebyshev_polynomial_u(kx, kn, out=out) is out
    _close(out, torch.special.chebyshev_polynomial_u(tx, tn), rtol=1e-12, atol=1e-14)
    _close(kiln.special.legendre_polynomial_p(kiln.empty(0), 3), torch.special.legendre_polynomial_p(torch.empty(0), 3), rtol=0)
    assert not kiln.special.hermite_polynomial_h(kiln.ones(2, requires_grad=True), 3).requires_grad


def test_polynomial_errors():
    assert_same_error(lambda: kiln.special.chebyshev_polynomial_t(kiln.ones(2, dtype=kiln.float16), 2),
                      lambda: torch.special.chebyshev_polynomial_t(torch.ones(2, dtype=torch.float16), 2))
    for k_call, t_call in (
        (lambda: kiln.special.hermite_polynomial_h(2.0, 3), lambda: torch.special.hermite_polynomial_h(2.0, 3)),
        (lambda: kiln.special.legendre_polynomial_p(kiln.ones(2), "3"), lambda: torch.special.legendre_polynomial_p(torch.ones(2), "3")),
    ):
        assert_same_error(k_call, t_call)
    assert_same_error(lambda: kiln.special.laguerre_polynomial_l(kiln.ones(2), kiln.ones(3)),
                      lambda: torch.special.laguerre_polynomial_l(torch.ones(2), torch.ones(3)))


# --- incomplete gamma and zeta ----------------------------------------------------------------------------


def _gamma_grid():
    rng = np.random.default_rng(6)
    a = np.concatenate([10.0 ** rng.uniform(-3, 2, 600), rng.uniform(15, 30, 200), 10.0 ** rng.uniform(2, 5, 100)])
    x = np.concatenate([a[:600] * 10.0 ** rng.uniform(-1, 1, 600), a[600:800] * rng.uniform(0.3, 2.5, 200),
                        a[800:] * rng.uniform(0.9, 1.1, 100)])
    return a, x


@pytest.mark.parametrize("dtype", FLOATS)
def test_gammainc_gammaincc_match_torch(dtype):
    a, x = _gamma_grid()
    (ka, ta), (kx, tx) = _pair(a, dtype), _pair(x, dtype)
    rtol = 1e-8 if dtype == "float64" else 1e-4  # torch's own error reaches ~2e-9 in float64, 2e-5 in float32
    atol = 1e-300 if dtype == "float64" else 1e-30  # torch float32 loses digits in results near underflow
    _close(kiln.special.gammainc(ka, kx), torch.special.gammainc(ta, tx), rtol=rtol, atol=atol)
    _close(kiln.special.gammaincc(ka, kx), torch.special.gammaincc(ta, tx), rtol=rtol, atol=atol)
    _close(kiln.igamma(ka, kx), torch.igamma(ta, tx), rtol=rtol, atol=atol)
    _close(kx.igammac(ka), tx.igammac(ta), rtol=rtol, atol=atol)


def test_gammainc_special_values_match_torch():
    vals = [-INF, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.5, 1e10, INF, NAN]
    a, x = np.meshgrid(vals, vals)
    (ka, ta), (kx, tx) = _pair(a, "float64"), _pair(x, "float64")
    _close(kiln.special.gammainc(ka, kx), torch.special.gammainc(ta, tx), rtol=1e-13)
    _close(kiln.special.gammaincc(ka, kx), torch.special.gammaincc(ta, tx), rtol=1e-13)


def test_gammainc_accuracy_against_mpmath():
    cases = [(1e-300, 0.5), (1e-300, 1e-300), (1e-5, 1.0), (0.5, 1e-10), (0.9, 1e-10), (1.0, 1.4), (3.0, 2.5),
             (19.5, 22.3), (20.0, 20.0), (50.0, 50.0), (50.0, 30.0), (500.0, 480.0), (1e4, 1e4 + 50), (1e6, 1e6),
             (1e6, 1e6 * (1 - 1e-3)), (200.0, 20.0), (5.0, 300.0), (30.0, 80.0)]
    a = kiln.tensor([c[0] for c in cases], dtype=kiln.float64)
    x = kiln.tensor([c[1] for c in cases], dtype=kiln.float64)
    p, q = kiln.special.gammainc(a, x).tolist(), kiln.special.gammaincc(a, x).tolist()
    for (ai, xi), pk, qk in zip(cases, p, q):
        pr = mpmath.gammainc(mpmath.mpf(ai), 0, mpmath.mpf(xi), regularized=True)
        qr = mpmath.gammainc(mpmath.mpf(ai), mpmath.mpf(xi), mpmath.inf, regularized=True)
        assert pk == pytest.approx(float(pr), rel=1e-13, abs=1e-300), (ai, xi)
        assert qk == pytest.approx(float(qr), rel=1e-13, abs=1e-300), (ai, xi)


def test_gammainc_gradients_and_errors():
    a = [0.5, 2.0, 3.0, 30.0]
    x = [0.3, 1.5, 4.0, 28.0]
    for kf, tf in ((kiln.special.gammainc, torch.special.gammainc), (kiln.special.gammaincc, torch.special.gammaincc)):
        ka, ta = kiln.tensor(a, dtype=kiln.float64), torch.tensor(a, dtype=torch.float64)
        gk, gt = _grad_pair(lambda v: kf(ka, v), lambda v: tf(ta, v), x)
        _close(gk, gt, rtol=1e-12)
        gk, gt = _grad_pair(lambda v: kf(ka, v), lambda v: tf(ta, v), x, order=2)
        _close(gk, gt, rtol=1e-12)
        kx, tx = kiln.tensor(x), torch.tensor(x)
        assert_same_error(lambda: kf(kiln.tensor(a, requires_grad=True), kx).sum().backward(),
                          lambda: tf(torch.tensor(a, requires_grad=True), tx).sum().backward())
    assert_same_error(lambda: kiln.special.gammainc(kiln.tensor([1, 2]), kiln.tensor([1, 2])),
                      lambda: torch.special.gammainc(torch.tensor([1, 2]), torch.tensor([1, 2])))
    assert_same_error(lambda: kiln.special.gammainc(kiln.ones(2), 2.0), lambda: torch.special.gammainc(torch.ones(2), 2.0))
    assert_same_error(lambda: kiln.igamma(kiln.ones(2), 2.0), lambda: torch.igamma(torch.ones(2), 2.0))
    assert_same_error(lambda: kiln.special.gammaincc(kiln.ones(2), kiln.ones(3)),
                      lambda: torch.special.gammaincc(torch.ones(2), torch.ones(3)))


def test_gammainc_dtypes_inplace_and_out():
    ki, ti = kiln.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    kf, tf = kiln.tensor([0.5, 2.0, 4.0]), torch.tensor([0.5, 2.0, 4.0])
    _close(kiln.special.gammainc(kf, ki), torch.special.gammainc(tf, ti), rtol=1e-6)
    _close(kiln.special.gammaincc(ki, kf.double()), torch.special.gammaincc(ti, tf.double()), rtol=1e-13)
    _close(kiln.special.gammainc(kf.half(), kf.half()), torch.special.gammainc(tf.half(), tf.half()), rtol=1e-3)
    k, t = kf.clone(), tf.clone()
    assert k.igamma_(kf.double()) is k
    t.igamma_(tf.double())
    _close(k, t, rtol=1e-6)
    k, t = kf.clone(), tf.clone()
    k.igammac_(kiln.tensor(2.0))
    t.igammac_(torch.tensor(2.0))
    _close(k, t, rtol=1e-6)
    out = kiln.empty(3)
    assert kiln.special.gammaincc(kf, kf, out=out) is out
    _close(out, torch.special.gammaincc(tf, tf), rtol=1e-6)


def test_zeta_matches_torch():
    rng = np.random.default_rng(7)
    x = np.concatenate([1 + 10.0 ** rng.uniform(-6, 1.5, 500), rng.integers(2, 60, 200).astype(float),
                        10.0 ** rng.uniform(0.1, 4, 100)])
    q = np.concatenate([10.0 ** rng.uniform(-3, 6, 500), -rng.uniform(0, 30, 200), 10.0 ** rng.uniform(-1, 5, 100)])
    for dtype in FLOATS:
        (kx, tx), (kq, tq) = _pair(x, dtype), _pair(q, dtype)
        rtol = 1e-12 if dtype == "float64" else 1e-5
        if dtype == "float32":  # torch sums float32 terms; keep away from the cancelling negative q
            keep = torch.from_numpy(q.astype(dtype) > 0)
            kx, tx, kq, tq = kx[kiln.from_numpy(keep.numpy())], tx[keep], kq[kiln.from_numpy(keep.numpy())], tq[keep]
        _close(kiln.special.zeta(kx, kq), torch.special.zeta(tx, tq), rtol=rtol, atol=1e-300 if dtype == "float64" else 1e-40)
    vals = [-INF, -2.5, -2.0, -1.0, -0.5, -0.0, 0.0, 1e-300, 0.5, 1.0, 2.0, 3.5, 50.0, 1e10, INF, NAN]
    a, b = np.meshgrid(vals, vals)
    (ka, ta), (kb, tb) = _pair(a, "float64"), _pair(b, "float64")
    _close(kiln.special.zeta(ka, kb), torch.special.zeta(ta, tb), rtol=1e-13)
    k, t = kiln.tensor([2, 3]), torch.tensor([2, 3])
    _close(kiln.special.zeta(k, 1), torch.special.zeta(t, 1), rtol=1e-6)
    _close(kiln.special.zeta(2.0, k), torch.special.zeta(2.0, t), rtol=1e-6)
    assert_same_error(lambda: kiln.special.zeta(2.0, 3.0), lambda: torch.special.zeta(2.0, 3.0))
    assert_same_error(lambda: kiln.special.zeta(kiln.ones(2, dtype=kiln.float16), 2.0),
                      lambda: torch.special.zeta(torch.ones(2, dtype=torch.float16), 2.0))


def test_zeta_gradient():
    x = [2.0, 3.5, 1.5]
    q = [0.5, 2.0, 10.0]
    kx, tx = kiln.tensor(x, dtype=kiln.float64), torch.tensor(x, dtype=torch.float64)
    gk, gt = _grad_pair(lambda v: kiln.special.zeta(kx, v), lambda v: torch.special.zeta(tx, v), q)
    _close(gk, gt, rtol=1e-12)
    gk, gt = _grad_pair(lambda v: kiln.special.zeta(kx, v), lambda v: torch.special.zeta(tx, v), q, order=2)
    _close(gk, gt, rtol=1e-12)
    assert_same_error(lambda: kiln.special.zeta(kiln.tensor(x, requires_grad=True), 2.0).sum().backward(),
                      lambda: torch.special.zeta(torch.tensor(x, requires_grad=True), 2.0).sum().backward())


def test_polygamma_tensor_method():
    k, t = kiln.tensor([0.5, 2.0, 7.0], dtype=kiln.float64), torch.tensor([0.5, 2.0, 7.0], dtype=torch.float64)
    for n in (0, 1, 3):
        _close(k.polygamma(n), t.polygamma(n), rtol=1e-12)
    kiln.special.install(vars(kiln), kiln.Tensor)  # idempotent
    assert kiln.igamma is kiln.special._gamma.igamma


@pytest.mark.parametrize("dtype", FLOATS)
def test_polygamma_of_a_huge_order_returns_at_once(dtype):
    # n! overflows long before n = 2**62; the factorial loop used to run all n steps (found by
    # fuzz/python/fuzz_arg_parser.py: the call hung). At x = 1, zeta(n + 1, 1) is 1, so the result
    # is -inf for an even n, as torch's.
    n = 2**62
    k, t = _pair([1.0], dtype)
    assert torch.isneginf(torch.polygamma(n, t)).all()
    assert kiln.isneginf(kiln.polygamma(n, k)).all()
