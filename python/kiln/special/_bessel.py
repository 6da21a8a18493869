"""torch.special's Bessel-type functions: bessel_j0, bessel_j1, bessel_y0,
bessel_y1, modified_bessel_i0, modified_bessel_i1, modified_bessel_k0,
modified_bessel_k1, scaled_modified_bessel_k0, scaled_modified_bessel_k1,
spherical_bessel_j0 and airy_ai.

All are evaluated in float64 whatever the floating input dtype (integers and
bool give the default dtype; float16/bfloat16 raise NotImplementedError like
torch's CPU kernels) and rounded once. torch records no gradient for any of
them, and neither does kiln: the results never require grad.

* J0, J1, Y0, Y1: power series for x < 2; Miller's backward recurrence from
  order 80 normalised by J0 + 2 sum J_2k = 1, with Neumann's series for Y0
  (and its derivative for Y1), for 2 <= x <= 25; Hankel's asymptotic expansion
  beyond, with cos(x - pi/4) etc. expanded into cos x and sin x so that no
  phase is lost to rounding x - pi/4. J is even/odd in x; Y is nan below 0,
  -inf at 0.
* K0, K1 (and e^x K): power series for x <= 2; for x > 2 the trapezoidal rule
  on e^x K_nu(x) = int_0^inf exp(-2x sinh^2(t/2)) cosh(nu t) dt, whose error
  falls like exp(-c/h) (step h = min(0.1, 0.7/sqrt x)).
* Ai: the Taylor series of y'' = x y about the nearest of 23 centres in
  [-10, 1] (values of Ai, Ai' there computed once to 30 digits); for x > 1,
  Ai(x) = sqrt(x/3) K_1/3(zeta)/pi with zeta = 2/3 x^1.5, by the same
  trapezoidal rule; below -10 the asymptotic expansion of Ai(-z).
* modified_bessel_i0/i1 are i0/i1 of kiln.special (series and asymptotics)."""

from __future__ import annotations

import math

from kiln import _C, _creation
from kiln._arguments import checked_signature
from kiln.autograd import grad_mode
from kiln.special import _common as c
from kiln.special._modified_bessel_i import _bessel_i

_F = _C._functions

_SERIES_TERMS = 16
_MILLER_START = 80
_HANKEL_LIMIT = 25.0
_TRAPEZOID_NODES = 46

_AIRY_CENTRES = (
    (-10.0, 0.04024123848644319, 0.99626504413279),
    (-9.5, 0.3191032477191282, -0.10809531881187123),
    (-9.0, -0.022133721547341403, -0.9756639809263316),
    (-8.5, -0.33029023763020887, -0.03231334828463914),
    (-8.0, -0.0527050503563862, 0.9355609381983065),
    (-7.5, 0.3217757163806479, 0.3188095066985546),
    (-7.0, 0.18428083525050565, -0.7710081684101265),
    (-6.5, -0.2380203019971158, -0.6749524925132022),
    (-6.0, -0.3291451736298231, 0.3459354872813429),
    (-5.5, 0.017781541276574976, 0.8641972177713984),
    (-5.0, 0.35076100902411433, 0.32719281855444315),
    (-4.5, 0.2921527810559595, -0.5233625323157477),
    (-4.0, -0.07026553294928951, -0.7906285753685813),
    (-3.5, -0.37553382314043193, -0.34344343345404815),
    (-3.0, -0.37881429367765806, 0.3145837692165988),
    (-2.5, -0.11232506769296609, 0.6788527342647943),
    (-2.0, 0.22740742820168558, 0.618259020741691),
    (-1.5, 0.4642565777488694, 0.3091869672024104),
    (-1.0, 0.5355608832923521, -0.01016056711664521),
    (-0.5, 0.4757280916105396, -0.20408167033954738),
    (0.0, 0.3550280538878172, -0.2588194037928068),
    (0.5, 0.23169360648083348, -0.2249105326646839),
    (1.0, 0.13529241631288141, -0.1591474412967932),
)
_AIRY_TAYLOR_TERMS = 26


def _harmonic(k):
    return sum(1.0 / j for j in range(1, k + 1))


def _series_tables():
    """Coefficients in t = x^2/4 of the small-argument series (see the module docstring)."""
    f = math.factorial
    j0 = [(-1) ** k / f(k) ** 2 for k in range(_SERIES_TERMS)]
    j1 = [(-1) ** k / (f(k) * f(k + 1)) for k in range(_SERIES_TERMS)]
    y0 = [(-1) ** (k + 1) * _harmonic(k) / f(k) ** 2 for k in range(_SERIES_TERMS)]
    y1 = [(-1) ** k * (_harmonic(k) + _harmonic(k + 1) - 2 * c.EULER_GAMMA) / (f(k) * f(k + 1))
          for k in range(_SERIES_TERMS)]
    k0 = [_harmonic(k) / f(k) ** 2 for k in range(_SERIES_TERMS)]
    k1 = [(_harmonic(k) + _harmonic(k + 1) - 2 * c.EULER_GAMMA) / (f(k) * f(k + 1)) for k in range(_SERIES_TERMS)]
    i0 = [1.0 / f(k) ** 2 for k in range(_SERIES_TERMS)]
    i1 = [1.0 / (f(k) * f(k + 1)) for k in range(_SERIES_TERMS)]
    return {"j0": j0, "j1": j1, "y0": y0, "y1": y1, "k0": k0, "k1": k1, "i0": i0, "i1": i1}


_SERIES = _series_tables()


def _hankel_coefficients(nu, terms=26):
    """a_k(nu) = prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! 8^k)."""
    coefficients, a = [1.0], 1.0
    for k in range(1, terms):
        a *= (4 * nu * nu - (2 * k - 1) ** 2) / (8.0 * k)
        coefficients.append(a)
    return coefficients


def _hankel_pq(nu):
    a = _hankel_coefficients(nu)
    p = [(-1) ** k * a[2 * k] for k in range(len(a) // 2)]
    q = [(-1) ** k * a[2 * k + 1] for k in range(len(a) // 2)]
    return p, q


_HANKEL = {nu: _hankel_pq(nu) for nu in (0, 1)}


def _small_jy(x):
    """J0, J1, Y0, Y1 by their power series (0 < x < 2 intended)."""
    t = x * x * 0.25
    j0 = c.horner(_SERIES["j0"], t)
    j1 = c.horner(_SERIES["j1"], t) * (x * 0.5)
    log_term = _F.log(x * 0.5)
    y0 = (2 / math.pi) * ((log_term + c.EULER_GAMMA) * j0 + c.horner(_SERIES["y0"], t))
    y1 = (2 / math.pi) * log_term * j1 - 2 / (math.pi * x) - (x * 0.5 / math.pi) * c.horner(_SERIES["y1"], t)
    return j0, j1, y0, y1


def _miller_weights():
    """For m = 0..start: the weights of f_m in the normalisation sum and in the Y0 and Y1 Neumann sums."""
    norm, y0, y1 = [], [], []
    for m in range(_MILLER_START + 1):
        norm.append(1.0 if m == 0 else (2.0 if m % 2 == 0 else 0.0))
        y0.append((-1) ** (m // 2) / (m // 2) if m % 2 == 0 and m > 0 else 0.0)
        w = 0.0
        if m % 2 == 1:
            up = (m + 1) // 2
            w += (-1) ** up / up
            down = (m - 1) // 2
            if down >= 1:
                w -= (-1) ** down / down
        y1.append(w)
    return norm, y0, y1


_MILLER = _miller_weights()


def _miller_jy(x):
    """J0, J1, Y0, Y1 by Miller's algorithm and Neumann's series (2 <= x <= 25 intended)."""
    norm_w, y0_w, y1_w = _MILLER
    two_over_x = 2.0 / x
    following = _F.zeros_like(x)
    current = _F.full_like(x, 1e-250)
    norm = current * norm_w[_MILLER_START]
    s0 = current * y0_w[_MILLER_START]
    s1 = current * y1_w[_MILLER_START]
    f1 = f0 = None
    for m in range(_MILLER_START, 0, -1):
        previous = (m * two_over_x) * current - following
        following, current = current, previous
        index = m - 1
        if norm_w[index]:
            norm = norm + norm_w[index] * current
        if y0_w[index]:
            s0 = s0 + y0_w[index] * current
        if y1_w[index]:
            s1 = s1 + y1_w[index] * current
        if index == 1:
            f1 = current
    f0 = current
    j0, j1 = f0 / norm, f1 / norm
    log_term = _F.log(x * 0.5) + c.EULER_GAMMA
    y0 = (2 / math.pi) * (log_term * j0 - 2 * s0 / norm)
    y1 = (2 / math.pi) * (log_term * j1 - j0 / x + s1 / norm)
    return j0, j1, y0, y1


def _hankel_jy(x):
    """J0, J1, Y0, Y1 by Hankel's expansion (x >= 25 intended)."""
    inv2 = 1.0 / (x * x)
    scale = _F.sqrt(2 / (math.pi * x)) * (1 / math.sqrt(2))
    cos_x, sin_x = _F.cos(x), _F.sin(x)
    out = []
    for nu in (0, 1):
        p_coefficients, q_coefficients = _HANKEL[nu]
        p = c.horner(p_coefficients, inv2)
        q = c.horner(q_coefficients, inv2) / x
        if nu == 0:
            cos_chi, sin_chi = cos_x + sin_x, sin_x - cos_x
        else:
            cos_chi, sin_chi = sin_x - cos_x, -(sin_x + cos_x)
        out.append((scale * (p * cos_chi - q * sin_chi), scale * (p * sin_chi + q * cos_chi)))
    (j0, y0), (j1, y1) = out
    return j0, j1, y0, y1


def bessel_jy64(x):
    """J0, J1, Y0, Y1 of a float64 tensor (J at every x, Y nan below 0 and -inf at 0)."""
    a = _F.abs(x)
    small = a < 2
    large = a > _HANKEL_LIMIT
    xs = _F.where(small & (a > 0), a, _F.ones_like(a))
    xm = _F.where(~small & ~large, a, _F.full_like(a, 10.0))
    xl = _F.where(large & _F.isfinite(a), a, _F.full_like(a, 30.0))
    parts = [_small_jy(xs), _miller_jy(xm), _hankel_jy(xl)]
    values = []
    for i in range(4):
        v = _F.where(small, parts[0][i], _F.where(large, parts[2][i], parts[1][i]))
        values.append(v)
    j0, j1, y0, y1 = values
    tiny = a < 1e-150  # the series' terms beyond the first underflow harmlessly; keep J1 = x/2 exact
    j0 = _F.where(tiny, _F.ones_like(a), j0)
    j1 = _F.where(tiny, a * 0.5, j1)
    y0 = _F.where(tiny, (2 / math.pi) * (_F.log(_F.where(tiny, a, xs) * 0.5) + c.EULER_GAMMA), y0)
    y1 = _F.where(tiny, -2 / (math.pi * _F.where(tiny, a, xs)), y1)
    j1 = _F.where(x < 0, -j1, j1)
    nan = _F.full_like(a, math.nan)
    inf = _F.isinf(a) | _F.isnan(a)
    j0, j1 = _F.where(inf, nan, j0), _F.where(inf, nan, j1)
    bad_y = (x < 0) | inf
    y0 = _F.where(bad_y, nan, _F.where(x == 0, _F.full_like(a, -math.inf), y0))
    y1 = _F.where(bad_y, nan, _F.where(x == 0, _F.full_like(a, -math.inf), y1))
    return j0, j1, y0, y1


def _trapezoid_scaled_k(nu, x):
    """e^x K_nu(x) for x >= ~1 by the trapezoidal rule (x finite and positive)."""
    h = _F.clamp(0.7 / _F.sqrt(x), max=0.1)
    total = _F.full_like(x, 0.5)
    for j in range(1, _TRAPEZOID_NODES):
        t = h * j
        s = _F.sinh(t * 0.5)
        term = _F.exp(-2.0 * x * s * s)
        if nu:
            term = term * _F.cosh(nu * t)
        total = total + term
    return total * h


def _small_k(x):
    """K0, K1 by their power series (0 < x <= 2 intended), with I0, I1 by theirs."""
    t = x * x * 0.25
    i0 = c.horner(_SERIES["i0"], t)
    i1 = c.horner(_SERIES["i1"], t) * (x * 0.5)
    log_term = _F.log(x * 0.5)
    k0 = -(log_term + c.EULER_GAMMA) * i0 + c.horner(_SERIES["k0"], t)
    k1 = 1 / x + log_term * i1 - (x * 0.25) * c.horner(_SERIES["k1"], t)
    return k0, k1


def bessel_k64(nu, x, scaled):
    """K_nu(x) (scaled: e^x K_nu(x)) for nu in {0, 1} of a float64 tensor; nan below 0, inf at 0."""
    small = x <= 2
    finite_positive = (x > 0) & _F.isfinite(x)
    xs = _F.where(small & finite_positive, x, _F.ones_like(x))
    xl = _F.where(~small & finite_positive, x, _F.full_like(x, 4.0))
    near = _small_k(xs)[nu]
    if scaled:
        near = near * _F.exp(xs)
    far = _trapezoid_scaled_k(nu, xl)
    if not scaled:
        far = far * _F.exp(-xl)
    result = _F.where(small, near, far)
    result = _F.where(x == 0, _F.full_like(x, math.inf), result)
    result = _F.where(_F.isinf(x) & (x > 0), _F.zeros_like(x), result)
    return _F.where((x < 0) | _F.isnan(x), _F.full_like(x, math.nan), result)


def spherical_j0_64(x):
    """sin(x)/x of a float64 tensor (0 at +-inf)."""
    small = _F.abs(x) < 0.5
    xs = _F.where(small, x, _F.zeros_like(x))
    series = c.horner([(-1) ** j / math.factorial(2 * j + 1) for j in range(10)], xs * xs)
    xl = _F.where(small | _F.isinf(x), _F.ones_like(x), x)
    result = _F.where(small, series, _F.sin(xl) / xl)
    return _F.where(_F.isinf(x), _F.zeros_like(x), result)


def _airy_taylor(x):
    """Ai near the centres of _AIRY_CENTRES (-10.25 <= x <= 1.25)."""
    first = _AIRY_CENTRES[0][0]
    index = _F.clamp(_F.round((x - first) * 2), 0, len(_AIRY_CENTRES) - 1).to(_C.int64)
    table = _creation.tensor([list(row) for row in _AIRY_CENTRES], dtype=_C.float64, device=x.device)
    centre, value, slope = table[index, 0], table[index, 1], table[index, 2]
    h = x - centre
    coefficients = [value, slope]
    for m in range(0, _AIRY_TAYLOR_TERMS - 2):
        nxt = centre * coefficients[m]
        if m >= 1:
            nxt = nxt + coefficients[m - 1]
        coefficients.append(nxt / ((m + 2) * (m + 1)))
    result = coefficients[-1]
    for a in reversed(coefficients[:-1]):
        result = result * h + a
    return result


def _airy_negative_asymptotic(z):
    """Ai(-z) for z >= 10."""
    zeta = (2.0 / 3.0) * z * _F.sqrt(z)
    u = [1.0]
    for j in range(1, 24):
        u.append(u[-1] * (6 * j - 5) * (6 * j - 3) * (6 * j - 1) / ((2 * j - 1) * 216 * j))
    p = c.horner([(-1) ** j * u[2 * j] for j in range(12)], 1.0 / (zeta * zeta))
    q = c.horner([(-1) ** j * u[2 * j + 1] for j in range(12)], 1.0 / (zeta * zeta)) / zeta
    cos_z, sin_z = _F.cos(zeta), _F.sin(zeta)
    cos_phase = (cos_z + sin_z) * (1 / math.sqrt(2))
    sin_phase = (sin_z - cos_z) * (1 / math.sqrt(2))
    return (cos_phase * p + sin_phase * q) / (c.SQRT_PI * _F.sqrt(_F.sqrt(z)))


def airy_ai64(x):
    """Ai of a float64 tensor (nan at +-inf, like torch)."""
    positive = x > 1
    negative = x < -10
    xt = _F.where(positive | negative | _F.isnan(x), _F.zeros_like(x), x)
    middle = _airy_taylor(xt)
    xp = _F.clamp(_F.where(positive & _F.isfinite(x), x, _F.full_like(x, 2.0)), max=200.0)  # Ai(200) underflows
    zeta = (2.0 / 3.0) * xp * _F.sqrt(xp)
    right = _F.sqrt(xp / 3) / math.pi * _trapezoid_scaled_k(1.0 / 3.0, zeta) * _F.exp(-zeta)
    xn = _F.where(negative, -x, _F.full_like(x, 20.0))
    left = _airy_negative_asymptotic(xn)
    result = _F.where(positive, right, _F.where(negative, left, middle))
    return _F.where(_F.isinf(x) | _F.isnan(x), _F.full_like(x, math.nan), result)


def _bessel_i64(nu, x):
    return _bessel_i(nu, x, False)


def _unary(name, input, out, compute):
    c.check_tensor(f"special_{name}", input)
    dtype = c.float_dtype(name, input)
    with grad_mode.no_grad():
        result = compute(c.as64(input)).to(dtype)
    return c.finish(result, out)


@checked_signature("special_bessel_j0(Tensor input, *, Tensor? out)")
def bessel_j0(input, *, out=None):
    """torch.special.bessel_j0: the Bessel function of the first kind of order 0."""
    return _unary("bessel_j0", input, out, lambda x: bessel_jy64(x)[0])


@checked_signature("special_bessel_j1(Tensor input, *, Tensor? out)")
def bessel_j1(input, *, out=None):
    """torch.special.bessel_j1: the Bessel function of the first kind of order 1."""
    return _unary("bessel_j1", input, out, lambda x: bessel_jy64(x)[1])


@checked_signature("special_bessel_y0(Tensor input, *, Tensor? out)")
def bessel_y0(input, *, out=None):
    """torch.special.bessel_y0: the Bessel function of the second kind of order 0."""
    return _unary("bessel_y0", input, out, lambda x: bessel_jy64(x)[2])


@checked_signature("special_bessel_y1(Tensor input, *, Tensor? out)")
def bessel_y1(input, *, out=None):
    """torch.special.bessel_y1: the Bessel function of the second kind of order 1."""
    return _unary("bessel_y1", input, out, lambda x: bessel_jy64(x)[3])


@checked_signature("special_modified_bessel_i0(Tensor input, *, Tensor? out)")
def modified_bessel_i0(input, *, out=None):
    """torch.special.modified_bessel_i0: I0 (no gradient, as in torch)."""
    return _unary("modified_bessel_i0", input, out, lambda x: _bessel_i64(0, x))


@checked_signature("special_modified_bessel_i1(Tensor input, *, Tensor? out)")
def modified_bessel_i1(input, *, out=None):
    """torch.special.modified_bessel_i1: I1 (no gradient, as in torch)."""
    return _unary("modified_bessel_i1", input, out, lambda x: _bessel_i64(1, x))


@checked_signature("special_modified_bessel_k0(Tensor input, *, Tensor? out)")
def modified_bessel_k0(input, *, out=None):
    """torch.special.modified_bessel_k0: the modified Bessel function of the second kind of order 0."""
    return _unary("modified_bessel_k0", input, out, lambda x: bessel_k64(0, x, False))


@checked_signature("special_modified_bessel_k1(Tensor input, *, Tensor? out)")
def modified_bessel_k1(input, *, out=None):
    """torch.special.modified_bessel_k1: the modified Bessel function of the second kind of order 1."""
    return _unary("modified_bessel_k1", input, out, lambda x: bessel_k64(1, x, False))


@checked_signature("special_scaled_modified_bessel_k0(Any input, *, Tensor? out)")
def scaled_modified_bessel_k0(input, *, out=None):
    """torch.special.scaled_modified_bessel_k0: exp(x) K0(x)."""
    return _unary("scaled_modified_bessel_k0", input, out, lambda x: bessel_k64(0, x, True))


@checked_signature("special_scaled_modified_bessel_k1(Any input, *, Tensor? out)")
def scaled_modified_bessel_k1(input, *, out=None):
    """torch.special.scaled_modified_bessel_k1: exp(x) K1(x)."""
    return _unary("scaled_modified_bessel_k1", input, out, lambda x: bessel_k64(1, x, True))


@checked_signature("special_spherical_bessel_j0(Any input, *, Tensor? out)")
def spherical_bessel_j0(input, *, out=None):
    """torch.special.spherical_bessel_j0: sin(x)/x (1 at 0, 0 at +-inf)."""
    return _unary("spherical_bessel_j0", input, out, spherical_j0_64)


@checked_signature("special_airy_ai(Any input, *, Tensor? out)")
def airy_ai(input, *, out=None):
    """torch.special.airy_ai: the Airy function Ai (nan at +-inf, as torch gives)."""
    return _unary("airy_ai", input, out, airy_ai64)
