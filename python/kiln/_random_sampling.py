"""Random samplers over kiln's ops, as torch has them: poisson, binomial and
Tensor.cauchy_ / geometric_ / log_normal_ (kiln has exponential_ already; from kiln's
uniform and normal streams, so a kiln.Generator or kiln.manual_seed makes them
reproducible; the values are not torch's stream).

Note [Vectorized rejection sampling]: torch draws each Poisson / binomial sample with a
scalar loop (Knuth's product of uniforms or binomial inversion by geometric waiting times
for small means, Hormann's transformed rejection PTRS / BTRS otherwise). kiln runs the
same algorithms over all still-pending elements at once: each round draws one set of
uniforms for the pending elements and retires those that finish, so the number of rounds
is the longest single chain (a few dozen for the inversion methods, a handful for the
rejection ones)."""

from __future__ import annotations

import math

from kiln import _C
from kiln._arguments import checked_signature
from kiln._messages import _format_double, _scalar_name, _type_word
from kiln._no_derivative import _no_derivative
from kiln._shape import broadcast_tensors
from kiln.autograd.function import Function
from kiln.autograd.grad_mode import no_grad

_F = _C._functions


def _uniform(count, generator):
    """count float64 uniforms in [0, 1) from generator (or the default generator)."""
    return _F.empty(count, dtype=_C.float64).uniform_(generator=generator)


# --- poisson -----------------------------------------------------------------------------------------------


def _poisson_knuth(rates, generator):
    """Poisson samples for rates in (0, 10): the count of uniforms whose running product stays
    above exp(-rate)."""
    limit = _F.exp(-rates)
    product = _F.ones_like(rates)
    count = _F.zeros_like(rates)
    pending = _F.arange(rates.shape[0])
    while pending.numel():
        product_p = product[pending] * _uniform(pending.numel(), generator)
        product[pending] = product_p
        going = product_p > limit[pending]
        pending = pending[going]
        count[pending] += 1
    return count


def _poisson_ptrs(rates, generator):
    """Poisson samples for rates >= 10 by Hormann's transformed rejection with squeeze (PTRS)."""
    result = _F.zeros_like(rates)
    pending = _F.arange(rates.shape[0])
    while pending.numel():
        lam = rates[pending]
        root = _F.sqrt(lam)
        b = 0.931 + 2.53 * root
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        v_r = 0.9277 - 3.6224 / (b - 2)
        u = _uniform(pending.numel(), generator) - 0.5
        v = _uniform(pending.numel(), generator)
        us = 0.5 - _F.abs(u)
        k = _F.floor((2 * a / us + b) * u + lam + 0.43)
        quick = (us >= 0.07) & (v <= v_r)
        excluded = (k < 0) | ((us < 0.013) & (v > us))
        log_accept = _F.log(v) + _F.log(inv_alpha) - _F.log(a / (us * us) + b)
        target = -lam + k * _F.log(lam) - _F.lgamma(k + 1)
        accepted = quick | (~excluded & (log_accept <= target))
        result[pending[accepted]] = k[accepted]
        pending = pending[~accepted]
    return result


def _poisson_values(rates, generator):
    flat = rates.reshape(-1).to(_C.float64)
    result = _F.zeros_like(flat)
    small = ((flat > 0) & (flat < 10)).nonzero().reshape(-1)
    large = (flat >= 10).nonzero().reshape(-1)
    if small.numel():
        result[small] = _poisson_knuth(flat[small], generator)
    if large.numel():
        result[large] = _poisson_ptrs(flat[large], generator)
    return result.reshape(rates.shape).to(rates.dtype)


class PoissonBackward(Function):
    """poisson's sample, with a zero gradient for the rates (as torch's)."""

    @staticmethod
    def forward(ctx, rates, sample):
        return sample.clone()

    @staticmethod
    def backward(ctx, grad):
        return _F.zeros_like(grad), None


@checked_signature("poisson(Tensor input)")
def poisson(input, generator=None):
    """torch.poisson: a Poisson sample of each rate in ``input`` (a float tensor, rates >= 0),
    in input's dtype. Its gradient is zero, as torch's. See Note [Vectorized rejection sampling]."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{_scalar_name(input.dtype)}'")
    with no_grad():
        if input.numel() and bool(((input < 0) | _F.isnan(input)).any()):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        sample = _poisson_values(input, generator)
    if _C.is_grad_enabled() and input.requires_grad:
        return PoissonBackward.apply(input, sample)
    return sample


# --- binomial -------------------------------------------------------------------------------------------


def _binomial_inversion(count, prob, generator):
    """Binomial samples for count * prob < 10 (prob <= 1/2): how many geometric waiting times
    fit in count trials."""
    log_q = _F.log1p(-prob)
    total = _F.zeros_like(count)
    successes = _F.zeros_like(count)
    pending = _F.arange(count.shape[0])
    while pending.numel():
        wait = _F.ceil(_F.log(_uniform(pending.numel(), generator)) / log_q[pending])
        total_p = total[pending] + wait
        total[pending] = total_p
        going = total_p <= count[pending]
        pending = pending[going]
        successes[pending] += 1
    return successes


def _stirling_tail(k):
    """log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2], by lgamma for k < 10 and the
    asymptotic series beyond."""
    exact = _F.lgamma(k + 1) - ((k + 0.5) * _F.log(k + 1) - (k + 1) + 0.5 * math.log(2 * math.pi))
    inv = 1 / (k + 1)
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 * inv * inv) * inv * inv) * inv
    return _F.where(k < 10, exact, series)


def _binomial_btrs(count, prob, generator):
    """Binomial samples for count * prob >= 10 (prob <= 1/2) by Hormann's BTRS rejection."""
    result = _F.zeros_like(count)
    pending = _F.arange(count.shape[0])
    while pending.numel():
        n, p = count[pending], prob[pending]
        spread = _F.sqrt(n * p * (1 - p))
        b = 1.15 + 2.53 * spread
        a = -0.0873 + 0.0248 * b + 0.01 * p
        c = n * p + 0.5
        v_r = 0.92 - 4.2 / b
        r = p / (1 - p)
        alpha = (2.83 + 5.1 / b) * spread
        m = _F.floor((n + 1) * p)
        u = _uniform(pending.numel(), generator) - 0.5
        v = _uniform(pending.numel(), generator)
        us = 0.5 - _F.abs(u)
        k = _F.floor((2 * a / us + b) * u + c)
        inside = (k >= 0) & (k <= n)
        quick = inside & (us >= 0.07) & (v <= v_r)
        kk = k.clamp(0, None)
        nk = (n - kk).clamp(0, None)
        log_v = _F.log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * _F.log((m + 1) / (r * (n - m + 1))) + (n + 1) * _F.log((n - m + 1) / (nk + 1))
                 + (kk + 0.5) * _F.log(r * (nk + 1) / (kk + 1)) + _stirling_tail(m) + _stirling_tail(n - m)
                 - _stirling_tail(kk) - _stirling_tail(nk))
        accepted = quick | (inside & (log_v <= bound))
        result[pending[accepted]] = k[accepted]
        pending = pending[~accepted]
    return result


def _binomial_values(count, prob, generator):
    shape = count.shape
    n = count.reshape(-1).to(_C.float64)
    p = prob.reshape(-1).to(_C.float64)
    flip = p > 0.5
    q = _F.where(flip, 1 - p, p)
    result = _F.zeros_like(n)
    live = (n > 0) & (p > 0) & (p < 1)
    small = (live & (n * q < 10)).nonzero().reshape(-1)
    large = (live & (n * q >= 10)).nonzero().reshape(-1)
    if small.numel():
        result[small] = _binomial_inversion(n[small], q[small], generator)
    if large.numel():
        result[large] = _binomial_btrs(n[large], q[large], generator)
    result = _F.where(live & flip, n - result, result)
    result = _F.where((n > 0) & (p >= 1), n, result)
    result = _F.where(_F.isnan(n) | _F.isnan(p), _F.full_like(n, math.nan), result)
    return result.reshape(shape).to(count.dtype)


@checked_signature("binomial(Tensor count, Tensor prob)")
def binomial(count, prob, generator=None):
    """torch.binomial: a Binomial(count, prob) sample per element (count and prob float tensors of
    one dtype, float32 or float64, broadcast together); count <= 0 or prob <= 0 give 0, prob >= 1
    gives count. Not differentiable (backward raises, as torch). See Note [Vectorized rejection
    sampling]."""
    for tensor, label in ((count, "count"), (prob, "prob")):
        if not tensor.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {label}, got: "
                             f"{_scalar_name(tensor.dtype)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {_scalar_name(prob.dtype)} but expected {_scalar_name(count.dtype)}")
    if count.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"binomial_cpu\" not implemented for '{_scalar_name(count.dtype)}'")
    with no_grad():
        n, p = broadcast_tensors(count, prob)
        sample = _binomial_values(n, p, generator)
    return _no_derivative(["binomial"], [sample], [count, prob])[0]


# --- in-place samplers ---------------------------------------------------------------------------------


def _fill_from(self, values):
    """self with values written in (kiln's in-place checks apply); returns self."""
    self.copy_(values)
    return self


def _continuous_only(self, distribution):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{distribution} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_type_word(self.dtype)}")


def cauchy_(self, median=0, sigma=1, *, generator=None):
    """Tensor.cauchy_: fills self with Cauchy(median, sigma) samples, median + sigma * tan(pi (u - 1/2))."""
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_format_double(sigma)}")
    _continuous_only(self, "Cauchy")
    with no_grad():
        u = _uniform(self.numel(), generator).reshape(self.shape)
        values = median + sigma * _F.tan(math.pi * (u - 0.5))
    return _fill_from(self, values)


def geometric_(self, p, *, generator=None):
    """Tensor.geometric_: fills self with Geometric(p) samples on {1, 2, ...} (trials up to the first
    success), ceil(log(u) / log(1 - p)); integer tensors wrap values beyond their range."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_format_double(p)}")
    if self.dtype == _C.bool:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    with no_grad():
        u = 1 - _uniform(self.numel(), generator).reshape(self.shape)
        values = _F.ceil(_F.log(u) / math.log1p(-p)).clamp(1, None)
        if not self.dtype.is_floating_point:
            values = values.clamp(None, 2.0 ** 62).to(_C.int64)
    return _fill_from(self, values)


def log_normal_(self, mean=1, std=2, *, generator=None):
    """Tensor.log_normal_: fills self with exp(N(mean, std^2)) samples."""
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_format_double(std)}")
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for '{_scalar_name(self.dtype)}'")
    with no_grad():
        normal = _F.empty(self.shape, dtype=_C.float64).normal_(generator=generator)
        values = _F.exp(normal * std + mean)
    return _fill_from(self, values)


# --- segment_reduce ----------------------------------------------------------------------------------------

